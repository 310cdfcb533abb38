import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { startArgoCdDelivery, type ArgoCdDeliveryOptions } from '@mco/argocd';
import { createClusterAccess, parseProviderFile } from '@mco/cluster-access';
import { McoError, createLogger, type LogLevel } from '@mco/runtime';
import { KUBECONFIG_HELP, loadKubeConfig, parseListenAddress, UsageError, type Command } from '../cli.js';
import { checkHubAccess, CLUSTER_PROFILES, PLACEMENTS } from '../preflight.js';

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export const argocdPluginCommand: Command = {
  name: 'argocd-plugin',
  summary:
    'Serve the Argo CD ApplicationSet plugin generator; optionally refresh ApplicationSets and sync cluster Secrets',
  usage: `Usage: mco argocd-plugin --token-file <path> [options]

Serves Argo CD's ApplicationSet plugin generator (POST /api/v1/getparams.execute)
from a cache of MultiKubernetesClusterPlacements and ClusterProfiles. Existing
ApplicationSets written for Google's MCO plugin work unchanged. See docs/argocd.md.

Options:
  --token-file <path>              file holding the bearer token Argo CD sends (required;
                                   re-read when it changes, e.g. a mounted Secret)
  --listen <host:port>             where the plugin listens (default 0.0.0.0:4355);
                                   /healthz and /readyz are served there too; also --http-address
  --kubeconfig <path>              ${KUBECONFIG_HELP}
  --access-providers <a,b>         access provider names, in order, for the "server" output
                                   (default: the provider file's order, else the first with a server)
  --max-body-bytes <n>             largest request body accepted (default 65536)
  --refresh-applicationsets        annotate ApplicationSets for an immediate refresh when a
                                   placement's answer changes
  --applicationset-namespace <ns>  only look for ApplicationSets in this namespace (default: all)
  --sync-cluster-secrets           keep one Argo CD cluster Secret per ClusterProfile
  --argocd-namespace <ns>          namespace of Argo CD's cluster Secrets (default argocd)
  --provider-file <path>           Cluster Inventory access-provider config (credential plugins);
                                   required with --sync-cluster-secrets
  --secret-manager <value>         managed-by label value of mco's Secrets (default mco-argocd-cluster-sync)
  --secret-sync-concurrency <n>    cluster Secrets refreshed (credential plugins run) at once (default 16)
  --log-level <level>              debug, info, warn or error (default info)
  -h, --help                       show this help

Runs until SIGTERM or SIGINT. Exit codes: 0 stopped, 1 failed, 2 bad usage.`,
  async run(argv, io) {
    const { values } = parseArgs({
      args: argv,
      options: {
        'token-file': { type: 'string' },
        listen: { type: 'string' },
        'http-address': { type: 'string' }, // the controller's former name for --listen
        kubeconfig: { type: 'string' },
        'access-providers': { type: 'string' },
        'max-body-bytes': { type: 'string' },
        'refresh-applicationsets': { type: 'boolean', default: false },
        'applicationset-namespace': { type: 'string' },
        'sync-cluster-secrets': { type: 'boolean', default: false },
        'argocd-namespace': { type: 'string', default: 'argocd' },
        'provider-file': { type: 'string' },
        'secret-manager': { type: 'string' },
        'secret-sync-concurrency': { type: 'string' },
        'log-level': { type: 'string', default: 'info' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
    if (values.help) {
      io.stdout(`${this.usage}\n`);
      return 0;
    }
    if (!values['token-file']) throw new UsageError('missing --token-file <path>: the plugin has no default token');
    const level = values['log-level'] as LogLevel;
    if (!LOG_LEVELS.includes(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
    const listen = parseListenAddress(values.listen ?? values['http-address'] ?? '0.0.0.0:4355');
    const maxBodyBytes = values['max-body-bytes'] === undefined ? undefined : Number(values['max-body-bytes']);
    if (maxBodyBytes !== undefined && !(Number.isInteger(maxBodyBytes) && maxBodyBytes >= 1024)) {
      throw new UsageError('--max-body-bytes must be an integer of at least 1024');
    }
    const syncConcurrency =
      values['secret-sync-concurrency'] === undefined ? undefined : Number(values['secret-sync-concurrency']);
    if (syncConcurrency !== undefined && !(Number.isInteger(syncConcurrency) && syncConcurrency >= 1)) {
      throw new UsageError('--secret-sync-concurrency must be an integer of at least 1');
    }
    if (values['sync-cluster-secrets'] && !values['provider-file']) {
      throw new UsageError('--sync-cluster-secrets needs --provider-file <path> (how to obtain credentials)');
    }

    const logger = createLogger({ level, write: io.stderr }).child({ component: 'mco-argocd-plugin' });
    const kubeConfig = loadKubeConfig(values.kubeconfig);
    await checkHubAccess(kubeConfig, [PLACEMENTS, CLUSTER_PROFILES]);

    let providerNames: string[] | undefined = values['access-providers']
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    let secretSync: ArgoCdDeliveryOptions['secretSync'];
    if (values['provider-file']) {
      let text: string;
      try {
        text = await readFile(values['provider-file'], 'utf8');
      } catch (error) {
        throw new UsageError(`cannot read ${values['provider-file']}: ${(error as Error).message}`);
      }
      let providers;
      try {
        providers = parseProviderFile(text, values['provider-file']);
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
      providerNames ??= providers.providers.map((p) => p.name);
      if (values['sync-cluster-secrets']) {
        const refreshBeforeMs = 5 * 60_000;
        const access = createClusterAccess({ providers, hubKubeConfig: kubeConfig, refreshBeforeMs, logger });
        secretSync = {
          namespace: values['argocd-namespace'],
          resolveAccess: (profile) => access.accessFor(profile),
          forgetAccess: (key) => access.forget(key),
          refreshBeforeMs,
          ...(values['secret-manager'] ? { manager: values['secret-manager'] } : {}),
          ...(syncConcurrency !== undefined ? { concurrency: syncConcurrency } : {}),
        };
      }
    }

    const delivery = await startArgoCdDelivery({
      kubeConfig,
      logger,
      ...(providerNames?.length ? { accessProviderNames: providerNames } : {}),
      plugin: {
        host: listen.host,
        port: listen.port,
        tokenFile: values['token-file'],
        ...(maxBodyBytes !== undefined ? { limits: { maxBodyBytes } } : {}),
      },
      ...(values['refresh-applicationsets']
        ? {
            refresh: values['applicationset-namespace'] ? { namespace: values['applicationset-namespace'] } : {},
          }
        : {}),
      ...(secretSync ? { secretSync } : {}),
    }).catch((error: unknown) => {
      // A missing or empty token file is a configuration error, not a crash.
      if (error instanceof McoError && error.code === 'Invalid') throw new UsageError(error.message);
      throw error;
    });
    logger.info('argocd plugin listening', {
      address: `${delivery.pluginAddress?.address}:${delivery.pluginAddress?.port}`,
      refreshApplicationSets: values['refresh-applicationsets'],
      syncClusterSecrets: values['sync-cluster-secrets'],
    });
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    logger.info('stopping');
    await delivery.stop();
    return 0;
  },
};

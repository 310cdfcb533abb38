import { startArgoCdDelivery } from '@mco/argocd';
import { McoError, createLogger, reconcileMetrics } from '@mco/runtime';
import { Registry } from 'prom-client';
import {
  CLUSTER_PROFILE_NAMESPACES_HELP,
  parseClusterProfileNamespaces,
  KUBECONFIG_HELP,
  loadHub,
  parseListenAddress,
  UsageError,
  type Command,
  parseFlags,
  parseIntegerFlag,
  parseLogLevel,
  untilSignal,
} from '../cli.js';
import { checkHubAccess, CLUSTER_PROFILES, PLACEMENTS } from '../preflight.js';
import { parseAccessProviders, readProviderFile } from './provider-file.js';

/** Flags of the plugin that write, moved to `mco argocd-sync` so the network-facing process stays read-only. */
const MOVED_FLAGS = [
  '--refresh-applicationsets',
  '--applicationset-namespace',
  '--sync-cluster-secrets',
  '--argocd-namespace',
  '--secret-manager',
  '--secret-sync-concurrency',
];

export const argocdPluginCommand: Command = {
  name: 'argocd-plugin',
  usage: `Usage: mco argocd-plugin --token-file <path> [options]

Serves Argo CD's ApplicationSet plugin generator (POST /api/v1/getparams.execute)
from a cache of MultiKubernetesClusterPlacements and ClusterProfiles. Existing
ApplicationSets written for Google's MCO plugin work unchanged. It only reads:
ApplicationSet refresh and cluster Secret sync run in \`mco argocd-sync\`, under
their own accounts. See docs/argocd.md.

Options:
  --token-file <path>              file holding the bearer token Argo CD sends (required;
                                   re-read when it changes, e.g. a mounted Secret)
  --listen <host:port>             where the plugin listens (default 0.0.0.0:4355);
                                   /healthz and /readyz are served there too; also --http-address
  --kubeconfig <path>              ${KUBECONFIG_HELP}
  --access-providers <a,b>         access provider names, in order, for the "server" output
                                   (default: the provider file's order, else the first with a server)
  --provider-file <path>           Cluster Inventory access-provider config; only its provider
                                   names (the default of --access-providers) and server bounds
                                   (allowedServers...: "server" is null where the syncer refuses) are used
  --max-body-bytes <n>             largest request body accepted (default 65536)
  --cluster-profile-namespaces <a,b> ${CLUSTER_PROFILE_NAMESPACES_HELP}
  --log-level <level>              debug, info, warn or error (default info)
  -h, --help                       show this help

Runs until SIGTERM or SIGINT. Exit codes: 0 stopped, 1 failed, 2 bad usage.`,
  async run(argv, io) {
    const moved = argv.find((arg) => MOVED_FLAGS.includes(arg.split('=')[0]!));
    if (moved) {
      throw new UsageError(
        `${moved.split('=')[0]} moved to \`mco argocd-sync\`: the plugin serves HTTP and only reads`,
      );
    }
    const { values } = parseFlags({
      args: argv,
      options: {
        'token-file': { type: 'string' },
        listen: { type: 'string' },
        'http-address': { type: 'string' }, // the controller's former name for --listen
        kubeconfig: { type: 'string' },
        'access-providers': { type: 'string' },
        'provider-file': { type: 'string' },
        'max-body-bytes': { type: 'string' },
        'cluster-profile-namespaces': { type: 'string' },
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
    const level = parseLogLevel(values['log-level']);
    const clusterProfileNamespaces = parseClusterProfileNamespaces(values['cluster-profile-namespaces']);
    const listen = parseListenAddress(values.listen ?? values['http-address'] ?? '0.0.0.0:4355');
    const maxBodyBytes = parseIntegerFlag('max-body-bytes', values['max-body-bytes'], 1024);

    const logger = createLogger({ level, write: io.stderr }).child({ component: 'mco-argocd-plugin' });
    const hub = loadHub(values.kubeconfig);
    await checkHubAccess(hub, [PLACEMENTS, CLUSTER_PROFILES], clusterProfileNamespaces);
    const providers = values['provider-file'] ? (await readProviderFile(values['provider-file'])).providers : undefined;
    const providerNames = parseAccessProviders(values['access-providers']) ?? providers?.map((p) => p.name);

    const registry = new Registry();
    const delivery = await startArgoCdDelivery({
      hub,
      logger,
      reconciles: reconcileMetrics(registry, 'mco-argocd-plugin'),
      clusterProfileNamespaces,
      ...(providers ? { serverPolicies: providers } : {}),
      ...(providerNames?.length ? { accessProviderNames: providerNames } : {}),
      plugin: {
        host: listen.host,
        port: listen.port,
        tokenFile: values['token-file'],
        metrics: { contentType: registry.contentType, text: () => registry.metrics() },
        ...(maxBodyBytes !== undefined ? { limits: { maxBodyBytes } } : {}),
      },
    }).catch((error: unknown) => {
      // A missing or empty token file is a configuration error, not a crash.
      if (error instanceof McoError && error.code === 'Invalid') throw new UsageError(error.message);
      throw error;
    });
    logger.info('argocd plugin listening', {
      address: `${delivery.pluginAddress?.address}:${delivery.pluginAddress?.port}`,
    });
    await untilSignal();
    logger.info('stopping');
    await delivery.stop();
    return 0;
  },
};

import { startArgoCdDelivery, type ArgoCdDeliveryOptions } from '@mco/argocd';
import { createClusterAccess } from '@mco/cluster-access';
import { startHealthServer } from '@mco/controller';
import { createLogger, reconcileMetrics } from '@mco/runtime';
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

export const argocdSyncCommand: Command = {
  name: 'argocd-sync',
  usage: `Usage: mco argocd-sync (--refresh-applicationsets | --sync-cluster-secrets) [options]

The writing half of the Argo CD integration, apart from the plugin server
(\`mco argocd-plugin\`, read-only) so that the process Argo CD talks to holds no
write access. Serves no API: only /healthz, /readyz and /metrics for probes.
The chart runs each mode in its own Deployment and ServiceAccount. See docs/argocd.md.

Options:
  --refresh-applicationsets        annotate ApplicationSets for an immediate refresh when a
                                   placement's answer changes
  --applicationset-namespace <ns>  namespace of those ApplicationSets (default: --argocd-namespace)
  --all-applicationset-namespaces  look for ApplicationSets in every namespace (Argo CD's
                                   "ApplicationSets in any namespace"; needs a ClusterRole)
  --plugin-url <url>               the plugin's address (e.g. http://mco-argocd-plugin.mco-system:4355):
                                   its /readyz is probed every 2 s and, when it is ready again after
                                   an outage, the ApplicationSets using it are refreshed (Argo CD
                                   itself retries a failed generation only after 3 minutes)
  --sync-cluster-secrets           keep one Argo CD cluster Secret per ClusterProfile
  --argocd-namespace <ns>          Argo CD's namespace (default argocd)
  --provider-file <path>           Cluster Inventory access-provider config (credential plugins);
                                   required with --sync-cluster-secrets
  --access-providers <a,b>         access provider names, in order, as the plugin uses them
                                   (default: the provider file's order)
  --secret-manager <value>         managed-by label value of mco's Secrets (default mco-argocd-cluster-sync);
                                   unique among live syncers (a Lease in the Argo CD namespace)
  --secret-sync-concurrency <n>    cluster Secrets refreshed (credential plugins run) at once (default 16)
  --cluster-profile-namespaces <a,b> ${CLUSTER_PROFILE_NAMESPACES_HELP}
  --listen <host:port>             address of /healthz, /readyz and /metrics (default 0.0.0.0:8082)
  --kubeconfig <path>              ${KUBECONFIG_HELP}
  --log-level <level>              debug, info, warn or error (default info)
  -h, --help                       show this help

Runs until SIGTERM or SIGINT. Exit codes: 0 stopped, 1 failed, 2 bad usage.`,
  async run(argv, io) {
    const { values } = parseFlags({
      args: argv,
      options: {
        'refresh-applicationsets': { type: 'boolean', default: false },
        'applicationset-namespace': { type: 'string' },
        'all-applicationset-namespaces': { type: 'boolean', default: false },
        'plugin-url': { type: 'string' },
        'sync-cluster-secrets': { type: 'boolean', default: false },
        'argocd-namespace': { type: 'string', default: 'argocd' },
        'provider-file': { type: 'string' },
        'access-providers': { type: 'string' },
        'secret-manager': { type: 'string' },
        'secret-sync-concurrency': { type: 'string' },
        'cluster-profile-namespaces': { type: 'string' },
        listen: { type: 'string' },
        kubeconfig: { type: 'string' },
        'log-level': { type: 'string', default: 'info' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
    if (values.help) {
      io.stdout(`${this.usage}\n`);
      return 0;
    }
    const refresh = values['refresh-applicationsets'];
    const sync = values['sync-cluster-secrets'];
    if (!refresh && !sync)
      throw new UsageError('nothing to do: give --refresh-applicationsets and/or --sync-cluster-secrets');
    if (values['all-applicationset-namespaces'] && values['applicationset-namespace']) {
      throw new UsageError('--applicationset-namespace and --all-applicationset-namespaces exclude each other');
    }
    const pluginUrl = values['plugin-url'];
    if (pluginUrl !== undefined && !/^https?:\/\/[^/]+\/?$/.test(pluginUrl)) {
      throw new UsageError(`--plugin-url must be http(s)://host:port, got ${JSON.stringify(pluginUrl)}`);
    }
    if (pluginUrl !== undefined && !refresh) throw new UsageError('--plugin-url needs --refresh-applicationsets');
    const syncConcurrency = parseIntegerFlag('secret-sync-concurrency', values['secret-sync-concurrency'], 1);
    if (sync && !values['provider-file']) {
      throw new UsageError('--sync-cluster-secrets needs --provider-file <path> (how to obtain credentials)');
    }
    const level = parseLogLevel(values['log-level']);
    const clusterProfileNamespaces = parseClusterProfileNamespaces(values['cluster-profile-namespaces']);
    const listen = parseListenAddress(values.listen ?? '0.0.0.0:8082');
    const argocdNamespace = values['argocd-namespace'];

    const logger = createLogger({ level, write: io.stderr }).child({ component: 'mco-argocd-sync' });
    const hub = loadHub(values.kubeconfig);
    await checkHubAccess(hub, [PLACEMENTS, CLUSTER_PROFILES], clusterProfileNamespaces);
    const providers = values['provider-file'] ? await readProviderFile(values['provider-file']) : undefined;
    const providerNames = parseAccessProviders(values['access-providers']) ?? providers?.providers.map((p) => p.name);

    let secretSync: ArgoCdDeliveryOptions['secretSync'];
    if (sync && providers) {
      const refreshBeforeMs = 5 * 60_000;
      const access = createClusterAccess({ providers, hub, refreshBeforeMs, logger });
      secretSync = {
        namespace: argocdNamespace,
        // Every cached profile is a peer: a profile naming an older one's server is refused.
        resolveAccess: (profile, peers) => access.accessFor(profile, undefined, peers),
        forgetAccess: (key) => access.forget(key),
        refreshBeforeMs,
        ...(values['secret-manager'] ? { manager: values['secret-manager'] } : {}),
        ...(syncConcurrency !== undefined ? { concurrency: syncConcurrency } : {}),
      };
    }
    const applicationSetNamespace = values['all-applicationset-namespaces']
      ? undefined
      : (values['applicationset-namespace'] ?? argocdNamespace);

    const registry = new Registry();
    const delivery = await startArgoCdDelivery({
      hub,
      logger,
      reconciles: reconcileMetrics(registry, 'mco-argocd-sync'),
      clusterProfileNamespaces,
      ...(providers ? { serverPolicies: providers.providers } : {}),
      ...(providerNames?.length ? { accessProviderNames: providerNames } : {}),
      ...(refresh
        ? {
            refresh: {
              ...(applicationSetNamespace ? { namespace: applicationSetNamespace } : {}),
              ...(pluginUrl ? { pluginUrl } : {}),
            },
          }
        : {}),
      ...(secretSync ? { secretSync } : {}),
    });
    const server = await startHealthServer({
      host: listen.host,
      port: listen.port,
      registry,
      isHealthy: () => true,
      isReady: () => delivery.ready(),
    });
    logger.info('argocd sync running', {
      address: `${listen.host}:${server.port}`,
      refreshApplicationSets: refresh ? (applicationSetNamespace ?? '*') : false,
      syncClusterSecrets: sync ? argocdNamespace : false,
    });
    await untilSignal();
    logger.info('stopping');
    await server.close();
    await delivery.stop();
    return 0;
  },
};

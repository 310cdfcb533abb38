import { hostname } from 'node:os';
import { createClusterAccess, type ProviderFile } from '@mco/cluster-access';
import { parseNamespaceList, startHealthServer } from '@mco/controller';
import { DEFAULT_ALLOWED_ROLE_REFS, parseRoleRefList, startConfigSyncDelivery } from '@mco/configsync';
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
import { readProviderFile } from './provider-file.js';

export const configsyncCommand: Command = {
  name: 'configsync',
  usage: `Usage: mco configsync [options]

For every MultiKubernetesClusterPlacement annotated with a Config Sync template
(configsync.mco.x-k8s.io/template), applies the RepoSync or RootSync (and the
RoleBindings its reconciler needs) on each cluster the placement lists, through
the cluster's ClusterProfile access; deletes it from clusters that leave and
waits for Config Sync's finalizer; reports each member's sync status in the
placement's ConfigSyncSynced condition and as Events. See docs/configsync.md.

A template is a tenant's input: a RepoSync goes into its placement's own
namespace, a RootSync only from the hub namespaces --root-sync-namespaces lists,
and a RoleBinding may only give a role --allowed-role-refs allows to the sync's
own reconciler. A template outside these bounds changes nothing on any member
(condition reason InvalidTemplate, naming the field).

Options:
  --kubeconfig <path>              ${KUBECONFIG_HELP}
  --provider-file <path>           Cluster Inventory access-provider config (credential plugins); without
                                   it only ClusterProfiles with a kubeconfig Secret can be reached
  --workers <n>                    placements reconciled at once (default 4)
  --member-timeout <seconds>       deadline of one member request (default 15)
  --status-interval <seconds>      how often members' sync status is read again (default 60)
  --leader-elect                   run only while holding a Lease (several replicas)
  --cluster-profile-namespaces <a,b> ${CLUSTER_PROFILE_NAMESPACES_HELP}
  --root-sync-namespaces <a,b>     hub namespaces whose placements may carry a RootSync (cluster-wide on
                                   every member) and a RepoSync for any namespace (default: none)
  --allowed-role-refs <list>       roles a template's RoleBinding may refer to, as Role/<name> or
                                   ClusterRole/<name>, comma-separated (default ${DEFAULT_ALLOWED_ROLE_REFS.join(',')})
  --leader-election-namespace <ns> namespace of the Lease mco-configsync, shared by every install (default kube-system)
  --listen <host:port>             serve /healthz, /readyz and Prometheus /metrics there (default 0.0.0.0:8084)
  --log-level <level>              debug, info, warn or error (default info)
  -h, --help                       show this help

Runs until SIGTERM or SIGINT. Exit codes: 0 stopped, 1 failed, 2 bad usage.`,
  async run(argv, io) {
    const { values } = parseFlags({
      args: argv,
      options: {
        kubeconfig: { type: 'string' },
        'provider-file': { type: 'string' },
        workers: { type: 'string', default: '4' },
        listen: { type: 'string', default: '0.0.0.0:8084' },
        'member-timeout': { type: 'string', default: '15' },
        'status-interval': { type: 'string', default: '60' },
        'leader-elect': { type: 'boolean', default: false },
        'cluster-profile-namespaces': { type: 'string' },
        'root-sync-namespaces': { type: 'string', default: '' },
        'allowed-role-refs': { type: 'string', default: DEFAULT_ALLOWED_ROLE_REFS.join(',') },
        'leader-election-namespace': { type: 'string', default: 'kube-system' },
        'log-level': { type: 'string', default: 'info' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
    if (values.help) {
      io.stdout(`${this.usage}\n`);
      return 0;
    }
    const level = parseLogLevel(values['log-level']);
    const positive = (flag: 'workers' | 'member-timeout' | 'status-interval') =>
      parseIntegerFlag(flag, values[flag], 1)!;
    const workers = positive('workers');
    const listen = parseListenAddress(values.listen);
    const clusterProfileNamespaces = parseClusterProfileNamespaces(values['cluster-profile-namespaces']);
    const rootSyncNamespaces = parseNamespaceList(values['root-sync-namespaces']);
    if (!rootSyncNamespaces.ok) throw new UsageError(`--root-sync-namespaces: ${rootSyncNamespaces.error}`);
    const allowedRoleRefs = parseRoleRefList(values['allowed-role-refs']);
    if (!allowedRoleRefs.ok) throw new UsageError(`--allowed-role-refs: ${allowedRoleRefs.error}`);
    const memberTimeoutMs = positive('member-timeout') * 1000;
    const statusIntervalMs = positive('status-interval') * 1000;

    const providers: ProviderFile = values['provider-file']
      ? await readProviderFile(values['provider-file'])
      : { providers: [] };
    const logger = createLogger({ level, write: io.stderr }).child({ component: 'mco-configsync' });
    const hub = loadHub(values.kubeconfig);
    const access = createClusterAccess({ providers, hub, logger });
    const registry = new Registry();
    const reconciles = reconcileMetrics(registry, 'mco-configsync');
    const delivery = startConfigSyncDelivery({
      hub,
      access,
      onReconciled: (_key, result) => reconciles.record(result instanceof Error || result.retry ? 'error' : 'ok'),
      clusterProfileNamespaces,
      templatePolicy: { rootSyncNamespaces: rootSyncNamespaces.value, allowedRoleRefs: allowedRoleRefs.value },
      logger,
      workers,
      memberTimeoutMs,
      statusIntervalMs,
      ...(values['leader-elect']
        ? {
            leaderElection: {
              namespace: values['leader-election-namespace'],
              name: 'mco-configsync',
              identity: `${hostname()}-${process.pid}`,
            },
          }
        : {}),
    });
    const server = await startHealthServer({
      ...listen,
      registry,
      isHealthy: () => true,
      // A standby replica (leader election) is ready: it has no caches to sync until it leads.
      isReady: () => delivery.standby() || delivery.ready(),
    });
    logger.info('config sync delivery started', {
      address: `${listen.host}:${server.port}`,
      workers,
      leaderElect: values['leader-elect'],
      rootSyncNamespaces: rootSyncNamespaces.value,
      allowedRoleRefs: allowedRoleRefs.value,
    });
    await untilSignal();
    logger.info('stopping');
    await server.close();
    await delivery.stop();
    return 0;
  },
};

import {
  CONFIG_MAPS,
  CONTROLLER_FLAGS,
  controllerFlagsHelp,
  createController,
  CONFIRMATION_FIELD_SELECTOR,
  type ControllerConfig,
  parseControllerConfig,
  SignalSourcesFileSchema,
  startHealthServer,
} from '@mco/controller';
import {
  createLogger,
  type CapacitySignalSource,
  type CapacitySource,
  type KubeConnection,
  type Logger,
} from '@mco/runtime';
import { Registry } from 'prom-client';
import { loadHub, parseOrThrow, readDocument, UsageError, type Command, parseFlags } from '../cli.js';
import { capacitySources as capacitySourceModules } from '../capacity-sources.js';
import { createPlugins, withImportedModules } from '../plugins.js';
import { signalSources as signalSourceModules } from '../signal-sources.js';
import {
  checkHubAccess,
  CLUSTER_PROFILES,
  ensureLeaseNamespace,
  PLACEMENT_DECISIONS,
  PLACEMENTS,
} from '../preflight.js';

export const controllerCommand: Command = {
  name: 'controller',
  usage: `Usage: mco controller [options]

Watches ClusterProfiles and MultiKubernetesClusterPlacements in the hub
cluster, asks the configured capacity-signal sources, decides with the mco
engine and writes each placement's status and PlacementDecisions. Serves
/healthz, /readyz (after the caches synced) and Prometheus /metrics. Logs are
JSON lines on stderr. Runs until SIGTERM or SIGINT, then finishes in-flight
work and releases its leader Lease. See docs/operations.md.

Options (a flag wins over its environment variable, which wins over the default):
${controllerFlagsHelp()}
  -h, --help  show this help

Signal sources (--signal-sources <file>, YAML):
  defaultSource: prom            # for autoscaling placements that name none
  sources:
    - name: prom                 # what spec.scaling.autoscaleForCapacity.signalSource names
      plugin: prometheus         # one of: ${signalSourceModules.map((m) => m.name).join(', ') || 'none'}
      config: {...}              # the plugin's own configuration
      placementNamespaces: [team-a]  # required: whose placements may use it; ['*']: all
  capacitySources:               # asked about the next scale-out candidates
    - name: nodepools
      plugin: karpenter          # one of: ${capacitySourceModules.map((m) => m.name).join(', ')}
                                 # or module: a package or ./path/to/index.js
      config: {...}
      placementNamespaces: ['*']
  capacityCandidates: 3          # candidates asked about per placement

Exit codes: 0 stopped by a signal, 1 failed, 2 bad usage or configuration.`,
  async run(argv, io) {
    const config = controllerConfigFromArgs(argv, process.env);
    if (config === 'help') {
      io.stdout(`${this.usage}\n`);
      return 0;
    }
    const logger = createLogger({ level: config.logLevel, write: io.stderr }).child({ component: 'mco-controller' });

    const hub = loadHub(config.kubeconfig);
    const registry = new Registry();
    const sources = await createSignalSources(config.signalSourcesFile, hub, registry, logger);
    // The files are valid; hub problems (unreachable, no CRD, no RBAC, no Lease namespace) end the start-up in one line.
    const confirmation = { ...CONFIG_MAPS, namespace: config.namespace, fieldSelector: CONFIRMATION_FIELD_SELECTOR };
    await checkHubAccess(
      hub,
      [PLACEMENTS, CLUSTER_PROFILES, PLACEMENT_DECISIONS, confirmation],
      config.clusterProfileNamespaces,
    );
    if (config.leaderElection) {
      await ensureLeaseNamespace(hub, config.leaderElection.namespace, config.leaderElection.name, logger);
    }

    const controller = createController({
      hub,
      logger,
      registry,
      defaultMetrics: true,
      identity: config.identity,
      leaderElection: config.leaderElection,
      workers: config.workers,
      resyncPeriodMs: config.resyncPeriodMs,
      signalSources: sources.byName,
      defaultSignalSource: sources.defaultSource,
      signalSourceNamespaces: sources.namespaces,
      capacitySources: sources.capacity.byName,
      capacitySourceNamespaces: sources.capacity.namespaces,
      capacityCandidates: sources.capacity.candidates,
      allowCrossNamespaceWorkloads: config.allowCrossNamespaceWorkloads,
      clusterProfileNamespaces: config.clusterProfileNamespaces,
      signalPollIntervalMs: config.signalPollIntervalMs,
      signalTimeoutMs: config.signalTimeoutMs,
      inventoryLoss: config.inventoryLoss,
      namespace: config.namespace,
      watchIdleTimeoutMs: config.watchIdleTimeoutMs,
      cacheLimits: config.cacheLimits,
      requestTimeoutMs: config.requestTimeoutMs,
      events: config.events,
      shutdownTimeoutMs: config.shutdownTimeoutMs,
    });
    let stopping = false;
    const server = await startHealthServer({
      ...config.http,
      registry,
      // Liveness means "the process answers"; failing it during shutdown would only get the pod killed.
      isHealthy: () => true,
      isReady: () => !stopping && controller.isReady(),
      notReadyReason: () => {
        const holder = controller.standingByFor();
        return holder && `another install holds the controller lease (${holder}); standing by`;
      },
    });
    logger.info('starting', {
      identity: config.identity,
      http: `${config.http.host}:${server.port}`,
      leaderElection: config.leaderElection
        ? `${config.leaderElection.namespace}/${config.leaderElection.name}`
        : 'off',
      signalSources: [...sources.byName.keys()],
      defaultSignalSource: sources.defaultSource ?? null,
      capacitySources: [...sources.capacity.byName.keys()],
    });
    controller.start();

    const signal = await new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    stopping = true;
    logger.info('stopping', { signal });
    await controller.stop();
    await Promise.all(
      [...sources.byName.values(), ...sources.capacity.byName.values()].map((s) => s.close?.().catch(() => undefined)),
    );
    await server.close();
    return 0;
  },
};

/**
 * `mco controller`'s flags and environment as its configuration, or 'help';
 * a UsageError naming the flag otherwise. Switches (`--events`) come back from
 * the parser as booleans and are read as their text, like the environment.
 */
export function controllerConfigFromArgs(
  argv: string[],
  env: Readonly<Record<string, string | undefined>>,
): ControllerConfig | 'help' {
  const { values } = parseFlags({
    args: argv,
    options: {
      ...Object.fromEntries(
        CONTROLLER_FLAGS.flatMap((f) =>
          [f.flag, ...(f.aliases ?? [])].map((name) => [
            name,
            { type: f.boolean ? ('boolean' as const) : ('string' as const) },
          ]),
        ),
      ),
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const { help: _help, ...flags } = values as Record<string, string | boolean | undefined>;
  const parsed = parseControllerConfig(
    Object.fromEntries(Object.entries(flags).map(([k, v]) => [k, typeof v === 'boolean' ? String(v) : v])),
    env,
  );
  if (!parsed.ok) throw new UsageError(parsed.error);
  return parsed.value;
}

/** Creates the named signal and capacity sources of the --signal-sources file with the registered plugins. */
export async function createSignalSources(
  file: string | undefined,
  hub: KubeConnection,
  metrics: Registry,
  logger: Logger,
): Promise<{
  byName: Map<string, CapacitySignalSource>;
  defaultSource: string | undefined;
  namespaces: Map<string, readonly string[]>;
  capacity: { byName: Map<string, CapacitySource>; namespaces: Map<string, readonly string[]>; candidates: number };
}> {
  if (!file) {
    return {
      byName: new Map(),
      defaultSource: undefined,
      namespaces: new Map(),
      capacity: { byName: new Map(), namespaces: new Map(), candidates: 0 },
    };
  }
  const document = parseOrThrow(SignalSourcesFileSchema, await readDocument(file), `signal sources file ${file}`);
  const deps = (kind: string) => (entry: { name: string }) => ({
    logger: logger.child({ [kind]: entry.name }),
    hub,
    metrics,
    now: () => new Date(),
  });
  const byName: Map<string, CapacitySignalSource> = createPlugins(
    signalSourceModules,
    document.sources,
    (index) => `${file}: sources[${index}]`,
    deps('signalSource'),
  );
  if (document.defaultSource !== undefined && !byName.has(document.defaultSource)) {
    throw new UsageError(`${file}: defaultSource "${document.defaultSource}" is not among the sources`);
  }
  const capacityAt = (index: number) => `${file}: capacitySources[${index}]`;
  const capacity = await withImportedModules(
    'capacity',
    capacitySourceModules,
    document.capacitySources,
    file,
    capacityAt,
  );
  const capacityByName: Map<string, CapacitySource> = createPlugins(
    capacity.modules,
    capacity.entries,
    capacityAt,
    deps('capacitySource'),
  );
  return {
    byName,
    defaultSource: document.defaultSource,
    namespaces: namespacesOf(document.sources),
    capacity: {
      byName: capacityByName,
      namespaces: namespacesOf(document.capacitySources),
      candidates: document.capacityCandidates,
    },
  };
}

/** Who may use each source; a source absent from the map serves every namespace: that is what ['*'] says. */
function namespacesOf(
  sources: readonly { name: string; placementNamespaces: readonly string[] }[],
): Map<string, readonly string[]> {
  return new Map(
    sources.flatMap((s) => (s.placementNamespaces[0] === '*' ? [] : [[s.name, s.placementNamespaces] as const])),
  );
}

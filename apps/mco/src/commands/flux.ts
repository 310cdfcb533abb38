import { createClusterAccess } from '@mco/cluster-access';
import { startHealthServer } from '@mco/controller';
import {
  FluxTemplatesFileSchema,
  INPUT_PROVIDERS,
  KUSTOMIZATIONS,
  startFluxDelivery,
  type FluxDelivery,
} from '@mco/flux';
import { createLogger, reconcileMetrics } from '@mco/runtime';
import { Counter, Gauge, Registry } from 'prom-client';
import {
  CLUSTER_PROFILE_NAMESPACES_HELP,
  parseClusterProfileNamespaces,
  KUBECONFIG_HELP,
  loadHub,
  parseListenAddress,
  parseOrThrow,
  readDocument,
  UsageError,
  type Command,
  parseFlags,
  parseIntegerFlag,
  parseLogLevel,
  untilSignal,
} from '../cli.js';
import { readProviderFile } from './provider-file.js';
import { checkHubAccess, CLUSTER_PROFILES, PLACEMENTS, type WatchedResource } from '../preflight.js';

export const fluxCommand: Command = {
  name: 'flux',
  usage: `Usage: mco flux --provider-file <path> (--input-providers | --templates <path>) [options]

Delivers what mco's placements decide through Flux (see docs/flux.md). In the
Flux namespace, keeps a kubeconfig Secret per placed cluster and either one
ResourceSetInputProvider per (placement, placed cluster) for a Flux Operator
ResourceSet (--input-providers), or one Kustomization/HelmRelease per placed
cluster rendered from a template (--templates), or both. Objects go only when a
cluster's removal from a placement's status was observed; a kubeconfig Secret
goes only once no Flux object uses it.

Options:
  --provider-file <path>   Cluster Inventory access-provider config (credential plugins; required)
  --input-providers        write ResourceSetInputProviders (Flux Operator mode)
  --templates <path>       YAML file {templates: [{placement: {namespace, name}, kustomization?, helmRelease?}]}
  --flux-namespace <ns>    Flux's namespace (default flux-system)
  --no-helm-releases       do not watch HelmReleases (only where helm-controller is not installed)
  --manager <value>        managed-by label value and field manager (default mco-flux)
  --cluster-profile-namespaces <a,b>
                           ${CLUSTER_PROFILE_NAMESPACES_HELP}
  --secret-hold-timeout <seconds>
                           how long a removed cluster's kubeconfig Secret is kept for Flux objects
                           being deleted that still need it (a member that does not answer); then it
                           is deleted and Flux drops their finalizers without pruning (default 3600;
                           0: kept until they are gone)
  --report-orphans-only    report orphaned Flux objects of Operator mode, do not delete them
                           (default: deleted after the report delay, docs/flux.md#orphaned-kustomizations)
  --listen <host:port>     serve /healthz, /readyz and Prometheus /metrics there (default: not served);
                           mco_flux_orphaned_objects counts orphaned Flux objects (docs/flux.md)
  --kubeconfig <path>      ${KUBECONFIG_HELP}
  --log-level <level>      debug, info, warn or error (default info)
  -h, --help               show this help

Runs until SIGTERM or SIGINT. Exit codes: 0 stopped, 1 failed, 2 bad usage.`,
  async run(argv, io) {
    const { values } = parseFlags({
      args: argv,
      options: {
        'provider-file': { type: 'string' },
        'input-providers': { type: 'boolean', default: false },
        templates: { type: 'string' },
        'flux-namespace': { type: 'string', default: 'flux-system' },
        'no-helm-releases': { type: 'boolean', default: false },
        manager: { type: 'string' },
        'cluster-profile-namespaces': { type: 'string' },
        'secret-hold-timeout': { type: 'string', default: '3600' },
        'report-orphans-only': { type: 'boolean', default: false },
        kubeconfig: { type: 'string' },
        listen: { type: 'string' },
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
    const clusterProfileNamespaces = parseClusterProfileNamespaces(values['cluster-profile-namespaces']);
    const listen = values.listen === undefined ? undefined : parseListenAddress(values.listen);
    const holdSeconds = parseIntegerFlag('secret-hold-timeout', values['secret-hold-timeout'], 0)!;
    if (!values['provider-file']) {
      throw new UsageError('missing --provider-file <path>: the kubeconfig Secrets need credentials');
    }
    if (!values['input-providers'] && !values.templates) {
      throw new UsageError('give --input-providers, --templates <path>, or both: otherwise there is nothing to write');
    }
    const providers = await readProviderFile(values['provider-file']);
    const templates = values.templates
      ? parseOrThrow(FluxTemplatesFileSchema, await readDocument(values.templates), values.templates).templates
      : [];

    if (values['no-helm-releases'] && templates.some((t) => t.helmRelease)) {
      throw new UsageError(
        '--no-helm-releases: the templates file has a helmRelease, which needs HelmReleases watched',
      );
    }

    const logger = createLogger({ level, write: io.stderr }).child({ component: 'mco-flux' });
    const hub = loadHub(values.kubeconfig);
    // HelmReleases are optional (helm-controller may be absent): the delivery watches for their CRD itself.
    const fluxNamespace = values['flux-namespace'];
    const required: WatchedResource[] = [
      PLACEMENTS,
      CLUSTER_PROFILES,
      { ...KUSTOMIZATIONS, namespace: fluxNamespace, whenMissing: 'install Flux (kustomize-controller) first' },
      ...(values['input-providers']
        ? [
            {
              ...INPUT_PROVIDERS,
              namespace: fluxNamespace,
              whenMissing: 'install the Flux Operator first, or drop --input-providers',
            },
          ]
        : []),
    ];
    await checkHubAccess(hub, required, clusterProfileNamespaces);
    const refreshBeforeMs = 5 * 60_000;
    const access = createClusterAccess({ providers, hub, refreshBeforeMs, logger });
    const registry = new Registry();
    const delivery = startFluxDelivery({
      hub,
      reconciles: reconcileMetrics(registry, 'mco-flux'),
      namespace: values['flux-namespace'],
      inputProviders: values['input-providers'],
      templates,
      helmReleases: !values['no-helm-releases'],
      // Every cached profile is a peer: a profile naming an older one's server is refused.
      resolveAccess: (profile, peers) => access.accessFor(profile, undefined, peers),
      clusterProfileNamespaces,
      refreshBeforeMs,
      secretHoldTimeoutMs: holdSeconds === 0 ? Infinity : holdSeconds * 1000,
      orphans: { remedy: !values['report-orphans-only'] },
      ...(values.manager ? { manager: values.manager } : {}),
      logger,
    });
    const server = listen ? await startHealthServer({ ...listen, ...probes(delivery, registry) }) : undefined;
    logger.info('flux delivery started', {
      namespace: values['flux-namespace'],
      inputProviders: values['input-providers'],
      templates: templates.length,
      ...(server && listen ? { address: `${listen.host}:${server.port}` } : {}),
    });
    await untilSignal();
    logger.info('stopping');
    await server?.close();
    await delivery.stop();
    return 0;
  },
};

/** /healthz, /readyz (every cache synced) and /metrics of `mco flux --listen`. */
export function probes(
  delivery: Pick<FluxDelivery, 'orphans' | 'orphansDeleted' | 'ready'>,
  registry: Registry = new Registry(),
) {
  new Gauge({
    name: 'mco_flux_orphaned_objects',
    help: 'Flux objects a ResourceSet generated for a cluster none of its input providers names any more, left by the operator (docs/flux.md#orphaned-kustomizations)',
    labelNames: ['kind', 'resourceset_namespace', 'resourceset'],
    registers: [registry],
    collect() {
      this.reset();
      for (const o of delivery.orphans()) {
        this.inc({ kind: o.kind, resourceset_namespace: o.resourceSet.namespace, resourceset: o.resourceSet.name });
      }
    },
  });
  new Counter({
    name: 'mco_flux_orphans_deleted_total',
    help: 'Orphaned Flux objects mco flux deleted (docs/flux.md#orphaned-kustomizations)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(delivery.orphansDeleted());
    },
  });
  return { registry, isHealthy: () => true, isReady: () => delivery.ready() };
}

import { KubeClient, resourcePath } from '@mco/kube-runtime';
import { httpStatusOf, type KubeConnection, type Logger } from '@mco/runtime';
import { explainFailure, UsageError } from './cli.js';

export interface WatchedResource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  /** Watched in this namespace only, and only the objects this field selector picks (e.g. one name). */
  readonly namespace?: string;
  readonly fieldSelector?: string;
  /** What to do when the API does not serve the kind (its CRD is missing); default: install mco's CRDs. */
  readonly whenMissing?: string;
}

export const PLACEMENTS: WatchedResource = {
  group: 'orchestra.multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'multikubernetesclusterplacements',
};
export const CLUSTER_PROFILES: WatchedResource = {
  group: 'multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'clusterprofiles',
};
export const PLACEMENT_DECISIONS: WatchedResource = {
  group: 'multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'placementdecisions',
};

/**
 * Start-up check of a long-running command: the hub answers and this identity
 * may list every resource the command watches (ClusterProfiles in each of
 * `clusterProfileNamespaces` when given, as the informer lists them). A failure
 * (unreachable API, missing CRD, missing RBAC) is a UsageError in one line,
 * exit code 2, instead of informers retrying the same error forever.
 */
export async function checkHubAccess(
  hub: KubeConnection,
  resources: readonly WatchedResource[],
  clusterProfileNamespaces: readonly string[] = [],
  timeoutMs = 15_000,
): Promise<void> {
  const client = new KubeClient(hub, { timeoutMs });
  try {
    for (const r of resources) {
      const namespaces =
        r === CLUSTER_PROFILES && clusterProfileNamespaces.length ? clusterProfileNamespaces : [r.namespace ?? ''];
      for (const namespace of namespaces) {
        try {
          await client.get(resourcePath(r, namespace), { query: { limit: 1, fieldSelector: r.fieldSelector } });
        } catch (error) {
          const where = `${r.fieldSelector ? ` (${r.fieldSelector})` : ''}${namespace ? ` in ${namespace}` : ''}`;
          const kind = `${r.plural}${r.group ? `.${r.group}` : ''}`;
          // A list in a missing namespace is just empty: a 404 means the API does not serve the kind.
          if (r.whenMissing && httpStatusOf(error) === 404) {
            throw new UsageError(`cannot list ${kind}${where}: its CRD is not installed: ${r.whenMissing}`);
          }
          throw new UsageError(`cannot list ${kind}${where}: ${explainFailure(error)}`);
        }
      }
    }
  } finally {
    client.close();
  }
}

/**
 * Makes sure the leader Lease can be written: its namespace is created when
 * missing and this identity may create namespaces (a laptop), otherwise its
 * absence is a one-line start-up error. The probe is a dry-run create of the
 * Lease, which the elector's own RBAC allows.
 */
export async function ensureLeaseNamespace(
  hub: KubeConnection,
  namespace: string,
  name: string,
  logger: Logger,
  timeoutMs = 15_000,
): Promise<void> {
  const client = new KubeClient(hub, { timeoutMs });
  try {
    await ensureWithClient(client, namespace, name, logger);
  } finally {
    client.close();
  }
}

async function ensureWithClient(client: KubeClient, namespace: string, name: string, logger: Logger): Promise<void> {
  try {
    await client.create(
      resourcePath({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases' }, namespace),
      { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name } },
      { query: { dryRun: 'All' } },
    );
    return;
  } catch (error) {
    if (httpStatusOf(error) === 409) return; // the Lease exists, so does its namespace
    if (httpStatusOf(error) !== 404) {
      throw new UsageError(`cannot write the leader Lease ${namespace}/${name}: ${explainFailure(error)}`);
    }
  }
  try {
    await client.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    logger.info('created the namespace of the leader Lease', { namespace });
  } catch (error) {
    if (httpStatusOf(error) === 409) return;
    throw new UsageError(
      `the leader Lease namespace "${namespace}" does not exist and cannot be created (${explainFailure(error)}): ` +
        `create it (kubectl create namespace ${namespace}), or choose one with --leader-election-namespace`,
    );
  }
}

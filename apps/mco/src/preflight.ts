import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { httpStatusOf, type Logger } from '@mco/runtime';
import { explainFailure, UsageError } from './cli.js';

export interface WatchedResource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
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
 * may list every resource the command watches. A failure (unreachable API,
 * missing CRD, missing RBAC) is a UsageError in one line, exit code 2,
 * instead of informers retrying the same error forever.
 */
export async function checkHubAccess(
  kubeConfig: KubeConfig,
  resources: readonly WatchedResource[],
  timeoutMs = 15_000,
): Promise<void> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  for (const r of resources) {
    try {
      await withTimeout(api.listClusterCustomObject({ ...r, limit: 1 }), timeoutMs, kubeConfig);
    } catch (error) {
      throw new UsageError(`cannot list ${r.plural}.${r.group}: ${explainFailure(error)}`);
    }
  }
}

/**
 * Makes sure the leader Lease can be written: its namespace is created when
 * missing and this identity may create namespaces (a laptop), otherwise its
 * absence is a one-line start-up error. The probe is a dry-run create of the
 * Lease, which the elector's own RBAC allows.
 */
export async function ensureLeaseNamespace(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  logger: Logger,
  timeoutMs = 15_000,
): Promise<void> {
  const leases = kubeConfig.makeApiClient(CoordinationV1Api);
  try {
    await withTimeout(
      leases.createNamespacedLease({ namespace, body: { metadata: { name } }, dryRun: 'All' }),
      timeoutMs,
      kubeConfig,
    );
    return;
  } catch (error) {
    if (httpStatusOf(error) === 409) return; // the Lease exists, so does its namespace
    if (httpStatusOf(error) !== 404) {
      throw new UsageError(`cannot write the leader Lease ${namespace}/${name}: ${explainFailure(error)}`);
    }
  }
  try {
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    logger.info('created the namespace of the leader Lease', { namespace });
  } catch (error) {
    if (httpStatusOf(error) === 409) return;
    throw new UsageError(
      `the leader Lease namespace "${namespace}" does not exist and cannot be created (${explainFailure(error)}): ` +
        `create it (kubectl create namespace ${namespace}), or choose one with --leader-election-namespace`,
    );
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, kubeConfig: KubeConfig): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          Object.assign(
            new Error(
              `no answer from the Kubernetes API at ${kubeConfig.getCurrentCluster()?.server} within ${ms / 1000} s`,
            ),
            {
              code: 'ETIMEDOUT',
            },
          ),
        ),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

import type { ClusterProfile } from '../api/cluster-profile.js';
import { CLUSTER_PROFILE_API_VERSION, CONTROL_PLANE_HEALTHY } from '../api/cluster-profile.js';
import type { Placement, PlacementSpec, PlacementStatus } from '../api/placement.js';
import { PLACEMENT_API_VERSION, PLACEMENT_KIND } from '../api/placement.js';
import type { Signal } from '../api/signal.js';
import { TAINTS_ANNOTATION, type Taint } from '../api/taint.js';

export interface ClusterProfileOptions {
  readonly labels?: Record<string, string>;
  /** Sets the ControlPlaneHealthy condition; absent leaves it unknown. */
  readonly controlPlaneHealthy?: boolean;
  readonly deleting?: boolean;
  readonly server?: string;
  readonly clusterManager?: string;
  /** `status.properties`, in the given order. */
  readonly properties?: Record<string, string>;
  /** Taints, written as the `mco.x-k8s.io/taints` annotation; a string is written as is (e.g. malformed). */
  readonly taints?: readonly Taint[] | string;
}

/** A ClusterProfile named by `namespace/name` (namespace defaults to `fleet`). */
export function aClusterProfile(key: string, options: ClusterProfileOptions = {}): ClusterProfile {
  const [namespace, name] = key.includes('/') ? (key.split('/', 2) as [string, string]) : ['fleet', key];
  return {
    apiVersion: CLUSTER_PROFILE_API_VERSION,
    kind: 'ClusterProfile',
    metadata: {
      name,
      namespace,
      ...(options.labels ? { labels: options.labels } : {}),
      ...(options.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
      ...(options.taints !== undefined
        ? {
            annotations: {
              [TAINTS_ANNOTATION]: typeof options.taints === 'string' ? options.taints : JSON.stringify(options.taints),
            },
          }
        : {}),
    },
    spec: { displayName: name, clusterManager: { name: options.clusterManager ?? 'mco-test' } },
    status: {
      ...(options.controlPlaneHealthy !== undefined
        ? {
            conditions: [
              {
                type: CONTROL_PLANE_HEALTHY,
                status: options.controlPlaneHealthy ? 'True' : 'False',
                reason: options.controlPlaneHealthy ? 'Healthy' : 'Unhealthy',
                message: '',
                lastTransitionTime: '2026-01-01T00:00:00Z',
              },
            ],
          }
        : {}),
      ...(options.server ? { accessProviders: [{ name: 'kubeconfig', cluster: { server: options.server } }] } : {}),
      ...(options.properties
        ? { properties: Object.entries(options.properties).map(([name, value]) => ({ name, value })) }
        : {}),
    },
  };
}

/** A MultiKubernetesClusterPlacement in namespace `default` unless the key says otherwise. */
export function aPlacement(key: string, spec: PlacementSpec = {}, status?: PlacementStatus): Placement {
  const [namespace, name] = key.includes('/') ? (key.split('/', 2) as [string, string]) : ['default', key];
  return {
    apiVersion: PLACEMENT_API_VERSION,
    kind: PLACEMENT_KIND,
    metadata: { name, namespace, generation: 1 },
    spec,
    ...(status ? { status } : {}),
  };
}

/** An autoscaling spec: `minClustersBelowCapacityCeiling` and whatever else is given. */
export function anAutoscalingSpec(
  min: number,
  extra: Omit<
    NonNullable<NonNullable<PlacementSpec['scaling']>['autoscaleForCapacity']>,
    'minClustersBelowCapacityCeiling'
  > = {},
  selection: Omit<PlacementSpec, 'scaling'> = {},
): PlacementSpec {
  return {
    ...selection,
    scaling: {
      autoscaleForCapacity: {
        minClustersBelowCapacityCeiling: min,
        workloadDetails: { namespace: 'inference', deploymentName: 'server', hpaName: 'server' },
        ...extra,
      },
    },
  };
}

type SignalFields = Omit<Signal, 'cluster' | 'observedAt'>;

export function aSignal(cluster: string, observedAt: string, fields: SignalFields = {}): Signal {
  return { cluster, observedAt, ...fields };
}

/** A signal whose HPA is at its maximum and limited: the cluster is at its capacity ceiling. */
export function anAtCeilingSignal(cluster: string, observedAt: string, replicas = 10): Signal {
  return aSignal(cluster, observedAt, {
    hpa: {
      currentReplicas: replicas,
      desiredReplicas: replicas + 2,
      minReplicas: 1,
      maxReplicas: replicas,
      scalingLimited: { status: 'True', reason: 'TooManyReplicas' },
    },
    readyReplicas: replicas,
  });
}

/** A signal whose HPA sits at its minimum with TooFewReplicas: the cluster wants scale-in. */
export function aScaleInSignal(cluster: string, observedAt: string, replicas = 2): Signal {
  return aSignal(cluster, observedAt, {
    hpa: {
      currentReplicas: replicas,
      desiredReplicas: 0,
      minReplicas: replicas,
      maxReplicas: 10,
      scalingLimited: { status: 'True', reason: 'TooFewReplicas' },
    },
    readyReplicas: replicas,
  });
}

/**
 * A signal of a cluster with room to grow: neither at its ceiling nor wanting
 * scale-in, every replica ready, no pending pods and no FailedScaleUp.
 */
export function aSteadySignal(cluster: string, observedAt: string, replicas = 5): Signal {
  return aSignal(cluster, observedAt, {
    hpa: {
      currentReplicas: replicas,
      desiredReplicas: replicas,
      minReplicas: 1,
      maxReplicas: 10,
      scalingLimited: { status: 'False', reason: 'DesiredWithinRange' },
    },
    pendingPods: 0,
    failedScaleUp: false,
    readyReplicas: replicas,
    workloadHealthy: true,
  });
}

/** A signal whose source could not reach the cluster (`consecutivePolls` ≥ 2: unreachable). */
export function anUnreachableSignal(cluster: string, observedAt: string, consecutivePolls = 2): Signal {
  return aSignal(cluster, observedAt, { transportError: { reason: 'timeout', consecutivePolls } });
}

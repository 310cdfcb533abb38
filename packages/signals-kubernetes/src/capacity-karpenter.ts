import type { ClusterAccessManager } from '@mco/cluster-access';
import { parseQuantity, type Quantity } from '@mco/core';
import {
  McoError,
  answerEachCluster,
  capacityMetrics,
  httpStatusOf,
  podShapeOf,
  replicasThatFit,
  silentLogger,
  subtractQuantities,
  type CapacityRequest,
  type CapacitySource,
  type ClusterCapacity,
  type Logger,
  type PluginDeps,
  type PodShape,
  type PodSpecFields,
  type Toleration,
} from '@mco/runtime';
import type { KarpenterCapacityConfig } from './config.js';
import { describeError } from './source.js';

export const KARPENTER_SOURCE_NAME = 'karpenter';

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

interface Taint {
  key: string;
  value?: string;
  effect: string;
}

/** The fields of a karpenter.sh/v1 NodePool the source reads. */
export interface NodePool {
  metadata?: { name?: string };
  spec?: {
    limits?: Record<string, string | number>;
    template?: {
      metadata?: { labels?: Record<string, string> };
      spec?: { requirements?: Requirement[]; taints?: Taint[] };
    };
  };
  status?: { resources?: Record<string, string | number> };
}

/**
 * Node labels Karpenter sets on every node it launches, so a nodeSelector on
 * them is admitted unless a requirement rules its value out
 * (sigs.k8s.io/karpenter pkg/apis/v1 labels.go, WellKnownLabels).
 */
const WELL_KNOWN_LABELS = new Set([
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/arch',
  'kubernetes.io/os',
  'kubernetes.io/hostname',
  'karpenter.sh/capacity-type',
  'node.kubernetes.io/windows-build',
]);

/** Why a NodePool's nodes would not take the pod, or undefined when they would. */
export function refusal(pool: NodePool, pod: PodShape): string | undefined {
  const template = pool.spec?.template;
  const labels: Record<string, string> = {
    ...template?.metadata?.labels,
    'karpenter.sh/nodepool': pool.metadata?.name ?? '',
  };
  const requirements = template?.spec?.requirements ?? [];
  for (const [key, value] of Object.entries(pod.nodeSelector)) {
    if (key in labels) {
      if (labels[key] !== value) return `its nodes are labelled ${key}=${labels[key]}, the pod selects ${value}`;
      continue;
    }
    const on = requirements.filter((r) => r.key === key);
    if (on.length === 0 && !WELL_KNOWN_LABELS.has(key)) return `its nodes get no label ${key}, which the pod selects`;
    const failed = on.find((r) => !satisfies(r, value));
    if (failed)
      return `its requirement ${key} ${failed.operator} [${(failed.values ?? []).join(', ')}] rules out ${value}`;
  }
  for (const taint of template?.spec?.taints ?? []) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
    if (!pod.tolerations.some((t) => tolerates(t, taint)))
      return `the pod does not tolerate its taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect}`;
  }
  return undefined;
}

function satisfies(r: Requirement, value: string): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return values.includes(value);
    case 'NotIn':
      return !values.includes(value);
    case 'Exists':
      return true;
    case 'DoesNotExist':
      return false;
    case 'Gt':
      return Number(value) > Number(values[0]);
    case 'Lt':
      return Number(value) < Number(values[0]);
    default:
      return false;
  }
}

/** core/v1 toleration matching (k8s.io/api/core/v1 toleration.go ToleratesTaint). */
function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

function quantity(value: string | number | undefined, where: string): Quantity | undefined {
  if (value === undefined) return undefined;
  const q = parseQuantity(String(value));
  if (!q) throw new McoError('Invalid', `${where} "${value}" is not a quantity`, false);
  return q;
}

/**
 * Replicas of `pod` a NodePool can still launch nodes for: for each resource
 * the pod requests and the pool limits, `spec.limits` minus
 * `status.resources` (what its nodes provide now), divided by the request;
 * the least of them. Undefined when no limit bounds it.
 */
export function nodePoolRoom(pool: NodePool, pod: PodShape): { replicas: number; bound: string } | undefined {
  const name = pool.metadata?.name ?? '';
  let room: { replicas: number; bound: string } | undefined;
  for (const [resource, request] of pod.requests) {
    const limit = quantity(pool.spec?.limits?.[resource], `NodePool ${name} spec.limits.${resource}`);
    if (!limit) continue;
    const used = quantity(pool.status?.resources?.[resource], `NodePool ${name} status.resources.${resource}`);
    const replicas = replicasThatFit(used ? subtractQuantities(limit, used) : limit, request);
    if (!room || replicas < room.replicas) room = { replicas, bound: resource };
  }
  return room;
}

/**
 * What Karpenter may still launch on one cluster for `pod`: the room of every
 * NodePool whose nodes would take it, summed; unknown when one of those has
 * no limit on what the pod requests (or the pod requests nothing), or the
 * cluster has no NodePool at all.
 */
export function karpenterCapacity(pools: readonly NodePool[], pod: PodShape): NonNullable<ClusterCapacity['answer']> {
  if (pools.length === 0) return { reason: 'no Karpenter NodePool on the cluster' };
  const refused: string[] = [];
  const rooms: string[] = [];
  let total = 0;
  for (const pool of pools) {
    const name = pool.metadata?.name ?? '';
    const why = refusal(pool, pod);
    if (why) {
      refused.push(`NodePool ${name}: ${why}`);
      continue;
    }
    const room = nodePoolRoom(pool, pod);
    if (!room) {
      const requested = [...pod.requests.keys()].join(', ') || 'nothing';
      return { reason: `NodePool ${name} admits the pod and has no limit on what it requests (${requested})` };
    }
    total += room.replicas;
    rooms.push(`NodePool ${name}: ${room.replicas} (${room.bound} limit)`);
  }
  if (rooms.length === 0) return { addableReplicas: 0, reason: `no NodePool admits the pod (${refused.join('; ')})` };
  return { addableReplicas: total, reason: `room below the NodePool limits for ${total}: ${rooms.join(', ')}` };
}

export interface KarpenterCapacitySourceOptions {
  readonly access: ClusterAccessManager;
  readonly config: Pick<KarpenterCapacityConfig, 'timeoutSeconds' | 'concurrency'>;
  readonly metrics: PluginDeps['metrics'];
  readonly now: () => Date;
  readonly logger?: Logger;
}

interface Deployment {
  spec?: { template?: { spec?: PodSpecFields } };
}

/**
 * Answers from each candidate's Karpenter NodePools (karpenter.sh/v1): how
 * many replicas fit below their limits. The pod shape comes from the
 * workload's Deployment on a cluster the placement is listed on (or on the
 * candidate itself when none answers). It sees only Karpenter's limits: a
 * cloud stockout is invisible to it, and free room on existing nodes is not
 * counted.
 */
export function createKarpenterCapacitySource(options: KarpenterCapacitySourceOptions): CapacitySource {
  const { access, config, now } = options;
  const logger = options.logger ?? silentLogger;
  const metrics = capacityMetrics(options.metrics);
  const outOfTime = new Set<string>();
  const timeoutMs = config.timeoutSeconds * 1000;

  return {
    async answer(request, abort) {
      const workload = request.placement.spec.scaling?.autoscaleForCapacity?.workloadDetails;
      const namespace = workload?.namespace ?? request.placement.namespace;
      const deployment = workload && `Deployment ${namespace}/${workload.deploymentName}`;
      const readShape = async (profile: CapacityRequest['clusters'][number]['profile'], signal: AbortSignal) => {
        const client = await access.clientFor(profile, signal);
        await client.access.getCredential(signal);
        const path = `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments/${encodeURIComponent(workload!.deploymentName)}`;
        const found = await client.client.get<Deployment>(path, { signal });
        return podShapeOf(found.spec?.template?.spec ?? {}, deployment);
      };
      // Where the workload runs: read once for every candidate, within one cluster's budget.
      let shape: PodShape | undefined;
      if (workload) {
        for (const placed of request.placed) {
          if (abort?.aborted) break;
          const budget = AbortSignal.timeout(timeoutMs);
          try {
            shape = await readShape(placed.profile, abort ? AbortSignal.any([abort, budget]) : budget);
            break;
          } catch (error) {
            logger.debug('pod template not read', { cluster: placed.key, ...describeError(error, deployment!) });
          }
        }
      }
      const result = await answerEachCluster(
        request,
        {
          source: KARPENTER_SOURCE_NAME,
          concurrency: config.concurrency,
          timeoutMs,
          outOfTime,
          metrics,
          now,
          ...(abort ? { abort } : {}),
        },
        async ({ profile }, signal): Promise<ClusterCapacity> => {
          if (!workload)
            throw new McoError('Invalid', 'spec.scaling.autoscaleForCapacity.workloadDetails is not set', false);
          const client = await access.clientFor(profile, signal);
          await client.access.getCredential(signal);
          let pod = shape;
          if (!pod) {
            try {
              pod = await readShape(profile, signal);
            } catch (error) {
              if (httpStatusOf(error) !== 404) throw error;
              const where = request.placed.length ? 'on a listed cluster nor here' : 'here (no listed cluster yet)';
              return {
                answer: { reason: `${deployment} could not be read ${where}: its pod shape is unknown` },
                errors: [],
              };
            }
          }
          let pools: NodePool[];
          try {
            pools = (await client.client.get<{ items: NodePool[] }>('/apis/karpenter.sh/v1/nodepools', { signal }))
              .items;
          } catch (error) {
            if (httpStatusOf(error) !== 404) {
              const problem = describeError(error, 'NodePools');
              throw new McoError(problem.code, problem.message, true, { cause: error });
            }
            return {
              answer: { reason: 'Karpenter is not installed (karpenter.sh/v1 NodePools are not served)' },
              errors: [],
            };
          }
          return { answer: karpenterCapacity(pools, pod), errors: [] };
        },
      );
      for (const e of result.errors) logger.debug('capacity unknown', { ...e, placement: request.placement.name });
      return result;
    },
  };
}

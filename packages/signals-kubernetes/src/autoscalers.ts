// What the node autoscalers write on a pod they cannot find a node for, and
// which of those reports mean the cluster cannot grow for the pod: its
// capacity ceiling. Every string is upstream's, cited next to it; the reasons
// for what counts are in docs/signals.md.

import type { CoreEvent } from './kube-types.js';

/** The node autoscaler whose Events tell a member's ceiling; `auto` reads Karpenter's too where it is installed. */
export type AutoscalerSetting = 'auto' | 'cluster-autoscaler' | 'karpenter';

// ---- The cluster autoscaler (k8s.io/autoscaler, tag cluster-autoscaler-1.36.1).

/**
 * cluster-autoscaler/processors/status/eventing_scale_up_processor.go: on each
 * pod left unschedulable by a loop that scaled nothing, Normal
 * `NotTriggerScaleUp`, "pod didn't trigger scale-up: <reasons>", the reasons
 * counted per node group ("1 max node group size reached, 2 node(s) didn't
 * match Pod's node affinity/selector", in map order). The autoscaler writes no
 * `FailedScaleUp` Event in any release; a failed scale-up is reported on its
 * status ConfigMap and then as the backoff below.
 */
export const NOT_TRIGGER_SCALE_UP = 'NotTriggerScaleUp';

/**
 * The ceiling phrases that are a size limit: a maximum someone configured,
 * which stays until raised (fail-back reads it, rule F2). The backoff after
 * a failed scale-up is not one: a stockout passes.
 */
export const CLUSTER_AUTOSCALER_LIMIT_PHRASES = [
  // core/scaleup/orchestrator/skippedreasons.go (1.28 to 1.36.1) MaxLimitReachedReason: a group at its max size.
  'max node group size reached',
  // processors/status/eventing_scale_up_processor.go (1.34+): --max-nodes-total reached.
  'max total nodes in cluster reached',
  // core/scaleup/orchestrator/orchestrator.go: an atomic group would pass --max-nodes-total.
  'atomic scale-up exceeds cluster node count limit',
  // skippedreasons.go NewMaxResourceLimitReached (1.35+): `exceeded quota: "cluster-wide", resources: cpu`
  // for --cores-total / --memory-total (cloudprovider/resource_limiter.go ID "cluster-wide").
  'exceeded quota: ',
  // skippedreasons.go NewMaxResourceLimitReached (1.28 to 1.34): "max cluster cpu, memory limit reached".
  'max cluster ',
] as const;

/**
 * The reasons of a NotTriggerScaleUp message that mean a node group could not
 * grow (a node group that rejected the pod, e.g. "didn't match Pod's node
 * affinity/selector" or "Insufficient cpu", could not take it even if it grew).
 */
export const CLUSTER_AUTOSCALER_CEILING_PHRASES = [
  ...CLUSTER_AUTOSCALER_LIMIT_PHRASES,
  // skippedreasons.go BackoffReason: a group whose scale-up failed (stockout, quota, nodes that never
  // registered) is skipped for --initial-node-group-backoff-duration (5m), doubling up to 30m.
  'in backoff after failed scale-up',
] as const;

/** Whether a cluster-autoscaler Event (of one of `eventReasons`) says the cluster cannot grow for its pod. */
export function clusterAutoscalerCeiling(event: CoreEvent): boolean {
  if (event.reason !== NOT_TRIGGER_SCALE_UP) return true;
  const message = event.message ?? '';
  return CLUSTER_AUTOSCALER_CEILING_PHRASES.some((phrase) => message.includes(phrase));
}

/** Whether a cluster-autoscaler Event says its pod waits on a size limit (not a failed scale-up, which passes). */
export function clusterAutoscalerLimit(event: CoreEvent): boolean {
  if (event.reason !== NOT_TRIGGER_SCALE_UP) return false;
  const message = event.message ?? '';
  return CLUSTER_AUTOSCALER_LIMIT_PHRASES.some((phrase) => message.includes(phrase));
}

// ---- Karpenter (sigs.k8s.io/karpenter v1.15.0). Its recorder is core/v1's, named "karpenter"
// (pkg/operator/operator.go AppName, mgr.GetEventRecorderFor(AppName)), so `source.component` is
// "karpenter"; kube-scheduler's own FailedScheduling comes from "default-scheduler".

/**
 * pkg/events/reason.go FailedScheduling; pkg/controllers/provisioning/scheduling/events.go
 * PodFailedToScheduleEvent: Warning, "Failed to schedule pod, <error>", deduplicated per pod for
 * 5 minutes (DedupeTimeout), so a pod Karpenter keeps failing gets it again at most every 5 minutes.
 */
export const KARPENTER_FAILED_SCHEDULING = 'FailedScheduling';

/**
 * The errors of a FailedScheduling message that mean a NodePool that could take the pod is at its
 * `limits` (pkg/controllers/provisioning/scheduling/scheduler.go addToNewNodeClaim, wrapped by
 * operatorpkg's serrors as "<error> (NodePool=<name>)"; several NodePools' errors joined by "; ").
 * Any other error (no NodePool's requirements, taints or instance types fit the pod) is not a ceiling.
 */
export const KARPENTER_LIMIT_PHRASES = [
  'all available instance types exceed limits for nodepool',
  'node limits have been exhausted for nodepool',
] as const;

/**
 * pkg/events/reason.go InsufficientCapacityError; pkg/controllers/nodeclaim/lifecycle/events.go
 * InsufficientCapacityErrorPodEvent: on each pod a NodeClaim was launched for when the cloud has
 * no capacity for it, "NodeClaim <name> nominated for this pod failed to launch: insufficient
 * capacity, <cloud error>". The NodeClaim itself is deleted at once (lifecycle/launch.go), so
 * its condition is never seen; the pod's Event is what remains.
 */
export const KARPENTER_INSUFFICIENT_CAPACITY = 'InsufficientCapacityError';

/**
 * pkg/controllers/provisioning/scheduling/events.go NominatePodEvent: Karpenter found the pod a
 * node or NodeClaim ("Pod should schedule on: nodeclaim/<name>"), which ends an earlier ceiling.
 */
export const KARPENTER_NOMINATED = 'Nominated';

/** DedupeTimeout of PodFailedToScheduleEvent, plus a minute for Karpenter's 10 s retry and batching. */
export const KARPENTER_REPEAT_SECONDS = 360;

/** What one Karpenter Event says about its pod: a ceiling, a place found, or neither. */
export function karpenterVerdict(event: CoreEvent): 'ceiling' | 'placed' | undefined {
  switch (event.reason) {
    case KARPENTER_FAILED_SCHEDULING: {
      const message = event.message ?? '';
      return KARPENTER_LIMIT_PHRASES.some((phrase) => message.includes(phrase)) ? 'ceiling' : undefined;
    }
    case KARPENTER_INSUFFICIENT_CAPACITY:
      return 'ceiling';
    case KARPENTER_NOMINATED:
      return 'placed';
    default:
      return undefined;
  }
}

/**
 * Whether Karpenter says it cannot add a node for one of `waiting` (pods still
 * Pending and not bound to a node): the pod's latest Karpenter Event that is a
 * verdict is a ceiling, last seen at `since` or later. A later `Nominated`
 * ends it; a pod that was bound or deleted no longer counts.
 */
export function karpenterCeiling(
  events: readonly CoreEvent[],
  waiting: ReadonlySet<string>,
  reporter: string,
  since: number,
  time: (event: CoreEvent) => number,
): boolean {
  return latestCeilings(events, waiting, reporter, since, time).length > 0;
}

/**
 * Whether one of those ceilings is a NodePool at its `limits` (a size limit,
 * which stays until raised), not insufficient capacity (a stockout, which passes).
 */
export function karpenterLimit(
  events: readonly CoreEvent[],
  waiting: ReadonlySet<string>,
  reporter: string,
  since: number,
  time: (event: CoreEvent) => number,
): boolean {
  return latestCeilings(events, waiting, reporter, since, time).some((e) => e.reason === KARPENTER_FAILED_SCHEDULING);
}

/** Per waiting pod, its latest Karpenter verdict when that is a ceiling seen at `since` or later. */
function latestCeilings(
  events: readonly CoreEvent[],
  waiting: ReadonlySet<string>,
  reporter: string,
  since: number,
  time: (event: CoreEvent) => number,
): CoreEvent[] {
  const latest = new Map<string, { at: number; verdict: 'ceiling' | 'placed'; event: CoreEvent }>();
  for (const event of events) {
    const pod = event.involvedObject.name;
    if (pod === undefined || !waiting.has(pod) || event.source?.component !== reporter) continue;
    const verdict = karpenterVerdict(event);
    if (!verdict) continue;
    const at = time(event);
    const seen = latest.get(pod);
    // On the same instant a placement wins: never a ceiling on doubt.
    if (!seen || at > seen.at || (at === seen.at && verdict === 'placed')) latest.set(pod, { at, verdict, event });
  }
  return [...latest.values()].filter((l) => l.verdict === 'ceiling' && l.at >= since).map((l) => l.event);
}

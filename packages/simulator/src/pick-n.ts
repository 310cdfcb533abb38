import {
  clusterKey,
  compileSelection,
  createInventory,
  selectClusters,
  type ClusterProfile,
  type PlacementCluster,
  type PlacementSpec,
  type PlacementStatus,
  type Transition,
} from '@mco/core';
import type { PolicyDecision } from './mco-v02.js';
import type { ClusterSpec } from './scenario.js';

/**
 * The `n` of pick-N: the fewest clusters, taken in the placement's order of
 * preference, whose room (`min(HPA maxReplicas, maxNodes × podsPerNode)`)
 * holds the replicas the peak demand needs at the HPA target. An oracle
 * sizing: it knows the peak in advance, as a platform team sizing an OCM
 * Placement `numberOfClusters` or a KubeFleet PickN placement would aim to.
 */
export function pickNSize(
  order: readonly string[],
  clusters: ReadonlyMap<string, ClusterSpec>,
  peakReplicas: number,
): number {
  let room = 0;
  let n = 0;
  for (const key of order) {
    const c = clusters.get(key);
    if (!c) continue;
    n++;
    room += Math.min(c.hpa.maxReplicas, c.nodePool.maxNodes * c.nodePool.podsPerNode);
    if (room >= peakReplicas) break;
  }
  return Math.max(1, n);
}

/**
 * pick-N: a fixed number of clusters, chosen by preference, always ACTIVE, as
 * OCM's and KubeFleet's PickN schedule them: clusters already chosen stay
 * while they are eligible, a cluster that is no longer eligible is replaced
 * by the next one by preference. No capacity signals, no health.
 */
export function decidePickN(input: {
  readonly nowMs: number;
  readonly spec: PlacementSpec;
  readonly clusterProfiles: readonly ClusterProfile[];
  readonly status: PlacementStatus | undefined;
  readonly n: number;
}): PolicyDecision {
  const selection = compileSelection(input.spec);
  const previous = input.status ?? {};
  if (!selection.ok) return { status: previous, transitions: [] };
  const now = new Date(input.nowMs).toISOString().replace('.000Z', 'Z');
  const result = selectClusters(selection.value, createInventory(input.clusterProfiles));
  const transitions: Transition[] = [];
  const keyOf = (e: PlacementCluster) => clusterKey(e.namespace, e.name);
  const clusters = (previous.clusters ?? []).filter((e) => {
    if (result.isStillEligible(keyOf(e))) return true;
    transitions.push({ cluster: keyOf(e), id: 'R3', from: e.state, to: null, reason: 'no longer eligible (pick-N)' });
    return false;
  });
  const removed = transitions.length > 0;
  const listed = new Set(clusters.map(keyOf));
  for (const c of result.eligible) {
    if (clusters.length >= input.n) break;
    if (listed.has(c.key)) continue;
    clusters.push({ name: c.name, namespace: c.namespace, state: 'ACTIVE', lastTransitionTime: now });
    transitions.push({ cluster: c.key, id: 'P1', from: null, to: 'ACTIVE', reason: `one of ${input.n} (pick-N)` });
  }
  const added = transitions.some((t) => t.id === 'P1');
  return {
    status: {
      ...previous,
      clusters,
      ...(added ? { lastAdditionTime: now } : {}),
      ...(removed ? { lastClusterRemovalTime: now } : {}),
    },
    transitions,
  };
}

import {
  clusterKey,
  compileSelection,
  createInventory,
  DEFAULT_BEHAVIOR,
  drainStepSize,
  selectClusters,
  type ClusterProfile,
  type ClusterState,
  type Draining,
  type PlacementCluster,
  type PlacementSpec,
  type PlacementStatus,
  type Signal,
  type Transition,
  type TransitionId,
} from '@mco/core';

/*
 * Google's Multi-Cluster Orchestrator (MCO) v0.2 as documented, as a baseline
 * policy of its own: it shares no decision code with mco's engine. MCO's
 * controller source was never published; every rule below cites the public
 * source it comes from, in GoogleCloudPlatform/gke-fleet-management, directory
 * multi-cluster-orchestrator/ (paths below are relative to it):
 *   [overview]  https://github.com/GoogleCloudPlatform/gke-fleet-management/blob/main/multi-cluster-orchestrator/docs/overview.md
 *   [readme]    README.md
 *   [types]     api/v1alpha1/multikubernetesclusterplacement_types.go (v0.1)
 *   [crd]       fleet-charts/orchestrator/templates/crd/ (v0.2.0)
 *   [samples]   samples/gemma_vllm/
 * Where they leave a detail open, the reading most favourable to MCO is taken
 * and marked ASSUMPTION with its reason.
 */

/** What one evaluation of a placement produced: the new status and the transitions that led there. */
export interface PolicyDecision {
  readonly status: PlacementStatus;
  readonly transitions: readonly Transition[];
}

export interface McoV02Input {
  readonly nowMs: number;
  readonly spec: PlacementSpec;
  readonly clusterProfiles: readonly ClusterProfile[];
  readonly signals: readonly Signal[];
  readonly status: PlacementStatus | undefined;
  /**
   * The order of preference, as ClusterProfile keys (first preferred). MCO
   * orders clusters only by its rules [overview]; the simulator passes the
   * placement's preference order at the start, frozen (see `preferenceOrder`).
   */
  readonly order: readonly string[];
}

const selections = new WeakMap<PlacementSpec, ReturnType<typeof compileSelection>>();

function selectionOf(spec: PlacementSpec) {
  let selection = selections.get(spec);
  if (!selection) {
    selection = compileSelection(spec);
    selections.set(spec, selection);
  }
  return selection;
}

/**
 * The eligible clusters in the placement's order of preference, evaluated
 * once. ASSUMPTION: MCO has no preference weights or property sorters; its
 * order is that of its rules, e.g. a v0.1 `cluster-list` rule [types]. An MCO
 * user who prefers the cheapest region writes that list in price order, so
 * MCO gets the placement's preference order as a fixed list: the same
 * priority as mco, never re-sorted while the run lasts.
 */
export function preferenceOrder(spec: PlacementSpec, profiles: readonly ClusterProfile[]): string[] {
  const selection = selectionOf(spec);
  if (!selection.ok) return [];
  return selectClusters(selection.value, createInventory(profiles)).eligible.map((c) => c.key);
}

/** Replicas about one pod: MCO removes a drained cluster "once it runs about one pod" [overview]. */
const ABOUT_ONE_POD = 1;

/**
 * At the capacity ceiling [overview]: the workload has pending pods and the
 * cluster-autoscaler reported FailedScaleUp (the log-based
 * `ClusterAutoscalerFailedScaleUp` metric), or the HPA is at `maxReplicas`
 * with `ScalingLimited=True`. MCO reads these from Cloud Monitoring and has no
 * notion of a transport error or of staleness: without data (no signal, or a
 * transport error) neither condition holds.
 */
export function atCeilingV02(signal: Signal | undefined): boolean {
  if (!signal || signal.transportError) return false;
  // MCO's documented metric filters on FailedScaleUp only (a log-based ClusterAutoscalerFailedScaleUp
  // metric): the simulator gives this policy a failedScaleUp that NotTriggerScaleUp never sets.
  const pendingAndFailed = (signal.pendingPods ?? 0) > 0 && signal.failedScaleUp === true;
  const hpa = signal.hpa;
  const hpaAtMax =
    hpa?.currentReplicas !== undefined &&
    hpa.maxReplicas !== undefined &&
    hpa.currentReplicas >= hpa.maxReplicas &&
    hpa.scalingLimited?.status === 'True';
  return pendingAndFailed || hpaAtMax;
}

/**
 * The HPA wants fewer replicas than its `minReplicas` [overview]: it runs at
 * its minimum and reports `ScalingLimited=True` with reason `TooFewReplicas`
 * (the condition the HPA controller sets when it clamps a lower recommendation).
 */
export function wantsFewerThanMinV02(signal: Signal | undefined): boolean {
  const hpa = signal?.transportError ? undefined : signal?.hpa;
  return (
    hpa?.currentReplicas !== undefined &&
    hpa.minReplicas !== undefined &&
    hpa.currentReplicas <= hpa.minReplicas &&
    hpa.scalingLimited?.status === 'True' &&
    hpa.scalingLimited.reason === 'TooFewReplicas'
  );
}

/** One reconcile of MCO v0.2 for one placement. Pure: same input, same output. */
export function decideMcoV02(input: McoV02Input): PolicyDecision {
  const now = new Date(input.nowMs).toISOString().replace('.000Z', 'Z');
  const selection = selectionOf(input.spec);
  const previous = input.status ?? {};
  if (!selection.ok) return { status: previous, transitions: [] };
  const result = selectClusters(selection.value, createInventory(input.clusterProfiles));
  const rank = new Map(input.order.map((key, i) => [key, i]));
  // Clusters that became eligible after the start go after the ordered ones, in rule order.
  const eligible = result.eligible
    .map((c, i) => ({ key: c.key, namespace: c.namespace, name: c.name, r: rank.get(c.key) ?? input.order.length + i }))
    .sort((a, b) => a.r - b.r);
  const rankOf = (key: string) => eligible.findIndex((c) => c.key === key);
  const signals = new Map(input.signals.map((s) => [s.cluster, s]));
  const autoscale = input.spec.scaling?.autoscaleForCapacity;
  const transitions: Transition[] = [];
  let added = false;
  let removed = false;
  const move = (entry: PlacementCluster, id: TransitionId, to: ClusterState | null, reason: string) => {
    transitions.push({ cluster: keyOf(entry), id, from: entry.state, to, reason });
  };
  const set = (entry: PlacementCluster, state: ClusterState, draining?: Draining): PlacementCluster => {
    const { draining: _old, ...rest } = entry;
    return { ...rest, state, lastTransitionTime: now, ...(draining ? { draining } : {}) };
  };

  // Without autoscaleForCapacity every eligible cluster is placed [overview]; the rest leave at once.
  if (!autoscale) {
    const kept = (previous.clusters ?? []).filter((e) => {
      if (result.isStillEligible(keyOf(e))) return true;
      move(e, 'R3', null, 'no longer eligible: removed (MCO v0.2, no autoscaling)');
      removed = true;
      return false;
    });
    const listed = new Set(kept.map(keyOf));
    for (const c of eligible) {
      if (listed.has(c.key)) continue;
      const entry: PlacementCluster = {
        name: c.name,
        namespace: c.namespace,
        state: 'ACTIVE',
        lastTransitionTime: now,
      };
      transitions.push({ cluster: c.key, id: 'P1', from: null, to: 'ACTIVE', reason: 'eligible (MCO v0.2)' });
      kept.push(entry);
      added = true;
    }
    return { status: stamp(previous, kept, now, added, removed), transitions };
  }

  const useDraining = autoscale.useDraining === true;
  // Draining [overview, crd]: a SCALING_IN (or EVICTING) cluster gets a shrinking
  // draining.desiredMaxReplicas, stamped lastReplicaCountDecrease.
  // ASSUMPTION: the documents give no step rate; MCO gets mco's default rate
  // (25% of desiredMaxReplicas, at least one, every 60 s), so neither policy
  // drains at a rate chosen against it.
  const startDrain = (signal: Signal | undefined): Draining | undefined =>
    useDraining
      ? {
          desiredMaxReplicas: Math.max(ABOUT_ONE_POD, signal?.hpa?.currentReplicas ?? signal?.hpa?.maxReplicas ?? 1),
          lastReplicaCountDecrease: now,
        }
      : undefined;
  const stepDrain = (d: Draining): Draining => {
    const last = Date.parse(d.lastReplicaCountDecrease);
    if (d.desiredMaxReplicas <= ABOUT_ONE_POD || input.nowMs - last < DEFAULT_BEHAVIOR.drainStepIntervalSeconds * 1000)
      return d;
    const step = drainStepSize(d.desiredMaxReplicas, DEFAULT_BEHAVIOR.drainStepPercent);
    return { desiredMaxReplicas: Math.max(ABOUT_ONE_POD, d.desiredMaxReplicas - step), lastReplicaCountDecrease: now };
  };
  // Removal [overview]: with useDraining, once the cluster runs about one pod;
  // without it, removal follows the HPA. ASSUMPTION: without draining the
  // cluster goes as soon as its HPA runs at its minimum (it entered SCALING_IN
  // for wanting fewer than that), and an EVICTING cluster at once: the
  // earliest reading, which saves MCO the most idle capacity.
  const drained = (entry: PlacementCluster): boolean => {
    const hpa = signals.get(keyOf(entry))?.hpa;
    if (!useDraining)
      return entry.state === 'EVICTING' || (hpa?.currentReplicas ?? Infinity) <= (hpa?.minReplicas ?? 0);
    return (hpa?.currentReplicas ?? Infinity) <= ABOUT_ONE_POD;
  };

  let clusters: PlacementCluster[] = [];
  for (const entry of previous.clusters ?? []) {
    const key = keyOf(entry);
    const signal = signals.get(key);
    const stillEligible = result.isStillEligible(key);
    // Clusters that stop being eligible become EVICTING [overview].
    if (!stillEligible && (entry.state === 'ACTIVE' || entry.state === 'SCALING_IN')) {
      const id = entry.state === 'ACTIVE' ? 'E1' : 'E3';
      move(entry, id, 'EVICTING', `no longer eligible: ${result.ineligibleBecause(key)} (MCO v0.2)`);
      clusters.push(set(entry, 'EVICTING', entry.draining ?? startDrain(signal)));
      continue;
    }
    // ASSUMPTION: an EVICTING cluster that is eligible again becomes ACTIVE
    // (the documents are silent): it is already running, which saves MCO a cold start.
    if (stillEligible && entry.state === 'EVICTING') {
      move(entry, 'E2', 'ACTIVE', 'eligible again (MCO v0.2)');
      clusters.push(set(entry, 'ACTIVE'));
      continue;
    }
    if ((entry.state === 'SCALING_IN' || entry.state === 'EVICTING') && drained(entry)) {
      const id = entry.state === 'SCALING_IN' ? 'R1' : 'R3';
      const replicas = signal?.hpa?.currentReplicas;
      move(entry, id, null, `drained: observed ${replicas ?? '?'} replica(s) (MCO v0.2)`);
      removed = true;
      continue;
    }
    // No health checking: UNHEALTHY is "planned but not implemented" [overview, readme].
    clusters.push(entry.draining ? { ...entry, draining: stepDrain(entry.draining) } : entry);
  }

  // Scale-out [overview]: while fewer than minClustersBelowCapacityCeiling ACTIVE
  // clusters are below the ceiling, re-activate a SCALING_IN cluster if there
  // is one, else add the next eligible cluster, within maxClusters (0: no limit [crd]).
  // ASSUMPTION: the highest-priority SCALING_IN cluster is re-activated, and one
  // reconcile adds as many clusters as the minimum needs (each counts below the
  // ceiling at once), so MCO is never slower to scale out than mco.
  const min = Math.max(1, autoscale.minClustersBelowCapacityCeiling ?? 1);
  const maxClusters = autoscale.maxClusters ?? 0;
  const belowCeiling = () =>
    clusters.filter((e) => e.state === 'ACTIVE' && !atCeilingV02(signals.get(keyOf(e)))).length;
  let headroom = belowCeiling();
  let scaledOut = false;
  while (headroom < min) {
    const scalingIn = clusters
      .filter((e) => e.state === 'SCALING_IN')
      .sort((a, b) => rankOrLast(rankOf(keyOf(a))) - rankOrLast(rankOf(keyOf(b))))[0];
    if (scalingIn) {
      move(scalingIn, 'P3', 'ACTIVE', `below-ceiling clusters ${headroom} < min ${min}: re-activated (MCO v0.2)`);
      clusters = clusters.map((e) => (e === scalingIn ? set(e, 'ACTIVE') : e));
    } else {
      if (maxClusters > 0 && clusters.length >= maxClusters) break;
      const listed = new Set(clusters.map(keyOf));
      const next = eligible.find((c) => !listed.has(c.key));
      if (!next) break;
      transitions.push({
        cluster: next.key,
        id: 'P1',
        from: null,
        to: 'ACTIVE',
        reason: `below-ceiling clusters ${headroom} < min ${min}: added the next eligible cluster (MCO v0.2)`,
      });
      clusters.push({ name: next.name, namespace: next.namespace, state: 'ACTIVE', lastTransitionTime: now });
      added = true;
    }
    scaledOut = true;
    headroom++;
  }

  // Scale-in [overview]: a cluster whose HPA wants fewer replicas than its
  // minReplicas becomes SCALING_IN; no window, no cooldown [overview: none documented].
  // ASSUMPTION: one cluster per reconcile, the lowest-priority one, and only
  // when the others keep the minimum below the ceiling and no scale-out
  // happened in the same reconcile: otherwise the next reconcile would
  // re-activate it at once, a flap that only hurts MCO.
  if (!scaledOut) {
    const candidate = clusters
      .filter((e) => e.state === 'ACTIVE' && wantsFewerThanMinV02(signals.get(keyOf(e))))
      .sort((a, b) => rankOrLast(rankOf(keyOf(b))) - rankOrLast(rankOf(keyOf(a))))[0];
    const atCeiling = candidate ? atCeilingV02(signals.get(keyOf(candidate))) : true;
    if (candidate && headroom - (atCeiling ? 0 : 1) >= min) {
      const signal = signals.get(keyOf(candidate));
      move(candidate, 'P2', 'SCALING_IN', 'HPA wants fewer replicas than minReplicas (TooFewReplicas) (MCO v0.2)');
      clusters = clusters.map((e) => (e === candidate ? set(e, 'SCALING_IN', startDrain(signal)) : e));
    }
  }
  return { status: stamp(previous, clusters, now, added, removed), transitions };
}

function keyOf(entry: PlacementCluster): string {
  return clusterKey(entry.namespace, entry.name);
}

const rankOrLast = (r: number) => (r < 0 ? Infinity : r);

/** The lastAdditionTime / lastClusterRemovalTime stamps [crd]. */
function stamp(
  previous: PlacementStatus,
  clusters: PlacementCluster[],
  now: string,
  added: boolean,
  removed: boolean,
): PlacementStatus {
  return {
    ...previous,
    clusters,
    ...(added ? { lastAdditionTime: now } : {}),
    ...(removed ? { lastClusterRemovalTime: now } : {}),
  };
}

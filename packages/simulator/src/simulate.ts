import {
  CLUSTER_MANAGER_LABEL,
  CLUSTER_PROFILE_API_VERSION,
  CONTROL_PLANE_HEALTHY,
  clusterKey,
  compileSelection,
  createInventory,
  decide,
  resolveBehavior,
  selectClusters,
  type ClusterProfile,
  type ClusterState,
  type Decision,
  type DecideInput,
  type PlacementSpec,
  type PlacementStatus,
  type Signal,
  type TransitionId,
} from '@mco/core';
import { demandSeries } from './demand.js';
import { expandEvents, targetsOf, type Action, type ClusterConditions } from './events.js';
import { HorizontalPodAutoscaler, NodePoolModel, Pods, spreadLoad } from './model.js';
import { hashRandom } from './random.js';
import type { ClusterSpec, Scenario } from './scenario.js';

/** The policies one run compares. */
export const POLICIES = ['mco', 'mco-fail-back', 'mco-as-documented', 'always-on'] as const;
export type PolicyName = (typeof POLICIES)[number];

export const POLICY_LABELS: Readonly<Record<PolicyName, string>> = {
  mco: 'mco',
  'mco-fail-back': 'mco with fail-back',
  'mco-as-documented': 'MCO as documented',
  'always-on': 'all eligible clusters always on',
};

/**
 * The policies a scenario runs by default: all of them, except "mco with
 * fail-back" when it would be the same as "mco" (the placement enables
 * fail-back itself) or means nothing (no autoscaling).
 */
export function defaultPolicies(scenario: Scenario): readonly PolicyName[] {
  const autoscale = scenario.placement.spec?.scaling?.autoscaleForCapacity;
  const redundant = !autoscale || autoscale.behavior?.failBack?.enabled === true;
  return POLICIES.filter((p) => p !== 'mco-fail-back' || !redundant);
}

/** Where a cluster stands in one tick: its state in the placement, or what delivery is doing. */
export type LaneState = ClusterState | 'REMOVING' | 'OFF';

export type TimelineEntry =
  /** A scenario event taking effect. */
  | { readonly t: number; readonly kind: 'event'; readonly text: string }
  /** What the fleet did on its own that explains a decision, e.g. the first FailedScaleUp of a stockout. */
  | { readonly t: number; readonly kind: 'fleet'; readonly text: string }
  | {
      readonly t: number;
      readonly kind: 'transition';
      readonly id: TransitionId;
      readonly cluster: string;
      readonly from: ClusterState | null;
      readonly to: ClusterState | null;
      readonly reason: string;
    };

export interface ClusterSample {
  readonly lane: LaneState;
  /** The workload's Deployment exists in the cluster. */
  readonly deployed: boolean;
  /** The Deployment's replicas (any phase). */
  readonly replicas: number;
  readonly ready: number;
  readonly pending: number;
  readonly nodes: number;
  readonly stockedOut: boolean;
  readonly reachable: boolean;
  /**
   * Among the highest-priority eligible, reachable clusters that together could
   * hold the replicas needed now: where the user wants the workload.
   */
  readonly preferred: boolean;
}

export interface TickSample {
  readonly t: number;
  readonly demand: number;
  /** What the ready pods can serve at 100% utilisation. */
  readonly capacity: number;
  readonly served: number;
  /** Replicas needed to serve the demand at the target utilisation. */
  readonly need: number;
  /** Fewest eligible clusters that could hold `need` right now (at least 1). */
  readonly clustersNeeded: number;
  readonly clusters: readonly ClusterSample[];
}

export interface StockoutOutcome {
  /** Offset of the stockout's start. */
  readonly at: number;
  readonly scope: string;
  /** The first FailedScaleUp in the stocked-out clusters, or null when the stockout never bit. */
  readonly firstFailedScaleUp: number | null;
  /**
   * Seconds from the first FailedScaleUp until the fleet is back within its
   * HPA target band (demand ≤ ready capacity × target × (1 + tolerance)); null when never.
   */
  readonly restoredAfter: number | null;
}

export interface Summary {
  /** Unserved demand: pods that could not be scheduled, summed over time. */
  readonly pendingPodMinutes: number;
  /** Share of the demand that was not served, in percent. */
  readonly unservedPercent: number;
  /** Cluster-hours with the workload deployed. */
  readonly clusterHours: number;
  /** Cluster-hours beyond the fewest clusters that could hold the need. */
  readonly clusterHoursAboveNeed: number;
  /** Scheduled replica-hours beyond the replicas needed at the target utilisation. */
  readonly replicaHoursAboveNeed: number;
  /** Node-hours of the workload's node pools. */
  readonly nodeHours: number;
  /** Node-hours times each cluster's `gpuHourCost`; null when no cluster has a price. */
  readonly cost: number | null;
  /** Cluster-hours with the workload deployed on a cluster that is not `preferred` (see ClusterSample). */
  readonly nonPreferredClusterHours: number;
  readonly transitions: number;
  /** Fail-back (section 10.3), or null when the policy does not fail back. */
  readonly failBack: FailBackOutcome | null;
  readonly stockouts: readonly StockoutOutcome[];
}

export interface FailBackOutcome {
  readonly windowSeconds: number;
  /** P2 transitions made by fail-back. */
  readonly failBacks: number;
  /**
   * Fail-backs undone because the preferred clusters hit their ceiling again:
   * the same cluster reactivated (P3) or, once removed, added again (P1).
   */
  readonly cycles: number;
  /** The most cycles whose fail-back falls within one stabilization window. */
  readonly maxCyclesPerWindow: number;
}

export interface PolicyRun {
  readonly policy: PolicyName;
  readonly timeline: readonly TimelineEntry[];
  readonly samples: readonly TickSample[];
  readonly summary: Summary;
  /** The placement status at the end. */
  readonly status: PlacementStatus;
}

export interface SimulationResult {
  readonly scenario: Scenario;
  readonly seed: number;
  /** ClusterProfile `namespace/name` of every cluster, in fleet order. */
  readonly clusters: readonly string[];
  readonly runs: readonly PolicyRun[];
}

export interface SimulateOptions {
  /** Overrides the scenario's seed. */
  readonly seed?: number;
  /** Policies to run, in order (default: `defaultPolicies(scenario)`, mco first). */
  readonly policies?: readonly PolicyName[];
  /**
   * Called after every evaluation with the engine's exact input and output:
   * `decide(input)` reproduces `decision`, so any step can be replayed with `mco decide`.
   */
  readonly onEvaluation?: (evaluation: Evaluation) => void;
}

export interface Evaluation {
  readonly policy: PolicyName;
  /** Seconds since the start. */
  readonly t: number;
  readonly input: DecideInput;
  readonly decision: Decision;
}

/**
 * Runs a scenario once per policy. Each run builds, every tick, the signals and
 * ClusterProfiles a real fleet would show, calls the real `decide` of
 * @mco/core, feeds the status back, and lets delivery act on it. Deterministic
 * for a seed; no real time passes.
 */
export function simulate(scenario: Scenario, options: SimulateOptions = {}): SimulationResult {
  const seed = options.seed ?? scenario.seed;
  const ticks = Math.floor(scenario.duration / scenario.tick);
  const demand = demandSeries(scenario.demand, ticks, scenario.tick, seed);
  const policies = options.policies ?? defaultPolicies(scenario);
  return {
    scenario,
    seed,
    clusters: scenario.fleet.clusters.map((c) => clusterKey(scenario.fleet.namespace, c.name)),
    runs: policies.map((policy) => new Run(scenario, policy, demand, seed, options.onEvaluation).execute()),
  };
}

/** The inputs a policy hands to the engine. */
function policySpec(policy: PolicyName, spec: PlacementSpec): PlacementSpec {
  if (policy === 'mco') return spec;
  if (policy === 'always-on') {
    const { scaling: _scaling, ...rest } = spec;
    return rest;
  }
  const autoscale = spec.scaling?.autoscaleForCapacity;
  if (!autoscale) return spec;
  const { failBack, ...behavior } = autoscale.behavior ?? {};
  const withAutoscale = (next: typeof autoscale): PlacementSpec => ({
    ...spec,
    scaling: { ...spec.scaling, autoscaleForCapacity: next },
  });
  if (policy === 'mco-fail-back') {
    // Fail-back needs draining (docs/placement-rules.md §10.3); the placement's window, if any, is kept.
    return withAutoscale({
      ...autoscale,
      useDraining: true,
      behavior: { ...behavior, failBack: { ...failBack, enabled: true } },
    });
  }
  // MCO as documented: scale-in as soon as the HPA wants below its minimum, no windows, no cooldown, no fail-back.
  return withAutoscale({
    ...autoscale,
    behavior: {
      ...behavior,
      scaleOut: { stabilizationWindowSeconds: 0 },
      scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 },
    },
  });
}

/** The baselines know nothing of health: ControlPlaneHealthy and workloadHealthy are stripped. */
const usesHealth = (policy: PolicyName) => policy === 'mco' || policy === 'mco-fail-back';

/** The ClusterProfile property that carries a cluster's `gpuHourCost`, for property sorters. */
export const GPU_HOUR_COST_PROPERTY = 'gpu-hour-cost';

class SimCluster {
  readonly key: string;
  readonly conditions: ClusterConditions;
  controlPlaneSince = 0;
  readonly pool: NodePoolModel;
  pods = new Pods();
  hpa: HorizontalPodAutoscaler | undefined;
  deployAt: number | undefined;
  removeAt: number | undefined;
  /** draining.desiredMaxReplicas published for this cluster, when the drainer applies it. */
  drainMax: number | undefined;
  state: ClusterState | undefined;
  signal: Signal | undefined;
  lastFailedScaleUp: number | undefined;

  constructor(
    readonly spec: ClusterSpec,
    namespace: string,
  ) {
    this.key = clusterKey(namespace, spec.name);
    this.conditions = {
      labels: { ...spec.labels },
      stockedOut: false,
      reachable: true,
      controlPlaneHealthy: 'True',
      dropout: 0,
      unhealthy: 0,
    };
    this.pool = new NodePoolModel(spec.nodePool);
  }

  get deployed(): boolean {
    return this.hpa !== undefined;
  }

  /** HPA bounds in force: a drainer lowers maxReplicas to desiredMaxReplicas (and minReplicas with it). */
  bounds(): { min: number; max: number } {
    const max = Math.min(this.spec.hpa.maxReplicas, this.drainMax ?? Infinity);
    return { min: Math.min(this.spec.hpa.minReplicas, max), max };
  }
}

class Run {
  private readonly clusters: SimCluster[];
  private readonly actions: Action[];
  private readonly timeline: TimelineEntry[] = [];
  private readonly samples: TickSample[] = [];
  private readonly spec: PlacementSpec;
  private readonly useDraining: boolean;
  private readonly selection: ReturnType<typeof compileSelection>;
  private status: PlacementStatus | undefined;
  private nextAction = 0;

  constructor(
    private readonly scenario: Scenario,
    private readonly policy: PolicyName,
    private readonly demand: readonly number[],
    private readonly seed: number,
    private readonly onEvaluation: SimulateOptions['onEvaluation'],
  ) {
    this.clusters = scenario.fleet.clusters.map((c) => new SimCluster(c, scenario.fleet.namespace));
    this.actions = expandEvents(scenario);
    this.spec = policySpec(policy, scenario.placement.spec ?? {});
    this.useDraining = this.spec.scaling?.autoscaleForCapacity?.useDraining === true;
    this.status = scenario.placement.status;
    this.selection = compileSelection(scenario.placement.spec ?? {});
  }

  execute(): PolicyRun {
    const { tick } = this.scenario;
    this.applyActions(0);
    this.decideAt(0, []); // the starting placement...
    const warm = this.clusters.filter((c) => c.deployAt !== undefined && c.conditions.reachable);
    for (const c of warm) this.deployWarm(c, warm.length);
    for (let k = 0; k < this.demand.length; k++) this.step(k, k * tick);
    return {
      policy: this.policy,
      timeline: this.timeline,
      samples: this.samples,
      summary: this.summarize(),
      status: this.status ?? {},
    };
  }

  /** ...already runs when the simulation starts, sized for the starting demand. */
  private deployWarm(c: SimCluster, listed: number): void {
    const { hpa } = c.spec;
    const perPod = (this.scenario.workload.capacityPerReplica * hpa.targetUtilization) / 100;
    const replicas = Math.min(hpa.maxReplicas, Math.max(hpa.minReplicas, Math.ceil(this.demand[0]! / listed / perPod)));
    const pool = c.spec.nodePool;
    c.pool.nodes = Math.min(pool.maxNodes, Math.max(pool.minNodes, Math.ceil(replicas / pool.podsPerNode)));
    c.hpa = new HorizontalPodAutoscaler(hpa);
    c.pods.ready = Math.min(replicas, c.pool.slots);
    c.pods.pending = replicas - c.pods.ready;
    c.deployAt = undefined;
  }

  private step(k: number, t: number): void {
    const { workload } = this.scenario;
    this.applyActions(t);

    // Delivery (Argo CD, Flux...) acts on the listed clusters after its delay.
    for (const c of this.clusters) {
      if (!c.conditions.reachable) continue;
      if (c.deployAt !== undefined && t >= c.deployAt) {
        c.hpa = new HorizontalPodAutoscaler(c.spec.hpa);
        c.pods = new Pods();
        c.pods.scaleTo(c.bounds().min);
        c.deployAt = undefined;
      }
      if (c.removeAt !== undefined && t >= c.removeAt) {
        c.hpa = undefined;
        c.pods = new Pods();
        c.signal = undefined;
        c.drainMax = undefined;
        c.removeAt = undefined;
      }
    }

    for (const c of this.clusters) {
      if (!c.conditions.reachable) continue;
      c.pool.advance(t, c.conditions.stockedOut);
      c.pods.advance(t);
    }

    const endpoints = this.clusters.map((c) =>
      c.conditions.reachable && c.deployed ? Math.min(c.pods.ready, c.drainMax ?? Infinity) : 0,
    );
    const shares = spreadLoad(this.demand[k]!, endpoints, workload.capacityPerReplica);

    this.clusters.forEach((c, i) => {
      if (!c.conditions.reachable || !c.hpa) return;
      const { min, max } = c.bounds();
      const replicas = c.hpa.sync(t, {
        currentReplicas: c.pods.total,
        readyReplicas: c.pods.ready,
        load: shares[i]!.load,
        capacityPerReplica: workload.capacityPerReplica,
        minReplicas: min,
        maxReplicas: max,
      });
      c.pods.scaleTo(replicas);
    });

    for (const c of this.clusters) {
      if (!c.conditions.reachable) continue;
      c.pods.schedule(t, c.pool.slots, workload.podStartup);
      c.pool.autoscale(t, c.pods.pending, c.pods.scheduled);
      this.noteFailedScaleUp(c, t);
    }

    for (const c of this.clusters) {
      if (!c.conditions.reachable || !c.hpa?.status) continue;
      if (hashRandom(this.seed, 'dropout', c.key, k) < c.conditions.dropout) continue; // keeps the last signal
      c.signal = this.observe(c, t, k);
    }
    const signals = this.clusters.flatMap((c) => (c.signal ? [c.signal] : []));
    this.decideAt(t, signals);
    this.sample(k, t, endpoints, shares);
  }

  /** A FailedScaleUp after a quiet signal window goes into the timeline: it explains the scale-out that follows. */
  private noteFailedScaleUp(c: SimCluster, t: number): void {
    const events = c.pool.events;
    let last;
    for (let i = events.length - 1; i >= 0 && events[i]!.t === t; i--) {
      if (events[i]!.reason === 'FailedScaleUp') last = events[i]!;
    }
    if (!last) return;
    const previous = c.lastFailedScaleUp;
    c.lastFailedScaleUp = t;
    if (previous !== undefined && previous > t - this.scenario.signals.failedScaleUpWindow) return;
    this.timeline.push({
      t,
      kind: 'fleet',
      text: `${c.key}: cluster-autoscaler FailedScaleUp (${last.message}); ${c.pods.pending} pod(s) pending`,
    });
  }

  /** The signal a capacity-signal source would report for the cluster now (docs/placement-rules.md §5). */
  private observe(c: SimCluster, t: number, k: number): Signal {
    const hpa = c.hpa!.status!;
    const flap = hashRandom(this.seed, 'unhealthy', c.key, k) < c.conditions.unhealthy;
    // A source cannot tell a workload that is still starting from a broken one: no ready pod is unknown.
    const healthy = flap ? false : c.pods.ready > 0 ? true : undefined;
    return {
      cluster: c.key,
      observedAt: this.timestamp(t),
      hpa: {
        currentReplicas: hpa.currentReplicas,
        desiredReplicas: hpa.desiredReplicas,
        minReplicas: hpa.minReplicas,
        maxReplicas: hpa.maxReplicas,
        ...(hpa.scalingLimited ? { scalingLimited: { ...hpa.scalingLimited } } : {}),
      },
      pendingPods: c.pods.pending,
      failedScaleUp: c.pool.failedScaleUpWithin(t, this.scenario.signals.failedScaleUpWindow),
      ...(healthy !== undefined && usesHealth(this.policy) ? { workloadHealthy: healthy } : {}),
    };
  }

  private profiles(): ClusterProfile[] {
    return this.clusters.map((c) => ({
      apiVersion: CLUSTER_PROFILE_API_VERSION,
      kind: 'ClusterProfile',
      metadata: {
        name: c.spec.name,
        namespace: this.scenario.fleet.namespace,
        labels: { [CLUSTER_MANAGER_LABEL]: 'simulator', ...c.conditions.labels },
      },
      spec: { displayName: c.spec.name, clusterManager: { name: 'simulator' } },
      status: {
        properties: [
          { name: 'region', value: c.spec.region },
          ...(c.spec.gpuHourCost !== undefined
            ? [{ name: GPU_HOUR_COST_PROPERTY, value: String(c.spec.gpuHourCost) }]
            : []),
        ],
        ...(usesHealth(this.policy)
          ? {
              conditions: [
                {
                  type: CONTROL_PLANE_HEALTHY,
                  status: c.conditions.controlPlaneHealthy,
                  reason: c.conditions.controlPlaneHealthy === 'True' ? 'Healthy' : 'Unreachable',
                  lastTransitionTime: this.timestamp(c.controlPlaneSince),
                },
              ],
            }
          : {}),
      },
    }));
  }

  private decideAt(t: number, signals: Signal[]): void {
    const placement = this.scenario.placement;
    const input: DecideInput = {
      now: new Date(this.startMs() + t * 1000),
      placement: {
        metadata: { ...placement.metadata, generation: placement.metadata.generation ?? 1 },
        spec: this.spec,
        status: this.status,
      },
      clusterProfiles: this.profiles(),
      signals,
    };
    const decision = decide(input);
    this.onEvaluation?.({ policy: this.policy, t, input, decision });
    this.status = decision.status;
    for (const tr of decision.transitions) this.timeline.push({ t, kind: 'transition', ...tr });

    const listed = new Map((decision.status.clusters ?? []).map((e) => [clusterKey(e.namespace, e.name), e]));
    for (const c of this.clusters) {
      const entry = listed.get(c.key);
      c.state = entry?.state;
      // A cluster that left the list keeps its drained HPA until delivery deletes it.
      if (entry || !c.deployed) c.drainMax = this.useDraining ? entry?.draining?.desiredMaxReplicas : undefined;
      if (entry) {
        c.removeAt = undefined;
        if (!c.deployed) c.deployAt ??= t + this.scenario.workload.deployDelay;
      } else {
        c.deployAt = undefined;
        if (c.deployed) c.removeAt ??= t + this.scenario.workload.removeDelay;
      }
    }
  }

  private applyActions(t: number): void {
    while (this.nextAction < this.actions.length && this.actions[this.nextAction]!.t <= t) {
      const action = this.actions[this.nextAction++]!;
      for (const name of action.clusters) {
        const c = this.clusters.find((x) => x.spec.name === name)!;
        const before = c.conditions.controlPlaneHealthy;
        action.apply(c.conditions);
        if (c.conditions.controlPlaneHealthy !== before) c.controlPlaneSince = action.t;
      }
      this.timeline.push({ t: action.t, kind: 'event', text: action.text });
    }
  }

  private sample(k: number, t: number, endpoints: readonly number[], shares: readonly { served: number }[]): void {
    const { workload } = this.scenario;
    const demand = this.demand[k]!;
    const perPod = (workload.capacityPerReplica * workload.hpa.targetUtilization) / 100;
    const need = Math.ceil(demand / perPod - 1e-9);
    const { clustersNeeded, preferred } = this.oracle(need);
    this.samples.push({
      t,
      demand,
      capacity: endpoints.reduce((a, b) => a + b, 0) * workload.capacityPerReplica,
      served: shares.reduce((a, s) => a + s.served, 0),
      need,
      clustersNeeded,
      clusters: this.clusters.map((c) => ({
        lane: c.state ?? (c.deployed ? 'REMOVING' : 'OFF'),
        deployed: c.deployed,
        replicas: c.deployed ? c.pods.total : 0,
        ready: c.deployed ? c.pods.ready : 0,
        pending: c.deployed ? c.pods.pending : 0,
        nodes: c.pool.nodes,
        stockedOut: c.conditions.stockedOut,
        reachable: c.conditions.reachable,
        preferred: preferred.has(c.key),
      })),
    });
  }

  /**
   * What an oracle would choose, from each eligible, reachable cluster's room
   * (HPA max, and nodes that can be had: all of maxNodes, or only the running
   * ones while stocked out):
   * - `clustersNeeded`: the fewest clusters whose room holds the replicas needed; at least 1;
   * - `preferred`: the highest-priority clusters whose room holds them (at least the first).
   */
  private oracle(need: number): { clustersNeeded: number; preferred: ReadonlySet<string> } {
    if (!this.selection.ok) return { clustersNeeded: 1, preferred: new Set() };
    const byKey = new Map(this.clusters.map((c) => [c.key, c]));
    const rooms = selectClusters(this.selection.value, createInventory(this.profiles()))
      .eligible.map((e) => byKey.get(e.key)!)
      .filter((c) => c.conditions.reachable)
      .map((c) => {
        const pool = c.spec.nodePool;
        const nodes = c.conditions.stockedOut ? c.pool.nodes : pool.maxNodes;
        return { key: c.key, room: Math.min(c.spec.hpa.maxReplicas, nodes * pool.podsPerNode) };
      });
    const fill = (ordered: readonly { key: string; room: number }[]) => {
      const taken: string[] = [];
      let sum = 0;
      for (const { key, room } of ordered) {
        if (taken.length > 0 && sum >= need) break;
        sum += room;
        taken.push(key);
      }
      return taken;
    };
    return {
      clustersNeeded: Math.max(1, fill([...rooms].sort((a, b) => b.room - a.room)).length),
      preferred: new Set(fill(rooms)),
    };
  }

  private summarize(): Summary {
    const { tick, workload } = this.scenario;
    let pendingPodTicks = 0;
    let demand = 0;
    let served = 0;
    let clusterTicks = 0;
    let clusterTicksAboveNeed = 0;
    let replicaTicksAboveNeed = 0;
    let nodeTicks = 0;
    let costTicks = 0;
    let nonPreferredTicks = 0;
    const prices = this.clusters.map((c) => c.spec.gpuHourCost);
    for (const s of this.samples) {
      // What an unreachable cluster holds is neither capacity nor a known cost: it is not counted.
      const reachable = s.clusters.filter((c) => c.reachable);
      const running = reachable.filter((c) => c.deployed).length;
      pendingPodTicks += reachable.reduce((a, c) => a + c.pending, 0);
      demand += s.demand;
      served += s.served;
      clusterTicks += running;
      clusterTicksAboveNeed += Math.max(0, running - s.clustersNeeded);
      const scheduled = reachable.reduce((a, c) => a + c.replicas - c.pending, 0);
      replicaTicksAboveNeed += Math.max(0, scheduled - s.need);
      nodeTicks += reachable.reduce((a, c) => a + c.nodes, 0);
      s.clusters.forEach((c, i) => {
        if (!c.reachable) return;
        costTicks += c.nodes * (prices[i] ?? 0);
        if (c.deployed && !c.preferred) nonPreferredTicks++;
      });
    }
    const hours = tick / 3600;
    const band = (workload.hpa.targetUtilization / 100) * (1 + workload.hpa.tolerance);
    const stockouts = this.scenario.events.flatMap((event): StockoutOutcome[] => {
      if (event.type !== 'stockout') return [];
      const names = new Set(targetsOf(this.scenario, event));
      const pools = this.clusters.filter((c) => names.has(c.spec.name)).map((c) => c.pool);
      const bites = pools.flatMap((p) => p.events.filter((e) => e.reason === 'FailedScaleUp' && e.t >= event.at));
      const first = bites.length > 0 ? Math.min(...bites.map((e) => e.t)) : null;
      const restored =
        first === null ? undefined : this.samples.find((s) => s.t >= first && s.demand <= s.capacity * band);
      return [
        {
          at: event.at,
          scope:
            event.region !== undefined ? `region ${event.region}` : `${this.scenario.fleet.namespace}/${event.cluster}`,
          firstFailedScaleUp: first,
          restoredAfter: restored && first !== null ? restored.t - first : null,
        },
      ];
    });
    return {
      pendingPodMinutes: (pendingPodTicks * tick) / 60,
      unservedPercent: demand === 0 ? 0 : Math.max(0, (100 * (demand - served)) / demand),
      clusterHours: clusterTicks * hours,
      clusterHoursAboveNeed: clusterTicksAboveNeed * hours,
      replicaHoursAboveNeed: replicaTicksAboveNeed * hours,
      nodeHours: nodeTicks * hours,
      cost: prices.some((p) => p !== undefined) ? costTicks * hours : null,
      nonPreferredClusterHours: nonPreferredTicks * hours,
      transitions: this.timeline.filter((e) => e.kind === 'transition').length,
      failBack: this.failBackOutcome(),
      stockouts,
    };
  }

  /** Fail-backs and the reactivations that undid them (flapping), when the policy fails back. */
  private failBackOutcome(): FailBackOutcome | null {
    const behavior = resolveBehavior(this.spec.scaling?.autoscaleForCapacity?.behavior);
    if (!this.spec.scaling?.autoscaleForCapacity || !behavior.failBackEnabled) return null;
    const lastFailBack = new Map<string, number>();
    const cycleStarts: number[] = [];
    let failBacks = 0;
    for (const e of this.timeline) {
      if (e.kind !== 'transition') continue;
      if (e.id === 'P2' && e.reason.startsWith('fail-back:')) {
        failBacks++;
        lastFailBack.set(e.cluster, e.t);
        continue;
      }
      // Brought back after a fail-back: reactivated while draining (P3), or added again (P1) once removed.
      const since = lastFailBack.get(e.cluster);
      if (since !== undefined && (e.id === 'P3' || e.id === 'P1')) {
        cycleStarts.push(since);
        lastFailBack.delete(e.cluster);
      }
    }
    // Cycles are found in the order they were undone; the window count needs them by start.
    cycleStarts.sort((a, b) => a - b);
    const window = behavior.failBackStabilizationSeconds;
    let maxCyclesPerWindow = 0;
    cycleStarts.forEach((t, i) => {
      const within = cycleStarts.slice(i).filter((u) => u < t + Math.max(window, 1)).length;
      maxCyclesPerWindow = Math.max(maxCyclesPerWindow, within);
    });
    return { windowSeconds: window, failBacks, cycles: cycleStarts.length, maxCyclesPerWindow };
  }

  private startMs(): number {
    return Date.parse(this.scenario.start);
  }

  private timestamp(t: number): string {
    return new Date(this.startMs() + t * 1000).toISOString().replace('.000Z', 'Z');
  }
}

import {
  CLUSTER_MANAGER_LABEL,
  CLUSTER_PROFILE_API_VERSION,
  CONTROL_PLANE_HEALTHY,
  clusterKey,
  compileSelection,
  createInventory,
  decide,
  isAtCapacityCeiling,
  wantsScaleIn,
  resolveBehavior,
  selectClusters,
  type CapacityAnswer,
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
import { expandEvents, initialConditions, targetsOf, type Action, type ClusterConditions } from './events.js';
import {
  HorizontalPodAutoscaler,
  NodePoolModel,
  Pods,
  spreadLoad,
  type AutoscalerEventReason,
  type LoadShare,
} from './model.js';
import { decideMcoV02, preferenceOrder, type PolicyDecision } from './mco-v02.js';
import { decidePickN, pickNSize } from './pick-n.js';
import { CapacitySourceSchema, SimulatedCapacitySource, type CapacitySource } from './capacity.js';
import { hashRandom } from './random.js';
import { DEFAULT_HPA, type ClusterSpec, type Hpa, type PlacedWorkload, type Scenario } from './scenario.js';

/**
 * The policies one run can compare: mco itself (as written, and with
 * fail-back), and the baselines it must beat. Every baseline gets the same
 * world and the same placement: its eligibility and order of preference.
 */
export const POLICIES = [
  'mco',
  'mco-fail-back',
  'mco-capacity',
  'mco-v0.2',
  'pick-n',
  'always-on',
  'mco-without-hysteresis',
] as const;
export type PolicyName = (typeof POLICIES)[number];

export const POLICY_LABELS: Readonly<Record<PolicyName, string>> = {
  mco: 'mco',
  'mco-fail-back': 'mco with fail-back',
  'mco-capacity': 'mco + capacity source',
  'mco-v0.2': 'MCO v0.2 as documented',
  'pick-n': 'pick-N',
  'always-on': 'all eligible clusters always on',
  'mco-without-hysteresis': 'mco without hysteresis or health',
};

/** The policies that are mco; the others are baselines, each judged against them. */
export const MCO_POLICIES: readonly PolicyName[] = ['mco', 'mco-fail-back', 'mco-capacity'];

/**
 * The policies a scenario runs by default: mco, the three baselines, and
 * "mco with fail-back" unless it would be the same as "mco" (the placement
 * enables fail-back itself) or means nothing (no autoscaling), and "mco +
 * capacity source" when the scenario has a `capacitySource`. "mco without
 * hysteresis or health", an ablation of mco, runs only when asked for.
 */
export function defaultPolicies(scenario: Scenario): readonly PolicyName[] {
  const autoscale = scenario.placement.spec?.scaling?.autoscaleForCapacity;
  const redundant = !autoscale || autoscale.behavior?.failBack?.enabled === true;
  return POLICIES.filter(
    (p) =>
      p !== 'mco-without-hysteresis' &&
      (p !== 'mco-fail-back' || !redundant) &&
      (p !== 'mco-capacity' || scenario.capacitySource !== undefined),
  );
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
      /** The placement (`namespace/name`), when the scenario has several. */
      readonly placement?: string;
      readonly id: TransitionId;
      readonly cluster: string;
      readonly from: ClusterState | null;
      readonly to: ClusterState | null;
      readonly reason: string;
    };

export interface ClusterSample {
  readonly lane: LaneState;
  /** This workload's share of the cluster's nodes (all of them when the pool serves it alone). */
  readonly nodeShare: number;
  /** The workload's Deployment exists in the cluster. */
  readonly deployed: boolean;
  /** The Deployment's replicas (any phase). */
  readonly replicas: number;
  readonly ready: number;
  readonly pending: number;
  /** Nodes of the cluster's node pool (shared by every workload on the cluster). */
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
  /** The most cycles of one cluster whose fail-backs fall within one stabilization window. */
  readonly maxCyclesPerWindow: number;
}

/** One placement's part of a run. */
export interface PlacementRun {
  /** `namespace/name` of the placement. */
  readonly placement: string;
  readonly samples: readonly TickSample[];
  readonly summary: Summary;
  /** The placement status at the end. */
  readonly status: PlacementStatus;
}

export interface PolicyRun {
  readonly policy: PolicyName;
  /** The policy's label, e.g. `pick-N (n=2)`. */
  readonly label: string;
  /** Events, fleet notes and every placement's transitions, in time order. */
  readonly timeline: readonly TimelineEntry[];
  /** The first placement's samples. */
  readonly samples: readonly TickSample[];
  /**
   * Fleet-wide: the placement's summary when there is one; with several, the
   * sums over them (unserved requests as a share of all their demand; each
   * node pool's node-hours and cost split between the workloads by their pods).
   */
  readonly summary: Summary;
  /** The first placement's status at the end. */
  readonly status: PlacementStatus;
  /** Every placement's samples, summary and status, in scenario order. */
  readonly placements: readonly PlacementRun[];
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

/** The policies evaluated by mco's engine, `decide` of @mco/core. */
export type EnginePolicy = Exclude<PolicyName, 'mco-v0.2' | 'pick-n'>;

/** An evaluation by mco's engine (the baselines mco-v0.2 and pick-N have their own code and are not reported). */
export interface Evaluation {
  readonly policy: EnginePolicy;
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
  // The first workload is the one of the top-level fields (a caller may have replaced them).
  const { placement, workload } = scenario;
  const placements = [{ placement, workload, demand: scenario.demand }, ...scenario.placements.slice(1)];
  // Each workload draws its own noise; the first one from the seed itself.
  const demand = placements.map((p, i) =>
    demandSeries(p.demand, ticks, scenario.tick, i === 0 ? seed : (seed + i * 0x9e3779b9) >>> 0),
  );
  const policies = options.policies ?? defaultPolicies(scenario);
  return {
    scenario,
    seed,
    clusters: scenario.fleet.clusters.map((c) => clusterKey(scenario.fleet.namespace, c.name)),
    runs: policies.map((policy) =>
      new Run({ ...scenario, placements }, policy, demand, seed, options.onEvaluation).execute(),
    ),
  };
}

/** The placement a policy evaluates: mco-v0.2 and pick-N read it as it is written. */
function policySpec(policy: PolicyName, spec: PlacementSpec): PlacementSpec {
  if (policy === 'mco' || policy === 'mco-capacity' || policy === 'mco-v0.2' || policy === 'pick-n') return spec;
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
  // An ablation of mco: scale-in as soon as the HPA wants below its minimum, no windows, no cooldown, no fail-back.
  return withAutoscale({
    ...autoscale,
    behavior: {
      ...behavior,
      scaleOut: { stabilizationWindowSeconds: 0 },
      scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 },
    },
  });
}

/** Only mco checks health: the baselines get no ControlPlaneHealthy and no workloadHealthy. */
const usesHealth = (policy: PolicyName) => MCO_POLICIES.includes(policy);

/** The ClusterProfile property that carries a cluster's `gpuHourCost`, for property sorters. */
export const GPU_HOUR_COST_PROPERTY = 'gpu-hour-cost';

/** A member cluster: its conditions and its node pool, shared by every workload placed on it. */
class SimCluster {
  readonly key: string;
  readonly conditions: ClusterConditions;
  controlPlaneSince = 0;
  readonly pool: NodePoolModel;
  lastFailedScaleUp: number | undefined;

  constructor(
    readonly spec: ClusterSpec,
    namespace: string,
  ) {
    this.key = clusterKey(namespace, spec.name);
    this.conditions = initialConditions(spec.labels);
    this.pool = new NodePoolModel(spec.nodePool);
  }
}

/** One workload on one cluster: its Deployment, HPA and what delivery and the signal source do with them. */
class Placed {
  pods = new Pods();
  hpa: HorizontalPodAutoscaler | undefined;
  deployAt: number | undefined;
  removeAt: number | undefined;
  /** draining.desiredMaxReplicas published for this cluster, when the drainer applies it. */
  drainMax: number | undefined;
  /** status.clusters[].desiredMinReplicas (rule O3): the delivery applies it as the HPA's minReplicas while set. */
  floor: number | undefined;
  state: ClusterState | undefined;
  signal: Signal | undefined;
  /** Polls in a row that could not reach the cluster. */
  transportErrors = 0;

  constructor(
    readonly cluster: SimCluster,
    readonly hpaSpec: Hpa,
  ) {}

  get key(): string {
    return this.cluster.key;
  }

  get deployed(): boolean {
    return this.hpa !== undefined;
  }

  /**
   * HPA bounds in force: a drainer lowers maxReplicas to desiredMaxReplicas (and minReplicas with it);
   * a replacement's floor (desiredMinReplicas) replaces minReplicas while set.
   */
  bounds(): { min: number; max: number } {
    const max = Math.min(this.hpaSpec.maxReplicas, this.drainMax ?? Infinity);
    return { min: Math.min(this.floor ?? this.hpaSpec.minReplicas, max), max };
  }
}

/** One placement and its workload in a run: what it placed where, and what the engine decided for it. */
class Tenant {
  readonly on: Placed[];
  readonly samples: TickSample[] = [];
  readonly spec: PlacementSpec;
  readonly useDraining: boolean;
  readonly selection: ReturnType<typeof compileSelection>;
  readonly name: string;
  status: PlacementStatus | undefined;
  /** mco-v0.2 and pick-N: the eligible clusters in order of preference at the start. */
  order: readonly string[] | undefined;
  /** pick-N: the number of clusters. */
  pickN = 0;
  /** This tick's load on each cluster. */
  endpoints: number[] = [];
  /** mco + capacity source: the source, and its answers this tick. */
  readonly capacitySource: SimulatedCapacitySource | undefined;
  capacity: CapacityAnswer[] = [];
  shares: readonly LoadShare[] = [];

  constructor(
    readonly index: number,
    readonly placed: PlacedWorkload,
    readonly demand: readonly number[],
    clusters: readonly SimCluster[],
    policy: PolicyName,
    capacityConfig: CapacitySource,
    tick: number,
    seed: number,
  ) {
    this.on = clusters.map(
      (c) =>
        new Placed(c, index === 0 ? c.spec.hpa : { ...DEFAULT_HPA, ...placed.workload.hpa, ...c.spec.hpaOverrides }),
    );
    this.spec = policySpec(policy, placed.placement.spec ?? {});
    this.useDraining = this.spec.scaling?.autoscaleForCapacity?.useDraining === true;
    this.capacitySource =
      policy === 'mco-capacity' ? new SimulatedCapacitySource(capacityConfig, tick, seed, String(index)) : undefined;
    this.status = placed.placement.status;
    this.selection = compileSelection(placed.placement.spec ?? {});
    const meta = placed.placement.metadata;
    this.name = `${meta.namespace ?? 'default'}/${meta.name}`;
  }

  get workload() {
    return this.placed.workload;
  }

  /** Replicas that serve `demand` at the HPA target. */
  need(demand: number): number {
    const perPod = (this.workload.capacityPerReplica * this.workload.hpa.targetUtilization) / 100;
    return Math.ceil(demand / perPod - 1e-9);
  }

  /** Keys for random draws: the first workload keeps the cluster's key alone, so one workload draws as before. */
  drawKey(c: Placed): string {
    return this.index === 0 ? c.key : `${c.key}#${this.index}`;
  }
}

/** Whether a `signals` list option (true: every cluster) names the cluster. */
function listsCluster(option: boolean | readonly string[] | undefined, cluster: string): boolean {
  return option === true || (Array.isArray(option) && option.includes(cluster));
}

/** Whether the scenario's signal source reports readyReplicas for the cluster (`signals.omitReadyReplicas`). */
function reportsReadyReplicas(scenario: Scenario, cluster: string): boolean {
  return !listsCluster(scenario.signals.omitReadyReplicas, cluster);
}

/**
 * What each reading of the cluster-autoscaler sees. MCO's documented metric is log-based on the
 * autoscaler's failed scale-ups (`FailedScaleUp` here), and so are the autoscalers' own metrics
 * (`signals.autoscalerMetrics`, as the Prometheus source reads them). mco's Kubernetes source reads
 * the Events on the workload's pods, and upstream writes only `NotTriggerScaleUp` there (a failed
 * scale-up goes to its status ConfigMap, then shows on the pods as the backoff): docs/signals.md.
 */
export function autoscalerEventsRead(policy: PolicyName, metrics = false): readonly AutoscalerEventReason[] {
  return policy === 'mco-v0.2' || metrics ? ['FailedScaleUp'] : ['NotTriggerScaleUp'];
}

class Run {
  private readonly clusters: SimCluster[];
  private readonly tenants: Tenant[];
  private readonly actions: Action[];
  private readonly timeline: TimelineEntry[] = [];
  private nextAction = 0;

  constructor(
    private readonly scenario: Scenario,
    private readonly policy: PolicyName,
    demand: readonly (readonly number[])[],
    private readonly seed: number,
    private readonly onEvaluation: SimulateOptions['onEvaluation'],
  ) {
    this.clusters = scenario.fleet.clusters.map((c) => new SimCluster(c, scenario.fleet.namespace));
    const capacity = scenario.capacitySource ?? CapacitySourceSchema.parse({});
    this.tenants = scenario.placements.map(
      (p, i) => new Tenant(i, p, demand[i]!, this.clusters, policy, capacity, scenario.tick, seed),
    );
    this.actions = expandEvents(scenario);
  }

  execute(): PolicyRun {
    const { tick } = this.scenario;
    this.applyActions(0);
    for (const tenant of this.tenants) {
      this.decideAt(tenant, 0, []); // the starting placement...
      const warm = tenant.on.filter((c) => c.deployAt !== undefined && c.cluster.conditions.reachable);
      // The starting demand is spread over the ACTIVE clusters; a drained one (a warm standby) starts at its cap.
      const serving = warm.filter((c) => c.state === 'ACTIVE').length;
      for (const c of warm) this.deployWarm(tenant, c, c.state === 'ACTIVE' ? serving : 0);
    }
    const ticks = this.tenants[0]!.demand.length;
    for (let k = 0; k < ticks; k++) this.step(k, k * tick);
    const placements = this.tenants.map((tenant) => ({
      placement: tenant.name,
      samples: tenant.samples,
      summary: this.summarize(tenant),
      status: tenant.status ?? {},
    }));
    return {
      policy: this.policy,
      label: this.label(),
      timeline: this.timeline,
      samples: placements[0]!.samples,
      summary: placements.length === 1 ? placements[0]!.summary : this.fleetSummary(placements),
      status: placements[0]!.status,
      placements,
    };
  }

  private label(): string {
    if (this.policy !== 'pick-n') return POLICY_LABELS[this.policy];
    const ns = [...new Set(this.tenants.map((t) => t.pickN))];
    return `pick-N (n=${ns.join(', ')})`;
  }

  /**
   * ...already runs when the simulation starts, sized for its share of the
   * starting demand among `serving` clusters (and given the nodes it needs);
   * with no share (`serving` 0), at its HPA minimum.
   */
  private deployWarm(tenant: Tenant, c: Placed, serving: number): void {
    const hpa = c.hpaSpec;
    const { min, max } = c.bounds();
    const perPod = (tenant.workload.capacityPerReplica * hpa.targetUtilization) / 100;
    const share = serving > 0 ? Math.ceil(tenant.demand[0]! / serving / perPod) : 0;
    const replicas = Math.min(max, Math.max(min, share));
    const pool = c.cluster.spec.nodePool;
    const taken = this.tenants.reduce(
      (a, t) => a + (t === tenant ? 0 : t.on[this.clusters.indexOf(c.cluster)]!.pods.scheduled),
      0,
    );
    const nodes = Math.ceil((taken + replicas) / pool.podsPerNode);
    c.cluster.pool.nodes = Math.min(pool.maxNodes, Math.max(pool.minNodes, c.cluster.pool.nodes, nodes));
    c.hpa = new HorizontalPodAutoscaler(hpa);
    c.pods.ready = Math.max(0, Math.min(replicas, c.cluster.pool.slots - taken));
    c.pods.pending = replicas - c.pods.ready;
    c.deployAt = undefined;
  }

  private step(k: number, t: number): void {
    this.applyActions(t);

    // Delivery (Argo CD, Flux...) acts on the listed clusters after its delay.
    for (const tenant of this.tenants) {
      for (const c of tenant.on) {
        if (!c.cluster.conditions.reachable) continue;
        if (c.deployAt !== undefined && t >= c.deployAt) {
          c.hpa = new HorizontalPodAutoscaler(c.hpaSpec);
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
    }

    for (const c of this.clusters) {
      if (c.conditions.reachable) c.pool.advance(t, c.conditions.stockedOut);
      else c.pool.holdScaleDown();
    }
    for (const tenant of this.tenants) {
      for (const c of tenant.on) if (c.cluster.conditions.reachable) c.pods.advance(t);
    }

    for (const tenant of this.tenants) {
      const { capacityPerReplica } = tenant.workload;
      tenant.endpoints = tenant.on.map((c) =>
        c.cluster.conditions.reachable && c.deployed ? Math.min(c.pods.ready, c.drainMax ?? Infinity) : 0,
      );
      tenant.shares = spreadLoad(tenant.demand[k]!, tenant.endpoints, capacityPerReplica);
      tenant.on.forEach((c, i) => {
        if (!c.cluster.conditions.reachable || !c.hpa) return;
        const { min, max } = c.bounds();
        const replicas = c.hpa.sync(t, {
          currentReplicas: c.pods.total,
          readyReplicas: c.pods.ready,
          load: tenant.shares[i]!.load,
          capacityPerReplica,
          minReplicas: min,
          maxReplicas: max,
        });
        c.pods.scaleTo(replicas);
      });
    }

    // The workloads on a cluster share its node pool: free slots go to them in the order of the placements.
    this.clusters.forEach((c, i) => {
      if (!c.conditions.reachable) return;
      const placed = this.tenants.map((tenant) => tenant.on[i]!);
      this.tenants.forEach((tenant, w) => {
        const others = placed.reduce((a, q, v) => a + (v === w ? 0 : q.pods.scheduled), 0);
        placed[w]!.pods.schedule(t, c.pool.slots - others, tenant.workload.podStartup);
      });
      const pending = placed.reduce((a, p) => a + p.pods.pending, 0);
      c.pool.autoscale(
        t,
        pending,
        placed.reduce((a, p) => a + p.pods.scheduled, 0),
      );
      this.noteFailedScaleUp(c, t, pending);
    });

    for (const tenant of this.tenants) {
      for (const c of tenant.on) this.poll(tenant, c, t, k);
      if (tenant.capacitySource) tenant.capacity = this.answerCapacity(tenant, k);
      const signals = tenant.on.flatMap((c) => (c.signal ? [c.signal] : []));
      this.decideAt(tenant, t, signals);
      this.sample(tenant, k, t);
    }
  }

  /** The signal source polls every listed or deployed cluster; one it cannot reach is a transport error, not missing data. */
  private poll(tenant: Tenant, c: Placed, t: number, k: number): void {
    if (!c.cluster.conditions.reachable) {
      if (c.state === undefined && !c.deployed) return;
      c.transportErrors++;
      c.signal = {
        cluster: c.key,
        observedAt: this.timestamp(t),
        transportError: { reason: 'timeout', consecutivePolls: c.transportErrors },
      };
      return;
    }
    c.transportErrors = 0;
    if (!c.hpa?.status) {
      if (c.signal?.transportError) c.signal = undefined;
      return;
    }
    if (hashRandom(this.seed, 'dropout', tenant.drawKey(c), k) < c.cluster.conditions.dropout) return; // keeps the last signal
    c.signal = this.observe(tenant, c, t, k);
  }

  /**
   * The capacity source's answers (capacity.ts) from each cluster's truth: the
   * replicas it could add now, bounded by the nodes that can be had (only the
   * running ones while stocked out) less every workload's scheduled pods, and
   * by the room under the workload's HPA maximum there.
   */
  private answerCapacity(tenant: Tenant, k: number): CapacityAnswer[] {
    const truths = tenant.on.map((c, i) => {
      const pool = c.cluster.spec.nodePool;
      const nodes = c.cluster.conditions.stockedOut ? c.cluster.pool.nodes : pool.maxNodes;
      const scheduled = this.tenants.reduce((a, x) => a + x.on[i]!.pods.scheduled, 0);
      const hpaRoom = c.hpaSpec.maxReplicas - (c.deployed ? c.pods.total : 0);
      return {
        cluster: c.key,
        reachable: c.cluster.conditions.reachable,
        addable: Math.max(0, Math.min(nodes * pool.podsPerNode - scheduled, hpaRoom)),
        hpaMax: c.hpaSpec.maxReplicas,
      };
    });
    return tenant.capacitySource!.answer(k, truths, (t) => this.timestamp(t));
  }

  /** A FailedScaleUp after a quiet signal window goes into the timeline: it explains the scale-out that follows. */
  private noteFailedScaleUp(c: SimCluster, t: number, pending: number): void {
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
      text: `${c.key}: cluster-autoscaler FailedScaleUp (${last.message}); ${pending} pod(s) pending`,
    });
  }

  /** The signal a capacity-signal source would report for the workload on the cluster now (docs/placement-rules.md §5). */
  private observe(tenant: Tenant, c: Placed, t: number, k: number): Signal {
    const signal = this.observeAll(tenant, c, t, k);
    // A verdict-only source is mco's (the signal contract); MCO v0.2 reads Cloud Monitoring's figures.
    if (!MCO_POLICIES.includes(this.policy) || !listsCluster(this.scenario.signals.verdictsOnly, c.cluster.spec.name))
      return signal;
    // The engine's own two rules applied at the source, and nothing it could count.
    return {
      cluster: signal.cluster,
      observedAt: signal.observedAt,
      atCapacityCeiling: isAtCapacityCeiling(signal),
      wantsScaleIn: wantsScaleIn(signal),
      ...(signal.workloadHealthy !== undefined ? { workloadHealthy: signal.workloadHealthy } : {}),
    };
  }

  private observeAll(tenant: Tenant, c: Placed, t: number, k: number): Signal {
    const hpa = c.hpa!.status!;
    const flap = hashRandom(this.seed, 'unhealthy', tenant.drawKey(c), k) < c.cluster.conditions.unhealthy;
    // A source cannot tell a workload that is still starting from a broken one: no ready pod is unknown.
    const healthy = flap ? false : c.pods.ready > 0 ? true : undefined;
    const metrics = listsCluster(this.scenario.signals.autoscalerMetrics, c.cluster.spec.name);
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
      // A source without ready replicas says so (the signal contract), or, written for MCO, says nothing
      // and rule D1 learns it: either way drains step on the clock.
      ...(reportsReadyReplicas(this.scenario, c.cluster.spec.name)
        ? { readyReplicas: c.pods.ready }
        : this.scenario.signals.declareOmission
          ? { reportsReadyReplicas: false }
          : {}),
      failedScaleUp: c.cluster.pool.failedScaleUpWithin(
        t,
        this.scenario.signals.failedScaleUpWindow,
        autoscalerEventsRead(this.policy, metrics),
      ),
      // What the Kubernetes source reads from the same Events: the pool is at its maximum size, not stocked out.
      ...(metrics
        ? {}
        : { nodeLimitReached: c.cluster.pool.nodeLimitWithin(t, this.scenario.signals.failedScaleUpWindow) }),
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

  private decideAt(tenant: Tenant, t: number, signals: Signal[]): void {
    const placement = tenant.placed.placement;
    const input: DecideInput = {
      now: new Date(this.startMs() + t * 1000),
      placement: {
        metadata: { ...placement.metadata, generation: placement.metadata.generation ?? 1 },
        spec: tenant.spec,
        status: tenant.status,
      },
      clusterProfiles: this.profiles(),
      signals,
      ...(tenant.capacitySource ? { capacity: tenant.capacity } : {}),
    };
    const decision = this.evaluate(tenant, input, t);
    tenant.status = decision.status;
    const several = this.tenants.length > 1;
    for (const tr of decision.transitions) {
      this.timeline.push({ t, kind: 'transition', ...(several ? { placement: tenant.name } : {}), ...tr });
    }

    const listed = new Map((decision.status.clusters ?? []).map((e) => [clusterKey(e.namespace, e.name), e]));
    for (const c of tenant.on) {
      const entry = listed.get(c.key);
      c.state = entry?.state;
      // A cluster that left the list keeps its drained HPA until delivery deletes it.
      if (entry || !c.deployed) c.drainMax = tenant.useDraining ? entry?.draining?.desiredMaxReplicas : undefined;
      if (entry || !c.deployed)
        c.floor = tenant.workload.ignoresDesiredMinReplicas ? undefined : entry?.desiredMinReplicas;
      if (entry) {
        c.removeAt = undefined;
        if (!c.deployed) c.deployAt ??= t + tenant.workload.deployDelay;
      } else {
        c.deployAt = undefined;
        if (c.deployed) c.removeAt ??= t + tenant.workload.removeDelay;
      }
    }
  }

  /** One evaluation by the policy: mco's engine, or a baseline's own code. */
  private evaluate(tenant: Tenant, input: DecideInput, t: number): PolicyDecision {
    const { placement } = input;
    const nowMs = this.startMs() + t * 1000;
    const clusterProfiles = input.clusterProfiles as ClusterProfile[];
    if (this.policy === 'mco-v0.2' || this.policy === 'pick-n') {
      tenant.order ??= preferenceOrder(tenant.spec, clusterProfiles);
      if (this.policy === 'mco-v0.2') {
        const signals = input.signals ?? [];
        const status = placement.status;
        return decideMcoV02({ nowMs, spec: tenant.spec, clusterProfiles, signals, status, order: tenant.order });
      }
      if (tenant.pickN === 0) {
        const peak = tenant.need(Math.max(0, ...tenant.demand));
        tenant.pickN = pickNSize(tenant.order, new Map(tenant.on.map((c) => [c.key, this.roomSpec(c)])), peak);
      }
      return decidePickN({ nowMs, spec: tenant.spec, clusterProfiles, status: placement.status, n: tenant.pickN });
    }
    const decision = decide(input);
    this.onEvaluation?.({ policy: this.policy as EnginePolicy, t, input, decision });
    return decision;
  }

  /** The cluster as pick-N sizes it: the workload's HPA there and the cluster's node pool. */
  private roomSpec(c: Placed): ClusterSpec {
    return { ...c.cluster.spec, hpa: c.hpaSpec };
  }

  private applyActions(t: number): void {
    while (this.nextAction < this.actions.length && this.actions[this.nextAction]!.t <= t) {
      const action = this.actions[this.nextAction++]!;
      const targets = action.clusters.map((name) => this.clusters.find((x) => x.spec.name === name)!);
      let changed = false;
      for (const c of targets) {
        const health = c.conditions.controlPlaneHealthy;
        changed = action.apply(c.conditions) || changed;
        if (c.conditions.controlPlaneHealthy !== health) c.controlPlaneSince = action.t;
      }
      const mark = changed ? '' : action.unchangedMark(targets.map((c) => c.conditions));
      this.timeline.push({ t: action.t, kind: 'event', text: action.text + mark });
    }
  }

  private sample(tenant: Tenant, k: number, t: number): void {
    const { workload } = tenant;
    const demand = tenant.demand[k]!;
    const need = tenant.need(demand);
    const { clustersNeeded, preferred } = this.oracle(tenant, need);
    tenant.samples.push({
      t,
      demand,
      capacity: tenant.endpoints.reduce((a, b) => a + b, 0) * workload.capacityPerReplica,
      served: tenant.shares.reduce((a, s) => a + s.served, 0),
      need,
      clustersNeeded,
      clusters: tenant.on.map((c, i) => ({
        lane: c.state ?? (c.deployed ? 'REMOVING' : 'OFF'),
        nodeShare: this.nodeShare(tenant, i),
        deployed: c.deployed,
        replicas: c.deployed ? c.pods.total : 0,
        ready: c.deployed ? c.pods.ready : 0,
        pending: c.deployed ? c.pods.pending : 0,
        nodes: c.cluster.pool.nodes,
        stockedOut: c.cluster.conditions.stockedOut,
        reachable: c.cluster.conditions.reachable,
        preferred: preferred.has(c.key),
      })),
    });
  }

  /**
   * The workload's share of cluster i's nodes: its share of the scheduled pods;
   * with none scheduled, an equal share among the workloads deployed there;
   * with none deployed, an equal share among all (so a pool that serves one
   * workload is always wholly its own).
   */
  private nodeShare(tenant: Tenant, i: number): number {
    if (this.tenants.length === 1) return 1;
    const placed = this.tenants.map((x) => x.on[i]!);
    const mine = tenant.on[i]!;
    const scheduled = placed.reduce((a, p) => a + p.pods.scheduled, 0);
    if (scheduled > 0) return mine.pods.scheduled / scheduled;
    const deployed = placed.filter((p) => p.deployed).length;
    if (deployed > 0) return mine.deployed ? 1 / deployed : 0;
    return 1 / placed.length;
  }

  /**
   * What an oracle would choose, from each eligible, reachable cluster's room
   * (HPA max, and nodes that can be had: all of maxNodes, or only the running
   * ones while stocked out):
   * - `clustersNeeded`: the fewest clusters whose room holds the replicas needed; at least 1;
   * - `preferred`: the highest-priority clusters whose room holds them (at least the first).
   */
  private oracle(tenant: Tenant, need: number): { clustersNeeded: number; preferred: ReadonlySet<string> } {
    if (!tenant.selection.ok) return { clustersNeeded: 1, preferred: new Set() };
    const byKey = new Map(tenant.on.map((c) => [c.key, c]));
    const rooms = selectClusters(tenant.selection.value, createInventory(this.profiles()))
      .eligible.map((e) => byKey.get(e.key)!)
      .filter((c) => c.cluster.conditions.reachable)
      .map((c) => {
        const pool = c.cluster.spec.nodePool;
        const nodes = c.cluster.conditions.stockedOut ? c.cluster.pool.nodes : pool.maxNodes;
        return { key: c.key, room: Math.min(c.hpaSpec.maxReplicas, nodes * pool.podsPerNode) };
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

  private summarize(tenant: Tenant): Summary {
    const { tick } = this.scenario;
    const { workload } = tenant;
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
    const warmUp = this.scenario.warmUp ?? 0;
    for (const s of tenant.samples) {
      if (s.t < warmUp) continue;
      // One rule for cluster-hours, node-hours and cost: a deployed cluster counts whether or not it is
      // reachable (its nodes run, and are billed, through an outage). None of an unreachable cluster's
      // pods serve: every one of them counts as unserved demand, as pending pods do.
      const reachable = s.clusters.filter((c) => c.reachable);
      const running = s.clusters.filter((c) => c.deployed).length;
      pendingPodTicks += s.clusters.reduce((a, c) => a + (c.reachable ? c.pending : c.replicas), 0);
      demand += s.demand;
      served += s.served;
      clusterTicks += running;
      clusterTicksAboveNeed += Math.max(0, running - s.clustersNeeded);
      const scheduled = reachable.reduce((a, c) => a + c.replicas - c.pending, 0);
      replicaTicksAboveNeed += Math.max(0, scheduled - s.need);
      s.clusters.forEach((c, i) => {
        nodeTicks += c.nodes * c.nodeShare;
        costTicks += c.nodes * c.nodeShare * (prices[i] ?? 0);
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
        first === null ? undefined : tenant.samples.find((s) => s.t >= first && s.demand <= s.capacity * band);
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
      transitions: this.timeline.filter(
        (e) => e.kind === 'transition' && (this.tenants.length === 1 || e.placement === tenant.name),
      ).length,
      failBack: this.failBackOutcome(tenant),
      stockouts,
    };
  }

  /** Fleet-wide: sums over the placements; unserved requests as a share of all their demand. */
  private fleetSummary(placements: readonly { samples: readonly TickSample[]; summary: Summary }[]): Summary {
    const sum = (f: (s: Summary) => number) => placements.reduce((a, p) => a + f(p.summary), 0);
    const demandOf = (p: { samples: readonly TickSample[] }) => p.samples.reduce((a, s) => a + s.demand, 0);
    const demand = placements.reduce((a, p) => a + demandOf(p), 0);
    const unserved = placements.reduce((a, p) => a + (demandOf(p) * p.summary.unservedPercent) / 100, 0);
    const first = placements[0]!.summary;
    return {
      pendingPodMinutes: sum((s) => s.pendingPodMinutes),
      unservedPercent: demand === 0 ? 0 : (100 * unserved) / demand,
      clusterHours: sum((s) => s.clusterHours),
      clusterHoursAboveNeed: sum((s) => s.clusterHoursAboveNeed),
      replicaHoursAboveNeed: sum((s) => s.replicaHoursAboveNeed),
      nodeHours: sum((s) => s.nodeHours),
      cost: first.cost === null ? null : sum((s) => s.cost ?? 0),
      nonPreferredClusterHours: sum((s) => s.nonPreferredClusterHours),
      transitions: sum((s) => s.transitions),
      failBack: null,
      stockouts: first.stockouts,
    };
  }

  /** Fail-backs and the reactivations that undid them (flapping), when the policy fails back. */
  private failBackOutcome(tenant: Tenant): FailBackOutcome | null {
    const behavior = resolveBehavior(tenant.spec.scaling?.autoscaleForCapacity?.behavior);
    if (!tenant.spec.scaling?.autoscaleForCapacity || !behavior.failBackEnabled) return null;
    const lastFailBack = new Map<string, number>();
    // Per cluster, as rule F1 counts them: two clusters failed back together are one cycle each.
    const cycleStarts = new Map<string, number[]>();
    let failBacks = 0;
    for (const e of this.timeline) {
      if (e.kind !== 'transition' || (this.tenants.length > 1 && e.placement !== tenant.name)) continue;
      if (e.id === 'P2' && e.reason.startsWith('fail-back:')) {
        failBacks++;
        lastFailBack.set(e.cluster, e.t);
        continue;
      }
      // Brought back after a fail-back: reactivated while draining (P3), or added again (P1) once removed.
      const since = lastFailBack.get(e.cluster);
      if (since !== undefined && (e.id === 'P3' || e.id === 'P1')) {
        cycleStarts.set(e.cluster, [...(cycleStarts.get(e.cluster) ?? []), since]);
        lastFailBack.delete(e.cluster);
      }
    }
    const window = behavior.failBackStabilizationSeconds;
    let cycles = 0;
    let maxCyclesPerWindow = 0;
    for (const starts of cycleStarts.values()) {
      cycles += starts.length;
      starts.forEach((t, i) => {
        const within = starts.slice(i).filter((u) => u < t + Math.max(window, 1)).length;
        maxCyclesPerWindow = Math.max(maxCyclesPerWindow, within);
      });
    }
    return { windowSeconds: window, failBacks, cycles, maxCyclesPerWindow };
  }

  private startMs(): number {
    return Date.parse(this.scenario.start);
  }

  private timestamp(t: number): string {
    return new Date(this.startMs() + t * 1000).toISOString().replace('.000Z', 'Z');
  }
}

import type { ClusterProfile } from './api/cluster-profile.js';
import { clusterKey, type Condition, type ObjectMeta } from './api/common.js';
import type { Decision, Transition, TransitionId } from './api/decision.js';
import {
  PlacementSpecSchema,
  type AutoscaleForCapacity,
  type ClusterState,
  type Draining,
  type PlacementCluster,
  type PlacementSpec,
  type PlacementStatus,
} from './api/placement.js';
import type { Signal } from './api/signal.js';
import { TAINTS_ANNOTATION } from './api/taint.js';
import { formatTaint } from './selection/taints.js';
import { err, ok, type Result, type SpecError } from './result.js';
import { resolveBehavior, type ResolvedBehavior } from './scaling/behavior.js';
import { nextDrainStepAt, startDraining, stepDraining } from './scaling/draining.js';
import { checkFailBack, chooseFailBack, nextBelowCeilingSince } from './scaling/fail-back.js';
import { assessSignal, indexSignals, type SignalAssessment } from './scaling/signals.js';
import { createInventory, type Inventory, type InventoryCluster } from './selection/inventory.js';
import { compileSelection, selectClusters, type Selection, type SelectionResult } from './selection/select.js';
import { formatTime, parseTime, SECOND } from './time.js';
import { setCondition } from './conditions.js';

export interface DecideInput {
  /** The evaluation time; the engine works at one-second resolution, like Kubernetes timestamps. */
  readonly now: Date;
  readonly placement: {
    readonly metadata: Pick<ObjectMeta, 'name'> & Partial<Pick<ObjectMeta, 'namespace' | 'generation'>>;
    /**
     * Checked by the engine: an invalid spec is reported in `status.conditions`.
     * Treat it as immutable: its compiled form is remembered per object.
     */
    readonly spec?: unknown;
    readonly status?: PlacementStatus | undefined;
  };
  /** The fleet: ClusterProfiles, or an Inventory built once with `createInventory` and shared across placements. */
  readonly clusterProfiles: readonly ClusterProfile[] | Inventory;
  readonly signals?: readonly Signal[];
  /**
   * Set by the controller's inventory-loss guard (docs/placement-rules.md §10.5):
   * the fleet shrank suddenly, so no cluster is removed because its ClusterProfile
   * is missing; such clusters stay listed and `Satisfied` is Unknown.
   */
  readonly holdProfileLossRemovals?: boolean;
  /**
   * Tenant isolation, set by the controller of a shared hub: the workload
   * (`autoscaleForCapacity.workloadDetails.namespace`) must be in the
   * placement's own namespace, or the spec is invalid (reason
   * CrossNamespaceWorkload) and no cluster changes.
   */
  readonly requireWorkloadInPlacementNamespace?: boolean;
}

/** A listed cluster while the evaluation works on it. */
interface Entry {
  readonly key: string;
  readonly name: string;
  readonly namespace: string | undefined;
  state: ClusterState;
  lastTransitionTime: string;
  reason: string | undefined;
  message: string | undefined;
  draining: Draining | undefined;
  scaleInCandidateSince: string | undefined;
  /** behavior.failBack: since when this ACTIVE cluster has been below its ceiling (fresh signal). */
  belowCeilingSince: string | undefined;
  readonly signal: SignalAssessment;
  /** Entered SCALING_IN or EVICTING in this evaluation. */
  enteredDrain: boolean;
  /** Reactivated (P3) in this evaluation: its signal still shows the drain cap, not the cluster. */
  reactivated: boolean;
  removed: boolean;
}

export const CONDITION_VALID = 'Valid';
export const CONDITION_SATISFIED = 'Satisfied';

/**
 * Decides which clusters should run a placement's workload now
 * (docs/placement-rules.md). Pure and deterministic: same input, same output.
 */
export function decide(input: DecideInput): Decision {
  return evaluatePlacement(input).decision;
}

/**
 * Hears why an evaluation did not do more (docs/placement-rules.md §10.4): `cluster` is a
 * ClusterProfile `namespace/name`, or undefined for the placement as a whole.
 */
export type NoteSink = (cluster: string | undefined, note: string) => void;

/** What `explain` reads besides the decision: the same selection the evaluation used. */
export interface EvaluationContext {
  readonly selection: Selection;
  readonly spec: PlacementSpec;
  readonly inventory: Inventory;
  readonly selected: SelectionResult;
  readonly assess: (key: string) => SignalAssessment;
  readonly behavior: ResolvedBehavior;
}

/**
 * The evaluation behind both `decide` and `explain`: `explain` passes a sink
 * for the reasons nothing more happened and reads the context, so its verdict
 * is decide's by construction. Internal to @mco/core.
 */
export function evaluatePlacement(
  input: DecideInput,
  notes?: NoteSink,
): { decision: Decision; context: EvaluationContext | undefined } {
  const nowMs = Math.floor(input.now.getTime() / SECOND) * SECOND;
  const now = formatTime(nowMs);
  const previous = input.placement.status ?? {};
  const generation = input.placement.metadata.generation;

  const compiled = compilePlacementSpec(input.placement.spec);
  if (!compiled.ok) return { decision: invalid(previous, compiled.error, now, generation), context: undefined };
  const { spec, selection } = compiled.value;
  const crossNamespace = input.requireWorkloadInPlacementNamespace
    ? crossNamespaceWorkload(spec, input.placement.metadata.namespace)
    : undefined;
  if (crossNamespace) return { decision: invalid(previous, crossNamespace, now, generation), context: undefined };

  const inventory = Array.isArray(input.clusterProfiles)
    ? createInventory(input.clusterProfiles as readonly ClusterProfile[])
    : (input.clusterProfiles as Inventory);
  const listedKeys = new Set((previous.clusters ?? []).map((c) => clusterKey(c.namespace, c.name)));
  const selected = selectClusters(selection, inventory, listedKeys, nowMs);
  const autoscale = spec.scaling?.autoscaleForCapacity;
  const behavior = resolveBehavior(autoscale?.behavior, spec.scaling?.behavior);
  const signals = indexSignals(input.signals ?? []);
  const assess = (key: string) => assessSignal(signals.get(key), nowMs, behavior.signalStaleAfterSeconds);

  const run = new Evaluation(nowMs, now, previous, selected, inventory, behavior, assess, notes);
  run.holdProfileLossRemovals = input.holdProfileLossRemovals === true;
  if (autoscale) run.autoscale(autoscale);
  else run.placeEveryEligible();

  const status: PlacementStatus = {
    ...previous,
    clusters: run.listedClusters(autoscale?.useDraining === true),
    ...(run.lastAdditionTime ? { lastAdditionTime: run.lastAdditionTime } : {}),
    ...(run.lastClusterRemovalTime ? { lastClusterRemovalTime: run.lastClusterRemovalTime } : {}),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  let conditions = setCondition(
    previous.conditions,
    {
      type: CONDITION_VALID,
      status: 'True',
      reason: 'Valid',
      message: ['the spec is valid', ...inputWarnings(selected, inventory, listedKeys)].join('; '),
      observedGeneration: generation,
    },
    now,
  );
  conditions = setCondition(conditions, { ...run.satisfiedOrHeld(), observedGeneration: generation }, now);
  status.conditions = conditions;
  if (status.clusters!.length === 0 && previous.clusters === undefined) delete status.clusters;
  return {
    decision: { status, transitions: run.transitions, requeueAfterSeconds: run.requeueAfterSeconds() },
    context: { selection, spec, inventory, selected, assess, behavior },
  };
}

/** A spec that parsed and whose selection compiled, or why it is invalid. */
export type CompiledSpec = Result<{ readonly spec: PlacementSpec; readonly selection: Selection }, SpecError>;

// Informer caches hand the same spec object to every evaluation until it
// changes, so parsing and compiling are memoised per object (a pure function).
const compiledSpecs = new WeakMap<object, CompiledSpec>();

/**
 * Parses a placement's spec and compiles its selection, remembered per spec
 * object. `decide` reports an error as condition Valid=False; a controller can
 * call this to skip work (asking for signals) for an invalid spec.
 */
export function compilePlacementSpec(raw: unknown): CompiledSpec {
  const cacheable = typeof raw === 'object' && raw !== null;
  const hit = cacheable ? compiledSpecs.get(raw) : undefined;
  if (hit) return hit;
  const result = compileSpecUncached(raw);
  if (cacheable) compiledSpecs.set(raw, result);
  return result;
}

function compileSpecUncached(raw: unknown): CompiledSpec {
  const parsed = PlacementSpecSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = ['spec', ...issue.path.map(String)].join('.').replace(/\.(\d+)(?=\.|$)/g, '[$1]');
    return err({ reason: 'InvalidSpec', field, message: issue.message });
  }
  const workload = checkWorkloadNames(parsed.data);
  if (!workload.ok) return workload;
  const behavior = checkFailBack(parsed.data);
  if (!behavior.ok) return behavior;
  const selection = compileSelection(parsed.data);
  return selection.ok ? ok({ spec: parsed.data, selection: selection.value }) : selection;
}

/**
 * What the engine ignored in its input, for the Valid condition: cluster-list
 * names without a ClusterProfile, and taints annotations of listed clusters
 * that do not parse (treated as no taints, so they never evict).
 */
function inputWarnings(selected: SelectionResult, inventory: Inventory, listed: ReadonlySet<string>): string[] {
  const warnings: string[] = [];
  const unknown = selected.unknownClusters;
  if (unknown.length > 0)
    warnings.push(`cluster-list names clusters that are not ClusterProfiles: ${unknown.join(', ')}`);
  for (const key of [...listed].sort()) {
    const error = inventory.byKey.get(key)?.taints.error;
    if (error) warnings.push(`the ${TAINTS_ANNOTATION} annotation of ${key} is ignored: ${error}`);
  }
  return warnings;
}

// Kubernetes object names. They go into member-cluster API paths, so free text
// (e.g. "..", which a URL parser folds into a cluster-wide list) is refused. A
// semantic check, not a schema bound: the CRD stays as permissive as MCO's.
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `workloadDetails` names must be Kubernetes names: a DNS-1123 label (namespace) or subdomain (the others). */
function checkWorkloadNames(spec: PlacementSpec): Result<void, SpecError> {
  const details = spec.scaling?.autoscaleForCapacity?.workloadDetails;
  if (!details) return ok(undefined);
  const fields: [string, string | undefined, RegExp, number, string][] = [
    ['namespace', details.namespace, DNS1123_LABEL, 63, 'a DNS-1123 label (lowercase letters, digits and "-")'],
    [
      'deploymentName',
      details.deploymentName,
      DNS1123_SUBDOMAIN,
      253,
      'a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")',
    ],
    [
      'hpaName',
      details.hpaName,
      DNS1123_SUBDOMAIN,
      253,
      'a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")',
    ],
  ];
  for (const [field, value, pattern, max, what] of fields) {
    if (value === undefined || (value.length <= max && pattern.test(value))) continue;
    return err({
      reason: 'InvalidWorkloadName',
      field: `spec.scaling.autoscaleForCapacity.workloadDetails.${field}`,
      // The value is the tenant's own input; cut so a long one cannot flood the status.
      message: `${JSON.stringify(value.slice(0, 80))}${value.length > 80 ? '…' : ''} must be ${what}, at most ${max} characters`,
    });
  }
  return ok(undefined);
}

/**
 * The error when a placement names a workload outside its own namespace: on a
 * shared hub that would let a tenant observe (and, through signals, steer)
 * another team's workload with mco's member identity.
 */
export function crossNamespaceWorkload(
  spec: PlacementSpec,
  placementNamespace: string | undefined,
): SpecError | undefined {
  const workload = spec.scaling?.autoscaleForCapacity?.workloadDetails?.namespace;
  if (workload === undefined || workload === placementNamespace) return undefined;
  return {
    reason: 'CrossNamespaceWorkload',
    field: 'spec.scaling.autoscaleForCapacity.workloadDetails.namespace',
    message: `"${workload}" is not the placement's namespace "${placementNamespace ?? ''}"; a placement may only name a workload in its own namespace`,
  };
}

/** An invalid spec changes nothing in `status.clusters`: the workload stays where it is. */
function invalid(previous: PlacementStatus, error: SpecError, now: string, generation: number | undefined): Decision {
  let conditions = setCondition(
    previous.conditions,
    {
      type: CONDITION_VALID,
      status: 'False',
      reason: error.reason,
      message: `${error.field}: ${error.message}`,
      observedGeneration: generation,
    },
    now,
  );
  conditions = setCondition(
    conditions,
    {
      type: CONDITION_SATISFIED,
      status: 'Unknown',
      reason: 'InvalidSpec',
      message: 'the spec is invalid; the clusters stay as they are until it is fixed',
      observedGeneration: generation,
    },
    now,
  );
  return {
    status: { ...previous, ...(generation !== undefined ? { observedGeneration: generation } : {}), conditions },
    transitions: [],
    requeueAfterSeconds: null,
  };
}

const NO_NOTES: NoteSink = () => {};

class Evaluation {
  readonly transitions: Transition[] = [];
  readonly entries: Entry[] = [];
  private readonly byKey = new Map<string, Entry>();
  private readonly timers: number[] = [];
  lastAdditionTime: string | undefined;
  lastClusterRemovalTime: string | undefined;
  satisfied: Omit<Condition, 'lastTransitionTime'> = { type: CONDITION_SATISFIED, status: 'True' };
  holdProfileLossRemovals = false;
  /** Listed clusters kept only because the inventory-loss guard holds removals. */
  private readonly held: string[] = [];

  constructor(
    private readonly nowMs: number,
    private readonly now: string,
    private readonly previous: PlacementStatus,
    private readonly selected: SelectionResult,
    private readonly inventory: Inventory,
    private readonly behavior: ResolvedBehavior,
    private readonly assess: (key: string) => SignalAssessment,
    private readonly note: NoteSink = NO_NOTES,
  ) {
    this.lastAdditionTime = previous.lastAdditionTime;
    this.lastClusterRemovalTime = previous.lastClusterRemovalTime;
    for (const c of previous.clusters ?? []) {
      const key = clusterKey(c.namespace, c.name);
      if (this.byKey.has(key)) continue; // a duplicate entry cannot mean anything more; keep the first
      const entry: Entry = {
        key,
        name: c.name,
        namespace: c.namespace,
        state: c.state,
        lastTransitionTime: c.lastTransitionTime,
        reason: c.reason,
        message: c.message,
        draining: c.draining,
        scaleInCandidateSince: c.scaleInCandidateSince,
        belowCeilingSince: c.belowCeilingSince,
        signal: assess(key),
        enteredDrain: false,
        reactivated: false,
        removed: false,
      };
      this.entries.push(entry);
      this.byKey.set(key, entry);
    }
  }

  // ---- transitions -------------------------------------------------------

  private move(entry: Entry, id: TransitionId, to: ClusterState | null, reason: string, message: string): void {
    this.transitions.push({ cluster: entry.key, id, from: entry.removed ? null : entry.state, to, reason: message });
    if (to === null) {
      entry.removed = true;
      this.lastClusterRemovalTime = this.now;
      return;
    }
    if (to === 'SCALING_IN' || to === 'EVICTING') entry.enteredDrain = true;
    else entry.draining = undefined;
    if (to !== 'ACTIVE') {
      entry.scaleInCandidateSince = undefined;
      entry.belowCeilingSince = undefined;
    }
    entry.state = to;
    entry.lastTransitionTime = this.now;
    entry.reason = reason;
    entry.message = message;
  }

  private add(cluster: InventoryCluster, message: string): void {
    const entry: Entry = {
      key: cluster.key,
      name: cluster.name,
      namespace: cluster.namespace,
      state: 'ACTIVE',
      lastTransitionTime: this.now,
      reason: 'Added',
      message,
      draining: undefined,
      scaleInCandidateSince: undefined,
      belowCeilingSince: undefined,
      signal: this.assess(cluster.key),
      enteredDrain: false,
      reactivated: false,
      removed: false,
    };
    this.entries.push(entry);
    this.byKey.set(entry.key, entry);
    this.transitions.push({ cluster: entry.key, id: 'P1', from: null, to: 'ACTIVE', reason: message });
    this.lastAdditionTime = this.now;
  }

  private live(): Entry[] {
    return this.entries.filter((e) => !e.removed);
  }

  /** Absent from the inventory, and not because it is being deleted. */
  private isProfileMissing(key: string): boolean {
    return !this.inventory.byKey.has(key) && !this.inventory.deleting.has(key);
  }

  /** `satisfied`, or Unknown while the inventory-loss guard keeps clusters this evaluation would remove. */
  satisfiedOrHeld(): Omit<Condition, 'lastTransitionTime'> {
    if (this.held.length === 0) return this.satisfied;
    return {
      type: CONDITION_SATISFIED,
      status: 'Unknown',
      reason: 'InventoryShrunk',
      message: `the fleet's ClusterProfile count dropped suddenly; ${this.held.length} cluster(s) whose ClusterProfile is missing stay listed until it recovers or the removal is confirmed: ${this.held.join(', ')}`,
    };
  }

  /** Why a cluster is unhealthy, or undefined (unknown is not unhealthy). */
  private unhealthyBecause(key: string, signal: SignalAssessment): string | undefined {
    if (this.inventory.byKey.get(key)?.controlPlaneHealthy === false) return 'ControlPlaneUnhealthy';
    if (signal.workloadUnhealthy) return 'WorkloadUnhealthy';
    return undefined;
  }

  /** H2 needs evidence: a cluster marked unhealthy by its workload needs a fresh healthy signal. */
  private isHealthyAgain(entry: Entry): boolean {
    if (this.unhealthyBecause(entry.key, entry.signal)) return false;
    return entry.reason !== 'WorkloadUnhealthy' || entry.signal.workloadHealthy;
  }

  private elapsedSeconds(since: string | undefined): number {
    const t = parseTime(since);
    return t === undefined ? Infinity : (this.nowMs - t) / SECOND;
  }

  private timer(sinceMs: number | undefined, seconds: number): void {
    if (sinceMs !== undefined) this.timers.push(sinceMs + seconds * SECOND);
  }

  private timeAfter(since: string | number | undefined, seconds: number): string {
    const t = typeof since === 'number' ? since : parseTime(since);
    return t === undefined ? 'now' : formatTime(t + seconds * SECOND);
  }

  /**
   * Step 1: per listed cluster at most one E/H/R transition, E before H before R
   * (docs/placement-rules.md §3). `removeIneligibleAtOnce`: without autoscaling there
   * is nothing to drain, so E1/E3 is followed by R3 in the same evaluation.
   */
  private applyLifecycle(removeIneligibleAtOnce: boolean): void {
    const b = this.behavior;
    for (const entry of this.live()) {
      const eligible = this.selected.isStillEligible(entry.key);
      const unhealthy = this.unhealthyBecause(entry.key, entry.signal);
      const replicas = entry.signal.currentReplicas;
      // A missing profile may be a transient (a provider, a file, the CRD), not an
      // intent: it evicts, but is never removed in the same evaluation (section 10.5).
      const profileMissing = this.isProfileMissing(entry.key);
      if (!eligible && (entry.state === 'ACTIVE' || entry.state === 'SCALING_IN')) {
        const why = `no longer eligible: ${this.selected.ineligibleBecause(entry.key)}`;
        const reason = profileMissing
          ? 'ClusterProfileMissing'
          : this.selected.taintsOf(entry.key).noSelect
            ? 'Tainted'
            : 'NoLongerEligible';
        this.move(entry, entry.state === 'ACTIVE' ? 'E1' : 'E3', 'EVICTING', reason, why);
        if (profileMissing) {
          if (this.holdProfileLossRemovals) this.held.push(entry.key);
          else if (removeIneligibleAtOnce) this.timer(this.nowMs, b.profileLossGraceSeconds);
        } else if (removeIneligibleAtOnce) {
          this.move(entry, 'R3', null, 'Removed', 'nothing to drain without autoscaleForCapacity');
        }
        continue;
      }
      if (entry.state === 'EVICTING') {
        if (eligible) {
          this.move(entry, 'E2', 'ACTIVE', 'EligibleAgain', 'eligible again');
        } else if (profileMissing && this.holdProfileLossRemovals) {
          this.held.push(entry.key);
        } else if (removeIneligibleAtOnce && profileMissing) {
          if (this.elapsedSeconds(entry.lastTransitionTime) >= b.profileLossGraceSeconds) {
            this.move(
              entry,
              'R3',
              null,
              'Removed',
              `ClusterProfile missing for profileLossGraceSeconds (${b.profileLossGraceSeconds}s)`,
            );
          } else {
            this.timer(parseTime(entry.lastTransitionTime), b.profileLossGraceSeconds);
          }
        } else if (removeIneligibleAtOnce) {
          this.move(entry, 'R3', null, 'Removed', 'nothing to drain without autoscaleForCapacity');
        } else if (replicas !== undefined && replicas <= 1) {
          this.move(entry, 'R3', null, 'Removed', `drained: observed ${replicas} replica(s)`);
        } else if (this.elapsedSeconds(entry.lastTransitionTime) >= b.evictionTimeoutSeconds) {
          this.move(entry, 'R3', null, 'Removed', `EVICTING for evictionTimeoutSeconds (${b.evictionTimeoutSeconds}s)`);
        } else {
          this.timer(parseTime(entry.lastTransitionTime), b.evictionTimeoutSeconds);
          this.note(
            entry.key,
            `EVICTING until it reports ≤ 1 replica, at most until ${this.timeAfter(entry.lastTransitionTime, b.evictionTimeoutSeconds)} (evictionTimeoutSeconds)`,
          );
        }
        continue;
      }
      if (unhealthy && (entry.state === 'ACTIVE' || entry.state === 'SCALING_IN')) {
        const why =
          unhealthy === 'ControlPlaneUnhealthy'
            ? 'the ClusterProfile condition ControlPlaneHealthy is False'
            : 'the signal reports the workload unhealthy';
        this.move(entry, entry.state === 'ACTIVE' ? 'H1' : 'H3', 'UNHEALTHY', unhealthy, why);
        continue;
      }
      if (entry.state === 'UNHEALTHY') {
        // An ineligible cluster never becomes ACTIVE again: it waits for R2.
        if (eligible && this.isHealthyAgain(entry)) {
          this.move(entry, 'H2', 'ACTIVE', 'HealthyAgain', 'healthy again');
        } else if (this.elapsedSeconds(entry.lastTransitionTime) >= b.unhealthyTimeoutSeconds) {
          this.move(
            entry,
            'R2',
            null,
            'Removed',
            `UNHEALTHY for unhealthyTimeoutSeconds (${b.unhealthyTimeoutSeconds}s)`,
          );
        } else {
          this.timer(parseTime(entry.lastTransitionTime), b.unhealthyTimeoutSeconds);
          this.note(
            entry.key,
            `UNHEALTHY: removed at ${this.timeAfter(entry.lastTransitionTime, b.unhealthyTimeoutSeconds)} (unhealthyTimeoutSeconds) unless healthy and eligible again`,
          );
        }
        continue;
      }
      if (entry.state === 'SCALING_IN' && replicas !== undefined && replicas <= 1) {
        this.move(entry, 'R1', null, 'Removed', `scaled in: observed ${replicas} replica(s)`);
      }
    }
  }

  /** Without autoscaleForCapacity: every eligible, healthy cluster is ACTIVE. */
  placeEveryEligible(): void {
    this.applyLifecycle(true);
    for (const entry of this.live()) {
      if (entry.state === 'SCALING_IN') {
        this.move(
          entry,
          'P3',
          'ACTIVE',
          'Reactivated',
          'reactivated: no scaling configured, every eligible cluster runs',
        );
      }
    }
    for (const cluster of this.selected.eligible) {
      if (this.byKey.get(cluster.key)?.removed === false) continue;
      const taint = this.selected.taintsOf(cluster.key).noSelectIfNew;
      if (taint) {
        this.note(cluster.key, `not added: the taint ${formatTaint(taint)} is not tolerated`);
        continue;
      }
      const unhealthy = this.unhealthyBecause(cluster.key, this.assess(cluster.key));
      if (unhealthy) {
        this.note(cluster.key, `not added: ${unhealthy}`);
        continue;
      }
      this.add(cluster, 'eligible, and no scaling is configured: every eligible cluster runs');
    }
    const count = this.live().length;
    this.satisfied =
      this.selected.eligible.length === 0
        ? {
            type: CONDITION_SATISFIED,
            status: 'False',
            reason: 'NoEligibleClusters',
            message: 'no ClusterProfile is eligible',
          }
        : {
            type: CONDITION_SATISFIED,
            status: 'True',
            reason: 'AllEligibleClustersPlaced',
            message: `${count} cluster(s) listed`,
          };
  }

  autoscale(config: AutoscaleForCapacity): void {
    const b = this.behavior;
    const min = config.minClustersBelowCapacityCeiling;
    const max = config.maxClusters ?? 0;
    this.applyLifecycle(false);

    // Scale-in candidates: the time a cluster started wanting scale-in is kept
    // in status, so a restart loses nothing.
    for (const entry of this.live()) {
      if (entry.state === 'ACTIVE' && entry.signal.wantsScaleIn) entry.scaleInCandidateSince ??= this.now;
      else entry.scaleInCandidateSince = undefined;
      entry.belowCeilingSince = b.failBackEnabled
        ? nextBelowCeilingSince(entry.state, entry.signal, entry.belowCeilingSince, this.now)
        : undefined;
    }

    const isHeadroom = (e: Entry) => e.state === 'ACTIVE' && !e.signal.atCapacityCeiling;
    let headroom = this.live().filter(isHeadroom).length;
    let scaledOut = false;
    let stabilizing = false;

    if (headroom < min) {
      // Capacity-driven scale-out waits for the window; filling up to min (a
      // new placement, after an eviction) never does.
      const active = this.live().filter((e) => e.state === 'ACTIVE').length;
      const shortSince = this.shortSince();
      if (
        b.scaleOutStabilizationSeconds > 0 &&
        active >= min &&
        this.nowMs - shortSince < b.scaleOutStabilizationSeconds * SECOND
      ) {
        stabilizing = true;
        this.timer(shortSince, b.scaleOutStabilizationSeconds);
        this.note(
          undefined,
          `headroom ${headroom} < min ${min}: scale-out waits until ${this.timeAfter(shortSince, b.scaleOutStabilizationSeconds)} (scaleOut.stabilizationWindowSeconds)`,
        );
      } else {
        for (const entry of this.byPriority(this.live().filter((e) => e.state === 'SCALING_IN'))) {
          if (headroom >= min) break;
          if (!this.selected.isStillEligible(entry.key) || this.unhealthyBecause(entry.key, entry.signal)) continue;
          this.move(
            entry,
            'P3',
            'ACTIVE',
            'Reactivated',
            `headroom ${headroom} < min ${min}: reactivated, preferred over adding a cluster`,
          );
          entry.reactivated = true;
          headroom++;
          scaledOut = true;
        }
        for (const cluster of this.selected.eligible) {
          if (headroom >= min || (max > 0 && this.live().length >= max)) break;
          if (!this.isAddable(cluster)) continue;
          this.add(cluster, `headroom ${headroom} < min ${min}: added the highest-priority eligible cluster`);
          headroom++;
          scaledOut = true;
        }
      }
    }

    this.noteNotAdded(min, max, headroom);
    if (!scaledOut && !this.scaleIn(min, headroom) && b.failBackEnabled) this.failBack(min, headroom);
    this.drain(config.useDraining === true);
    this.satisfied = this.satisfaction(min, max, headroom, stabilizing);
  }

  /** Since when headroom has been short: the Satisfied=False transition time, kept in status. */
  private shortSince(): number {
    const satisfied = this.previous.conditions?.find((c) => c.type === CONDITION_SATISFIED);
    const since = satisfied?.status === 'False' ? parseTime(satisfied.lastTransitionTime) : undefined;
    return since ?? this.nowMs;
  }

  /** Section 4 step 3; true when it moved a cluster to SCALING_IN. */
  private scaleIn(min: number, headroom: number): boolean {
    const b = this.behavior;
    const active = this.live().filter((e) => e.state === 'ACTIVE');
    const waiting: Entry[] = [];
    for (const entry of active) {
      const since = parseTime(entry.scaleInCandidateSince);
      if (since === undefined) continue;
      if (this.nowMs - since >= b.scaleInStabilizationSeconds * SECOND) waiting.push(entry);
      else {
        this.timer(since, b.scaleInStabilizationSeconds);
        this.note(
          entry.key,
          `wants scale-in since ${entry.scaleInCandidateSince}; not before ${this.timeAfter(since, b.scaleInStabilizationSeconds)} (scaleIn.stabilizationWindowSeconds)`,
        );
      }
    }
    if (waiting.length === 0) return false;
    const waitingNote = (why: string) => {
      for (const entry of waiting) this.note(entry.key, `wants scale-in, but ${why}`);
    };
    // Fail static: never scale in on a guess about the others' headroom.
    const unknown = active.filter((e) => !e.signal.fresh);
    if (unknown.length > 0) {
      waitingNote(`no fresh signal from ${unknown.map((e) => e.key).join(', ')}`);
      return false;
    }
    const lastAddition = parseTime(this.lastAdditionTime);
    if (lastAddition !== undefined && this.nowMs - lastAddition < b.scaleInCooldownSeconds * SECOND) {
      this.timer(lastAddition, b.scaleInCooldownSeconds);
      waitingNote(`the scale-in cooldown runs until ${this.timeAfter(lastAddition, b.scaleInCooldownSeconds)}`);
      return false;
    }
    const candidate = this.byPriority(waiting).at(-1)!;
    const without = headroom - (candidate.signal.atCapacityCeiling ? 0 : 1);
    if (without < min) {
      this.note(candidate.key, `wants scale-in, but headroom without it would be ${without} < min ${min}`);
      return false;
    }
    const wanted = Math.round(this.elapsedSeconds(candidate.scaleInCandidateSince));
    this.move(
      candidate,
      'P2',
      'SCALING_IN',
      'ScaleIn',
      `wanted scale-in for ${wanted}s, the lowest-priority such cluster; headroom stays ${without} >= min ${min} without it`,
    );
    return true;
  }

  /** Section 10.3: the preferred clusters take the workload back (module scaling/fail-back). */
  private failBack(min: number, headroom: number): void {
    const b = this.behavior;
    const verdict = chooseFailBack({
      clusters: this.byPriority(this.live()).map((e) => ({
        key: e.key,
        state: e.state,
        eligible: this.selected.rankOf(e.key) !== undefined,
        signal: e.signal,
        belowCeilingSince: e.belowCeilingSince,
        reason: e.reason,
        lastTransitionTime: e.lastTransitionTime,
      })),
      nowMs: this.nowMs,
      min,
      headroom,
      stabilizationSeconds: b.failBackStabilizationSeconds,
      cooldownSeconds: b.scaleInCooldownSeconds,
      lastAdditionTime: this.lastAdditionTime,
    });
    if (verdict.kind === 'wait') this.timers.push(verdict.untilMs);
    if (verdict.kind === 'move')
      this.move(this.byKey.get(verdict.cluster)!, 'P2', 'SCALING_IN', 'FailBack', verdict.message);
  }

  private drain(useDraining: boolean): void {
    const b = this.behavior;
    for (const entry of this.live()) {
      if (!useDraining || (entry.state !== 'SCALING_IN' && entry.state !== 'EVICTING')) {
        entry.draining = undefined;
        continue;
      }
      entry.draining =
        entry.enteredDrain || !entry.draining
          ? startDraining(entry.signal, this.nowMs)
          : stepDraining(entry.draining, entry.signal, this.nowMs, b.drainStepIntervalSeconds, b.drainStepPercent);
      const next = entry.draining && nextDrainStepAt(entry.draining, b.drainStepIntervalSeconds);
      if (next) {
        this.timers.push(next);
        this.note(
          entry.key,
          `draining: desiredMaxReplicas ${entry.draining!.desiredMaxReplicas}, next step at ${formatTime(next)}`,
        );
      }
    }
  }

  private satisfaction(
    min: number,
    max: number,
    headroom: number,
    stabilizing: boolean,
  ): Omit<Condition, 'lastTransitionTime'> {
    const type = CONDITION_SATISFIED;
    const counts = `${headroom} of ${min} required cluster(s) are ACTIVE and below their capacity ceiling`;
    if (headroom >= min) return { type, status: 'True', reason: 'HeadroomAvailable', message: counts };
    if (stabilizing) {
      return {
        type,
        status: 'False',
        reason: 'ScaleOutStabilizing',
        message: `${counts}; waiting for behavior.scaleOut.stabilizationWindowSeconds`,
      };
    }
    const addable = this.selected.eligible.some((c) => this.isAddable(c));
    if (addable && max > 0 && this.live().length >= max) {
      return {
        type,
        status: 'False',
        reason: 'MaxClustersReached',
        message: `${counts}; maxClusters (${max}) reached`,
      };
    }
    if (this.selected.eligible.length === 0) {
      return {
        type,
        status: 'False',
        reason: 'NoEligibleClusters',
        message: `${counts}; no ClusterProfile is eligible`,
      };
    }
    return {
      type,
      status: 'False',
      reason: 'AllClustersAtCapacity',
      message: `${counts}; every eligible cluster is listed, unhealthy, at its capacity ceiling or tainted NoSelectIfNew`,
    };
  }

  /**
   * A cluster scale-out may add: not listed, without an untolerated
   * NoSelectIfNew taint, not unhealthy, and not known to be at its capacity
   * ceiling (adding a stocked-out cluster gives no headroom).
   */
  private isAddable(cluster: InventoryCluster): boolean {
    return this.byKey.get(cluster.key)?.removed !== false && this.notAddableBecause(cluster) === undefined;
  }

  /** Why scale-out may not add an unlisted eligible cluster, or undefined. */
  private notAddableBecause(cluster: InventoryCluster): string | undefined {
    const taint = this.selected.taintsOf(cluster.key).noSelectIfNew;
    if (taint) return `the taint ${formatTaint(taint)} is not tolerated`;
    const signal = this.assess(cluster.key);
    const unhealthy = this.unhealthyBecause(cluster.key, signal);
    if (unhealthy) return unhealthy;
    return signal.atCapacityCeiling ? 'at its capacity ceiling' : undefined;
  }

  /** For explain: why each unlisted eligible cluster was not added. Costs nothing without a sink. */
  private noteNotAdded(min: number, max: number, headroom: number): void {
    if (this.note === NO_NOTES) return;
    for (const cluster of this.selected.eligible) {
      if (this.byKey.get(cluster.key)?.removed === false) continue;
      const why =
        this.notAddableBecause(cluster) ??
        (headroom >= min
          ? `headroom ${headroom} >= min ${min}, no cluster needed`
          : max > 0 && this.live().length >= max
            ? `maxClusters (${max}) reached`
            : 'scale-out is waiting (stabilization window)');
      this.note(cluster.key, `not added: ${why}`);
    }
  }

  /** Listed clusters in priority order: eligible ones first, the others by namespace/name. */
  private byPriority(entries: Entry[]): Entry[] {
    const rank = (e: Entry) => this.selected.rankOf(e.key) ?? Infinity;
    return [...entries].sort((a, b) => rank(a) - rank(b) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  listedClusters(useDraining: boolean): PlacementCluster[] {
    return this.byPriority(this.live()).map((e) => {
      const cluster: PlacementCluster = {
        name: e.name,
        ...(e.namespace !== undefined ? { namespace: e.namespace } : {}),
        state: e.state,
        lastTransitionTime: e.lastTransitionTime,
      };
      if (e.signal.fresh) cluster.atCapacityCeiling = e.signal.atCapacityCeiling && !e.reactivated;
      if (useDraining && e.draining) cluster.draining = e.draining;
      if (e.reason !== undefined) cluster.reason = e.reason;
      if (e.message !== undefined) cluster.message = e.message;
      if (e.scaleInCandidateSince !== undefined) cluster.scaleInCandidateSince = e.scaleInCandidateSince;
      if (e.belowCeilingSince !== undefined) cluster.belowCeilingSince = e.belowCeilingSince;
      return cluster;
    });
  }

  /** The earliest timer, including a listed cluster's signal turning stale. */
  requeueAfterSeconds(): number | null {
    let next = Infinity;
    const staleAts = this.live().flatMap((e) => (e.signal.staleAt !== undefined ? [e.signal.staleAt] : []));
    // A time-limited toleration running out can make a cluster ineligible (tolerationSeconds).
    const expiry = this.selected.tolerationExpiresAt;
    if (expiry !== undefined) staleAts.push(expiry);
    for (const t of [...this.timers, ...staleAts]) if (t > this.nowMs && t < next) next = t;
    return next === Infinity ? null : Math.max(1, Math.ceil((next - this.nowMs) / SECOND));
  }
}

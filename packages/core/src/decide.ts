import type { ClusterProfile } from './api/cluster-profile.js';
import { clusterKey, type ObjectMeta } from './api/common.js';
import type { Decision } from './api/decision.js';
import type { AutoscaleForCapacity, PlacementSpec, PlacementStatus } from './api/placement.js';
import type { CapacityAnswer } from './api/capacity.js';
import type { Signal } from './api/signal.js';
import { CONDITION_SATISFIED, CONDITION_VALID, setCondition } from './conditions.js';
import type { SpecError } from './result.js';
import { resolveBehavior, type ResolvedBehavior } from './scaling/behavior.js';
import { assessSignal, indexSignals, type SignalAssessment } from './scaling/signals.js';
import { createInventory, type Inventory } from './selection/inventory.js';
import { selectClusters, type Selection, type SelectionResult } from './selection/select.js';
import { formatTime, SECOND } from './time.js';
import { freshCapacity, withNoCapacity } from './phases/capacity.js';
import { abandonStalledFailBack, drain } from './phases/drain.js';
import { Evaluation, type NoteSink } from './phases/evaluation.js';
import { trackFailBack, failBack, probeFloors, trackBelowCeiling } from './phases/fail-back.js';
import { health } from './phases/health.js';
import { scaleIn, trackScaleInCandidates } from './phases/scale-in.js';
import { isHeadroom, placeEveryEligible, satisfaction, scaleOut } from './phases/scale-out.js';
import { floorReplacements, settleFloors, trackReadyReplicas } from './phases/replica-floor.js';
import { compilePlacementSpec, crossNamespaceWorkload, inputWarnings } from './phases/selection.js';
import { applySpread } from './phases/spread.js';
import { mayKeepWarm, standby, warmSize } from './phases/standby.js';

export { CONDITION_SATISFIED, CONDITION_VALID } from './conditions.js';
export { compilePlacementSpec, crossNamespaceWorkload, type CompiledSpec } from './phases/selection.js';
export type { NoteSink } from './phases/evaluation.js';

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
   * Capacity sources' answers (docs/placement-rules.md §10.11): a fresh one
   * (within `behavior.signalStaleAfterSeconds`) saying a scale-out candidate
   * cannot add the replicas it would need passes it over (NoCapacity);
   * unknown, stale or missing answers change nothing.
   */
  readonly capacity?: readonly CapacityAnswer[];
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

/**
 * Decides which clusters should run a placement's workload now
 * (docs/placement-rules.md). Pure and deterministic: same input, same output.
 */
export function decide(input: DecideInput): Decision {
  return evaluatePlacement(input).decision;
}

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
 *
 * It runs named phases (packages/core/src/phases), in this order: selection,
 * health, then either every eligible cluster or scale-out, scale-in or
 * fail-back, then standby and drain.
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
  run.capacity = freshCapacity(input.capacity ?? [], nowMs, behavior.signalStaleAfterSeconds);
  applySpread(run, autoscale?.spread);
  if (autoscale) autoscaleForCapacity(run, autoscale);
  else {
    health(run, true);
    placeEveryEligible(run);
  }

  const status: PlacementStatus = {
    ...previous,
    clusters: run.listedClusters(autoscale?.useDraining === true),
    ...(run.lastAdditionTime ? { lastAdditionTime: run.lastAdditionTime } : {}),
    ...(run.lastClusterRemovalTime ? { lastClusterRemovalTime: run.lastClusterRemovalTime } : {}),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  if (run.failBackStatus && Object.keys(run.failBackStatus).length > 0) status.failBack = run.failBackStatus;
  else delete status.failBack;
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

/**
 * Section 4: health, scale-out (with rule O3's replica floor, and rule F6's
 * bound on a stalled fail-back), then scale-in or fail-back, then standby and drain.
 */
function autoscaleForCapacity(run: Evaluation, config: AutoscaleForCapacity): void {
  const min = config.minClustersBelowCapacityCeiling;
  const max = config.maxClusters ?? 0;
  health(run, false, mayKeepWarm(config));
  trackScaleInCandidates(run);
  trackBelowCeiling(run);
  trackReadyReplicas(run);
  settleFloors(run);
  const listed = run.entries.length;
  let out = scaleOut(run, min, max);
  floorReplacements(run, run.entries.slice(listed));
  if (run.behavior.failBackEnabled && abandonStalledFailBack(run, (e) => warmSize(run, config, e)))
    out = { ...out, headroom: run.live().filter(isHeadroom).length, scaledOut: true };
  trackFailBack(run);
  if (!out.scaledOut && !scaleIn(run, min, out.headroom) && run.behavior.failBackEnabled)
    failBack(run, config, min, out.headroom);
  standby(run, config, max);
  drain(run, config.useDraining === true);
  probeFloors(run);
  run.satisfied = withNoCapacity(run, satisfaction(run, min, max, out));
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

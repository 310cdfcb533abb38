import type { Condition } from '../api/common.js';
import { CONDITION_SATISFIED } from '../conditions.js';
import type { InventoryCluster } from '../selection/inventory.js';
import { formatTaint } from '../selection/taints.js';
import { burstBecause } from '../scaling/fail-back.js';
import { beyondPeakBecause } from './fail-back.js';
import { ceilingInSightBecause } from '../scaling/signals.js';
import { parseTime, SECOND } from '../time.js';
import { nextAddition } from './capacity.js';
import { NO_NOTES, type Entry, type Evaluation } from './evaluation.js';

/** Without autoscaleForCapacity: every eligible, healthy cluster is ACTIVE. */
export function placeEveryEligible(run: Evaluation): void {
  for (const entry of run.live()) {
    if (entry.state === 'SCALING_IN') {
      run.move(entry, 'P3', 'ACTIVE', 'Reactivated', 'reactivated: no scaling configured, every eligible cluster runs');
    }
  }
  for (const cluster of run.selected.eligible) {
    if (run.byKey.get(cluster.key)?.removed === false) continue;
    const taint = run.selected.taintsOf(cluster.key).noSelectIfNew;
    if (taint) {
      run.note(cluster.key, `not added: the taint ${formatTaint(taint)} is not tolerated`);
      continue;
    }
    const unhealthy = run.unhealthyBecause(cluster.key, run.assess(cluster.key));
    if (unhealthy) {
      run.note(cluster.key, `not added: ${unhealthy}`);
      continue;
    }
    // The same for every cluster: its status entry has the reason only (docs/api.md).
    run.add(cluster, 'eligible, and no scaling is configured: every eligible cluster runs', false);
  }
  const count = run.live().length;
  run.satisfied =
    run.selected.eligible.length === 0
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

/**
 * An ACTIVE cluster that counts toward `minClustersBelowCapacityCeiling`: not
 * at its ceiling, not unreachable (rule O1: its replacement may be added at
 * once; the cluster itself stays listed, for health and grace to decide), and
 * without its ceiling in sight (rule T1).
 */
export const isHeadroom = (e: Entry): boolean =>
  e.state === 'ACTIVE' &&
  !e.signal.atCapacityCeiling &&
  !e.signal.unreachable &&
  ceilingInSightBecause(e.signal) === undefined;

/** Why a signal says the cluster cannot be reached, for explanations. */
export function unreachableBecause(e: Pick<Entry, 'signal'>): string | undefined {
  const error = e.signal.transportError;
  return e.signal.unreachable && error
    ? `unreachable: transport error (${error.reason}) on ${error.consecutivePolls} consecutive polls`
    : undefined;
}

export interface ScaleOutResult {
  /** ACTIVE clusters below their ceiling after scale-out. */
  readonly headroom: number;
  readonly scaledOut: boolean;
  /** Headroom is short but scale-out waits for its stabilization window. */
  readonly stabilizing: boolean;
}

/**
 * The scale-out phase, section 4 step 2: while headroom < min, reactivate
 * SCALING_IN clusters (P3), then add the highest-priority addable clusters (P1).
 */
export function scaleOut(run: Evaluation, min: number, max: number): ScaleOutResult {
  const b = run.behavior;
  let headroom = run.live().filter(isHeadroom).length;
  let scaledOut = false;
  let stabilizing = false;
  for (const entry of run.live()) {
    if (entry.state !== 'ACTIVE') continue;
    const unreachable = unreachableBecause(entry);
    if (unreachable)
      run.note(
        entry.key,
        `${unreachable}: not counted as headroom, so a replacement may be added; it stays listed (health and grace decide its removal)`,
      );
    const inSight = ceilingInSightBecause(entry.signal);
    if (inSight) run.note(entry.key, `${inSight}: not counted as headroom (rule T1)`);
  }

  if (headroom < min) {
    // Capacity-driven scale-out waits for the window; filling up to min (a
    // new placement, after an eviction) never does.
    const active = run.live().filter((e) => e.state === 'ACTIVE').length;
    const shortSince = shortSinceMs(run);
    if (
      b.scaleOutStabilizationSeconds > 0 &&
      active >= min &&
      run.nowMs - shortSince < b.scaleOutStabilizationSeconds * SECOND
    ) {
      stabilizing = true;
      run.timer(shortSince, b.scaleOutStabilizationSeconds);
      run.note(
        undefined,
        `headroom ${headroom} < min ${min}: scale-out waits until ${run.timeAfter(shortSince, b.scaleOutStabilizationSeconds)} (scaleOut.stabilizationWindowSeconds)`,
      );
    } else {
      for (const entry of run.byPriority(run.live().filter((e) => e.state === 'SCALING_IN'))) {
        if (headroom >= min) break;
        if (!run.mayReactivate(entry)) continue;
        run.reactivate(entry, `headroom ${headroom} < min ${min}: reactivated, preferred over adding a cluster`);
        headroom++;
        scaledOut = true;
      }
      // Rule O2 (docs/placement-rules.md §10.7): a region where a listed cluster stopped answering is suspect; its other clusters are tried last.
      const suspect = run.regionsOf((e) => e.signal.unreachable);
      const candidates = run.outside(run.selected.eligible, suspect);
      while (headroom < min && !(max > 0 && run.live().length >= max)) {
        // Capacity answers and spread.minGroups may pass candidates over (capacity.ts, docs §10.11).
        const next = nextAddition(run, candidates, (c) => isAddable(run, c), isHeadroom);
        if (!next) break;
        const { cluster } = next;
        const region = run.regionOf(cluster.key);
        const why =
          region !== undefined && suspect.has(region)
            ? ''
            : suspect.size > 0
              ? ' outside the regions of unreachable clusters'
              : '';
        run.add(
          cluster,
          `headroom ${headroom} < min ${min}: added the highest-priority eligible cluster${why}${next.because}`,
        );
        headroom++;
        scaledOut = true;
      }
    }
  }
  if (run.behavior.failBackEnabled && reactivateOnBurst(run)) {
    headroom++;
    scaledOut = true;
  }
  noteNotAdded(run, min, max, headroom);
  return { headroom, scaledOut, stabilizing };
}

/**
 * Rule F4 (docs/placement-rules.md §10.3): a cluster lingering after a
 * fail-back is reactivated (P3) as soon as an ACTIVE cluster of higher
 * priority shows a burst (`burstBecause`), without waiting for its ceiling.
 * While the fail-back still drains it, only when the workload needs more
 * replicas than its recent peak (`beyondPeakBecause`): the load it hands over
 * makes the preferred clusters' pending pods, a burst beyond the peak that
 * fail-back made room for does not. At most one per evaluation, the
 * highest-priority one. Returns whether it reactivated one.
 */
function reactivateOnBurst(run: Evaluation): boolean {
  const beyond = beyondPeakBecause(run);
  for (const entry of run.byPriority(run.live().filter((e) => e.state === 'SCALING_IN'))) {
    if (entry.reason !== 'Lingering' && !(entry.reason === 'FailBack' && beyond)) continue;
    if (!run.mayReactivate(entry)) continue;
    const burst = run
      .activeAbove(entry)
      .map((e) => burstBecause(e.key, e.signal))
      .find((why) => why !== undefined);
    if (!burst) continue;
    const why = entry.reason === 'FailBack' ? `${burst} and ${beyond}` : burst;
    run.reactivate(entry, `${why}: reactivated to take the burst (fail-back rule F4)`);
    return true;
  }
  return false;
}

/** Since when headroom has been short: the Satisfied=False transition time, kept in status. */
function shortSinceMs(run: Evaluation): number {
  const satisfied = run.previous.conditions?.find((c) => c.type === CONDITION_SATISFIED);
  const since = satisfied?.status === 'False' ? parseTime(satisfied.lastTransitionTime) : undefined;
  return since ?? run.nowMs;
}

/**
 * A cluster scale-out may add: not listed, without an untolerated
 * NoSelectIfNew taint, not unhealthy, and not known to be at its capacity
 * ceiling (adding a stocked-out cluster gives no headroom).
 */
export function isAddable(run: Evaluation, cluster: InventoryCluster): boolean {
  return run.byKey.get(cluster.key)?.removed !== false && notAddableBecause(run, cluster) === undefined;
}

/** Why scale-out may not add an unlisted eligible cluster, or undefined. */
function notAddableBecause(run: Evaluation, cluster: InventoryCluster): string | undefined {
  const taint = run.selected.taintsOf(cluster.key).noSelectIfNew;
  if (taint) return `the taint ${formatTaint(taint)} is not tolerated`;
  const signal = run.assess(cluster.key);
  const unhealthy = run.unhealthyBecause(cluster.key, signal);
  if (unhealthy) return unhealthy;
  if (signal.unreachable) return unreachableBecause({ signal });
  return signal.atCapacityCeiling ? 'at its capacity ceiling' : undefined;
}

/** For explain: why each unlisted eligible cluster was not added. Costs nothing without a sink. */
function noteNotAdded(run: Evaluation, min: number, max: number, headroom: number): void {
  if (run.note === NO_NOTES) return;
  for (const cluster of run.selected.eligible) {
    if (run.byKey.get(cluster.key)?.removed === false) continue;
    const why =
      notAddableBecause(run, cluster) ??
      (headroom >= min
        ? `headroom ${headroom} >= min ${min}, no cluster needed`
        : max > 0 && run.live().length >= max
          ? `maxClusters (${max}) reached`
          : 'scale-out is waiting (stabilization window)');
    run.note(cluster.key, `not added: ${why}`);
  }
}

/** The Satisfied condition of an autoscaling placement (section 7). */
export function satisfaction(
  run: Evaluation,
  min: number,
  max: number,
  { headroom, stabilizing }: Pick<ScaleOutResult, 'headroom' | 'stabilizing'>,
): Omit<Condition, 'lastTransitionTime'> {
  const type = CONDITION_SATISFIED;
  const inSight = run
    .live()
    .filter((e) => e.state === 'ACTIVE' && ceilingInSightBecause(e.signal) !== undefined)
    .map((e) => e.key);
  const counts =
    `${headroom} of ${min} required cluster(s) are ACTIVE and below their capacity ceiling` +
    (headroom < min && inSight.length > 0 ? ` (not counting ${inSight.join(', ')}: ceiling in sight, rule T1)` : '');
  if (headroom >= min) return { type, status: 'True', reason: 'HeadroomAvailable', message: counts };
  if (stabilizing) {
    return {
      type,
      status: 'False',
      reason: 'ScaleOutStabilizing',
      message: `${counts}; waiting for behavior.scaleOut.stabilizationWindowSeconds`,
    };
  }
  const addable = run.selected.eligible.some((c) => isAddable(run, c));
  if (addable && max > 0 && run.live().length >= max) {
    return { type, status: 'False', reason: 'MaxClustersReached', message: `${counts}; maxClusters (${max}) reached` };
  }
  if (run.selected.eligible.length === 0) {
    return { type, status: 'False', reason: 'NoEligibleClusters', message: `${counts}; no ClusterProfile is eligible` };
  }
  return {
    type,
    status: 'False',
    reason: 'AllClustersAtCapacity',
    message: `${counts}; every eligible cluster is listed, unhealthy, unreachable, at its capacity ceiling or tainted NoSelectIfNew`,
  };
}

import { parseTime } from '../time.js';
import { unreachableBecause } from './scale-out.js';
import type { Entry, Evaluation } from './evaluation.js';

/**
 * Rule O3 (docs/placement-rules.md §10.8): a cluster added to replace one that
 * was lost (unreachable, UNHEALTHY or EVICTING) starts at the replicas the lost
 * cluster ran, not at the HPA's minReplicas, so it does not wait for its HPA to
 * climb from the minimum while the lost cluster's load goes unserved.
 */

/** Remembers each listed cluster's ready replicas from its fresh signal (the HPA's current replicas without one). */
export function trackReadyReplicas(run: Evaluation): void {
  for (const entry of run.live()) {
    if (!entry.signal.fresh) continue;
    const replicas = entry.signal.readyReplicas ?? entry.signal.currentReplicas;
    if (replicas !== undefined) entry.lastReadyReplicas = replicas;
  }
}

/** Why a listed cluster's capacity counts as lost, or undefined. */
function lostBecause(e: Entry): string | undefined {
  if (e.state === 'UNHEALTHY' || e.state === 'EVICTING') return e.state;
  return unreachableBecause(e);
}

/**
 * Clears the floors that have done their work (the replacement is ready at the
 * floor, left ACTIVE, or ran past behavior.unhealthyTimeoutSeconds, or the lost
 * cluster is back or gone) and caps the others at the replacement's HPA maximum.
 * Runs before `floorReplacements`, on the floors of earlier evaluations.
 */
export function settleFloors(run: Evaluation): void {
  const timeout = run.behavior.unhealthyTimeoutSeconds;
  for (const entry of run.live()) {
    const floor = entry.desiredMinReplicas;
    // A floor without the lost cluster it replaces is a warm standby's (rule W1, the standby phase).
    if (floor === undefined || entry.replacesCluster === undefined) continue;
    const lost = run.byKey.get(entry.replacesCluster);
    const ready = entry.signal.fresh ? entry.signal.readyReplicas : undefined;
    const cleared =
      entry.state !== 'ACTIVE'
        ? `the replacement is ${entry.state}`
        : ready !== undefined && ready >= floor
          ? `${ready} ready replica(s) reached the floor`
          : run.elapsedSeconds(entry.lastTransitionTime) >= timeout
            ? `the floor ran for unhealthyTimeoutSeconds (${timeout}s)`
            : !lost || lost.removed
              ? `${entry.replacesCluster} is no longer listed`
              : lost.state === 'ACTIVE' && lost.signal.fresh
                ? `${lost.key} is back`
                : undefined;
    if (cleared) {
      entry.desiredMinReplicas = undefined;
      entry.replacesCluster = undefined;
      run.note(entry.key, `replica floor cleared (rule O3): ${cleared}`);
      continue;
    }
    const max = entry.signal.fresh ? entry.signal.maxReplicas : undefined;
    if (max !== undefined && max < floor) entry.desiredMinReplicas = max;
    run.timer(parseTime(entry.lastTransitionTime), timeout);
    run.note(
      entry.key,
      `starts at desiredMinReplicas ${entry.desiredMinReplicas} (rule O3), the replicas ${entry.replacesCluster} ran, until it has them ready or ${run.timeAfter(entry.lastTransitionTime, timeout)}`,
    );
  }
}

/**
 * The lost clusters with last ready replicas that no replacement covers yet, in
 * priority order: the n-th cluster added in an evaluation gets the n-th one's floor.
 */
export function uncoveredLost(run: Evaluation): Entry[] {
  const covered = new Set(run.live().flatMap((e) => (e.replacesCluster !== undefined ? [e.replacesCluster] : [])));
  return run
    .byPriority(run.live())
    .filter((e) => !covered.has(e.key) && (e.lastReadyReplicas ?? 0) > 0 && lostBecause(e) !== undefined);
}

/**
 * Gives each cluster added in this evaluation (`added`, in order) the floor of
 * the next lost cluster that no replacement covers yet, in priority order: its
 * last ready replicas. A lost cluster without them gives no floor.
 */
export function floorReplacements(run: Evaluation, added: readonly Entry[]): void {
  if (added.length === 0) return;
  const lost = uncoveredLost(run);
  added.forEach((entry, i) => {
    const from = lost[i];
    if (!from) return;
    entry.desiredMinReplicas = from.lastReadyReplicas;
    entry.replacesCluster = from.key;
    run.timer(run.nowMs, run.behavior.unhealthyTimeoutSeconds);
    run.note(
      entry.key,
      `replaces ${from.key} (${lostBecause(from)}): starts at desiredMinReplicas ${from.lastReadyReplicas} (rule O3), the replicas it last had ready`,
    );
  });
}

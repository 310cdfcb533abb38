import { observedReplicas } from '../scaling/signals.js';
import { parseTime } from '../time.js';
import type { Entry, Evaluation } from './evaluation.js';

/**
 * The health phase, step 1 of every evaluation: per listed cluster at most one
 * E/H/R transition, E before H before R (docs/placement-rules.md §3).
 * `removeIneligibleAtOnce`: without autoscaling there is nothing to drain, so
 * E1/E3 is followed by R3 in the same evaluation.
 */
export function health(
  run: Evaluation,
  removeIneligibleAtOnce: boolean,
  mayKeepWarm: (entry: Entry) => boolean = () => false,
): void {
  const b = run.behavior;
  for (const entry of run.live()) {
    const eligible = run.selected.isStillEligible(entry.key);
    const unhealthy = run.unhealthyBecause(entry.key, entry.signal);
    const replicas = observedReplicas(entry.signal);
    // A missing profile may be a transient (a provider, a file, the CRD), not an
    // intent: it evicts, but is never removed in the same evaluation (section 10.5).
    const profileMissing = run.isProfileMissing(entry.key);
    if (!eligible && (entry.state === 'ACTIVE' || entry.state === 'SCALING_IN')) {
      const why = `no longer eligible: ${run.selected.ineligibleBecause(entry.key)}`;
      const reason = profileMissing
        ? 'ClusterProfileMissing'
        : run.selected.taintsOf(entry.key).noSelect
          ? 'Tainted'
          : 'NoLongerEligible';
      run.move(entry, entry.state === 'ACTIVE' ? 'E1' : 'E3', 'EVICTING', reason, why);
      if (profileMissing) {
        if (run.holdProfileLossRemovals) run.held.push(entry.key);
        else if (removeIneligibleAtOnce) run.timer(run.nowMs, b.profileLossGraceSeconds);
      } else if (removeIneligibleAtOnce) {
        run.move(entry, 'R3', null, 'Removed', 'nothing to drain without autoscaleForCapacity');
      }
      continue;
    }
    if (entry.state === 'EVICTING') {
      if (eligible) {
        run.move(entry, 'E2', 'ACTIVE', 'EligibleAgain', 'eligible again');
      } else if (profileMissing && run.holdProfileLossRemovals) {
        run.held.push(entry.key);
      } else if (removeIneligibleAtOnce && profileMissing) {
        if (run.elapsedSeconds(entry.lastTransitionTime) >= b.profileLossGraceSeconds) {
          run.move(
            entry,
            'R3',
            null,
            'Removed',
            `ClusterProfile missing for profileLossGraceSeconds (${b.profileLossGraceSeconds}s)`,
          );
        } else {
          run.timer(parseTime(entry.lastTransitionTime), b.profileLossGraceSeconds);
        }
      } else if (removeIneligibleAtOnce) {
        run.move(entry, 'R3', null, 'Removed', 'nothing to drain without autoscaleForCapacity');
      } else if (replicas !== undefined && replicas <= 1) {
        run.move(entry, 'R3', null, 'Removed', `drained: observed ${replicas} replica(s)`);
      } else if (run.elapsedSeconds(entry.lastTransitionTime) >= b.evictionTimeoutSeconds) {
        run.move(entry, 'R3', null, 'Removed', `EVICTING for evictionTimeoutSeconds (${b.evictionTimeoutSeconds}s)`);
      } else {
        run.timer(parseTime(entry.lastTransitionTime), b.evictionTimeoutSeconds);
        run.note(
          entry.key,
          `EVICTING until it reports ≤ 1 replica, at most until ${run.timeAfter(entry.lastTransitionTime, b.evictionTimeoutSeconds)} (evictionTimeoutSeconds)`,
        );
      }
      continue;
    }
    if (unhealthy && (entry.state === 'ACTIVE' || entry.state === 'SCALING_IN')) {
      const why =
        unhealthy === 'ControlPlaneUnhealthy'
          ? 'the ClusterProfile condition ControlPlaneHealthy is False'
          : 'the signal reports the workload unhealthy';
      run.move(entry, entry.state === 'ACTIVE' ? 'H1' : 'H3', 'UNHEALTHY', unhealthy, why);
      continue;
    }
    if (entry.state === 'UNHEALTHY') {
      // An ineligible cluster never becomes ACTIVE again: it waits for R2.
      if (eligible && run.isHealthyAgain(entry)) {
        run.move(entry, 'H2', 'ACTIVE', 'HealthyAgain', 'healthy again');
      } else if (run.elapsedSeconds(entry.lastTransitionTime) >= b.unhealthyTimeoutSeconds) {
        run.move(entry, 'R2', null, 'Removed', `UNHEALTHY for unhealthyTimeoutSeconds (${b.unhealthyTimeoutSeconds}s)`);
      } else {
        run.timer(parseTime(entry.lastTransitionTime), b.unhealthyTimeoutSeconds);
        run.note(
          entry.key,
          `UNHEALTHY: removed at ${run.timeAfter(entry.lastTransitionTime, b.unhealthyTimeoutSeconds)} (unhealthyTimeoutSeconds) unless healthy and eligible again`,
        );
      }
      continue;
    }
    if (entry.state !== 'SCALING_IN') continue;
    // A source that reports no replica count (a verdict-only source) would hold R1 forever: its
    // clock is R3's. Only a fresh signal says so, and only once a drain is at 1 or, with no drain
    // (which would have capped it), while the source still says it wants scale-in: without a count
    // that is all that shows it is not serving load again.
    const countless = replicas === undefined && entry.signal.fresh;
    const uncounted =
      countless && (entry.draining ? entry.draining.desiredMaxReplicas <= 1 : entry.signal.wantsScaleIn);
    // Without a drain nothing takes a cluster below its HPA minimum: at 2 or more it would hold R1 forever too.
    const floor = !entry.draining && entry.signal.fresh ? atHpaMinimum(entry) : undefined;
    const onTheClock = uncounted || floor !== undefined;
    const timedOut = onTheClock && run.elapsedSeconds(entry.lastTransitionTime) >= b.evictionTimeoutSeconds;
    if ((replicas !== undefined && replicas <= 1) || timedOut) {
      // A cluster that may be kept warm (standby, linger) is decided by the standby phase.
      if (mayKeepWarm(entry)) entry.removalHeld = true;
      else removeScaledIn(run, entry);
    } else if (onTheClock) {
      run.timer(parseTime(entry.lastTransitionTime), b.evictionTimeoutSeconds);
      const by = run.timeAfter(entry.lastTransitionTime, b.evictionTimeoutSeconds);
      run.note(
        entry.key,
        uncounted
          ? `SCALING_IN: its signal reports no replica count (hpa.currentReplicas, readyReplicas), so it is removed at ${by} (evictionTimeoutSeconds) unless one arrives`
          : `SCALING_IN without draining at its HPA minimum (${floor}): nothing takes it lower, so it is removed at ${by} (evictionTimeoutSeconds) unless its load comes back`,
      );
    } else if (countless && !entry.draining) {
      run.note(
        entry.key,
        `SCALING_IN: its signal reports no replica count (hpa.currentReplicas, readyReplicas) and no longer says it wants scale-in (its load came back): it stays until it does again, at the earliest ${run.timeAfter(entry.lastTransitionTime, b.evictionTimeoutSeconds)} (evictionTimeoutSeconds)`,
      );
    }
  }
}

/** The HPA minimum (above 1) a cluster's fresh signal shows it running at, or undefined. */
function atHpaMinimum(entry: Entry): number | undefined {
  const { currentReplicas: current, minReplicas: min } = entry.signal;
  return current !== undefined && min !== undefined && min > 1 && current <= min ? min : undefined;
}

/**
 * R1: a SCALING_IN cluster observed at ≤ 1 replica leaves the list; so does one
 * that has been SCALING_IN for evictionTimeoutSeconds reporting no count, or,
 * without a drain, at an HPA minimum above 1 (docs/placement-rules.md §3).
 */
export function removeScaledIn(run: Evaluation, entry: Entry): void {
  const replicas = observedReplicas(entry.signal);
  const timeout = `SCALING_IN for evictionTimeoutSeconds (${run.behavior.evictionTimeoutSeconds}s)`;
  run.move(
    entry,
    'R1',
    null,
    'Removed',
    replicas === undefined
      ? `scaled in: ${timeout} with no replica count reported`
      : replicas > 1
        ? `scaled in: ${timeout} at its HPA minimum (${replicas} replica(s)) without draining`
        : `scaled in: observed ${replicas} replica(s)`,
  );
}

import { noRoomBecause, risingBecause } from '../scaling/fail-back.js';
import type { SignalAssessment } from '../scaling/signals.js';
import { parseTime, SECOND } from '../time.js';
import type { Entry, Evaluation } from './evaluation.js';
import { failBackView, recentPeak } from './fail-back.js';
import { isHeadroom } from './scale-out.js';
import { keptForSpreadBecause } from './spread.js';

/** Rule M1: the lowest-priority ACTIVE cluster runs at its HPA minimum and asks for no more. */
function atMinimum(s: SignalAssessment): boolean {
  const { currentReplicas: current, minReplicas: min, desiredReplicas: desired } = s;
  return (
    s.fresh &&
    current !== undefined &&
    min !== undefined &&
    desired !== undefined &&
    current <= min &&
    desired <= current &&
    s.pendingPods === 0
  );
}

/**
 * Rule M1 (docs/placement-rules.md §10.10): whether the lowest-priority
 * ACTIVE cluster counts as wanting scale-in although its HPA does not report
 * TooFewReplicas, and why (or why not); undefined when the rule does not
 * apply (fail-back off, or the cluster not at its HPA minimum). It runs at
 * its HPA minimum asking for no more, load is not rising, and the other
 * ACTIVE clusters have room for its replicas and for the workload's recent
 * peak (kept with fail-back on) and have been below their ceiling for the
 * whole lookback: its minimum replicas are all that keeps it, and each
 * cluster's minimum keeps the HPAs from ever asking for fewer.
 */
function consolidation(
  run: Evaluation,
): { readonly l: Entry; readonly wants: boolean; readonly why: string } | undefined {
  const active = run.byPriority(run.live().filter((e) => e.state === 'ACTIVE'));
  const l = active.at(-1);
  if (!l || active.length < 2 || !atMinimum(l.signal)) return undefined;
  // Without the recent peak (kept with fail-back on) a trough would pass for the end of the need.
  const peak = recentPeak(run);
  if (!peak) return undefined;
  const higher = failBackView(run)
    .filter((c) => c.state === 'ACTIVE')
    .slice(0, -1);
  // Ready replicas are not needed here: L runs only its minimum, and its drain is that of any scale-in (rule D1).
  const refused = risingBecause(higher) ?? noRoomBecause(higher, l.signal.currentReplicas, peak, false);
  if (refused) return { l, wants: false, why: refused };
  // An HPA maximum is not what a cluster can run: one that met its ceiling (or had pods pending) within
  // the lookback may meet it again at the next peak, and L's minimum replicas are what serve then.
  const since = run.nowMs - peak.lookbackSeconds * SECOND;
  const recent = higher.find((c) => (parseTime(c.belowCeilingSince) ?? Infinity) > since);
  if (recent)
    return {
      l,
      wants: false,
      why: recent.belowCeilingSince
        ? `${recent.key} has been below its ceiling only since ${recent.belowCeilingSince}, not for the whole lookback (${peak.lookbackSeconds}s, failBack.peakLookbackSeconds)`
        : `${recent.key} is not recorded below its ceiling (status.clusters[].belowCeilingSince)`,
    };
  return {
    l,
    wants: true,
    why: `${l.key} runs its HPA minimum (${l.signal.currentReplicas}) and the preferred clusters have room for it (rule M1)`,
  };
}

/**
 * The time a cluster started wanting scale-in, kept in status so a restart
 * loses nothing; anything else (a stale or missing signal included) clears it.
 * ACTIVE clusters are scale-in candidates (section 4); a cluster lingering
 * after a fail-back is tracked too, as its linger ends once it wants scale-in
 * for the window (rule F3).
 */
export function trackScaleInCandidates(run: Evaluation): void {
  const m1 = consolidation(run);
  if (m1)
    run.note(
      m1.l.key,
      m1.wants ? `counts as wanting scale-in: ${m1.why}` : `not scaled in at its HPA minimum (rule M1): ${m1.why}`,
    );
  const lowest = m1?.wants ? m1.l : undefined;
  for (const entry of run.live()) {
    const tracked = entry.state === 'ACTIVE' || (entry.state === 'SCALING_IN' && entry.reason === 'Lingering');
    // Fail-back's floor (rules F6, F7) raised this HPA's minimum: its TooFewReplicas says nothing of the load.
    const floored = entry.state === 'ACTIVE' && entry.desiredMinReplicas !== undefined && !entry.replacesCluster;
    if (tracked && !floored && (entry.signal.wantsScaleIn || entry === lowest)) entry.scaleInCandidateSince ??= run.now;
    else entry.scaleInCandidateSince = undefined;
  }
}

/** The scale-in phase, section 4 step 3; true when it moved a cluster to SCALING_IN. */
export function scaleIn(run: Evaluation, min: number, headroom: number): boolean {
  const b = run.behavior;
  const active = run.live().filter((e) => e.state === 'ACTIVE');
  const waiting: Entry[] = [];
  for (const entry of active) {
    const since = parseTime(entry.scaleInCandidateSince);
    if (since === undefined) continue;
    if (run.nowMs - since >= b.scaleInStabilizationSeconds * SECOND) waiting.push(entry);
    else {
      run.timer(since, b.scaleInStabilizationSeconds);
      run.note(
        entry.key,
        `wants scale-in since ${entry.scaleInCandidateSince}; not before ${run.timeAfter(since, b.scaleInStabilizationSeconds)} (scaleIn.stabilizationWindowSeconds)`,
      );
    }
  }
  if (waiting.length === 0) return false;
  const waitingNote = (why: string) => {
    for (const entry of waiting) run.note(entry.key, `wants scale-in, but ${why}`);
  };
  // Fail static: never scale in on a guess about the others' headroom.
  const unknown = active.filter((e) => !e.signal.fresh);
  if (unknown.length > 0) {
    waitingNote(`no fresh signal from ${unknown.map((e) => e.key).join(', ')}`);
    return false;
  }
  const lastAddition = parseTime(run.lastAdditionTime);
  if (lastAddition !== undefined && run.nowMs - lastAddition < b.scaleInCooldownSeconds * SECOND) {
    run.timer(lastAddition, b.scaleInCooldownSeconds);
    waitingNote(`the scale-in cooldown runs until ${run.timeAfter(lastAddition, b.scaleInCooldownSeconds)}`);
    return false;
  }
  const candidate = run.byPriority(waiting).at(-1)!;
  const spread = keptForSpreadBecause(run, candidate, isHeadroom);
  if (spread) {
    run.note(candidate.key, `wants scale-in, but ${spread}`);
    return false;
  }
  const without = headroom - (candidate.signal.atCapacityCeiling ? 0 : 1);
  if (without < min) {
    run.note(candidate.key, `wants scale-in, but headroom without it would be ${without} < min ${min}`);
    return false;
  }
  const wanted = Math.round(run.elapsedSeconds(candidate.scaleInCandidateSince));
  run.move(
    candidate,
    'P2',
    'SCALING_IN',
    'ScaleIn',
    `wanted scale-in for ${wanted}s, the lowest-priority such cluster; headroom stays ${without} >= min ${min} without it`,
  );
  return true;
}

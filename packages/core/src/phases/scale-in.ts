import { parseTime, SECOND } from '../time.js';
import type { Entry, Evaluation } from './evaluation.js';

/**
 * The time a cluster started wanting scale-in, kept in status so a restart
 * loses nothing; anything else (a stale or missing signal included) clears it.
 * ACTIVE clusters are scale-in candidates (section 4); a cluster lingering
 * after a fail-back is tracked too, as its linger ends once it wants scale-in
 * for the window (rule F3).
 */
export function trackScaleInCandidates(run: Evaluation): void {
  for (const entry of run.live()) {
    const tracked = entry.state === 'ACTIVE' || (entry.state === 'SCALING_IN' && entry.reason === 'Lingering');
    if (tracked && entry.signal.wantsScaleIn) entry.scaleInCandidateSince ??= run.now;
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

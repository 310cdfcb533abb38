import { chooseFailBack, nextBelowCeilingSince } from '../scaling/fail-back.js';
import type { Evaluation } from './evaluation.js';

/** behavior.failBack: since when each ACTIVE cluster has been below its ceiling (kept in status). */
export function trackBelowCeiling(run: Evaluation): void {
  for (const entry of run.live()) {
    entry.belowCeilingSince = run.behavior.failBackEnabled
      ? nextBelowCeilingSince(entry.state, entry.signal, entry.belowCeilingSince, run.now)
      : undefined;
  }
}

/** The fail-back phase, section 10.3: the preferred clusters take the workload back (module scaling/fail-back). */
export function failBack(run: Evaluation, min: number, headroom: number): void {
  const b = run.behavior;
  const verdict = chooseFailBack({
    clusters: run.byPriority(run.live()).map((e) => ({
      key: e.key,
      state: e.state,
      eligible: run.selected.rankOf(e.key) !== undefined,
      signal: e.signal,
      belowCeilingSince: e.belowCeilingSince,
      reason: e.reason,
      lastTransitionTime: e.lastTransitionTime,
    })),
    nowMs: run.nowMs,
    min,
    headroom,
    stabilizationSeconds: b.failBackStabilizationSeconds,
    cooldownSeconds: b.scaleInCooldownSeconds,
    lastAdditionTime: run.lastAdditionTime,
  });
  if (verdict.kind === 'wait') run.timers.push(verdict.untilMs);
  if (verdict.kind === 'move')
    run.move(run.byKey.get(verdict.cluster)!, 'P2', 'SCALING_IN', 'FailBack', verdict.message);
}

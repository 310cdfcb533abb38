import {
  backoffLevelAt,
  chooseFailBack,
  failBackWindowSeconds,
  nextBelowCeilingSince,
  recordCycle,
  nextRoomSince,
  recordFailBack,
  neededReplicas,
  nextRecentPeaks,
  type BackoffSettings,
  type FailBackCluster,
  type RecentPeak,
} from '../scaling/fail-back.js';
import type { AutoscaleForCapacity } from '../api/placement.js';
import { nextStepSize } from '../scaling/draining.js';
import { formatTime } from '../time.js';
import type { Evaluation } from './evaluation.js';
import { warmSize } from './standby.js';

/** behavior.failBack: since when each ACTIVE cluster has had room (kept in status). */
export function trackBelowCeiling(run: Evaluation): void {
  for (const entry of run.live()) {
    entry.belowCeilingSince = run.behavior.failBackEnabled
      ? nextBelowCeilingSince(entry.state, entry.signal, entry.belowCeilingSince, run.now)
      : undefined;
  }
}

function backoffSettings(run: Evaluation): BackoffSettings {
  const b = run.behavior;
  return {
    stabilizationSeconds: b.failBackStabilizationSeconds,
    maxStabilizationSeconds: b.failBackMaxStabilizationSeconds,
    decaySeconds: b.failBackBackoffDecaySeconds,
  };
}

/** The listed clusters as fail-back (and rule M1) read them, in priority order. */
export const failBackView = (run: Evaluation): FailBackCluster[] =>
  run.byPriority(run.live()).map((e) => ({
    key: e.key,
    state: e.state,
    eligible: run.selected.rankOf(e.key) !== undefined,
    signal: e.signal,
    belowCeilingSince: e.belowCeilingSince,
    reason: e.reason,
    lastTransitionTime: e.lastTransitionTime,
  }));

/**
 * The replicas the workload needs now, summed over its ACTIVE and SCALING_IN
 * clusters; undefined when one of them has no fresh signal (nothing is recorded then).
 */
function workloadReplicas(run: Evaluation): number | undefined {
  let total = 0;
  for (const e of run.live()) {
    if (e.state !== 'ACTIVE' && e.state !== 'SCALING_IN') continue;
    const needed = neededReplicas(e.signal);
    if (needed === undefined) return undefined;
    total += needed;
  }
  return total;
}

/** The most replicas the workload needed in the periods kept (status.failBack.recentPeaks), if any. */
function keptPeak(run: Evaluation): number | undefined {
  const peaks = run.failBackStatus?.recentPeaks;
  return peaks && peaks.length > 0 ? Math.max(...peaks.map((p) => p.replicas)) : undefined;
}

/**
 * Rule F2: the most replicas the workload needed within the lookback, now
 * included; undefined when none is kept (fail-back off).
 */
export function recentPeak(run: Evaluation): RecentPeak | undefined {
  const kept = keptPeak(run);
  if (kept === undefined) return undefined;
  return {
    replicas: Math.max(kept, workloadReplicas(run) ?? 0),
    lookbackSeconds: run.behavior.failBackPeakLookbackSeconds,
  };
}

/**
 * Rule F4 during a fail-back drain: why the workload now needs more than
 * fail-back made room for, or undefined: more replicas than the recent peak
 * (rule F2, read before this evaluation adds to it), or a receiver's HPA
 * asking for more than the floor rule F6 gave it (its own load rising: the
 * drain hands load over only to pods that are ready for it).
 */
export function beyondPeakBecause(run: Evaluation): string | undefined {
  for (const e of run.live()) {
    const floor = e.state === 'ACTIVE' && e.replacesCluster === undefined ? e.desiredMinReplicas : undefined;
    const desired = e.signal.fresh ? e.signal.desiredReplicas : undefined;
    if (floor !== undefined && desired !== undefined && desired > floor)
      return `${e.key}'s HPA asks for ${desired} replica(s), above the ${floor} fail-back asked of it (rule F6)`;
  }
  const peak = keptPeak(run);
  const total = workloadReplicas(run);
  if (peak === undefined || total === undefined) return undefined;
  // Rule F6 asks the receivers for the next step before the drain hands it over: counted twice, not needed twice.
  let lead = 0;
  for (const e of run.live())
    if (e.state === 'SCALING_IN' && e.reason === 'FailBack' && e.draining)
      lead += nextStepSize(e.draining, run.behavior.drainStepPercent, 1);
  const now = total - lead;
  if (now <= peak) return undefined;
  return `the workload needs ${now} replica(s), above its recent peak of ${peak}`;
}

/**
 * After scale-out, every evaluation: rule F1 (backoff), a P1 or P3 of the
 * cluster of the last fail-back completes a cycle and multiplies the next
 * window; rule F2 (room), the workload's recent peak, and since when the
 * preferred clusters have had room for it with load not rising.
 */
export function trackFailBack(run: Evaluation): void {
  if (!run.behavior.failBackEnabled) return;
  for (const t of run.transitions) {
    if (t.id !== 'P1' && t.id !== 'P3') continue;
    run.failBackStatus = recordCycle(run.failBackStatus, t.cluster, run.nowMs, backoffSettings(run));
  }
  const { roomSince: previous, recentPeaks: peaks, ...rest } = run.failBackStatus ?? {};
  const recentPeaks = nextRecentPeaks(
    peaks,
    workloadReplicas(run),
    run.nowMs,
    run.behavior.failBackPeakLookbackSeconds,
  );
  run.failBackStatus = { ...rest, ...(recentPeaks.length > 0 ? { recentPeaks } : {}) };
  const roomSince = nextRoomSince(failBackView(run), previous, run.now, recentPeak(run));
  if (roomSince) run.failBackStatus.roomSince = roomSince;
}

/** The fail-back phase, section 10.3 and rules F1, F2 and F5: the preferred clusters take the workload back. */
export function failBack(run: Evaluation, config: AutoscaleForCapacity, min: number, headroom: number): void {
  const settings = backoffSettings(run);
  const level = backoffLevelAt(run.failBackStatus, run.nowMs, settings);
  const window = failBackWindowSeconds(level, settings);
  const lowest = run.byPriority(run.live().filter((e) => e.state === 'ACTIVE')).at(-1);
  const verdict = chooseFailBack({
    clusters: failBackView(run),
    nowMs: run.nowMs,
    min,
    headroom,
    stabilizationSeconds: window,
    cooldownSeconds: run.behavior.scaleInCooldownSeconds,
    lastAdditionTime: run.lastAdditionTime,
    roomSince: run.failBackStatus?.roomSince,
    warmSize: lowest ? warmSize(run, config, lowest) : 1,
    peak: recentPeak(run),
  });
  const backoff =
    level > 0
      ? `backoff level ${level} after fail-back cycles: window ${window}s (failBack.stabilizationWindowSeconds ${settings.stabilizationSeconds}s × 4 per level, at most ${settings.maxStabilizationSeconds}s)`
      : `window ${window}s (failBack.stabilizationWindowSeconds)`;
  switch (verdict.kind) {
    case 'wait':
      run.timers.push(verdict.untilMs);
      run.note(
        undefined,
        `fail-back waits until ${formatTime(verdict.untilMs)}: ${backoff} of room for the recent peak, load not rising and below-ceiling signals, or the scale-in cooldown`,
      );
      return;
    case 'noRoom':
      run.note(verdict.cluster, `fail-back waits for room: ${verdict.why}`);
      return;
    case 'nothingToMove':
      run.note(verdict.cluster, `no fail-back: ${verdict.why} (fail-back rule F5)`);
      return;
    case 'move':
      run.failBackStatus = recordFailBack(run.failBackStatus, verdict.cluster, run.nowMs, settings);
      run.move(run.byKey.get(verdict.cluster)!, 'P2', 'SCALING_IN', 'FailBack', verdict.message);
      return;
    case 'none':
      return;
  }
}

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
  nextNodeLimits,
  nextProvenReplicas,
  fallbackRisingBecause,
  type BackoffSettings,
  type FailBackCluster,
  type RecentPeak,
  capacityOf,
  unprovenBecause,
} from '../scaling/fail-back.js';
import type { AutoscaleForCapacity, FailBackStatus } from '../api/placement.js';
import { drainStepSize, nextStepSize } from '../scaling/draining.js';
import { formatTime, parseTime } from '../time.js';
import { giveFailBackFloors } from './drain.js';
import type { Entry, Evaluation } from './evaluation.js';
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
export const failBackView = (run: Evaluation): FailBackCluster[] => {
  const limits = new Map((run.failBackStatus?.nodeLimits ?? []).map((l) => [l.cluster, l]));
  const proven = new Map((run.failBackStatus?.provenReplicas ?? []).map((p) => [p.cluster, p.replicas]));
  return run.byPriority(run.live()).map((e) => ({
    key: e.key,
    state: e.state,
    eligible: run.selected.rankOf(e.key) !== undefined,
    signal: e.signal,
    belowCeilingSince: e.belowCeilingSince,
    reason: e.reason,
    lastTransitionTime: e.lastTransitionTime,
    nodeLimit: limits.get(e.key),
    proven: proven.get(e.key),
  }));
};

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
  // Rule F7 asks the preferred clusters for replicas the fallback still runs: counted twice, not needed twice.
  return Math.max(0, total - (run.failBackStatus?.probe?.replicas ?? 0));
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
  const current = workloadReplicas(run);
  const periods = run.failBackStatus?.recentPeaks ?? [];
  return {
    replicas: Math.max(kept, current ?? 0),
    low: Math.min(...periods.map((p) => p.fewest ?? 0), current ?? Infinity),
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
  const {
    roomSince: previous,
    recentPeaks: peaks,
    nodeLimits: limits,
    provenReplicas: proven,
    probe,
    ...rest
  } = run.failBackStatus ?? {};
  const provenReplicas = nextProvenReplicas(proven, run.live());
  const recentPeaks = nextRecentPeaks(
    peaks,
    workloadReplicas(run),
    run.nowMs,
    run.behavior.failBackPeakLookbackSeconds,
  );
  const nodeLimits = nextNodeLimits(limits, run.live(), run.nowMs, run.behavior.failBackPeakLookbackSeconds);
  const ended = probe && probeEndsBecause(run, probe);
  if (ended) run.note(probe.cluster, `fail-back probe ended: ${ended}; the fail-back window restarts (rule F7)`);
  run.failBackStatus = {
    ...rest,
    ...(recentPeaks.length > 0 ? { recentPeaks } : {}),
    ...(nodeLimits.length > 0 ? { nodeLimits } : {}),
    ...(provenReplicas.length > 0 ? { provenReplicas } : {}),
    ...(probe && !ended ? { probe } : {}),
  };
  // A refused probe shows the room fail-back waited for was not real: a whole window again, from now.
  const roomSince = nextRoomSince(failBackView(run), ended ? undefined : previous, run.now, recentPeak(run));
  if (roomSince) run.failBackStatus.roomSince = roomSince;
}

type Probe = NonNullable<FailBackStatus['probe']>;

/** The clusters that take a fail-back of `l`: every other ACTIVE cluster, as rule D1 counts receivers once `l` drains. */
const receiversOf = (run: Evaluation, l: Entry): Entry[] =>
  run.byPriority(run.live().filter((e) => e.state === 'ACTIVE' && e !== l));

/** Their ready replicas, or undefined when one has no fresh signal with readyReplicas. */
function readyOf(receivers: readonly Entry[]): number | undefined {
  let ready = 0;
  for (const e of receivers) {
    const r = e.signal.fresh ? e.signal.readyReplicas : undefined;
    if (r === undefined) return undefined;
    ready += r;
  }
  return ready;
}

/** Rule F7's bound, rule F6's for a step: the drain step interval plus the time fail-back gave the room to prove itself. */
const probeBoundSeconds = (run: Evaluation) =>
  run.behavior.drainStepIntervalSeconds + run.behavior.failBackStabilizationSeconds;

const lowestActive = (run: Evaluation): Entry | undefined =>
  run.byPriority(run.live().filter((e) => e.state === 'ACTIVE')).at(-1);

/**
 * Rule F7: why the probe ends without a move, or undefined while it stands:
 * its cluster is no longer the lowest-priority ACTIVE one, a receiver became
 * ACTIVE after it began, the receivers no
 * longer hold the recent peak (rule F2), a receiver has no fresh signal,
 * refuses the replicas (a FailedScaleUp or NotTriggerScaleUp, its ceiling),
 * or its own load rises past what the probe asked of it, or the replicas are
 * not ready within the bound.
 */
function probeEndsBecause(run: Evaluation, p: Probe): string | undefined {
  const l = run.byKey.get(p.cluster);
  if (!l || l.removed || lowestActive(run) !== l) return `${p.cluster} is no longer the lowest-priority ACTIVE cluster`;
  const receivers = receiversOf(run, l);
  if (receivers.length === 0) return 'no other cluster is ACTIVE';
  // The probe counts the receivers' ready replicas from when it began: a cluster that became ACTIVE
  // since (added, or reactivated) would pass its own pods off as the step, and has not had the window.
  const since = parseTime(p.since) ?? -Infinity;
  const joined = receivers.find((e) => (parseTime(e.lastTransitionTime) ?? -Infinity) >= since);
  if (joined) return `${joined.key} became ACTIVE after the probe began: its pods are not the step asked for`;
  const peak = recentPeak(run);
  const view = new Map(failBackView(run).map((c) => [c.key, c]));
  let capacity = 0;
  for (const e of receivers) capacity += capacityOf(view.get(e.key)!, e.signal.fresh ? (e.signal.maxReplicas ?? 0) : 0);
  if (peak && capacity < peak.replicas)
    return `the receivers hold ${capacity} replica(s) at their HPA maximum or node limit, and the workload needed ${peak.replicas} within the last ${peak.lookbackSeconds}s (rule F2)`;
  const unproven = unprovenBecause(
    receivers.map((e) => view.get(e.key)!),
    peak,
  );
  if (unproven) return unproven;
  // L's own load rising: the step asked would not hold it.
  const rising = l.signal.fresh ? fallbackRisingBecause(view.get(l.key)!) : undefined;
  if (rising) return rising;
  for (const e of receivers) {
    const s = e.signal;
    if (!s.fresh) return `${e.key} has no fresh signal`;
    if (s.failedScaleUp === true) return `${e.key} saw a FailedScaleUp: it cannot start the replicas`;
    if (s.atCapacityCeiling) return `${e.key} is at its capacity ceiling`;
    const asked = Math.max(e.desiredMinReplicas ?? 0, s.currentReplicas ?? 0);
    if (s.desiredReplicas !== undefined && s.desiredReplicas > asked)
      return `load is rising: ${e.key}'s HPA asks for ${s.desiredReplicas} replica(s), above the ${asked} it runs or was asked for`;
  }
  const bound = probeBoundSeconds(run);
  if (run.elapsedSeconds(p.since) >= bound)
    return `the receivers did not have ${p.replicas} more replica(s) ready within ${bound}s (behavior.drain.stepIntervalSeconds + failBack.stabilizationWindowSeconds)`;
  return undefined;
}

/**
 * Rule F7: instead of the P2, ask the receivers for the drain's first step
 * (its floor is given by `probeFloors`); the move comes once they have it ready.
 */
function startProbe(run: Evaluation, l: Entry, warm: number): void {
  const ready = readyOf(receiversOf(run, l));
  const current = l.signal.currentReplicas;
  if (ready === undefined || current === undefined) {
    run.note(l.key, 'fail-back waits for room: a receiver reports no readyReplicas to probe (rule F7)');
    return;
  }
  const replicas = Math.min(current - warm, drainStepSize(current, run.behavior.drainStepPercent));
  const probe: Probe = { cluster: l.key, since: run.now, receiversReadyReplicas: ready, replicas };
  run.failBackStatus = { ...run.failBackStatus, probe };
  waitForProbe(run, probe, ready);
}

function waitForProbe(run: Evaluation, p: Probe, ready: number | undefined): void {
  const bound = probeBoundSeconds(run);
  run.timer(parseTime(p.since), bound);
  run.note(
    p.cluster,
    `fail-back waits for the receivers to have the first step's ${p.replicas} replica(s) ready (${p.receiversReadyReplicas} → ${p.receiversReadyReplicas + p.replicas}, ${ready ?? 'unknown'} now) before ${p.cluster} moves: a receiver that cannot start them says so before any load moves, and the window restarts; at the latest until ${run.timeAfter(p.since, bound)} (rule F7)`,
  );
}

/** Rule F7: the P2 once the probe's replicas are ready, with every other condition of the move still holding. */
function settleProbe(run: Evaluation, p: Probe, min: number, headroom: number, window: number, warm: number): void {
  const l = run.byKey.get(p.cluster)!;
  const current = l.signal.currentReplicas;
  if (current !== undefined && current <= warm) {
    const { probe: _, ...rest } = run.failBackStatus!;
    run.failBackStatus = rest;
    run.note(
      l.key,
      `fail-back probe ended: ${l.key} runs ${current} replica(s), no more than the ${warm} it would linger at: nothing to move (fail-back rule F5)`,
    );
    return;
  }
  const receivers = receiversOf(run, l);
  const ready = readyOf(receivers);
  const without = headroom - (l.signal.atCapacityCeiling ? 0 : 1);
  if (ready === undefined || ready - p.receiversReadyReplicas < p.replicas || !l.signal.fresh || without < min) {
    waitForProbe(run, p, ready);
    return;
  }
  const { probe: _, ...rest } = run.failBackStatus!;
  run.failBackStatus = recordFailBack(rest, l.key, run.nowMs, backoffSettings(run));
  l.probedFrom = p.receiversReadyReplicas;
  run.move(
    l,
    'P2',
    'SCALING_IN',
    'FailBack',
    `fail-back: higher-priority ${receivers.map((e) => e.key).join(', ')} below capacity ceiling for ${window}s or more, and ${ready - p.receiversReadyReplicas} more replica(s) ready for the first step of ${p.replicas} (rule F7); ` +
      `headroom stays ${without} >= min ${min} without this lowest-priority cluster`,
  );
}

/**
 * Rule F7's floor, after the drain phase (which sets rule F6's): while a probe
 * stands, the receivers are asked, as `desiredMinReplicas`, for the replicas
 * of the first step they do not have ready yet.
 */
export function probeFloors(run: Evaluation): void {
  const p = run.behavior.failBackEnabled ? run.failBackStatus?.probe : undefined;
  const l = p && run.byKey.get(p.cluster);
  if (!p || !l || l.state !== 'ACTIVE') return;
  const receivers = receiversOf(run, l);
  const ready = readyOf(receivers);
  if (ready === undefined) return;
  const missing = Math.min(p.replicas, p.receiversReadyReplicas + p.replicas - ready);
  giveFailBackFloors(
    run,
    receivers,
    missing,
    (floor) =>
      `desiredMinReplicas ${floor} before ${l.key} fails back: the first step's replicas are ready here before ${l.key} moves to SCALING_IN (fail-back rule F7)`,
  );
}

/**
 * The fail-back phase, section 10.3 and rules F1, F2, F5 and F7: the preferred
 * clusters take the workload back, once they have the first step ready.
 */
export function failBack(run: Evaluation, config: AutoscaleForCapacity, min: number, headroom: number): void {
  const settings = backoffSettings(run);
  const level = backoffLevelAt(run.failBackStatus, run.nowMs, settings);
  const window = failBackWindowSeconds(level, settings);
  const lowest = lowestActive(run);
  const probe = run.failBackStatus?.probe;
  // A standing probe's cluster is the lowest-priority ACTIVE one (trackFailBack ends it otherwise).
  if (probe && lowest) return settleProbe(run, probe, min, headroom, window, warmSize(run, config, lowest));
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
      startProbe(run, lowest!, warmSize(run, config, lowest!)); // the verdict's cluster
      return;
    case 'none':
      return;
  }
}

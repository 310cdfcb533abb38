import { MAX_PROVEN_REPLICAS, type ClusterState, type FailBackStatus, type PlacementSpec } from '../api/placement.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import { formatTime, parseTime, SECOND } from '../time.js';
import { sourceReportsReadyReplicas, type SignalAssessment } from './signals.js';

/*
 * Fail-back to preferred clusters (docs/placement-rules.md §10.3, made safe by
 * docs/placement-rules.md §10.3 rules F1-F6). After a stockout the workload would
 * otherwise stay on the lower-priority cluster until load falls; with
 * `behavior.failBack` the preferred clusters take it back once they have had
 * room for a whole window, and room for the replicas being moved. The move is
 * an ordinary P2 (SCALING_IN, drained step by step), so if the preferred
 * clusters hit their ceiling again, scale-out reactivates the cluster (P3) as
 * usual: that is a cycle, and each cycle multiplies the next window by 4 (backoff).
 */

/** Fail-back drains the fallback cluster step by step: without draining it would drop all its load at once. */
export function checkFailBack(spec: PlacementSpec): Result<null, SpecError> {
  const autoscale = spec.scaling?.autoscaleForCapacity;
  if (autoscale?.behavior?.failBack?.enabled === true && autoscale.useDraining !== true) {
    return err({
      reason: 'InvalidBehavior',
      field: 'spec.scaling.autoscaleForCapacity.behavior.failBack.enabled',
      message:
        'fail-back needs useDraining: true, so that the cluster it moves away from is drained step by step instead of dropping its load at once',
    });
  }
  if ((autoscale?.warmStandbyClusters ?? 0) > 0 && autoscale?.useDraining !== true) {
    return err({
      reason: 'InvalidBehavior',
      field: 'spec.scaling.autoscaleForCapacity.warmStandbyClusters',
      message:
        'a warm standby needs useDraining: true: it is a SCALING_IN cluster held at draining.desiredMaxReplicas = its size',
    });
  }
  return ok(null);
}

/** The backoff settings of fail-back, defaults applied. */
export interface BackoffSettings {
  readonly stabilizationSeconds: number;
  readonly maxStabilizationSeconds: number;
  readonly decaySeconds: number;
}

/** Each fail-back cycle multiplies the window by this. */
export const BACKOFF_FACTOR = 4;

/** The level past which multiplying the window no longer changes it (the cap is reached). */
export function maxBackoffLevel(b: BackoffSettings): number {
  if (b.stabilizationSeconds <= 0 || b.maxStabilizationSeconds <= b.stabilizationSeconds) return 0;
  return Math.min(
    30,
    Math.ceil(Math.log(b.maxStabilizationSeconds / b.stabilizationSeconds) / Math.log(BACKOFF_FACTOR) - 1e-9),
  );
}

/**
 * The backoff level now: the recorded level, less one for each whole quiet
 * period (`decaySeconds`) since the last cycle. Constant within a period, so
 * the wait never shortens before a quiet period has passed.
 */
export function backoffLevelAt(status: FailBackStatus | undefined, nowMs: number, b: BackoffSettings): number {
  const level = Math.min(status?.backoffLevel ?? 0, maxBackoffLevel(b));
  const last = parseTime(status?.lastCycleTime);
  if (level === 0 || last === undefined) return level;
  const quiet = Math.floor(Math.max(0, nowMs - last) / (b.decaySeconds * SECOND));
  return Math.max(0, level - quiet);
}

/** The fail-back window at a backoff level: the base × 4 per level, capped. */
export function failBackWindowSeconds(level: number, b: BackoffSettings): number {
  const cap = Math.max(b.stabilizationSeconds, b.maxStabilizationSeconds);
  return Math.min(cap, b.stabilizationSeconds * BACKOFF_FACTOR ** level);
}

/**
 * Records a P1 or P3 of `cluster`: when it is the cluster of the last
 * fail-back, that is a cycle, and the level rises by one (from its decayed
 * value; bounded). Returns the status unchanged otherwise.
 */
export function recordCycle(
  status: FailBackStatus | undefined,
  cluster: string,
  nowMs: number,
  b: BackoffSettings,
): FailBackStatus | undefined {
  if (status?.lastFailBackCluster !== cluster) return status;
  const { lastFailBackCluster: _, ...rest } = status;
  return {
    ...rest,
    backoffLevel: Math.min(maxBackoffLevel(b), backoffLevelAt(status, nowMs, b) + 1),
    lastCycleTime: formatTime(nowMs),
  };
}

/**
 * Records a fail-back P2 of `cluster`. The level stays as recorded (capped):
 * it decays on reading, from the last cycle's time.
 */
export function recordFailBack(
  status: FailBackStatus | undefined,
  cluster: string,
  nowMs: number,
  b: BackoffSettings,
): FailBackStatus {
  return {
    ...status,
    backoffLevel: Math.min(status?.backoffLevel ?? 0, maxBackoffLevel(b)),
    lastFailBackCluster: cluster,
    lastFailBackTime: formatTime(nowMs),
  };
}

/**
 * Since when an ACTIVE cluster has continuously had a fresh signal below its
 * capacity ceiling; a missing or stale signal, the ceiling, or any other state
 * resets it. Kept in status, so a restart loses nothing.
 */
export function nextBelowCeilingSince(
  state: ClusterState,
  signal: SignalAssessment,
  previous: string | undefined,
  now: string,
): string | undefined {
  // Pending pods or a FailedScaleUp (below the ceiling or not) restart the window: the room rule
  // asks for none of them within it.
  const room =
    state === 'ACTIVE' &&
    signal.fresh &&
    !signal.atCapacityCeiling &&
    !(signal.pendingPods !== undefined && signal.pendingPods > 0) &&
    signal.failedScaleUp !== true;
  return room ? (previous ?? now) : undefined;
}

/**
 * Rule F4, burst: why a preferred cluster's fresh signal shows a burst it
 * cannot take in time, or undefined: pending pods with its HPA at
 * maxReplicas, or at least as many pending pods as ready ones (it runs at most
 * half of what it asks for). The §4 ceiling needs a FailedScaleUp or
 * ScalingLimited, which slow nodes and a saturated metric may not report for
 * many minutes. A few pods waiting for nodes while the rest serve is ordinary
 * growth, not a burst.
 */
export function burstBecause(key: string, s: SignalAssessment): string | undefined {
  if (!s.fresh || s.pendingPods === undefined || s.pendingPods === 0) return undefined;
  const atMax = s.currentReplicas !== undefined && s.maxReplicas !== undefined && s.currentReplicas >= s.maxReplicas;
  if (atMax)
    return `${key} has ${s.pendingPods} pending pod(s) at its HPA maximum (${s.currentReplicas}/${s.maxReplicas})`;
  if (s.readyReplicas !== undefined && 2 * s.pendingPods >= s.readyReplicas)
    return `${key} has ${s.pendingPods} pending pod(s) and ${s.readyReplicas} ready`;
  return undefined;
}

/** The recent peak fail-back makes room for (rule F2), and how far back it looks. */
export interface RecentPeak {
  readonly replicas: number;
  /** The fewest replicas the workload needed in the periods kept, now included. */
  readonly low: number;
  readonly lookbackSeconds: number;
}

/** A load within this share of its peak counts as at its peak (the HPA's default tolerance). */
export const PEAK_TOLERANCE = 0.1;

/**
 * The replicas the workload needs on a cluster now, from a fresh signal: the
 * most of its HPA's current and desired replicas and its ready replicas (a
 * source that does not report ready replicas is read from the HPA alone).
 */
export function neededReplicas(s: SignalAssessment): number | undefined {
  if (!s.fresh || s.currentReplicas === undefined) return undefined;
  return Math.max(s.currentReplicas, s.desiredReplicas ?? 0, s.readyReplicas ?? 0);
}

/** The periods the peak lookback is kept in: bounded, and exact to an eighth of the lookback. */
export const PEAK_PERIODS = 8;

/**
 * Adds the replicas needed now to the recent peaks (status.failBack.recentPeaks):
 * the newest period keeps the most and the fewest seen in it, a new period starts every
 * eighth of the lookback, and periods older than the lookback are dropped.
 * `needed` undefined (a signal missing) records nothing.
 */
export function nextRecentPeaks(
  previous: readonly RecentPeriod[] | undefined,
  needed: number | undefined,
  nowMs: number,
  lookbackSeconds: number,
): RecentPeriod[] {
  const period = (lookbackSeconds * SECOND) / PEAK_PERIODS;
  const kept = (previous ?? []).filter((p) => {
    const since = parseTime(p.since);
    return since !== undefined && since <= nowMs && since + period > nowMs - lookbackSeconds * SECOND;
  });
  if (needed === undefined) return kept;
  const last = kept.at(-1);
  if (last && parseTime(last.since)! + period > nowMs)
    return [
      ...kept.slice(0, -1),
      {
        since: last.since,
        replicas: Math.max(last.replicas, needed),
        fewest: Math.min(last.fewest ?? last.replicas, needed),
      },
    ];
  return [...kept, { since: formatTime(nowMs), replicas: needed, fewest: needed }].slice(-(PEAK_PERIODS + 1));
}

/** A period of status.failBack.recentPeaks. */
export interface RecentPeriod {
  readonly since: string;
  /** The most replicas the workload needed in the period. */
  readonly replicas: number;
  /** The fewest (absent in a status written before mco kept it: read as 0, a dip). */
  readonly fewest?: number | undefined;
}

/** A node size limit a cluster's signal reported (status.failBack.nodeLimits). */
export interface NodeLimit {
  readonly cluster: string;
  /** The workload's pods that had a node then: HPA currentReplicas less the pending pods. */
  readonly replicas: number;
  readonly observedAt: string;
}

/**
 * Rule F2: the node size limits kept (status.failBack.nodeLimits). A cluster
 * whose fresh signal reports pods waiting on a node size limit
 * (`nodeLimitReached`, not a stockout, which passes) records the pods its
 * pool holds, replacing what it recorded before (a limit can be raised);
 * records older than the lookback are dropped.
 */
export function nextNodeLimits(
  previous: readonly NodeLimit[] | undefined,
  clusters: readonly { readonly key: string; readonly signal: SignalAssessment }[],
  nowMs: number,
  lookbackSeconds: number,
): NodeLimit[] {
  const now = formatTime(nowMs);
  const seen = new Map<string, NodeLimit>();
  for (const l of previous ?? []) {
    const at = parseTime(l.observedAt);
    if (at !== undefined && at <= nowMs && at > nowMs - lookbackSeconds * SECOND) seen.set(l.cluster, l);
  }
  for (const { key, signal: s } of clusters) {
    if (!s.fresh || s.currentReplicas === undefined || s.pendingPods === undefined) continue;
    const placed = Math.max(0, s.currentReplicas - s.pendingPods);
    const kept = seen.get(key);
    if (s.nodeLimitReached) seen.set(key, { cluster: key, replicas: placed, observedAt: now });
    // A pool seen holding more than its record was given room since (a limit raised, a shared quota freed).
    else if (kept && placed > kept.replicas) seen.set(key, { ...kept, replicas: placed });
  }
  return [...seen.values()].sort((a, b) => a.cluster.localeCompare(b.cluster));
}

/**
 * The replicas a cluster can hold as fail-back counts them: its HPA
 * maxReplicas, or fewer when its node pool reported a size limit within the
 * peak lookback (rule F2).
 */
export function capacityOf(c: FailBackCluster, max: number): number {
  return c.nodeLimit ? Math.min(max, c.nodeLimit.replicas) : max;
}

/** A cluster's proven size (status.failBack.provenReplicas). */
export interface ProvenReplicas {
  readonly cluster: string;
  /** The most ready replicas of the workload it has been seen running while listed. */
  readonly replicas: number;
}

/**
 * Rule F2: the proven sizes kept (status.failBack.provenReplicas): each listed
 * cluster's most `readyReplicas` seen on a fresh signal, raised whenever it
 * runs more; a cluster no longer listed is dropped (listed again, it starts
 * from what it runs then). Past MAX_PROVEN_REPLICAS clusters the smallest go: a
 * cluster without one counts 0, so fail-back only waits longer.
 */
export function nextProvenReplicas(
  previous: readonly ProvenReplicas[] | undefined,
  clusters: readonly { readonly key: string; readonly signal: SignalAssessment }[],
): ProvenReplicas[] {
  const before = new Map((previous ?? []).map((p) => [p.cluster, p.replicas]));
  const next: ProvenReplicas[] = [];
  for (const { key, signal: s } of clusters) {
    const ready = s.fresh ? s.readyReplicas : undefined;
    const was = before.get(key);
    if (was !== undefined || ready !== undefined) next.push({ cluster: key, replicas: Math.max(was ?? 0, ready ?? 0) });
  }
  return next
    .sort((a, b) => b.replicas - a.replicas || a.cluster.localeCompare(b.cluster))
    .slice(0, MAX_PROVEN_REPLICAS)
    .sort((a, b) => a.cluster.localeCompare(b.cluster));
}

/**
 * Rule F2, rising load: why the workload is growing now, or undefined: an
 * HPA of `clusters` asks for more replicas than it runs. Load moved back
 * then lands on clusters that are still growing.
 */
export function risingBecause(clusters: readonly FailBackCluster[]): string | undefined {
  for (const c of clusters) {
    const s = c.signal;
    if (s.desiredReplicas !== undefined && s.currentReplicas !== undefined && s.desiredReplicas > s.currentReplicas)
      return `load is rising: ${c.key}'s HPA asks for ${s.desiredReplicas} replica(s), it runs ${s.currentReplicas}`;
  }
  return undefined;
}

/**
 * The room rule: the higher-priority ACTIVE clusters can take `moving`
 * replicas, and hold the workload's recent peak. Each needs a fresh signal
 * with HPA maxReplicas and currentReplicas, no pending pods and no
 * FailedScaleUp (a missing field is no room), and, unless `needsReady` is
 * false, its readyReplicas; their summed `maxReplicas − currentReplicas` must
 * be at least `moving`, and their summed `maxReplicas` at least the recent
 * peak. Returns why not, or undefined when there is room.
 */
export function noRoomBecause(
  higher: readonly FailBackCluster[],
  moving: number | undefined,
  peak?: RecentPeak,
  needsReady = true,
): string | undefined {
  if (moving === undefined) return 'the replicas to move are unknown (no currentReplicas in its signal)';
  let room = 0;
  let capacity = 0;
  const limited: string[] = [];
  for (const c of higher) {
    const s = c.signal;
    if (s.maxReplicas === undefined || s.currentReplicas === undefined)
      return `${c.key} reports no HPA maxReplicas/currentReplicas`;
    if (s.pendingPods === undefined) return `${c.key} reports no pending-pod count`;
    // Fail-back is a voluntary move: without ready replicas its drain could only step on the clock,
    // handing load to pods that may not serve yet (rule F2), so it is not started at all.
    if (needsReady && !sourceReportsReadyReplicas(s))
      return `${c.key}'s signal source does not report readyReplicas: a fail-back drain could not check that it serves before each step`;
    if (needsReady && s.readyReplicas === undefined)
      return `${c.key}'s signal has no readyReplicas: a fail-back drain could not check that it serves before each step`;
    if (s.pendingPods > 0) return `${c.key} has ${s.pendingPods} pending pod(s)`;
    if (s.failedScaleUp === undefined) return `${c.key} reports no FailedScaleUp status`;
    if (s.failedScaleUp) return `${c.key} saw a FailedScaleUp`;
    const max = capacityOf(c, s.maxReplicas);
    if (max < s.maxReplicas)
      limited.push(`${c.key}'s node pool held ${max} at a node size limit at ${c.nodeLimit!.observedAt}`);
    room += Math.max(0, max - s.currentReplicas);
    capacity += max;
  }
  const why = limited.length > 0 ? ` (${limited.join('; ')})` : '';
  if (room < moving) return `the preferred clusters have room for ${room} replica(s), ${moving} would move${why}`;
  if (peak && capacity < peak.replicas)
    return `the preferred clusters hold ${capacity} replica(s) at their HPA maximum${limited.length > 0 ? ' or node limit' : ''}, and the workload needed ${peak.replicas} within the last ${peak.lookbackSeconds}s (its recent peak; failBack.peakLookbackSeconds)${why}`;
  return undefined;
}

/**
 * Rule F2, room seen: why the preferred clusters' room for the recent peak is
 * not shown yet, or undefined. Their HPA maximum says nothing of nodes that
 * were never asked for, so each counts at most its proven size (the most
 * ready replicas it has been seen running); that must reach the recent peak
 * (within PEAK_TOLERANCE), unless the load held near its peak for the whole
 * lookback: then the move itself shows the room, as rule F6 has the preferred
 * clusters run the load ready before the fallback hands it over.
 */
export function unprovenBecause(higher: readonly FailBackCluster[], peak?: RecentPeak): string | undefined {
  if (!peak) return undefined;
  let proven = 0;
  for (const c of higher) proven += Math.min(c.proven ?? 0, capacityOf(c, c.signal.maxReplicas ?? 0));
  const atPeak = (replicas: number) => replicas * (1 + PEAK_TOLERANCE) >= peak.replicas;
  if (atPeak(proven) || atPeak(peak.low)) return undefined;
  return `the preferred clusters have been seen running ${proven} ready replica(s) at most (status.failBack.provenReplicas), short of the ${peak.replicas} the workload needed within the last ${peak.lookbackSeconds}s, and its load fell to ${peak.low} in that time: fail-back counts only room seen serving, unless the load held within ${PEAK_TOLERANCE * 100}% of its peak for the whole lookback (then the move shows it, rule F6)`;
}

/**
 * Rule F2, rising load on the fallback `l` itself: its HPA asking for more
 * below its ceiling is the workload's load rising, where at its ceiling it is
 * load the preferred clusters can take.
 */
export const fallbackRisingBecause = (l: FailBackCluster): string | undefined =>
  l.signal.atCapacityCeiling ? undefined : risingBecause([l]);

/**
 * Rule F2 as fail-back reads it, for the room window and the move alike: why
 * the preferred clusters `higher` cannot take the replicas of `l` now (load
 * rising on any of them or on `l`, no room, or room not seen), or undefined.
 */
function roomBecause(
  higher: readonly FailBackCluster[],
  l: FailBackCluster,
  peak: RecentPeak | undefined,
): string | undefined {
  return (
    risingBecause(higher) ??
    fallbackRisingBecause(l) ??
    noRoomBecause(higher, l.signal.currentReplicas, peak) ??
    unprovenBecause(higher, peak)
  );
}

/**
 * Since when the room rule has held continuously, with load not rising, for
 * the lowest-priority ACTIVE cluster of `clusters` (priority order);
 * undefined when it does not hold now. Kept in status, so a restart loses nothing.
 */
export function nextRoomSince(
  clusters: readonly FailBackCluster[],
  previous: string | undefined,
  now: string,
  peak?: RecentPeak,
): string | undefined {
  const active = clusters.filter((c) => c.state === 'ACTIVE');
  const l = active.at(-1);
  const higher = active.slice(0, -1);
  if (!l || higher.length === 0 || roomBecause(higher, l, peak)) return undefined;
  return previous ?? now;
}

/** A listed cluster as fail-back sees it. */
export interface FailBackCluster {
  readonly key: string;
  readonly state: ClusterState;
  /** In the eligible list (not merely kept under IDE). */
  readonly eligible: boolean;
  readonly signal: SignalAssessment;
  readonly belowCeilingSince: string | undefined;
  readonly reason: string | undefined;
  readonly lastTransitionTime: string;
  /** Rule F2: the replicas its node pool held at its last node size limit within the peak lookback. */
  readonly nodeLimit?: NodeLimit | undefined;
  /** Rule F2: its proven size, the most ready replicas it has been seen running while listed. */
  readonly proven?: number | undefined;
}

export interface FailBackInput {
  /** The listed clusters in priority order, highest first. */
  readonly clusters: readonly FailBackCluster[];
  readonly nowMs: number;
  readonly min: number;
  /** ACTIVE clusters below their ceiling. */
  readonly headroom: number;
  /** The window now, backoff included. */
  readonly stabilizationSeconds: number;
  readonly cooldownSeconds: number;
  readonly lastAdditionTime: string | undefined;
  /** Since when the room rule has held continuously (`nextRoomSince`, kept in status.failBack). */
  readonly roomSince: string | undefined;
  /** The size L would linger at (rule F3): a fail-back of L at or below it moves nothing (rule F5). */
  readonly warmSize: number;
  /** The workload's recent peak (rule F2), when known. */
  readonly peak?: RecentPeak | undefined;
}

export type FailBackVerdict =
  /** Everything holds: L's first step is asked of the preferred clusters (rule F7). */
  | { readonly kind: 'move'; readonly cluster: string }
  /** Everything holds but a window or the cooldown: the moment it could happen (ms). */
  | { readonly kind: 'wait'; readonly untilMs: number }
  /** Everything else holds, but the preferred clusters have no room for the replicas being moved. */
  | { readonly kind: 'noRoom'; readonly cluster: string; readonly why: string }
  /** L runs no more than its warm size: a fail-back would move no load (rule F5). */
  | { readonly kind: 'nothingToMove'; readonly cluster: string; readonly why: string }
  | { readonly kind: 'none' };

const NONE: FailBackVerdict = { kind: 'none' };

/**
 * Whether the lowest-priority ACTIVE cluster L moves to SCALING_IN now. Every
 * condition of section 10.3, in this order:
 * - L exists and some eligible cluster of higher priority is ACTIVE;
 * - every ACTIVE cluster has a fresh signal (fail static, as for scale-in);
 * - headroom without L stays >= min;
 * - L runs more replicas than its warm size (rule F5: else nothing would move);
 * - load is not rising (`risingBecause`) and the room rule (`noRoomBecause`, the
 *   recent peak included) holds now, and both have held for the whole window;
 * - every ACTIVE cluster of higher priority than L has been below its ceiling
 *   for the whole window (a missing time means it is not);
 * - the scale-in cooldown has passed since the last addition and the last P3.
 * The window and the cooldown are timers: when only they are missing, the verdict says when.
 */
export function chooseFailBack(input: FailBackInput): FailBackVerdict {
  const active = input.clusters.filter((c) => c.state === 'ACTIVE');
  const l = active.at(-1);
  const higher = active.slice(0, -1);
  if (!l || !higher.some((c) => c.eligible)) return NONE;
  if (active.some((c) => !c.signal.fresh)) return NONE;
  const without = input.headroom - (l.signal.atCapacityCeiling ? 0 : 1);
  if (without < input.min) return NONE;
  const replicas = l.signal.currentReplicas;
  if (replicas !== undefined && replicas <= input.warmSize)
    return {
      kind: 'nothingToMove',
      cluster: l.key,
      why: `${l.key} runs ${replicas} replica(s), no more than the ${input.warmSize} it would linger at: a fail-back would move no load, only cap its autoscaler`,
    };
  const noRoom = roomBecause(higher, l, input.peak);
  if (noRoom) return { kind: 'noRoom', cluster: l.key, why: noRoom };

  let dueMs = parseTime(input.roomSince) ?? input.nowMs;
  dueMs += input.stabilizationSeconds * SECOND;
  for (const c of higher) {
    const since = parseTime(c.belowCeilingSince);
    if (since === undefined) return NONE;
    dueMs = Math.max(dueMs, since + input.stabilizationSeconds * SECOND);
  }
  const lastChange = Math.max(
    parseTime(input.lastAdditionTime) ?? -Infinity,
    lastReactivationMs(input.clusters) ?? -Infinity,
  );
  dueMs = Math.max(dueMs, lastChange + input.cooldownSeconds * SECOND);
  if (input.nowMs < dueMs) return { kind: 'wait', untilMs: dueMs };

  return { kind: 'move', cluster: l.key };
}

/**
 * The last P3, as the status remembers it: a reactivated cluster keeps reason
 * `Reactivated` and its transition time until its next transition.
 */
function lastReactivationMs(clusters: readonly FailBackCluster[]): number | undefined {
  let last: number | undefined;
  for (const c of clusters) {
    if (c.reason !== 'Reactivated') continue;
    const t = parseTime(c.lastTransitionTime);
    if (t !== undefined && (last === undefined || t > last)) last = t;
  }
  return last;
}

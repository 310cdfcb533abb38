import type { Draining } from '../api/placement.js';
import { formatTime, parseTime, SECOND } from '../time.js';
import type { SignalAssessment } from './signals.js';

/*
 * Make-before-break draining (docs/placement-rules.md §4, rule D1). A drain
 * steps `desiredMaxReplicas` down at most once per interval, by at most
 * `stepPercent`, and only once the receiving (ACTIVE) clusters have absorbed
 * the drop so far: either their ready replicas have grown by at least the
 * drop since the drain began, or they are settled (every one reports ready
 * replicas at least its HPA's desiredReplicas, and no pending pods: their
 * autoscalers ask for nothing that is not running; one held at its HPA's
 * minimum by low load needs only minReplicas − 1). Unknown ready replicas
 * mean no step; a receiver whose signal source never reports them leaves
 * nothing to check, and the drain steps on the clock alone, unprotected
 * (missing data never stalls a decision forever). Growth alone cannot be the
 * only test: the load of a step moves only once the step is taken, and
 * receivers below their HPA's tolerance never grow, so such a drain would
 * wait for the eviction timeout and then drop everything at once.
 */

/** The receiving clusters as a drain sees them. */
export interface Receivers {
  /** Their ready replicas, summed. */
  readonly ready: number;
  /** Why they are not settled (a cluster still scaling up), or undefined when they are. */
  readonly short: string | undefined;
}

/** What rule D1 can know of the receiving clusters now. */
export type ReceiverCheck =
  /** Every receiver reports its ready replicas: D1 applies. */
  | { readonly kind: 'checked'; readonly receivers: Receivers }
  /** A receiver's ready replicas are unknown (no fresh signal, or none in it): no step. */
  | { readonly kind: 'unknown'; readonly why: string }
  /** A receiver's signal source never reports ready replicas: the drain steps on the clock, unprotected. */
  | { readonly kind: 'unprotected'; readonly why: string };

/** `draining.unprotectedReason` of a drain that steps on the clock alone. */
export const UNPROTECTED_REASON = 'ReadyReplicasNotReported';

/**
 * Draining on entering SCALING_IN or EVICTING: start from the observed
 * replicas (or the HPA maximum when unknown, or, from a source that reports
 * no HPA, the ready replicas), remembering the start and the receivers' ready
 * replicas. Undefined while none is known.
 */
export function startDraining(signal: SignalAssessment, nowMs: number, check: ReceiverCheck): Draining | undefined {
  const start = signal.currentReplicas ?? signal.maxReplicas ?? signal.readyReplicas;
  if (start === undefined) return undefined;
  return startDrainingAt(Math.max(1, start), nowMs, signal.currentReplicas, check);
}

/** A drain that begins now at `desired`. */
export function startDrainingAt(
  desired: number,
  nowMs: number,
  currentReplicas: number | undefined,
  check: ReceiverCheck,
): Draining {
  return {
    desiredMaxReplicas: desired,
    lastReplicaCountDecrease: formatTime(nowMs),
    ...(currentReplicas !== undefined ? { currentReplicaCount: currentReplicas } : {}),
    initialDesiredMaxReplicas: desired,
    ...(check.kind === 'checked' ? { receiversReadyReplicas: check.receivers.ready } : {}),
  };
}

/** The size of one drain step: `max(1, ceil(desired × percent / 100))`. */
export function drainStepSize(desiredMaxReplicas: number, stepPercent: number): number {
  return Math.max(1, Math.ceil((desiredMaxReplicas * stepPercent) / 100));
}

export interface DrainStepOptions {
  readonly stepIntervalSeconds: number;
  readonly stepPercent: number;
  /** The lowest desiredMaxReplicas (1, or the size of a warm cluster). */
  readonly floor: number;
  /** What rule D1 knows of the receiving clusters now. */
  readonly receivers: ReceiverCheck;
  /**
   * Rule F6 (a fail-back drain): the receivers must have grown by the drop so
   * far and this many more (the next step) before it is taken, settled or not.
   */
  readonly lead?: number;
  /**
   * A due step that has waited this long since the last decrease for receivers
   * that are short (ReceiversNotReady) is taken: they are not catching up, and
   * the drain must end (`behavior.evictionTimeoutSeconds`). Never for doubt.
   */
  readonly waitAtMostSeconds?: number;
}

export type DrainPause = 'ReadyReplicasUnknown' | 'ReceiversNotReady';

export interface DrainStep {
  readonly draining: Draining;
  /** Why a due step was not taken, with the figures. */
  readonly paused?: { readonly reason: DrainPause; readonly message: string };
  /** A step taken after waiting `waitAtMostSeconds` for short receivers: why they were short. */
  readonly waitedOut?: string;
}

/**
 * One step per evaluation, no catch-up: when the interval has passed since the
 * last decrease and the receivers have absorbed the drop so far, lower
 * `desiredMaxReplicas` once, never below the floor.
 */
export function stepDraining(
  draining: Draining,
  signal: SignalAssessment,
  nowMs: number,
  o: DrainStepOptions,
): DrainStep {
  const observed = signal.currentReplicas ?? draining.currentReplicaCount;
  // A drain from before these fields (or whose receivers were unknown) counts from the first known figures.
  const restart = draining.receiversReadyReplicas === undefined;
  const initial = restart
    ? draining.desiredMaxReplicas
    : (draining.initialDesiredMaxReplicas ?? draining.desiredMaxReplicas);
  const baseline =
    draining.receiversReadyReplicas ?? (o.receivers.kind === 'checked' ? o.receivers.receivers.ready : undefined);
  const base: Draining = {
    desiredMaxReplicas: draining.desiredMaxReplicas,
    lastReplicaCountDecrease: draining.lastReplicaCountDecrease,
    ...(observed !== undefined ? { currentReplicaCount: observed } : {}),
    initialDesiredMaxReplicas: initial,
    ...(baseline !== undefined ? { receiversReadyReplicas: baseline } : {}),
  };
  const last = parseTime(draining.lastReplicaCountDecrease) ?? -Infinity;
  if (draining.desiredMaxReplicas <= o.floor || nowMs - last < o.stepIntervalSeconds * SECOND)
    return { draining: base };
  const paused = drainPause(initial - draining.desiredMaxReplicas, baseline, o.receivers, o.lead ?? 0);
  const waitedOut =
    paused?.reason === 'ReceiversNotReady' &&
    o.waitAtMostSeconds !== undefined &&
    nowMs - last >= o.waitAtMostSeconds * SECOND;
  if (paused && !waitedOut) return { draining: { ...base, pausedReason: paused.reason }, paused };
  return {
    ...(paused ? { waitedOut: paused.message } : {}),
    draining: {
      ...base,
      desiredMaxReplicas: Math.max(
        o.floor,
        draining.desiredMaxReplicas - drainStepSize(draining.desiredMaxReplicas, o.stepPercent),
      ),
      lastReplicaCountDecrease: formatTime(nowMs),
    },
  };
}

/**
 * Why a due step waits (rule D1), or undefined when the receivers have
 * absorbed the drop so far, or when their source reports no ready replicas to
 * check (the drain then steps on the clock). With a `lead` (rule F6, a
 * fail-back drain) they must have grown by the drop and the lead, settled or
 * not: a voluntary move never lowers the fleet's ready replicas.
 */
export function drainPause(
  drop: number,
  baseline: number | undefined,
  check: ReceiverCheck,
  lead = 0,
): DrainStep['paused'] {
  if (check.kind === 'unprotected') return undefined;
  if (check.kind === 'unknown')
    return {
      reason: 'ReadyReplicasUnknown',
      message: `a receiving cluster's ready replicas are unknown: ${check.why}`,
    };
  const receivers = check.receivers;
  const from = baseline ?? receivers.ready;
  const growth = receivers.ready - from;
  if (lead > 0) {
    if (drop + lead <= growth) return undefined;
    return {
      reason: 'ReceiversNotReady',
      message: `fail-back moves load only onto ready pods (rule F6): the receivers' ready replicas grew by ${growth} (${from} → ${receivers.ready}), the drop so far (${drop}) and the next step (${lead}) need ${drop + lead}`,
    };
  }
  if (drop <= growth || receivers.short === undefined) return undefined;
  return {
    reason: 'ReceiversNotReady',
    message: `the drop so far (${drop}) exceeds the receivers' ready-replica growth (${growth}: ${from} → ${receivers.ready}), and ${receivers.short}`,
  };
}

/** The size of the next step of a drain, 0 at its floor. */
export function nextStepSize(draining: Draining, stepPercent: number, floor: number): number {
  const left = draining.desiredMaxReplicas - floor;
  return left <= 0 ? 0 : Math.min(left, drainStepSize(draining.desiredMaxReplicas, stepPercent));
}

/** When the next drain step is due (ms), or undefined when none is. */
export function nextDrainStepAt(draining: Draining, stepIntervalSeconds: number, floor = 1): number | undefined {
  if (draining.desiredMaxReplicas <= floor) return undefined;
  const last = parseTime(draining.lastReplicaCountDecrease);
  return last === undefined ? undefined : last + stepIntervalSeconds * SECOND;
}

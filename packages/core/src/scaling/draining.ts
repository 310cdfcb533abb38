import type { Draining } from '../api/placement.js';
import { formatTime, parseTime, SECOND } from '../time.js';
import type { SignalAssessment } from './signals.js';

/*
 * Make-before-break draining (docs/placement-rules-31.md, rule D1). A drain
 * steps `desiredMaxReplicas` down at most once per interval, by at most
 * `stepPercent`, and only once the receiving clusters have absorbed the drop
 * so far: before each step, the total drop since the drain began is at most
 * the growth of the receivers' ready replicas since then. Each step is thus
 * at most one step ahead of the receivers (the load of a step has to move
 * before they can grow, so a drain that waited for growth first would never
 * start). Unknown ready replicas mean no step.
 */

/**
 * Draining on entering SCALING_IN or EVICTING: start from the observed
 * replicas (or the HPA maximum when unknown), remembering the start and the
 * receivers' ready replicas. Undefined while neither is known.
 */
export function startDraining(
  signal: SignalAssessment,
  nowMs: number,
  receiversReady: number | undefined,
): Draining | undefined {
  const start = signal.currentReplicas ?? signal.maxReplicas;
  if (start === undefined) return undefined;
  return startDrainingAt(Math.max(1, start), nowMs, signal.currentReplicas, receiversReady);
}

/** A drain that begins now at `desired`. */
export function startDrainingAt(
  desired: number,
  nowMs: number,
  currentReplicas: number | undefined,
  receiversReady: number | undefined,
): Draining {
  return {
    desiredMaxReplicas: desired,
    lastReplicaCountDecrease: formatTime(nowMs),
    ...(currentReplicas !== undefined ? { currentReplicaCount: currentReplicas } : {}),
    initialDesiredMaxReplicas: desired,
    ...(receiversReady !== undefined ? { receiversReadyReplicas: receiversReady } : {}),
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
  /** The receiving clusters' ready replicas now; undefined when any of them is unknown. */
  readonly receiversReady: number | undefined;
}

export type DrainPause = 'ReadyReplicasUnknown' | 'ReceiversNotReady';

export interface DrainStep {
  readonly draining: Draining;
  /** Why a due step was not taken, with the figures. */
  readonly paused?: { readonly reason: DrainPause; readonly message: string };
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
  const initial = draining.initialDesiredMaxReplicas ?? draining.desiredMaxReplicas;
  // A drain from before these fields (or whose receivers were unknown) counts from the first known figures.
  const baseline = draining.receiversReadyReplicas ?? o.receiversReady;
  const base: Draining = {
    desiredMaxReplicas: draining.desiredMaxReplicas,
    lastReplicaCountDecrease: draining.lastReplicaCountDecrease,
    ...(observed !== undefined ? { currentReplicaCount: observed } : {}),
    initialDesiredMaxReplicas: draining.receiversReadyReplicas === undefined ? draining.desiredMaxReplicas : initial,
    ...(baseline !== undefined ? { receiversReadyReplicas: baseline } : {}),
  };
  const last = parseTime(draining.lastReplicaCountDecrease) ?? -Infinity;
  if (draining.desiredMaxReplicas <= o.floor || nowMs - last < o.stepIntervalSeconds * SECOND)
    return { draining: base };
  if (o.receiversReady === undefined || baseline === undefined) {
    const reason = 'ReadyReplicasUnknown';
    const message = "a receiving cluster's ready replicas are unknown: no drain step";
    return { draining: { ...base, pausedReason: reason }, paused: { reason, message } };
  }
  const drop = base.initialDesiredMaxReplicas! - draining.desiredMaxReplicas;
  const growth = o.receiversReady - baseline;
  if (drop > growth) {
    const reason = 'ReceiversNotReady';
    const message = `the drop so far (${drop}) exceeds the receivers' ready-replica growth (${growth}, ${baseline} → ${o.receiversReady}): no drain step`;
    return { draining: { ...base, pausedReason: reason }, paused: { reason, message } };
  }
  return {
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

/** When the next drain step is due (ms), or undefined when none is. */
export function nextDrainStepAt(draining: Draining, stepIntervalSeconds: number, floor = 1): number | undefined {
  if (draining.desiredMaxReplicas <= floor) return undefined;
  const last = parseTime(draining.lastReplicaCountDecrease);
  return last === undefined ? undefined : last + stepIntervalSeconds * SECOND;
}

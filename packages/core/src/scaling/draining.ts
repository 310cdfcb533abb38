import type { Draining } from '../api/placement.js';
import { formatTime, parseTime, SECOND } from '../time.js';
import type { SignalAssessment } from './signals.js';

/**
 * Draining on entering SCALING_IN or EVICTING: start from the observed
 * replicas (or the HPA maximum when unknown). Undefined while neither is known.
 */
export function startDraining(signal: SignalAssessment, nowMs: number): Draining | undefined {
  const start = signal.currentReplicas ?? signal.maxReplicas;
  if (start === undefined) return undefined;
  return {
    desiredMaxReplicas: Math.max(1, start),
    lastReplicaCountDecrease: formatTime(nowMs),
    ...(signal.currentReplicas !== undefined ? { currentReplicaCount: signal.currentReplicas } : {}),
  };
}

/** The size of one drain step: `max(1, ceil(desired × percent / 100))`. */
export function drainStepSize(desiredMaxReplicas: number, stepPercent: number): number {
  return Math.max(1, Math.ceil((desiredMaxReplicas * stepPercent) / 100));
}

/**
 * One step per evaluation, no catch-up: when the interval has passed since the
 * last decrease, lower `desiredMaxReplicas` once, never below 1.
 */
export function stepDraining(
  draining: Draining,
  signal: SignalAssessment,
  nowMs: number,
  stepIntervalSeconds: number,
  stepPercent: number,
): Draining {
  const observed = signal.currentReplicas ?? draining.currentReplicaCount;
  const base: Draining = {
    desiredMaxReplicas: draining.desiredMaxReplicas,
    lastReplicaCountDecrease: draining.lastReplicaCountDecrease,
    ...(observed !== undefined ? { currentReplicaCount: observed } : {}),
  };
  const last = parseTime(draining.lastReplicaCountDecrease) ?? -Infinity;
  if (draining.desiredMaxReplicas <= 1 || nowMs - last < stepIntervalSeconds * SECOND) return base;
  return {
    ...base,
    desiredMaxReplicas: Math.max(
      1,
      draining.desiredMaxReplicas - drainStepSize(draining.desiredMaxReplicas, stepPercent),
    ),
    lastReplicaCountDecrease: formatTime(nowMs),
  };
}

/** When the next drain step is due (ms), or undefined when none is. */
export function nextDrainStepAt(draining: Draining, stepIntervalSeconds: number): number | undefined {
  if (draining.desiredMaxReplicas <= 1) return undefined;
  const last = parseTime(draining.lastReplicaCountDecrease);
  return last === undefined ? undefined : last + stepIntervalSeconds * SECOND;
}

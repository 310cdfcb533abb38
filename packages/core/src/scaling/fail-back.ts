import type { ClusterState, PlacementSpec } from '../api/placement.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import { parseTime, SECOND } from '../time.js';
import type { SignalAssessment } from './signals.js';

/*
 * Fail-back to preferred clusters (docs/placement-rules.md §10.3). After a
 * stockout the workload would otherwise stay on the lower-priority cluster
 * until load falls; with `behavior.failBack` the preferred clusters take it
 * back once they have had room for a whole window. The move is an ordinary
 * P2 (SCALING_IN, drained step by step), so if the preferred clusters hit
 * their ceiling again, scale-out reactivates the cluster (P3) as usual.
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
  return ok(null);
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
  return state === 'ACTIVE' && signal.fresh && !signal.atCapacityCeiling ? (previous ?? now) : undefined;
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
}

export interface FailBackInput {
  /** The listed clusters in priority order, highest first. */
  readonly clusters: readonly FailBackCluster[];
  readonly nowMs: number;
  readonly min: number;
  /** ACTIVE clusters below their ceiling. */
  readonly headroom: number;
  readonly stabilizationSeconds: number;
  readonly cooldownSeconds: number;
  readonly lastAdditionTime: string | undefined;
}

export type FailBackVerdict =
  | { readonly kind: 'move'; readonly cluster: string; readonly message: string }
  /** Everything holds but a window or the cooldown: the moment it could happen (ms). */
  | { readonly kind: 'wait'; readonly untilMs: number }
  | { readonly kind: 'none' };

const NONE: FailBackVerdict = { kind: 'none' };

/**
 * Whether the lowest-priority ACTIVE cluster L moves to SCALING_IN now. Every
 * condition of section 10.3, in this order:
 * - L exists and some eligible cluster of higher priority is ACTIVE;
 * - every ACTIVE cluster has a fresh signal (fail static, as for scale-in);
 * - headroom without L stays >= min;
 * - every ACTIVE cluster of higher priority than L has been below its ceiling
 *   for the whole window (a missing time means it is not);
 * - the scale-in cooldown has passed since the last addition and the last P3.
 * The last two are timers: when only they are missing, the verdict says when.
 */
export function chooseFailBack(input: FailBackInput): FailBackVerdict {
  const active = input.clusters.filter((c) => c.state === 'ACTIVE');
  const l = active.at(-1);
  const higher = active.slice(0, -1);
  if (!l || !higher.some((c) => c.eligible)) return NONE;
  if (active.some((c) => !c.signal.fresh)) return NONE;
  const without = input.headroom - (l.signal.atCapacityCeiling ? 0 : 1);
  if (without < input.min) return NONE;

  let dueMs = -Infinity;
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

  const names = higher.map((c) => c.key).join(', ');
  return {
    kind: 'move',
    cluster: l.key,
    message:
      `fail-back: higher-priority ${names} below capacity ceiling for ${input.stabilizationSeconds}s or more; ` +
      `headroom stays ${without} >= min ${input.min} without this lowest-priority cluster`,
  };
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

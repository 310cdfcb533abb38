import { nextDrainStepAt, startDraining, startDrainingAt, stepDraining } from '../scaling/draining.js';
import { formatTime } from '../time.js';
import type { Entry, Evaluation } from './evaluation.js';

/**
 * The receiving clusters' ready replicas: the sum over the ACTIVE clusters,
 * or undefined when any of them does not report it (rule D1: unknown means no step).
 */
function receiversReady(run: Evaluation): number | undefined {
  let sum = 0;
  for (const e of run.live()) {
    if (e.state !== 'ACTIVE') continue;
    if (e.signal.readyReplicas === undefined) return undefined;
    sum += e.signal.readyReplicas;
  }
  return sum;
}

/**
 * The drain phase, section 4 step 4 with rule D1 (make-before-break):
 * `draining` of every SCALING_IN and EVICTING cluster.
 */
export function drain(run: Evaluation, useDraining: boolean): void {
  const b = run.behavior;
  const ready = receiversReady(run);
  for (const entry of run.live()) {
    if (!useDraining || (entry.state !== 'SCALING_IN' && entry.state !== 'EVICTING')) {
      entry.draining = undefined;
      continue;
    }
    const floor = entry.keepWarm?.size ?? 1;
    if (entry.enteredDrain || !entry.draining) {
      entry.draining = startDraining(entry.signal, run.nowMs, ready);
      // A warm cluster is never started below its size, nor left without a size when its replicas are unknown.
      if (entry.keepWarm && (entry.draining?.desiredMaxReplicas ?? 0) < floor)
        entry.draining = startDrainingAt(floor, run.nowMs, entry.signal.currentReplicas, ready);
    } else {
      const step = stepDraining(entry.draining, entry.signal, run.nowMs, {
        stepIntervalSeconds: b.drainStepIntervalSeconds,
        stepPercent: b.drainStepPercent,
        floor,
        receiversReady: ready,
      });
      entry.draining = step.draining;
      if (step.paused) {
        // New signals usually come first; this bounds the wait for them.
        run.timer(run.nowMs, b.drainStepIntervalSeconds);
        run.note(entry.key, `drain paused (${step.paused.reason}): ${step.paused.message}`);
      }
    }
    warmAtSize(entry);
    const next = entry.draining && nextDrainStepAt(entry.draining, b.drainStepIntervalSeconds, floor);
    if (next) {
      run.timers.push(next);
      run.note(
        entry.key,
        `draining: desiredMaxReplicas ${entry.draining!.desiredMaxReplicas}, next step at ${formatTime(next)}`,
      );
    }
  }
}

/** A warm cluster whose drain has reached its size takes its reason (WarmStandby, Lingering). */
function warmAtSize(entry: Entry): void {
  const warm = entry.keepWarm;
  if (!warm || !entry.draining || entry.draining.desiredMaxReplicas > warm.size) return;
  entry.reason = warm.reason;
  entry.message = warm.message;
}

import { nextDrainStepAt, startDraining, stepDraining } from '../scaling/draining.js';
import { formatTime } from '../time.js';
import type { Evaluation } from './evaluation.js';

/** The drain phase, section 4 step 4: `draining` of every SCALING_IN and EVICTING cluster. */
export function drain(run: Evaluation, useDraining: boolean): void {
  const b = run.behavior;
  for (const entry of run.live()) {
    if (!useDraining || (entry.state !== 'SCALING_IN' && entry.state !== 'EVICTING')) {
      entry.draining = undefined;
      continue;
    }
    entry.draining =
      entry.enteredDrain || !entry.draining
        ? startDraining(entry.signal, run.nowMs)
        : stepDraining(entry.draining, entry.signal, run.nowMs, b.drainStepIntervalSeconds, b.drainStepPercent);
    const next = entry.draining && nextDrainStepAt(entry.draining, b.drainStepIntervalSeconds);
    if (next) {
      run.timers.push(next);
      run.note(
        entry.key,
        `draining: desiredMaxReplicas ${entry.draining!.desiredMaxReplicas}, next step at ${formatTime(next)}`,
      );
    }
  }
}

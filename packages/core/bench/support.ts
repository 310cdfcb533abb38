// Shared by the benchmarks of this package.
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { summarize } from '@mco/testkit';

/**
 * Time per call (ms) in many short windows: the median, so a descheduled
 * window does not skew the figure, and the best window, which on a shared,
 * loaded machine is the closest to what the code costs undisturbed.
 */
export function measure(fn: () => void, windowMs = 10, windows = 100): { median: number; best: number } {
  for (let i = 0; i < 50; i++) fn(); // warm-up
  const perCall: number[] = [];
  for (let w = 0; w < windows; w++) {
    let runs = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < windowMs) {
      fn();
      runs++;
      elapsed = performance.now() - start;
    }
    perCall.push(elapsed / runs);
  }
  const { min, p50 } = summarize('time per call', perCall);
  return { median: p50, best: min };
}

export const fmt = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`);

export const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(', ');

/**
 * Percentiles for the benchmarks, one place for all of them: a benchmark
 * prints only figures that can be true. A latency or duration sample that is
 * negative or not a number is a measuring bug (say, a timestamp taken before
 * the event it is measured from), and this throws instead of printing it.
 */

/** Every sample is a finite number ≥ 0, or this throws naming the first that is not. */
export function checkSamples(what: string, samples: readonly number[]): void {
  if (samples.length === 0) throw new Error(`${what}: no samples`);
  const bad = samples.findIndex((v) => !Number.isFinite(v) || v < 0);
  if (bad >= 0) throw new Error(`${what}: sample ${bad} is ${samples[bad]}, not a finite figure ≥ 0: a measuring bug`);
}

/**
 * The p-th percentile (nearest rank: the smallest sample with at least p% of
 * the samples at or below it) of `samples`, which must not be empty.
 */
export function percentile(what: string, samples: readonly number[], p: number): number {
  if (!(p > 0 && p <= 100)) throw new Error(`${what}: percentile ${p} is not in (0, 100]`);
  checkSamples(what, samples);
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The smallest sample, p50, p99 and the largest sample. */
export function summarize(
  what: string,
  samples: readonly number[],
): { min: number; p50: number; p99: number; max: number } {
  checkSamples(what, samples);
  return {
    min: samples.reduce((a, b) => Math.min(a, b)),
    p50: percentile(what, samples, 50),
    p99: percentile(what, samples, 99),
    max: percentile(what, samples, 100),
  };
}

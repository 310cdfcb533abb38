import { createRandom, normal } from './random.js';
import type { Scenario } from './scenario.js';

type Demand = Scenario['demand'];

/** The noiseless demand at `t` seconds after the start: piecewise-linear plus diurnal. */
export function baseDemand(demand: Demand, t: number): number {
  let value = 0;
  const points = demand.piecewise;
  if (points && points.length > 0) {
    const next = points.findIndex((p) => p.at > t);
    if (next === -1) value += points.at(-1)!.value;
    else if (next === 0) value += points[0]!.value;
    else {
      const a = points[next - 1]!;
      const b = points[next]!;
      value += a.value + ((b.value - a.value) * (t - a.at)) / (b.at - a.at);
    }
  }
  const d = demand.diurnal;
  if (d) value += d.mean + d.amplitude * Math.cos((2 * Math.PI * (t - d.peakAt)) / d.period);
  return Math.max(0, value);
}

/**
 * The demand at every tick (index k is time k × tick). The noise is AR(1), so
 * it wanders like real traffic instead of jumping independently every tick;
 * it is drawn from the seed once, and every policy of a run sees the same series.
 */
export function demandSeries(demand: Demand, ticks: number, tick: number, seed: number): number[] {
  const random = createRandom(seed);
  const noise = demand.noise;
  const rho = noise?.correlation ?? 0;
  let n = 0;
  const series: number[] = [];
  for (let k = 0; k < ticks; k++) {
    if (noise && noise.stddev > 0) n = rho * n + Math.sqrt(1 - rho * rho) * normal(random);
    const value = baseDemand(demand, k * tick) * (1 + (noise?.stddev ?? 0) * n);
    series.push(Math.max(0, value));
  }
  return series;
}

import { describe, expect, it } from 'vitest';
import { percentile, summarize } from '../src/index.js';

describe('benchmark percentiles', () => {
  it('takes the nearest rank of the sorted samples', () => {
    const samples = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect([percentile('t', samples, 50), percentile('t', samples, 90), percentile('t', samples, 99)]).toEqual([
      5, 9, 10,
    ]);
    expect(summarize('t', [0.5, 2])).toEqual({ min: 0.5, p50: 0.5, p99: 2, max: 2 });
  });

  it.each([
    { name: 'a negative sample', samples: [1, -0.14, 2], message: 'latency: sample 1 is -0.14' },
    { name: 'NaN', samples: [1, Number.NaN], message: 'latency: sample 1 is NaN' },
    { name: 'Infinity', samples: [Infinity], message: 'latency: sample 0 is Infinity' },
    { name: 'no samples', samples: [], message: 'latency: no samples' },
  ])('refuses $name instead of printing an impossible figure', ({ samples, message }) => {
    expect(() => percentile('latency', samples, 50)).toThrow(message);
  });
});

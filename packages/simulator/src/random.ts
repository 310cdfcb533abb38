/**
 * Seeded randomness. The simulator never calls Math.random: every random draw
 * comes from a seed, so one seed gives one byte-identical run.
 */

/** A stream of uniform numbers in [0, 1) (mulberry32: small, fast, good enough for a model). */
export type Random = () => number;

export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One standard normal draw (Box-Muller). */
export function normal(random: Random): number {
  const u = 1 - random(); // in (0, 1], so the log is finite
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/**
 * A uniform number in [0, 1) that depends only on the seed and the keys, not on
 * how many draws happened before. Policies compared in one run therefore see
 * exactly the same noisy world, whatever they decide.
 */
export function hashRandom(seed: number, ...keys: readonly (string | number)[]): number {
  let h = (0x811c9dc5 ^ seed) >>> 0; // FNV-1a over the keys, then one mulberry32 round
  for (const key of keys) {
    const text = `${key}\u0000`;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return createRandom(h)();
}

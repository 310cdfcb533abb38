/** Exponential backoff settings; the delay doubles per attempt up to `maxMs`. */
export interface BackoffOptions {
  readonly baseMs: number;
  readonly maxMs: number;
  /** Share of the delay that is randomised, 0..1: spreads retries of many clients apart. */
  readonly jitter: number;
}

/**
 * The delay before retry number `attempt` (0-based): `min(base * 2^attempt, max)`,
 * of which a `jitter` share is random, so the result lies in
 * `[delay * (1 - jitter), delay]`.
 */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt, 0), 52);
  const delay = Math.min(options.baseMs * 2 ** exponent, options.maxMs);
  const jitter = Math.min(Math.max(options.jitter, 0), 1);
  return Math.round(delay * (1 - jitter * random()));
}

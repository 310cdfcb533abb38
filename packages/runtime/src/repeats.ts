/**
 * Rate-limits a warning that repeats on every evaluation (a signal source
 * failing for a placement every poll interval): the first occurrence per key
 * is let through, then one per interval, carrying how many were held back in
 * between so the log still says how often it happened.
 */
export class RepeatLimiter {
  private readonly last = new Map<string, { at: number; held: number }>();

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether to log this occurrence: undefined to hold it back, otherwise the
   * number of occurrences held back since the last one logged (0 the first time).
   */
  admit(key: string): number | undefined {
    const now = this.now();
    const entry = this.last.get(key);
    if (entry && now - entry.at < this.intervalMs) {
      entry.held++;
      return undefined;
    }
    this.last.set(key, { at: now, held: 0 });
    return entry?.held ?? 0;
  }

  /** The condition is over (the placement is gone or healthy again): the next occurrence logs at once. */
  forget(key: string): void {
    this.last.delete(key);
  }
}

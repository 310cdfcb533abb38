/** A token bucket: `qps` tokens a second, at most `burst` saved up. */
export interface RateLimiter {
  /** Resolves when the caller may send one request; rejects with the abort reason if `signal` fires first. */
  acquire(signal?: AbortSignal): Promise<void>;
}

export interface RateLimiterOptions {
  readonly qps: number;
  readonly burst: number;
  /** Monotonic milliseconds; tests pass a fake clock. */
  readonly clock?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * client-go's default limiter, which `@kubernetes/client-node` lacks. Callers
 * reserve a token at once (the balance may go negative) and wait until it is
 * theirs, so waiters are served in order; a caller that gives up returns it.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { qps, burst } = options;
  if (!(qps > 0) || !(burst >= 1))
    throw new RangeError(`rate limiter needs qps > 0 and burst >= 1, got ${qps}/${burst}`);
  const clock = options.clock ?? (() => performance.now());
  const sleep = options.sleep ?? sleepMs;
  let tokens = burst;
  let last = clock();
  return {
    async acquire(signal) {
      signal?.throwIfAborted();
      const t = clock();
      tokens = Math.min(burst, tokens + ((t - last) / 1000) * qps);
      last = t;
      tokens -= 1;
      if (tokens >= 0) return;
      try {
        await sleep((-tokens / qps) * 1000, signal);
      } catch (error) {
        tokens += 1;
        throw error;
      }
    },
  };
}

export function sleepMs(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

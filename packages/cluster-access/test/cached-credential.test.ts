import { describe, expect, it } from 'vitest';
import { createCachedCredential, createRateLimiter, type Credential } from '../src/index.js';

function fakeClock(start = '2026-01-01T00:00:00Z') {
  let t = new Date(start).getTime();
  return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
}

describe('createCachedCredential', () => {
  it('reuses a credential until shortly before it expires, then fetches a new one', async () => {
    const clock = fakeClock();
    let fetches = 0;
    const cache = createCachedCredential(
      async () => ({ token: `t${++fetches}`, expiresAt: new Date(clock.now().getTime() + 3_600_000) }),
      { now: clock.now, refreshBeforeMs: 60_000 },
    );
    const seen: string[] = [];
    seen.push((await cache.get()).token!);
    clock.advance(3_600_000 - 60_001);
    seen.push((await cache.get()).token!);
    clock.advance(1);
    seen.push((await cache.get()).token!);
    expect(seen).toEqual(['t1', 't1', 't2']);
  });

  it('refreshes a short-lived credential at half its lifetime rather than on every call', async () => {
    const clock = fakeClock();
    let fetches = 0;
    const cache = createCachedCredential(
      async () => ({ token: `t${++fetches}`, expiresAt: new Date(clock.now().getTime() + 30_000) }),
      { now: clock.now, refreshBeforeMs: 60_000 },
    );
    const seen = [(await cache.get()).token];
    clock.advance(14_999);
    seen.push((await cache.get()).token);
    clock.advance(1);
    seen.push((await cache.get()).token);
    expect(seen).toEqual(['t1', 't1', 't2']);
  });

  it('lets concurrent callers share one fetch (single flight)', async () => {
    let fetches = 0;
    let release!: (c: Credential) => void;
    const cache = createCachedCredential(
      () =>
        new Promise<Credential>((resolve) => {
          fetches++;
          release = resolve;
        }),
    );
    const all = Promise.all(Array.from({ length: 10 }, () => cache.get()));
    release({ token: 'shared' });
    expect({ tokens: (await all).map((c) => c.token), fetches }).toEqual({
      tokens: Array(10).fill('shared'),
      fetches: 1,
    });
  });

  it('does not cache a failure, and a caller that gives up does not cancel the fetch for others', async () => {
    let fetches = 0;
    const cache = createCachedCredential(async () => {
      fetches++;
      if (fetches === 1) throw new Error('plugin failed');
      await new Promise((r) => setTimeout(r, 20));
      return { token: 'ok' };
    });
    await expect(cache.get()).rejects.toThrow('plugin failed');
    const impatient = new AbortController();
    const first = cache.get(impatient.signal);
    const second = cache.get();
    impatient.abort(new Error('gave up'));
    await expect(first).rejects.toThrow('gave up');
    expect({ token: (await second).token, fetches }).toEqual({ token: 'ok', fetches: 2 });
  });

  it('fetches again after invalidate (a 401)', async () => {
    const clock = fakeClock();
    let fetches = 0;
    const cache = createCachedCredential(async () => ({ token: `t${++fetches}` }), { now: clock.now });
    const seen = [(await cache.get()).token, (await cache.get()).token];
    cache.invalidate();
    seen.push((await cache.get()).token);
    expect(seen).toEqual(['t1', 't1', 't2']);
  });

  it('re-reads a credential without expiry after reReadAfterMs (default 5 minutes), so a rotated one is picked up', async () => {
    const clock = fakeClock();
    let fetches = 0;
    const cache = createCachedCredential(async () => ({ token: `t${++fetches}` }), { now: clock.now });
    const seen = [(await cache.get()).token];
    clock.advance(5 * 60_000 - 1);
    seen.push((await cache.get()).token);
    clock.advance(1);
    seen.push((await cache.get()).token);
    expect(seen).toEqual(['t1', 't1', 't2']);
  });
});

describe('createRateLimiter', () => {
  it('lets a burst through at once, then spaces requests at 1/qps, and refills over time', async () => {
    let t = 0;
    const waits: number[] = [];
    const limiter = createRateLimiter({
      qps: 10,
      burst: 3,
      clock: () => t,
      sleep: async (ms) => {
        waits.push(Math.round(ms));
      },
    });
    for (let i = 0; i < 5; i++) await limiter.acquire();
    t += 1000; // a second later the bucket is full again (the two borrowed tokens are repaid first)
    for (let i = 0; i < 2; i++) await limiter.acquire();
    expect(waits).toEqual([100, 200]);
  });

  it('returns the token of a caller that gives up while waiting', async () => {
    let t = 0;
    const limiter = createRateLimiter({
      qps: 1,
      burst: 1,
      clock: () => t,
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    });
    await limiter.acquire();
    const abort = new AbortController();
    const waiting = limiter.acquire(abort.signal);
    abort.abort(new Error('cluster timeout'));
    await expect(waiting).rejects.toThrow('cluster timeout');
    t += 1000;
    await expect(limiter.acquire()).resolves.toBeUndefined();
  });

  it('refuses a zero qps', () => {
    expect(() => createRateLimiter({ qps: 0, burst: 1 })).toThrow('rate limiter needs qps > 0 and burst >= 1, got 0/1');
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffDelay, PRIORITY, WorkQueue } from '../src/index.js';

describe('backoffDelay', () => {
  it.each([
    { name: 'the first retry waits the base delay', attempt: 0, random: 0, expected: 100 },
    { name: 'each retry doubles the delay', attempt: 3, random: 0, expected: 800 },
    { name: 'the delay never exceeds the maximum', attempt: 40, random: 0, expected: 5000 },
    { name: 'a huge attempt count does not overflow', attempt: 10_000, random: 0, expected: 5000 },
    { name: 'jitter takes off at most its share of the delay', attempt: 3, random: 1, expected: 400 },
    { name: 'half the jitter takes off half of that', attempt: 3, random: 0.5, expected: 600 },
  ])('$name', ({ attempt, random, expected }) => {
    expect(backoffDelay(attempt, { baseMs: 100, maxMs: 5000, jitter: 0.5 }, () => random)).toBe(expected);
  });
});

describe('WorkQueue', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  async function drain(queue: WorkQueue): Promise<string[]> {
    const keys: string[] = [];
    while (queue.length > 0) {
      const key = (await queue.get())!;
      keys.push(key);
      queue.done(key);
    }
    return keys;
  }

  it('hands out each key once however often it was added, in first-added order', async () => {
    const queue = new WorkQueue();
    for (const key of ['a', 'b', 'a', 'c', 'b', 'a']) queue.add(key);
    expect(queue.length).toBe(3);
    expect(await drain(queue)).toEqual(['a', 'b', 'c']);
  });

  it('does not hand a key to a second worker while it is processed, and requeues it on done if it was added meanwhile', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    const first = await queue.get();
    queue.add('a');
    expect({ first, waiting: queue.length }).toEqual({ first: 'a', waiting: 0 });
    queue.done('a');
    expect(queue.length).toBe(1);
    expect(await drain(queue)).toEqual(['a']);
  });

  it('hands out high before normal before low keys, each priority first-queued first', async () => {
    const queue = new WorkQueue();
    queue.add('low-1', PRIORITY.low);
    queue.add('normal-1');
    queue.add('low-2', PRIORITY.low);
    queue.add('high-1', PRIORITY.high);
    queue.add('normal-2', PRIORITY.normal);
    queue.add('high-2', PRIORITY.high);
    expect(await drain(queue)).toEqual(['high-1', 'high-2', 'normal-1', 'normal-2', 'low-1', 'low-2']);
  });

  it('moves a queued key up when it is added at a higher priority, and never down', async () => {
    const queue = new WorkQueue();
    for (const key of ['a', 'b', 'c', 'd']) queue.add(key, PRIORITY.low);
    queue.add('c', PRIORITY.high); // an inventory change affects c: ahead of the sweep
    queue.add('a', PRIORITY.normal);
    queue.add('c', PRIORITY.low); // a later sweep leaves it where it is
    expect(queue.length).toBe(4);
    expect(await drain(queue)).toEqual(['c', 'a', 'b', 'd']);
  });

  it('coalesces adds of a key being processed into one run, at the highest priority they asked for', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    queue.add('b', PRIORITY.normal);
    const first = await queue.get();
    for (const priority of [PRIORITY.low, PRIORITY.high, PRIORITY.low]) queue.add('a', priority);
    expect({ first, waiting: queue.length }).toEqual({ first: 'a', waiting: 1 });
    queue.done('a');
    expect(await drain(queue)).toEqual(['a', 'b']);
  });

  it('reports how long each key waited and at which priority', async () => {
    const waits: [string, number, number][] = [];
    const queue = new WorkQueue({ onDequeue: (key, ms, priority) => waits.push([key, ms, priority]) });
    queue.add('a', PRIORITY.low);
    vi.advanceTimersByTime(300);
    queue.add('b', PRIORITY.high);
    vi.advanceTimersByTime(100);
    queue.add('a', PRIORITY.high); // moving up: it waits at high priority from now
    vi.advanceTimersByTime(200);
    await drain(queue);
    expect(waits).toEqual([
      ['b', 300, PRIORITY.high],
      ['a', 200, PRIORITY.high],
    ]);
  });

  it('wakes a waiting worker when a key arrives', async () => {
    const queue = new WorkQueue();
    const next = queue.get();
    queue.add('x');
    expect(await next).toBe('x');
  });

  it('addAfter delivers the key after the delay, and the earliest schedule of a key wins', async () => {
    const queue = new WorkQueue();
    queue.addAfter('a', 1000);
    queue.addAfter('a', 5000);
    queue.addAfter('b', 2000);
    expect({ queued: queue.length, delayed: queue.delayedCount }).toEqual({ queued: 0, delayed: 2 });
    vi.advanceTimersByTime(1000);
    expect(await drain(queue)).toEqual(['a']);
    vi.advanceTimersByTime(1000);
    expect(await drain(queue)).toEqual(['b']);
    vi.advanceTimersByTime(10_000);
    expect({ queued: queue.length, delayed: queue.delayedCount }).toEqual({ queued: 0, delayed: 0 });
  });

  it('backs off per key exponentially and forget resets the count', () => {
    const queue = new WorkQueue({ backoff: { baseMs: 100, maxMs: 10_000, jitter: 0 }, burst: 1000 });
    const due: number[] = [];
    for (let i = 0; i < 4; i++) {
      queue.addRateLimited('a');
      const start = Date.now();
      while (queue.length === 0) vi.advanceTimersByTime(10);
      due.push(Date.now() - start);
      queue.get();
      queue.done('a');
    }
    expect({ due, retries: queue.retries('a') }).toEqual({ due: [100, 200, 400, 800], retries: 4 });
    queue.forget('a');
    expect(queue.retries('a')).toBe(0);
  });

  it('limits retries overall with a token bucket once the burst is spent', () => {
    const queue = new WorkQueue({ backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, qps: 10, burst: 2 });
    for (const key of ['a', 'b', 'c', 'd']) queue.addRateLimited(key);
    vi.advanceTimersByTime(1);
    const early = queue.length;
    vi.advanceTimersByTime(100);
    const after100 = queue.length;
    vi.advanceTimersByTime(100);
    expect({ early, after100, after200: queue.length }).toEqual({ early: 2, after100: 3, after200: 4 });
  });

  it('after shutDown hands out nothing, wakes waiting workers and drops scheduled keys', async () => {
    const queue = new WorkQueue();
    const waiting = queue.get();
    queue.addAfter('later', 1000);
    queue.shutDown();
    queue.add('ignored');
    vi.advanceTimersByTime(2000);
    expect({ waiting: await waiting, next: await queue.get(), delayed: queue.delayedCount }).toEqual({
      waiting: undefined,
      next: undefined,
      delayed: 0,
    });
  });
});

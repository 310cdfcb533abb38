import { backoffDelay, type BackoffOptions } from './backoff.js';

export interface WorkQueueOptions {
  /** Per-key retry backoff after failures (client-go's item exponential limiter). */
  readonly backoff?: BackoffOptions;
  /** Overall retry budget: at most `qps` rate-limited retries per second, bursts up to `burst`. */
  readonly qps?: number;
  readonly burst?: number;
  readonly now?: () => number;
  readonly random?: () => number;
  /** Called as a worker takes a key: how long it waited at the priority it is taken at, and that priority. */
  readonly onDequeue?: (key: string, waitedMs: number, priority: Priority) => void;
}

/**
 * Keys of a higher priority are handed out before any of a lower one; within
 * a priority, first queued first. A key added again at a higher priority moves
 * up; at the same or a lower one it keeps its place.
 */
export const PRIORITY = { high: 0, normal: 1, low: 2 } as const;
export type Priority = (typeof PRIORITY)[keyof typeof PRIORITY];

/** A FIFO of keys that takes from the front without shifting the array each time. */
class Lane {
  private items: string[] = [];
  private head = 0;
  push(key: string): void {
    this.items.push(key);
  }
  shift(): string | undefined {
    if (this.head >= this.items.length) return undefined;
    const key = this.items[this.head++]!;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return key;
  }
}

const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 5, maxMs: 300_000, jitter: 0.1 };

/**
 * A de-duplicating work queue with client-go's semantics, and priorities: a
 * key is queued at most once (repeated adds coalesce); a key being processed
 * is not handed to a second worker, and if it was added meanwhile it is queued
 * again (at the highest priority it was added with) when the worker calls
 * `done`. Retries go through `addRateLimited` (per-key exponential backoff
 * plus an overall token bucket); `addAfter` schedules a key (the engine's
 * RequeueAfter).
 */
export class WorkQueue {
  private readonly lanes: Lane[] = Object.values(PRIORITY).map(() => new Lane());
  /** Key -> the priority of the lane it waits in (an entry in another lane is stale and skipped). */
  private readonly queued = new Map<string, Priority>();
  /** Key -> when it was queued. */
  private readonly queuedAt = new Map<string, number>();
  /** Keys added while being processed -> the priority to queue them at on `done`. */
  private readonly requeue = new Map<string, Priority>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private readonly backoff: BackoffOptions;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly onDequeue: WorkQueueOptions['onDequeue'];
  private tokens: number;
  private tokensAt: number;
  private closed = false;

  constructor(options: WorkQueueOptions = {}) {
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.qps = options.qps ?? 10;
    this.burst = options.burst ?? 100;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.onDequeue = options.onDequeue;
    this.tokens = this.burst;
    this.tokensAt = this.now();
  }

  /** Keys waiting to be processed (not counting those scheduled for later). */
  get length(): number {
    return this.queued.size;
  }

  /** Keys scheduled with `addAfter` or `addRateLimited` that are not yet due. */
  get delayedCount(): number {
    return this.delayed.size;
  }

  get isShutDown(): boolean {
    return this.closed;
  }

  add(key: string, priority: Priority = PRIORITY.normal): void {
    if (this.closed) return;
    if (this.processing.has(key)) {
      const pending = this.requeue.get(key);
      if (pending === undefined || priority < pending) this.requeue.set(key, priority);
      return;
    }
    const queued = this.queued.get(key);
    if (queued !== undefined && queued <= priority) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      this.onDequeue?.(key, 0, priority);
      waiter(key);
      return;
    }
    this.queued.set(key, priority);
    // A key that moves up waits from now: the wait reported is at the priority it is taken at.
    this.queuedAt.set(key, this.now());
    this.lanes[priority]!.push(key);
  }

  /** Adds `key` after `delayMs`; an earlier pending schedule of the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.closed) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = this.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref?.();
    this.delayed.set(key, { at, timer });
  }

  /** Adds `key` after its backoff: the per-key exponential delay or the overall budget, whichever is later. */
  addRateLimited(key: string): void {
    const attempt = this.failures.get(key) ?? 0;
    this.failures.set(key, attempt + 1);
    this.addAfter(key, Math.max(backoffDelay(attempt, this.backoff, this.random), this.reserveToken()));
  }

  /** How many times `key` has been retried since it last succeeded. */
  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Clears the failure count of `key` (call after a successful reconcile). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Waits for the next key; undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    for (let priority = 0; priority < this.lanes.length; priority++) {
      const lane = this.lanes[priority]!;
      for (let key = lane.shift(); key !== undefined; key = lane.shift()) {
        if (this.queued.get(key) !== priority) continue; // moved up to a higher lane, or already taken
        this.queued.delete(key);
        const at = this.queuedAt.get(key)!;
        this.queuedAt.delete(key);
        this.processing.add(key);
        this.onDequeue?.(key, this.now() - at, priority as Priority);
        return Promise.resolve(key);
      }
    }
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks `key` processed; if it was added meanwhile it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    const priority = this.requeue.get(key);
    if (priority === undefined) return;
    this.requeue.delete(key);
    this.add(key, priority);
  }

  /** Stops handing out keys; waiting workers get undefined; scheduled keys are dropped. */
  shutDown(): void {
    this.closed = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.requeue.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  /** Token bucket: the delay until a retry token is free, reserving it. */
  private reserveToken(): number {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.tokensAt) / 1000) * this.qps);
    this.tokensAt = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }
}

import { McoError, RepeatLimiter, silentLogger, toMcoError, type Logger } from '@mco/runtime';
import { backoffDelay, type BackoffOptions } from './backoff.js';
import { ResponseTooLargeError } from './client.js';
import { WakeableSleep } from './sleep.js';

/** The part of a Kubernetes object the informer reads. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    managedFields?: unknown;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface ListPage<T> {
  readonly items: T[];
  readonly resourceVersion: string;
  readonly continue?: string | undefined;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** Where an informer lists and watches; `createListWatch` implements it over client-node. */
export interface ListWatch<T> {
  list(options: { limit: number; continue?: string | undefined }): Promise<ListPage<T>>;
  /**
   * Starts a watch from `resourceVersion` with bookmarks. `onDone` is called
   * once, with an error or null when the server closed the stream. Returns a
   * function that ends the watch.
   */
  watch(
    resourceVersion: string,
    timeoutSeconds: number,
    onEvent: (type: WatchEventType, object: T) => void,
    onDone: (error: unknown) => void,
  ): Promise<() => void>;
}

export type InformerEvent = 'add' | 'update' | 'delete';
export type InformerHandler<T> = (event: InformerEvent, object: T, previous: T | undefined) => void;

export interface InformerOptions<T> {
  /** For logs and metrics, e.g. "clusterprofiles". */
  readonly name: string;
  readonly listWatch: ListWatch<T>;
  readonly logger?: Logger;
  /** Restart backoff after errors. */
  readonly backoff?: BackoffOptions;
  /** Relist when neither an event nor a bookmark arrived for this long. */
  readonly idleTimeoutMs?: number;
  /** Server-side watch timeout; randomised between 1x and 2x, like client-go's reflector; 0: the server's default. */
  readonly watchTimeoutSeconds?: number;
  readonly pageSize?: number;
  readonly random?: () => number;
  /**
   * Applied to every listed or watched object before it is cached or handed to
   * handlers (controller-runtime's cache transform): drop what the reader never
   * reads, so the cache holds only the live set. It may change the object it
   * is given. managedFields and kubectl's last-applied copy are always dropped.
   */
  readonly transform?: (object: T) => T;
  /**
   * Bounds of the cache. A cache cannot drop an object (its reader would take
   * it for deleted), so past a bound it keeps every object and alerts:
   * `health().overLimit` (a metric), and a warning when it crosses the bound
   * (an info when it is back within). Bytes are the cached objects' JSON
   * length (`jsonSize`), measured only when `maxBytes` is set.
   */
  readonly limits?: InformerLimits;
}

export interface InformerLimits {
  readonly maxObjects?: number | undefined;
  readonly maxBytes?: number | undefined;
}

export interface InformerHealth {
  readonly name: string;
  readonly synced: boolean;
  readonly watching: boolean;
  /** Milliseconds since the epoch of the last list, event or bookmark. */
  readonly lastActivityAt: number | undefined;
  readonly lists: number;
  /** Watches started (a watch the server ends on its timeout is reopened from the last resourceVersion). */
  readonly watches: number;
  readonly restarts: number;
  readonly lastError: string | undefined;
  readonly objects: number;
  /** The cached objects' JSON length; undefined when no `limits.maxBytes` is set (not measured). */
  readonly bytes: number | undefined;
  /** True while the cache holds more than a bound of `limits` allows. */
  readonly overLimit: boolean;
}

// At most 4 s between attempts: a hub that answers again is seen within about
// 4 s however long it was away (a 20 s outage once left the caches blind 19 s
// more with a 30 s cap); an attempt at a down hub is one refused connection.
export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 200, maxMs: 4_000, jitter: 0.5 };
/** While list/watch keeps failing, one warning per informer this often; the rest at debug. */
const FAILURE_WARN_INTERVAL_MS = 60_000;

/** Thrown inside the loop when the server says the resourceVersion is too old. */
class GoneError extends Error {}

/** `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name}` : String(name);
}

function isGone(error: unknown): boolean {
  if (error instanceof GoneError) return true;
  const e = error as { code?: unknown; statusCode?: unknown } | null;
  return e?.code === 410 || e?.statusCode === 410;
}

/**
 * A reflector and cache (client-go's informer) that keeps going where
 * client-node 1.4's informer stops: list, then watch from the list's
 * resourceVersion with bookmarks; on 410 Gone relist; on any other error
 * restart with jittered exponential backoff from the last resourceVersion; a
 * watchdog relists when nothing arrived for `idleTimeoutMs` (a stalled
 * connection looks healthy otherwise). `hasSynced` turns true after the
 * first complete list. Objects in the cache are shared: copy before changing.
 */
export class Informer<T extends KubeObject> {
  readonly name: string;
  private readonly store = new Map<string, T>();
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly listWatch: ListWatch<T>;
  private readonly logger: Logger;
  private readonly backoff: BackoffOptions;
  private readonly idleTimeoutMs: number;
  private readonly watchTimeoutSeconds: number;
  /** Halved when a list page is larger than the client accepts (ResponseTooLargeError). */
  private pageSize: number;
  private readonly random: () => number;
  private readonly transform: (object: T) => T;
  private synced = false;
  private watching = false;
  private resourceVersion = '';
  private lastActivityAt: number | undefined;
  private lists = 0;
  private watches = 0;
  private restarts = 0;
  private lastError: string | undefined;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private endWatch: (() => void) | undefined;
  private cancelWatch: (() => void) | undefined;
  private readonly sleeper = new WakeableSleep();
  private readonly failureWarnings = new RepeatLimiter(FAILURE_WARN_INTERVAL_MS);
  /** Since when list/watch has been failing, and how often; undefined while it works. */
  private outage: { since: number; failures: number } | undefined;
  private readonly syncWaiters: (() => void)[] = [];
  private readonly limits: InformerLimits;
  /** JSON length per cached key, only with `limits.maxBytes`. */
  private readonly sizes: Map<string, number> | undefined;
  private bytes = 0;
  private overLimit = false;

  constructor(options: InformerOptions<T>) {
    this.name = options.name;
    this.listWatch = options.listWatch;
    this.logger = (options.logger ?? silentLogger).child({ informer: options.name });
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 180_000;
    this.watchTimeoutSeconds = options.watchTimeoutSeconds ?? 300;
    this.pageSize = options.pageSize ?? 500;
    this.random = options.random ?? Math.random;
    const transform = options.transform;
    this.transform = transform ? (object) => transform(strip(object)) : strip;
    this.limits = options.limits ?? {};
    this.sizes = this.limits.maxBytes ? new Map() : undefined;
  }

  /** Called for every change of the cache, after the cache was updated. */
  addHandler(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  keys(): string[] {
    return [...this.store.keys()];
  }

  get size(): number {
    return this.store.size;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list is in the cache (or at once if it is). */
  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  health(): InformerHealth {
    return {
      name: this.name,
      synced: this.synced,
      watching: this.watching,
      lastActivityAt: this.lastActivityAt,
      lists: this.lists,
      watches: this.watches,
      restarts: this.restarts,
      lastError: this.lastError,
      objects: this.store.size,
      bytes: this.sizes ? this.bytes : undefined,
      overLimit: this.overLimit,
    };
  }

  /** The one way objects enter and leave the store: keeps the byte count and checks the bounds. */
  private put(key: string, object: T | undefined): void {
    if (object) this.store.set(key, object);
    else this.store.delete(key);
    if (this.sizes) {
      this.bytes -= this.sizes.get(key) ?? 0;
      if (object) {
        const size = jsonSize(object);
        this.sizes.set(key, size);
        this.bytes += size;
      } else this.sizes.delete(key);
    }
    const { maxObjects, maxBytes } = this.limits;
    const over =
      (maxObjects !== undefined && this.store.size > maxObjects) || (maxBytes !== undefined && this.bytes > maxBytes);
    if (over === this.overLimit) return;
    this.overLimit = over;
    const figures = { objects: this.store.size, bytes: this.sizes ? this.bytes : undefined, maxObjects, maxBytes };
    if (over) this.logger.warn('watch cache over its bound; it keeps every object (a cache cannot drop one)', figures);
    else this.logger.info('watch cache back within its bound', figures);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelWatch?.();
    this.sleeper.wake();
    await this.loop;
  }

  private async run(): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
          this.recovered();
        }
        const outcome = await this.watchOnce();
        if (outcome === 'idle') {
          this.restarts++;
          this.logger.warn('no event or bookmark within the idle timeout; relisting', {
            idleTimeoutMs: this.idleTimeoutMs,
          });
          needList = true;
          continue;
        }
        // A server that closes watches at once every time must not make us spin.
        if (outcome === 'closed-early') await this.sleeper.sleep(backoffDelay(failures++, this.backoff, this.random));
        else failures = 0;
      } catch (error) {
        if (this.stopped) break;
        this.restarts++;
        if (isGone(error)) {
          this.logger.info('resourceVersion too old (410 Gone); relisting', { resourceVersion: this.resourceVersion });
          needList = true;
          continue;
        }
        this.lastError = toMcoError(error).message;
        // A watch line too long ends the watch on an event that resuming would replay: relist instead.
        if (error instanceof ResponseTooLargeError) needList = true;
        // The same request gets the same answer: wait the longest backoff, not the first short ones.
        const delay =
          error instanceof McoError && !error.retryable
            ? backoffDelay(Number.MAX_SAFE_INTEGER, this.backoff, this.random)
            : backoffDelay(failures, this.backoff, this.random);
        failures++;
        this.outage ??= { since: Date.now(), failures: 0 };
        this.outage.failures++;
        const heldBack = this.failureWarnings.admit('failing');
        if (heldBack === undefined) {
          this.logger.debug('list/watch failed; retrying', { error, retryInMs: delay, attempt: failures });
        } else {
          this.logger.warn('list/watch failed; retrying', {
            error,
            retryInMs: delay,
            attempt: failures,
            ...(heldBack > 0 ? { failuresSinceLastWarning: heldBack } : {}),
          });
        }
        await this.sleeper.sleep(delay);
      }
    }
    this.watching = false;
  }

  /**
   * Lists every page of the resource at the page size this cache lists with, and halves it (for
   * this list and later ones) while a page is larger than the client accepts. Resolves with the
   * list's resourceVersion, or undefined when the informer stopped meanwhile.
   */
  protected async listPages(visit: (items: readonly T[]) => void): Promise<string | undefined> {
    let next: string | undefined;
    for (;;) {
      let page: ListPage<T>;
      try {
        page = await this.listWatch.list({ limit: this.pageSize, continue: next });
      } catch (error) {
        if (!(error instanceof ResponseTooLargeError) || this.pageSize <= 1) throw error;
        this.pageSize = Math.max(1, Math.floor(this.pageSize / 2));
        this.logger.warn('a list page was too large; listing in smaller pages', { error, pageSize: this.pageSize });
        continue; // the same page again, smaller: a continue token does not fix the limit
      }
      if (this.stopped) return undefined;
      visit(page.items);
      next = page.continue || undefined;
      if (!next) return page.resourceVersion;
    }
  }

  /** Lists every page and replaces the cache, emitting only real differences. */
  private async relist(): Promise<void> {
    const items: T[] = [];
    const resourceVersion = await this.listPages((page) => {
      for (const item of page) items.push(this.transform(item));
    });
    if (resourceVersion === undefined) return;
    this.lists++;
    this.lastActivityAt = Date.now();
    this.resourceVersion = resourceVersion;
    const seen = new Set<string>();
    for (const item of items) {
      const key = objectKey(item);
      seen.add(key);
      const previous = this.store.get(key);
      if (previous && previous.metadata?.resourceVersion === item.metadata?.resourceVersion) continue;
      this.put(key, item);
      this.emit(previous ? 'update' : 'add', item, previous);
    }
    for (const [key, previous] of [...this.store]) {
      if (seen.has(key)) continue;
      this.put(key, undefined);
      this.emit('delete', previous, previous);
    }
    if (!this.synced) {
      this.synced = true;
      this.logger.info('synced', { objects: this.store.size, resourceVersion });
      for (const waiter of this.syncWaiters.splice(0)) waiter();
    }
  }

  /** The API server answers again after failures: one line saying for how long it did not. */
  private recovered(): void {
    if (!this.outage) return;
    this.logger.info('list/watch works again', {
      downMs: Date.now() - this.outage.since,
      failures: this.outage.failures,
    });
    this.outage = undefined;
    this.failureWarnings.forget('failing');
  }

  /** One watch from the current resourceVersion until it ends, fails or goes idle. */
  private watchOnce(): Promise<'closed' | 'closed-early' | 'idle'> {
    // 0 leaves the timeout to the server (--min-request-timeout, randomised there).
    const timeout = this.watchTimeoutSeconds > 0 ? Math.round(this.watchTimeoutSeconds * (1 + this.random())) : 0;
    const startedAt = Date.now();
    let events = 0;
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        this.cancelWatch = undefined;
        this.watching = false;
        this.endWatch?.();
        this.endWatch = undefined;
        fn();
      };
      const onEvent = (type: WatchEventType, object: T) => {
        if (settled) return;
        this.lastActivityAt = Date.now();
        events++;
        if (type === 'ERROR') {
          const status = object as unknown as { code?: number; message?: string; reason?: string };
          const error =
            status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone'
              ? new GoneError(status.message ?? '410 Gone')
              : Object.assign(new Error(`watch error: ${status.message ?? JSON.stringify(object)}`), {
                  code: status.code,
                });
          finish(() => reject(error));
          return;
        }
        const rv = object.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (type === 'BOOKMARK') return;
        this.apply(type, this.transform(object));
      };
      this.cancelWatch = () => finish(() => resolve('closed'));
      const onDone = (error: unknown) =>
        finish(() =>
          error ? reject(error) : resolve(events === 0 && Date.now() - startedAt < 1000 ? 'closed-early' : 'closed'),
        );
      const watchdog = setInterval(
        () => {
          if (this.stopped) finish(() => resolve('closed'));
          else if (Date.now() - (this.lastActivityAt ?? startedAt) >= this.idleTimeoutMs) finish(() => resolve('idle'));
        },
        Math.max(50, Math.min(this.idleTimeoutMs / 4, 5_000)),
      );
      watchdog.unref?.();
      this.watches++;
      this.listWatch.watch(this.resourceVersion, timeout, onEvent, onDone).then(
        (end) => {
          if (settled || this.stopped) {
            end();
            if (!settled) finish(() => resolve('closed'));
            return;
          }
          this.endWatch = end;
          this.watching = true;
          this.lastActivityAt = Date.now();
          this.lastError = undefined;
          this.recovered();
        },
        (error: unknown) => finish(() => reject(error)),
      );
    });
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void {
    const key = objectKey(object);
    const previous = this.store.get(key);
    if (type === 'DELETED') {
      if (!previous) return;
      this.put(key, undefined);
      this.emit('delete', object, previous);
      return;
    }
    this.put(key, object);
    this.emit(previous ? 'update' : 'add', object, previous);
  }

  private emit(event: InformerEvent, object: T, previous: T | undefined): void {
    for (const handler of this.handlers) {
      try {
        handler(event, object, previous);
      } catch (error) {
        this.logger.error('informer handler failed', { error, event, key: objectKey(object) });
      }
    }
  }
}

/**
 * About the length of `JSON.stringify(value)` (exact but for escapes and
 * number digits), walking the value instead of writing it: the cost is per
 * field, not per byte, so a cache of large objects is measured cheaply.
 */
export function jsonSize(value: unknown): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') size += v.length + 2;
    else if (typeof v === 'number') size += String(v).length;
    else if (typeof v === 'boolean') size += v ? 4 : 5;
    else if (v === null) size += 4;
    else if (Array.isArray(v)) {
      size += 2 + Math.max(0, v.length - 1);
      for (const item of v) stack.push(item === undefined ? null : item);
    } else if (typeof v === 'object') {
      const entries = Object.entries(v as object).filter(([, field]) => field !== undefined);
      size += 2 + Math.max(0, entries.length - 1);
      for (const [key, field] of entries) {
        size += key.length + 3;
        stack.push(field);
      }
    }
  }
  return size;
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * managedFields and kubectl's last-applied copy are large and never read by
 * the controller (status writes go to /status, which ignores metadata);
 * dropping them keeps the cache small.
 */
function strip<T extends KubeObject>(object: T): T {
  const metadata = object.metadata;
  if (metadata?.managedFields !== undefined) delete metadata.managedFields;
  const annotations = metadata?.annotations as Record<string, string> | undefined;
  if (annotations?.[LAST_APPLIED] !== undefined) delete annotations[LAST_APPLIED];
  return object;
}

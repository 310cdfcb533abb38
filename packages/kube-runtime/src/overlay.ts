import type { KubeObject } from './informer.js';

/**
 * What a controller wrote but its informer has not delivered yet. Without
 * it, a reconcile right after a write would start from the stale cached copy
 * and its next write would fail with 409 against our own change (or, for a
 * server-side apply, be repeated for nothing).
 */
export class WriteOverlay<T extends KubeObject> {
  private readonly entries = new Map<string, { baseResourceVersion: string | undefined; object: T | null }>();

  /**
   * Records that `object` (null: deleted) replaced the version `baseResourceVersion` of `key`:
   * the version the cache held when the write was decided, read before it is sent. Read after,
   * the cache may already hold the write and a later change, and the overlay would then pin
   * the older written copy until the next change of that object, which may never come.
   */
  set(key: string, baseResourceVersion: string | undefined, object: T | null): void {
    this.entries.set(key, { baseResourceVersion, object });
  }

  /** The freshest known copy: ours if the cache still holds the version we replaced. */
  resolve(key: string, cached: T | undefined): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return cached;
    if (cached?.metadata?.resourceVersion === entry.baseResourceVersion) return entry.object ?? undefined;
    this.entries.delete(key); // the cache moved on: it is at least as new as our write
    return cached;
  }

  /** Informer hook: once the cache moved past the replaced version, the overlay is obsolete. */
  observe(key: string, cached: T | undefined): void {
    const entry = this.entries.get(key);
    if (entry && cached?.metadata?.resourceVersion !== entry.baseResourceVersion) this.entries.delete(key);
  }

  /** Keys with an entry (objects written or deleted that the cache may not show yet). */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  get size(): number {
    return this.entries.size;
  }
}

import type { KubeObject } from './informer.js';

/**
 * What a controller wrote but its informer has not delivered yet. Without
 * it, a reconcile right after a write would start from the stale cached copy
 * and its next write would fail with 409 against our own change (or, for a
 * server-side apply, be repeated for nothing).
 */
export class WriteOverlay<T extends KubeObject> {
  /**
   * Key -> our latest write (null: deleted) and, oldest first, the versions it supersedes: the
   * version the first write replaced, then each of our writes since. The cache shows them in
   * that order.
   */
  private readonly entries = new Map<string, { superseded: (string | undefined)[]; object: T | null }>();

  /**
   * Records that `object` (null: deleted) replaced the version `baseResourceVersion` of `key`:
   * the version the cache held when the write was decided, read before it is sent, or that of
   * the copy this overlay served. Read after, the cache may already hold the write and a later
   * change, and the overlay would then pin the older written copy until the next change of that
   * object, which may never come. A write on top of the overlay's own copy also supersedes that
   * copy: until the cache shows the newest write it may show an earlier one of ours, and serving
   * that would undo what the writes since changed.
   */
  set(key: string, baseResourceVersion: string | undefined, object: T | null): void {
    const entry = this.entries.get(key);
    const written = entry?.object?.metadata?.resourceVersion;
    const onTop =
      entry !== undefined && (entry.superseded.includes(baseResourceVersion) || written === baseResourceVersion);
    const superseded = onTop ? [...entry.superseded, written] : [baseResourceVersion];
    this.entries.set(key, { superseded, object });
  }

  /** The freshest known copy: ours while the cache holds a version our writes replaced. */
  resolve(key: string, cached: T | undefined): T | undefined {
    const entry = this.track(key, cached);
    return entry ? (entry.object ?? undefined) : cached;
  }

  /** Informer hook: once the cache moved past the replaced versions, the overlay is obsolete. */
  observe(key: string, cached: T | undefined): void {
    this.track(key, cached);
  }

  /** The entry still ahead of `cached`, trimmed to the versions the cache has not passed; gone once it has. */
  private track(key: string, cached: T | undefined) {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const at = entry.superseded.indexOf(cached?.metadata?.resourceVersion);
    if (at < 0) {
      this.entries.delete(key); // the cache moved on: it is at least as new as our write
      return undefined;
    }
    if (at > 0) entry.superseded.splice(0, at);
    return entry;
  }

  /** Keys with an entry (objects written or deleted that the cache may not show yet). */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  get size(): number {
    return this.entries.size;
  }
}

import type { CacheEvent, ObjectCache } from '../src/index.js';

/** An in-memory informer cache: objects keyed `namespace/name`, handlers called on change. */
export class FakeCache<T extends { metadata: { name: string; namespace?: string } }> implements ObjectCache<T> {
  private readonly store = new Map<string, T>();
  private readonly handlers: ((event: CacheEvent, object: T, previous: T | undefined) => void)[] = [];
  synced = true;
  lastActivityAt: number | undefined = 0;

  constructor(objects: readonly T[] = []) {
    for (const o of objects) this.store.set(this.key(o), o);
  }

  get(key: string) {
    return this.store.get(key);
  }
  list() {
    return [...this.store.values()];
  }
  hasSynced() {
    return this.synced;
  }
  addHandler(handler: (event: CacheEvent, object: T, previous: T | undefined) => void) {
    this.handlers.push(handler);
  }
  health() {
    return { lastActivityAt: this.lastActivityAt };
  }

  set(object: T): void {
    const previous = this.store.get(this.key(object));
    this.store.set(this.key(object), object);
    for (const h of this.handlers) h(previous ? 'update' : 'add', object, previous);
  }

  delete(key: string): void {
    const previous = this.store.get(key);
    if (!previous) return;
    this.store.delete(key);
    for (const h of this.handlers) h('delete', previous, previous);
  }

  private key(o: T): string {
    return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  }
}

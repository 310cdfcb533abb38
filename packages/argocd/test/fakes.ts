import type { CacheEvent, ClusterSecret, ExistingSecret, ObjectCache, SecretClient } from '../src/index.js';

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

/** The syncer's Secret calls on an in-memory store; `writes` records every write, in order. */
export class FakeSecrets implements SecretClient {
  readonly store = new Map<string, ExistingSecret>();
  readonly writes: string[] = [];
  private version = 0;
  async listOwned() {
    return [...this.store.values()].filter(
      (s) => s.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'mco-argocd-cluster-sync',
    );
  }
  async get(name: string) {
    return this.store.get(name);
  }
  async create(secret: ClusterSecret) {
    this.writes.push(`create ${secret.metadata.name}`);
    this.store.set(secret.metadata.name, {
      ...secret,
      metadata: { ...secret.metadata, resourceVersion: String(++this.version) },
    });
  }
  async replace(secret: ClusterSecret) {
    this.writes.push(`replace ${secret.metadata.name}`);
    this.store.set(secret.metadata.name, {
      ...secret,
      metadata: { ...secret.metadata, resourceVersion: String(++this.version) },
    });
  }
  async setAnnotation(secret: ExistingSecret, key: string, value: string | undefined) {
    const name = secret.metadata!.name!;
    this.writes.push(`annotate ${name} ${key}=${value ?? '-'}`);
    const annotations = { ...secret.metadata?.annotations };
    if (value === undefined) delete annotations[key];
    else annotations[key] = value;
    this.store.set(name, { ...secret, metadata: { ...secret.metadata, annotations } });
  }
  async delete(name: string) {
    this.writes.push(`delete ${name}`);
    this.store.delete(name);
  }
}

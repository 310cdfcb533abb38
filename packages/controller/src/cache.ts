import { McoError } from '@mco/runtime';
import { Informer, isPartialObjectMetadata, objectKey, type InformerOptions, type KubeObject } from '@mco/kube-runtime';

/*
 * Cache transforms (the Informer's `transform`): each cached kind keeps only
 * what the controller reads, so memory follows the live set rather than
 * whatever else writers put on the objects (annotations of other tools,
 * creationTimestamp, finalizers, other controllers' status fields).
 */

type Metadata = NonNullable<KubeObject['metadata']>;

function pick(metadata: Metadata | undefined, keys: readonly string[]): Metadata {
  const kept: Metadata = {};
  if (!metadata) return kept;
  for (const key of keys) if (metadata[key] !== undefined) kept[key] = metadata[key];
  return kept;
}

/** Identity, the precondition of writes, and what the engine reads (generation, deletion). */
const PLACEMENT_METADATA = ['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'deletionTimestamp'];

/**
 * A placement: its spec and status, whole (the engine reads both). Status
 * writes go to /status, where the API server keeps the stored metadata and
 * spec, so nothing dropped here is lost on a write.
 */
export function trimPlacement(placement: KubeObject): KubeObject {
  return {
    apiVersion: placement.apiVersion,
    kind: placement.kind,
    metadata: pick(placement.metadata, PLACEMENT_METADATA),
    spec: placement.spec,
    ...(placement.status !== undefined ? { status: placement.status } : {}),
  };
}

/** What `sameDecision` compares, the owner that names the placement, and the write preconditions. */
const DECISION_METADATA = [
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'labels',
  'ownerReferences',
  'deletionTimestamp',
];

export function trimPlacementDecision(decision: KubeObject): KubeObject {
  return {
    apiVersion: decision.apiVersion,
    kind: decision.kind,
    metadata: pick(decision.metadata, DECISION_METADATA),
    ...(decision.decisions !== undefined ? { decisions: decision.decisions } : {}),
    ...(decision.schedulerName !== undefined ? { schedulerName: decision.schedulerName } : {}),
  };
}

/**
 * A ClusterProfile keeps its labels and annotations (the taints annotation,
 * and those signal sources read: a kubeconfig Secret, a Prometheus URL), its
 * spec and status (health, properties, access providers); the rest of its
 * metadata goes.
 */
const PROFILE_METADATA = ['name', 'namespace', 'uid', 'resourceVersion', 'labels', 'annotations', 'deletionTimestamp'];

export function trimClusterProfile(profile: KubeObject): KubeObject {
  return { ...profile, metadata: pick(profile.metadata, PROFILE_METADATA) };
}

/*
 * With shards, a replica keeps whole only the placements (and their
 * PlacementDecisions) of the shards it holds when an object arrives; of the
 * others it keeps a stub, so its memory follows its share of the fleet.
 * ClusterProfiles stay whole everywhere: every shard reads them.
 */

/** Marks a stub: identity and resourceVersion only, never written from (`isStub`). */
const STUB = Symbol('mco.stub');

export function isStub(object: KubeObject): boolean {
  return STUB in object;
}

function stub(object: KubeObject, keys: readonly string[]): KubeObject {
  return { metadata: pick(object.metadata, keys), [STUB]: true };
}

/** A placement of a shard not held: its key and resourceVersion (the echo check, a relist's comparison). */
export function stubPlacement(placement: KubeObject): KubeObject {
  return stub(placement, ['name', 'namespace', 'uid', 'resourceVersion']);
}

/** A PlacementDecision of a shard not held: what names its placement (`placementKeyOf`, the index), no decisions. */
export function stubPlacementDecision(decision: KubeObject): KubeObject {
  return stub(decision, ['name', 'namespace', 'uid', 'resourceVersion', 'labels', 'ownerReferences']);
}

export interface ShardedInformerOptions extends InformerOptions<KubeObject> {
  /** Whether the object belongs to a shard this replica holds now: then `transform` keeps it, otherwise a stub. */
  readonly holds: (object: KubeObject) => boolean;
  readonly stub: (object: KubeObject) => KubeObject;
  /** Reads the object of a cache key from the API server; undefined when it is gone. */
  readonly read: (key: string, signal?: AbortSignal) => Promise<KubeObject | undefined>;
}

/**
 * An informer whose objects of shards not held are stubs. `get` and `list`
 * give the whole object where `readWhole` read one for the stub's
 * resourceVersion; the next event of the object replaces both.
 */
export class ShardedInformer extends Informer<KubeObject> {
  private readonly whole = new Map<string, KubeObject>();
  private readonly holds: (object: KubeObject) => boolean;
  private readonly keep: (object: KubeObject) => KubeObject;
  private readonly read: ShardedInformerOptions['read'];

  constructor(options: ShardedInformerOptions) {
    const { holds, stub: toStub, read, transform, ...rest } = options;
    const keep = transform ?? ((object: KubeObject) => object);
    // An item of a metadata-only list is a stub whatever its shard: a reconcile reads it whole.
    super({
      ...rest,
      transform: (object) => (holds(object) && !isPartialObjectMetadata(object) ? keep(object) : toStub(object)),
    });
    this.holds = holds;
    this.keep = keep;
    this.read = read;
    this.addHandler((_event, object) => {
      const key = objectKey(object);
      if (this.whole.has(key) && this.wholeOf(key) === undefined) this.whole.delete(key);
    });
  }

  override get(key: string): KubeObject | undefined {
    return this.wholeOf(key) ?? super.get(key);
  }

  override list(): KubeObject[] {
    if (this.whole.size === 0) return super.list();
    return super.list().map((object) => (isStub(object) ? (this.wholeOf(objectKey(object)) ?? object) : object));
  }

  /** The whole copy read for the stub the cache holds now (same resourceVersion), if any. */
  private wholeOf(key: string): KubeObject | undefined {
    const whole = this.whole.get(key);
    if (!whole) return undefined;
    const cached = super.get(key);
    return cached && isStub(cached) && cached.metadata?.resourceVersion === whole.metadata?.resourceVersion
      ? whole
      : undefined;
  }

  /**
   * Makes `get(key)` whole: where the cache holds a stub, reads the object from
   * the API server and keeps it. False when the API server's copy is not the
   * stub's version (the cache is behind; its next event brings it).
   */
  async readWhole(key: string, signal?: AbortSignal): Promise<boolean> {
    const cached = super.get(key);
    if (!cached || !isStub(cached) || this.wholeOf(key)) return true;
    return this.keepWhole(key, await this.read(key, signal));
  }

  /**
   * After shards were taken: the stubs now held made whole from one paginated
   * list, far fewer requests than a read per reconcile at start-up or a
   * takeover (`readWhole` reads what it missed).
   */
  async readHeld(): Promise<void> {
    await this.listPages((items) => {
      for (const item of items) if (this.holds(item)) this.keepWhole(objectKey(item), item);
    });
  }

  /** Keeps `read` as the whole copy of the stub the cache holds now, if it is of its version. */
  private keepWhole(key: string, read: KubeObject | undefined): boolean {
    const now = super.get(key);
    if (!now || !isStub(now)) return true;
    if (this.wholeOf(key)) return true;
    if (!read || isPartialObjectMetadata(read) || read.metadata?.resourceVersion !== now.metadata?.resourceVersion)
      return false;
    const whole = this.keep(read);
    if (this.holds(whole)) this.whole.set(key, whole);
    return this.wholeOf(key) !== undefined;
  }

  /** After a shard was lost: whole copies read for shards no longer held go (the cache's stubs stay). */
  dropUnheld(): void {
    for (const [key, object] of this.whole) if (!this.holds(object)) this.whole.delete(key);
  }
}

/**
 * Before a reconcile: the placement and its PlacementDecisions whole. A
 * shard comes to a replica at start-up, on a rebalance or from a crashed
 * peer's Lease, and its objects were cached as stubs (with metadata-only
 * lists, every listed object is one): with whole lists the controller lists
 * them once when it takes shards (`readHeld`; the informer's own relist would
 * keep a stub of an unchanged resourceVersion as it is), and a reconcile reads
 * from the API server what is still a stub (every object of its shards with
 * metadata-only lists; what that list missed otherwise). A cache behind the API server is a
 * conflict: the reconcile is retried once its event arrived, and nothing is
 * written from a stub.
 */
export async function readWhole(
  placements: ShardedInformer,
  placementDecisions: ShardedInformer,
  key: string,
  decisionKeys: Iterable<string>,
  signal?: AbortSignal,
): Promise<void> {
  const reads = [
    placements.readWhole(key, signal),
    ...[...decisionKeys].map((d) => placementDecisions.readWhole(d, signal)),
  ];
  if ((await Promise.all(reads)).every(Boolean)) return;
  throw new McoError('Conflict', `the cache is behind the API server for ${key}; retrying once it caught up`, true);
}

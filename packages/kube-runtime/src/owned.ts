import { createHash } from 'node:crypto';
import { httpStatusOf } from '@mco/runtime';
import type { KubeClient } from './client.js';
import type { KubeObject } from './informer.js';
import { objectPath, type Resource } from './kube.js';

/**
 * Annotation on every object an owned-object sync writes: a digest of what it
 * applied. A changed desired object (a field dropped included, which a
 * "contains" check cannot see) changes the digest and is applied again.
 */
export const APPLIED_DIGEST_ANNOTATION = 'orchestra.multicluster.x-k8s.io/applied-digest';

/** An object as an owned-object sync writes it: full identity, everything else as desired. */
export interface DesiredObject extends KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: KubeObject['metadata'] & { readonly name: string; readonly namespace: string };
}

export interface OwnedObjectsInput<T extends DesiredObject> {
  /** Every object that should exist now. */
  readonly desired: readonly T[];
  /** The objects this writer owns as observed (a synced cache, selected by its owner label). */
  readonly existing: readonly KubeObject[];
  /**
   * Whether an owned object that is no longer desired may go: true only when
   * its removal was observed (say, its cluster left a placement's valid
   * status). Anything in doubt — an unsynced cache, an invalid placement, a
   * missing credential — answers false and the object is kept.
   */
  readonly mayPrune: (existing: KubeObject) => boolean;
}

export interface OwnedObjectsPlan<T extends DesiredObject> {
  /** Desired objects that are missing or differ, digest annotation added. */
  readonly apply: readonly T[];
  /** Owned objects not desired whose removal was observed. */
  readonly prune: readonly KubeObject[];
  /** Owned objects not desired, kept because their removal is in doubt. */
  readonly kept: readonly KubeObject[];
}

/**
 * What an owned-object sync must do: apply what is missing or changed (an
 * object that already holds every desired field and the same digest needs no
 * write, so a resync of an unchanged world writes nothing), prune only what
 * `mayPrune` allows. Pure; objects are keyed `namespace/name`.
 */
export function planOwnedObjects<T extends DesiredObject>(input: OwnedObjectsInput<T>): OwnedObjectsPlan<T> {
  const existing = new Map(input.existing.map((o) => [keyOf(o), o]));
  const wanted = new Set<string>();
  const apply: T[] = [];
  for (const object of input.desired) {
    const key = keyOf(object);
    wanted.add(key);
    const digest = digestOf(object);
    const stamped = {
      ...object,
      metadata: {
        ...object.metadata,
        annotations: { ...object.metadata.annotations, [APPLIED_DIGEST_ANNOTATION]: digest },
      },
    };
    const current = existing.get(key);
    if (current && !current.metadata?.deletionTimestamp && contains(current, stamped)) continue;
    apply.push(stamped);
  }
  const prune: KubeObject[] = [];
  const kept: KubeObject[] = [];
  for (const [key, object] of [...existing].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (wanted.has(key) || object.metadata?.deletionTimestamp) continue;
    (input.mayPrune(object) ? prune : kept).push(object);
  }
  return { apply, prune, kept };
}

/**
 * True when `actual` holds everything `expected` says: objects key by key
 * (extra keys in `actual`, such as server defaults and status, are ignored),
 * arrays element by element with the same length, scalars equal.
 */
export function contains(actual: unknown, expected: unknown): boolean {
  if (expected === undefined) return true;
  if (expected === null || typeof expected !== 'object') return actual === expected;
  if (actual === null || typeof actual !== 'object') return false;
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) && actual.length === expected.length && expected.every((v, i) => contains(actual[i], v))
    );
  }
  if (Array.isArray(actual)) return false;
  const a = actual as Record<string, unknown>;
  return Object.entries(expected as Record<string, unknown>).every(([k, v]) => contains(a[k], v));
}

/** A digest of an object's JSON with keys sorted, so key order never makes a difference. */
export function digestOf(object: unknown): string {
  return createHash('sha256').update(canonicalJson(object)).digest('hex').slice(0, 32);
}

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

function keyOf(object: KubeObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

/** Writes of one namespaced resource: server-side apply with a field manager, and a guarded delete. */
export interface ObjectWriter {
  /** Server-side apply (forced: mco's own fields are mco's). Returns the object as stored. */
  apply(object: DesiredObject): Promise<KubeObject>;
  /**
   * Deletes with uid and resourceVersion preconditions, so a re-created or
   * changed object is never deleted on a stale decision; a missing object
   * is not an error.
   */
  delete(object: KubeObject): Promise<void>;
}

export interface ObjectWriterOptions {
  readonly fieldManager: string;
  readonly requestTimeoutMs?: number;
}

/** An `ObjectWriter` for one namespaced resource (a custom resource, or core Secrets and ConfigMaps). */
export function createObjectWriter(client: KubeClient, resource: Resource, options: ObjectWriterOptions): ObjectWriter {
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const path = (o: KubeObject) => objectPath(resource, o.metadata?.namespace ?? '', o.metadata?.name ?? '');
  return {
    apply: (o) =>
      client.patch<KubeObject>(path(o), 'apply', o, {
        query: { fieldManager: options.fieldManager, force: true },
        timeoutMs,
      }),
    delete: (o) =>
      client
        .delete(
          path(o),
          { preconditions: { uid: o.metadata?.uid, resourceVersion: o.metadata?.resourceVersion } },
          {
            timeoutMs,
          },
        )
        .then(
          () => undefined,
          (error: unknown) => {
            if (httpStatusOf(error) !== 404) throw error;
          },
        ),
  };
}

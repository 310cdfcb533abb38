import { createHash } from 'node:crypto';
import { httpStatusOf, McoError, silentLogger, toMcoError, type LogFields, type Logger } from '@mco/runtime';
import type { KubeClient } from './client.js';
import type { KubeObject } from './informer.js';
import { objectPath, resourcePath, type Resource } from './kube.js';

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
  /** Each request's deadline; the client's own (`KubeClientOptions.timeoutMs`) when absent. */
  readonly requestTimeoutMs?: number;
  /** Every write a server-side dry run: validated, nothing stored. */
  readonly dryRun?: boolean;
}

/** An `ObjectWriter` for one namespaced resource (a custom resource, or core Secrets and ConfigMaps). */
export function createObjectWriter(client: KubeClient, resource: Resource, options: ObjectWriterOptions): ObjectWriter {
  const timeout = deadline(options.requestTimeoutMs);
  const dryRun = options.dryRun === true;
  const path = (o: KubeObject) => objectPath(resource, o.metadata?.namespace ?? '', o.metadata?.name ?? '');
  return {
    apply: (o) =>
      client.patch<KubeObject>(path(o), 'apply', o, {
        query: { fieldManager: options.fieldManager, force: true },
        ...timeout,
        dryRun,
      }),
    delete: (o) =>
      client
        .delete(
          path(o),
          { preconditions: { uid: o.metadata?.uid, resourceVersion: o.metadata?.resourceVersion } },
          { ...timeout, dryRun },
        )
        .then(
          () => undefined,
          (error: unknown) => {
            if (httpStatusOf(error) !== 404) throw error;
          },
        ),
  };
}

export interface SyncOwnedObjectsOptions<T extends DesiredObject> {
  readonly resource: Resource;
  /** The one namespace the caller's objects live in. */
  readonly namespace: string;
  /**
   * The labels that mark the caller's objects: the listing selects by them and
   * every desired object carries them. An object without them is never
   * written or deleted.
   */
  readonly ownedLabels: Readonly<Record<string, string>>;
  /** Every object that should exist now, in `namespace`. */
  readonly desired: readonly T[];
  /** As in `planOwnedObjects`: false whenever a removal is in doubt, and the object stays. */
  readonly mayPrune: (existing: KubeObject) => boolean;
  readonly fieldManager: string;
  /** Server-side dry run: the report says what would be done, nothing is stored. */
  readonly dryRun?: boolean;
  /** Each request's deadline; the client's own when absent. */
  readonly requestTimeoutMs?: number;
  /** Each apply and delete is logged at info; nothing when nothing changed. */
  readonly logger?: Logger;
  /** Fields added to the log line of an object's apply or delete (its placement and cluster, say). */
  readonly logFields?: (object: KubeObject) => LogFields;
  /**
   * The objects as the caller observes them (an informer's synced cache, seen
   * through its `WriteOverlay`), instead of a listing and a read of each new
   * name: those with the owned labels are the caller's, any other one of a
   * desired name is left alone, and a desired name missing from it is created.
   * An owned object missing from it is not pruned.
   */
  readonly existing?: readonly KubeObject[];
  /** The calls on the resource; default `createObjectWriter(client, resource, ...)`. */
  readonly writer?: ObjectWriter;
  /** Writes at once (default 1). */
  readonly concurrency?: number;
  /** Called after each write that changed something: the object as stored, or null once deleted (a `WriteOverlay`). */
  readonly onWritten?: (key: string, written: KubeObject | null) => void;
}

/** What `syncOwnedObjects` did, by `namespace/name`. */
export interface SyncOwnedObjectsReport {
  readonly applied: string[];
  readonly deleted: string[];
  /**
   * Not desired, kept: `mayPrune` said no, or the object changed or was
   * re-created since the listing (its delete preconditions failed).
   */
  readonly kept: string[];
  /**
   * Of `kept`, those whose delete preconditions failed: the listing was
   * stale. Look again soon; the change may never reach the caller as an event.
   */
  readonly conflicted: string[];
  /** Desired, but a same-named object without the owned labels exists: left untouched. */
  readonly notOwned: string[];
  readonly failed: { readonly key: string; readonly error: McoError }[];
}

/**
 * The shared safe apply and prune of every adapter: lists the caller's objects
 * (by its owned labels, or takes them from `existing`), applies what is
 * missing or changed (server-side apply; an owned object's uid goes in the
 * body, so one re-created meanwhile is not taken over; a same-named object
 * without the owned labels is left alone), and deletes only owned objects
 * `mayPrune` allows, each with uid and resourceVersion preconditions. Never
 * deletes on doubt: a failed listing throws before anything is written, and a
 * delete whose preconditions no longer hold keeps the object (`conflicted`: the
 * caller looks again). A failed write
 * is reported in `failed`; the others still run. Each write that changed
 * something is logged at info (an apply the server found nothing to change
 * in is neither logged nor reported).
 */
export async function syncOwnedObjects<T extends DesiredObject>(
  /** null when `existing` and `writer` are given: a caller that observes and writes through its own calls. */
  client: KubeClient | null,
  options: SyncOwnedObjectsOptions<T>,
): Promise<SyncOwnedObjectsReport> {
  const { resource, namespace, ownedLabels, fieldManager, logger = silentLogger } = options;
  const timeout = deadline(options.requestTimeoutMs);
  const dryRun = options.dryRun === true;
  options.desired.forEach((o, i) => {
    if (o.metadata.namespace !== namespace) {
      throw new McoError(
        'Invalid',
        `desired[${i}].metadata.namespace: ${o.metadata.namespace} is not ${namespace}, the namespace of the owned objects`,
        false,
      );
    }
  });
  if (!client && !(options.existing && options.writer)) {
    throw new McoError('Invalid', 'client: needed unless existing and writer are given', false);
  }
  const owned = (o: KubeObject) => Object.entries(ownedLabels).every(([k, v]) => o.metadata?.labels?.[k] === v);
  const observed = options.existing;
  const existing = observed
    ? observed.filter(owned)
    : await listOwned(client!, resourcePath(resource, namespace), ownedLabels, timeout);
  const byKey = new Map(existing.map((o) => [keyOf(o), o]));
  const others = new Set(observed?.filter((o) => !owned(o)).map(keyOf));
  const desired = options.desired.map((o) => ({
    ...o,
    // The owned labels last, so a desired label can never take them over.
    metadata: { ...o.metadata, labels: { ...o.metadata.labels, ...ownedLabels } },
  }));
  const plan = planOwnedObjects({ desired, existing, mayPrune: options.mayPrune });
  const writer =
    options.writer ??
    createObjectWriter(client!, resource, {
      fieldManager,
      dryRun,
      ...(timeout.timeoutMs === undefined ? {} : { requestTimeoutMs: timeout.timeoutMs }),
    });
  const report: SyncOwnedObjectsReport = {
    applied: [],
    deleted: [],
    kept: [],
    conflicted: [],
    notOwned: [],
    failed: [],
  };
  const log = (message: string, object: KubeObject) =>
    logger.info(message, {
      ...options.logFields?.(object),
      object: `${object.kind ? `${object.kind} ` : ''}${keyOf(object)}`,
      ...(dryRun ? { dryRun } : {}),
    });
  const concurrency = Math.max(1, options.concurrency ?? 1);

  await forEachLimited(plan.apply, concurrency, async (object) => {
    const key = keyOf(object);
    try {
      const current = byKey.get(key);
      // Someone else's object of that name (not listed: read by name) is left alone.
      if (
        !current &&
        (others.has(key) ||
          (!observed && (await exists(client!, objectPath(resource, namespace, object.metadata.name), timeout))))
      ) {
        report.notOwned.push(key);
        return;
      }
      const uid = current?.metadata?.uid;
      const written = await writer.apply(uid ? { ...object, metadata: { ...object.metadata, uid } } : object);
      // The same resourceVersion back: the server found nothing to change.
      if (!dryRun && current && written.metadata?.resourceVersion === current.metadata?.resourceVersion) return;
      report.applied.push(key);
      options.onWritten?.(key, written);
      log('applied', object);
    } catch (error) {
      report.failed.push({ key, error: toMcoError(error, `apply ${resource.plural} ${key}`) });
    }
  });
  report.kept.push(...plan.kept.map(keyOf));
  await forEachLimited(plan.prune, concurrency, async (object) => {
    const key = keyOf(object);
    try {
      await writer.delete(object);
      report.deleted.push(key);
      options.onWritten?.(key, null);
      log('deleted', object);
    } catch (error) {
      // 409: changed or re-created since the listing; the caller looks again (`conflicted`).
      if (httpStatusOf(error) === 409) {
        report.kept.push(key);
        report.conflicted.push(key);
      } else report.failed.push({ key, error: toMcoError(error, `delete ${resource.plural} ${key}`) });
    }
  });
  return report;
}

async function listOwned(
  client: KubeClient,
  path: string,
  labels: Readonly<Record<string, string>>,
  timeout: { timeoutMs?: number },
): Promise<KubeObject[]> {
  const labelSelector = Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  if (!labelSelector) throw new McoError('Invalid', 'ownedLabels: at least one label marks the owned objects', false);
  return listAll(client, path, labelSelector, timeout, `list ${path} (${labelSelector}); nothing was written`);
}

/**
 * A live listing of every object of `resource` in `namespace` (optionally by
 * label selector), read from the API server, not a cache: for a decision that
 * must not miss an object created moments ago, such as whether a Secret is
 * still in use. Pages; starts again once when the listing expires (410).
 */
export function listObjects(
  client: KubeClient,
  resource: Resource,
  namespace: string,
  options: { labelSelector?: string; timeoutMs?: number } = {},
): Promise<KubeObject[]> {
  const path = resourcePath(resource, namespace);
  const { labelSelector = '', timeoutMs } = options;
  return listAll(client, path, labelSelector, deadline(timeoutMs), `list ${path}`);
}

async function listAll(
  client: KubeClient,
  path: string,
  labelSelector: string,
  timeout: { timeoutMs?: number },
  context: string,
): Promise<KubeObject[]> {
  // A continue token expires (410 Gone) when etcd compacts its revision
  // between two pages: the listing starts again, once. Its remainder at a
  // newer revision would not be one consistent listing.
  for (let attempt = 1; ; attempt++) {
    try {
      return await listPages(client, path, labelSelector, timeout);
    } catch (error) {
      if (httpStatusOf(error) !== 410) throw toMcoError(error, context);
      if (attempt === 2) {
        throw new McoError('Conflict', `${context}: the listing expired twice while paging (410 Gone)`, true, {
          cause: error,
        });
      }
    }
  }
}

async function listPages(
  client: KubeClient,
  path: string,
  labelSelector: string,
  timeout: { timeoutMs?: number },
): Promise<KubeObject[]> {
  const items: KubeObject[] = [];
  let next: string | undefined;
  do {
    const page = await client.get<{
      apiVersion?: string;
      kind?: string;
      items?: KubeObject[];
      metadata?: { continue?: string };
    }>(path, { query: { ...(labelSelector ? { labelSelector } : {}), limit: 500, continue: next }, ...timeout });
    // The items of a list carry no apiVersion and kind; the desired objects do, and are compared whole.
    const head = { apiVersion: page.apiVersion, kind: page.kind?.replace(/List$/, '') };
    items.push(...(page.items ?? []).map((o) => ({ ...head, ...o })));
    next = page.metadata?.continue || undefined;
  } while (next);
  return items;
}

async function exists(client: KubeClient, path: string, timeout: { timeoutMs?: number }): Promise<boolean> {
  try {
    await client.get(path, timeout);
    return true;
  } catch (error) {
    if (httpStatusOf(error) === 404) return false;
    throw error;
  }
}

function deadline(timeoutMs: number | undefined): { timeoutMs?: number } {
  return timeoutMs === undefined ? {} : { timeoutMs };
}

async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(lanes);
}

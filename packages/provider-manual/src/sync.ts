import type { KubeConfig } from '@kubernetes/client-node';
import { CLUSTER_PROFILES, objectPath, resourcePath, type KubeClient } from '@mco/kube-runtime';
import { kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import {
  CLUSTER_MANAGER_LABEL,
  CLUSTER_PROFILE_API_VERSION,
  clusterKey,
  type AccessProvider,
  type ClusterKey,
  type ClusterProfile,
  type ConditionStatus,
} from '@mco/core';
import { McoError, silentLogger, toMcoError, type Logger } from '@mco/runtime';
import { canonicalJson, projectOwnedFields } from './managed-fields.js';

/** Every hub call is bounded: a hung API server fails one sync (retried by the loop), never freezes the provider. */
const REQUEST_TIMEOUT_MS = 30_000;
const LIST_PAGE = 500;
/** Profiles written at once: fast enough for fleets of thousands, gentle on the apiserver's priority levels. */
const WRITE_CONCURRENCY = 4;

/** A condition a provider declares; the writer keeps `lastTransitionTime` stable while the status holds. */
export interface DesiredCondition {
  readonly type: string;
  readonly status: ConditionStatus;
  /** CamelCase, as the CRD requires. */
  readonly reason: string;
  readonly message?: string;
}

/** What a provider wants one ClusterProfile to look like. */
export interface DesiredClusterProfile {
  readonly namespace: string;
  readonly name: string;
  readonly displayName?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /** Update the profile if it exists, never create it (e.g. a cluster that is leaving). */
  readonly updateOnly?: boolean;
  readonly status?: {
    readonly accessProviders?: readonly AccessProvider[];
    readonly properties?: readonly { readonly name: string; readonly value: string }[];
    readonly conditions?: readonly DesiredCondition[];
    readonly version?: { readonly kubernetes?: string };
  };
}

export interface SyncOptions {
  /** Access to the hub. */
  readonly kubeConfig: KubeConfig;
  /** `spec.clusterManager.name` and the `x-k8s.io/cluster-manager` label of every profile written. */
  readonly manager: string;
  /** Server-side apply field manager; `mco-<manager>` by default. */
  readonly fieldManager?: string;
  readonly desired: readonly DesiredClusterProfile[];
  /** Delete owned profiles that are not desired. Only pass true for a complete view of the source. */
  readonly prune: boolean;
  /**
   * Let a prune delete more than half of the owned profiles (at least two), which
   * is otherwise refused: an empty or near-empty desired set is far more often a
   * broken source (empty file, empty API answer) than a real decommission.
   */
  readonly allowMassPrune?: boolean;
  /** Owned profiles to leave exactly as they are: neither written nor pruned. */
  readonly retain?: readonly ClusterKey[];
  /** List and prune only in these namespaces (then a namespaced Role suffices); all namespaces otherwise. */
  readonly namespaces?: readonly string[];
  /** Send every write with dryRun=All: the server validates, nothing is stored. */
  readonly dryRun?: boolean;
  readonly now: () => Date;
  readonly logger?: Logger;
  /** Checked between writes; an abort stops the sync before it prunes. */
  readonly abort?: AbortSignal;
}

export type SkipReason = 'NotOwned' | 'Terminating';

/** What one sync did, by ClusterProfile key (`namespace/name`), each list sorted. */
export interface SyncReport {
  readonly created: ClusterKey[];
  /** Labels, annotations or spec changed. */
  readonly updated: ClusterKey[];
  readonly statusUpdated: ClusterKey[];
  readonly deleted: ClusterKey[];
  readonly unchanged: ClusterKey[];
  readonly skipped: { readonly key: ClusterKey; readonly reason: SkipReason; readonly message: string }[];
  readonly failed: { readonly key: ClusterKey; readonly error: McoError }[];
  /** Write requests sent (creates, applies, status applies, deletes). */
  readonly writes: number;
}

/**
 * Brings the hub's ClusterProfiles of one manager in step with `desired`:
 * server-side apply of labels, annotations and spec, then of status through
 * the `/status` subresource (a plain apply drops status); deletes owned
 * profiles that are no longer desired when `prune` is set. A profile is owned
 * when both its `x-k8s.io/cluster-manager` label and `spec.clusterManager.name`
 * name the manager; others are never written or deleted. Writes happen only
 * when the fields this manager owns differ from what it would apply, so a
 * second run over the same input sends no request but the list.
 *
 * Throws an McoError when the listing fails (nothing was written then);
 * failures of single writes are reported in `failed` and do not stop the others.
 */
export async function syncClusterProfiles(options: SyncOptions): Promise<SyncReport> {
  const { manager, logger = silentLogger } = options;
  const fieldManager = options.fieldManager ?? `mco-${manager}`;
  const dryRun = options.dryRun === true;
  assertUniqueKeys(options.desired);
  if (options.namespaces) {
    const allowed = new Set(options.namespaces);
    const outside = options.desired.find((d) => !allowed.has(d.namespace));
    if (outside)
      throw new McoError(
        'Invalid',
        `ClusterProfile ${clusterKey(outside.namespace, outside.name)} is outside the namespaces this provider may write (${[...allowed].join(', ')})`,
        false,
      );
  }

  const client = hubClient(options.kubeConfig);
  const existing = await listProfiles(client, manager, options.namespaces);
  const retained = new Set(options.retain ?? []);
  if (options.prune && !options.allowMassPrune) refuseMassPrune(existing, options.desired, retained, manager);
  const report: MutableReport = {
    created: [],
    updated: [],
    statusUpdated: [],
    deleted: [],
    unchanged: [],
    skipped: [],
    failed: [],
    writes: 0,
  };

  await forEachLimited(sortByKey(options.desired), WRITE_CONCURRENCY, async (desired) => {
    options.abort?.throwIfAborted();
    const key = clusterKey(desired.namespace, desired.name);
    if (retained.has(key)) return;
    const current = existing.get(key);
    if (current && !isOwnedBy(current, manager)) {
      report.skipped.push({
        key,
        reason: 'NotOwned',
        message: `ClusterProfile ${key} exists and belongs to cluster manager "${current.spec?.clusterManager?.name ?? ''}", not "${manager}"; left untouched`,
      });
      return;
    }
    if (!current && desired.updateOnly) return;
    if (current?.metadata.deletionTimestamp) {
      report.skipped.push({ key, reason: 'Terminating', message: `ClusterProfile ${key} is being deleted` });
      return;
    }
    try {
      let object: ClusterProfile | undefined = current;
      let uid = current?.metadata.uid;
      if (!current && !dryRun) {
        // Create first with a plain POST: it fails if a profile of that name appeared since the
        // listing, where an apply would silently take over someone else's object. Only the fields
        // this manager never removes go in, under a separate field manager.
        const created = await createProfile(client, desired, manager, `${fieldManager}-create`);
        if (!created) {
          report.skipped.push({
            key,
            reason: 'NotOwned',
            message: `ClusterProfile ${key} was created by someone else meanwhile; left untouched`,
          });
          return;
        }
        report.writes++;
        uid = created.metadata.uid;
      }
      const body = specApplyBody(desired, manager, uid);
      if (!current || !ownsSame(current, body, fieldManager, '')) {
        object = await client.patch<ClusterProfile>(target(desired), 'apply', body, {
          query: { fieldManager, force: true },
          dryRun,
        });
        report.writes++;
        (current ? report.updated : report.created).push(key);
        logger.info(current ? 'ClusterProfile updated' : 'ClusterProfile created', { cluster: key, dryRun });
      }
      // A dry-run create leaves nothing whose status could be written.
      if (!current && dryRun) return;
      const statusBody = statusApplyBody(desired, object, options.now);
      if (!object || !ownsSame(object, statusBody, fieldManager, 'status')) {
        await client.patch(target(desired, 'status'), 'apply', statusBody, {
          query: { fieldManager, force: true },
          dryRun,
        });
        report.writes++;
        report.statusUpdated.push(key);
      }
      if (current && !report.updated.includes(key) && !report.statusUpdated.includes(key)) report.unchanged.push(key);
    } catch (error) {
      const failure = toMcoError(error, `apply ClusterProfile ${key}`);
      logger.warn('ClusterProfile write failed', { cluster: key, error: failure });
      report.failed.push({ key, error: failure });
    }
  });

  if (options.prune) {
    for (const [key, profile] of pruneCandidates(existing, options.desired, retained, manager)) {
      options.abort?.throwIfAborted();
      try {
        // Deletes exactly the object that was listed: if it changed since, the next sync decides again.
        await client.delete(
          target(profile.metadata),
          { preconditions: { uid: profile.metadata.uid, resourceVersion: profile.metadata.resourceVersion } },
          { dryRun },
        );
        report.writes++;
        report.deleted.push(key);
        logger.info('ClusterProfile deleted', { cluster: key, dryRun });
      } catch (error) {
        const failure = toMcoError(error, `delete ClusterProfile ${key}`);
        if (failure.code === 'NotFound') continue;
        logger.warn('ClusterProfile delete failed', { cluster: key, error: failure });
        report.failed.push({ key, error: failure });
      }
    }
  }
  for (const list of [report.created, report.updated, report.statusUpdated, report.deleted, report.unchanged])
    list.sort();
  // Writes run concurrently: order the rest by key too, so reports are deterministic.
  report.skipped.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  report.failed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return report;
}

// One client per hub kubeconfig, so that the syncs of a provider loop share its keep-alive connections.
const hubClients = new WeakMap<KubeConfig, KubeClient>();
function hubClient(kubeConfig: KubeConfig): KubeClient {
  let client = hubClients.get(kubeConfig);
  if (!client)
    hubClients.set(kubeConfig, (client = kubeClientFromKubeConfig(kubeConfig, { timeoutMs: REQUEST_TIMEOUT_MS })));
  return client;
}

/** Owned, live profiles that are neither desired nor retained, by key. */
function pruneCandidates(
  existing: ReadonlyMap<ClusterKey, ClusterProfile>,
  desired: readonly DesiredClusterProfile[],
  retained: ReadonlySet<ClusterKey>,
  manager: string,
): [ClusterKey, ClusterProfile][] {
  const wanted = new Set(desired.map((d) => clusterKey(d.namespace, d.name)));
  return [...existing]
    .filter(
      ([key, p]) => !wanted.has(key) && !retained.has(key) && isOwnedBy(p, manager) && !p.metadata.deletionTimestamp,
    )
    .sort(([a], [b]) => (a < b ? -1 : 1));
}

/**
 * The mass-prune guard: throws McoError(Invalid), before anything is written,
 * when pruning would delete at least two and more than half of the manager's
 * live profiles.
 */
function refuseMassPrune(
  existing: ReadonlyMap<ClusterKey, ClusterProfile>,
  desired: readonly DesiredClusterProfile[],
  retained: ReadonlySet<ClusterKey>,
  manager: string,
): void {
  const doomed = pruneCandidates(existing, desired, retained, manager).length;
  const owned = [...existing.values()].filter((p) => isOwnedBy(p, manager) && !p.metadata.deletionTimestamp).length;
  if (doomed < 2 || doomed * 2 <= owned) return;
  throw new McoError(
    'Invalid',
    `refusing to prune ${doomed} of the ${owned} ClusterProfiles of cluster manager "${manager}" ` +
      `(the source declares ${desired.length}): an empty or near-empty source is more likely broken than a decommission, ` +
      `or another provider uses the same managerName "${manager}" (each provider needs its own); ` +
      `for a real decommission set the provider's allowMassPrune: true (mco clusters apply: --allow-mass-prune)`,
    false,
  );
}

type MutableReport = { -readonly [K in keyof SyncReport]: SyncReport[K] };

/** Owned: the label and `spec.clusterManager.name` both name the manager. */
export function isOwnedBy(profile: ClusterProfile, manager: string): boolean {
  return profile.metadata.labels?.[CLUSTER_MANAGER_LABEL] === manager && profile.spec?.clusterManager?.name === manager;
}

/**
 * Lists every ClusterProfile in scope (paged), keyed by `namespace/name`: also
 * other managers' ones, so that a name taken by them is known and left alone.
 */
async function listProfiles(
  client: KubeClient,
  manager: string,
  namespaces: readonly string[] | undefined,
): Promise<Map<ClusterKey, ClusterProfile>> {
  const out = new Map<ClusterKey, ClusterProfile>();
  for (const namespace of namespaces ?? [undefined]) {
    let cont: string | undefined;
    do {
      let page: { items?: ClusterProfile[]; metadata?: { continue?: string } };
      try {
        page = await client.get(resourcePath(CLUSTER_PROFILES, namespace), {
          query: { limit: LIST_PAGE, continue: cont },
        });
      } catch (error) {
        throw toMcoError(error, `list ClusterProfiles${namespace ? ` in ${namespace}` : ''} (manager ${manager})`);
      }
      for (const item of page.items ?? []) out.set(clusterKey(item.metadata.namespace, item.metadata.name), item);
      cont = page.metadata?.continue || undefined;
    } while (cont);
  }
  return out;
}

function target(profile: { namespace: string; name: string }, subresource?: 'status'): string {
  return objectPath(CLUSTER_PROFILES, profile.namespace, profile.name, subresource);
}

/** POSTs a minimal profile; undefined when the name is taken (409). */
async function createProfile(
  client: KubeClient,
  desired: DesiredClusterProfile,
  manager: string,
  fieldManager: string,
): Promise<ClusterProfile | undefined> {
  try {
    return await client.create<ClusterProfile>(
      resourcePath(CLUSTER_PROFILES, desired.namespace),
      {
        apiVersion: CLUSTER_PROFILE_API_VERSION,
        kind: 'ClusterProfile',
        metadata: { name: desired.name, namespace: desired.namespace, labels: { [CLUSTER_MANAGER_LABEL]: manager } },
        spec: { clusterManager: { name: manager } },
      },
      { query: { fieldManager } },
    );
  } catch (error) {
    if (toMcoError(error).code === 'Conflict') return undefined;
    throw error;
  }
}

/** The apply body of metadata and spec; `uid` makes the apply fail on a profile re-created by someone else. */
function specApplyBody(desired: DesiredClusterProfile, manager: string, uid: string | undefined) {
  return {
    apiVersion: CLUSTER_PROFILE_API_VERSION,
    kind: 'ClusterProfile',
    metadata: {
      name: desired.name,
      namespace: desired.namespace,
      ...(uid ? { uid } : {}),
      // The manager label last, so a declared label can never take it over.
      labels: { ...desired.labels, [CLUSTER_MANAGER_LABEL]: manager },
      ...(desired.annotations && Object.keys(desired.annotations).length > 0
        ? { annotations: { ...desired.annotations } }
        : {}),
    },
    spec: {
      ...(desired.displayName ? { displayName: desired.displayName } : {}),
      clusterManager: { name: manager },
    },
  };
}

function statusApplyBody(desired: DesiredClusterProfile, current: ClusterProfile | undefined, now: () => Date) {
  const status = desired.status ?? {};
  const previous = current?.status?.conditions ?? [];
  const conditions = status.conditions?.map((c) => {
    const before = previous.find((p) => p.type === c.type);
    return {
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message ?? '',
      // Stable while the status holds, so an unchanged condition is no write.
      lastTransitionTime:
        before?.status === c.status && before.lastTransitionTime
          ? before.lastTransitionTime
          : now()
              .toISOString()
              .replace(/\.\d{3}Z$/, 'Z'),
    };
  });
  return {
    apiVersion: CLUSTER_PROFILE_API_VERSION,
    kind: 'ClusterProfile',
    metadata: {
      name: desired.name,
      namespace: desired.namespace,
      ...(current?.metadata.uid ? { uid: current.metadata.uid } : {}),
    },
    status: {
      ...(status.accessProviders?.length ? { accessProviders: status.accessProviders } : {}),
      ...(status.properties?.length ? { properties: status.properties } : {}),
      ...(conditions?.length ? { conditions } : {}),
      ...(status.version?.kubernetes ? { version: { kubernetes: status.version.kubernetes } } : {}),
    },
  };
}

/** True when the fields the field manager owns already hold what `body` would apply. */
function ownsSame(object: unknown, body: { metadata: object }, fieldManager: string, subresource: string): boolean {
  const owned = projectOwnedFields(object, fieldManager, subresource);
  const {
    apiVersion: _a,
    kind: _k,
    metadata,
    ...rest
  } = body as Record<string, unknown> & {
    metadata: Record<string, unknown>;
  };
  const { name: _n, namespace: _ns, uid: _u, ...meta } = metadata;
  const ownedMeta = { ...(owned.metadata as Record<string, unknown> | undefined) };
  delete ownedMeta.name;
  delete ownedMeta.namespace;
  delete ownedMeta.uid;
  const ownedRest = { ...owned };
  delete ownedRest.metadata;
  delete ownedRest.apiVersion;
  delete ownedRest.kind;
  return canonicalJson({ meta: ownedMeta, rest: ownedRest }) === canonicalJson({ meta, rest });
}

function assertUniqueKeys(desired: readonly DesiredClusterProfile[]): void {
  const seen = new Set<string>();
  for (const d of desired) {
    const key = clusterKey(d.namespace, d.name);
    if (seen.has(key)) throw new McoError('Invalid', `ClusterProfile ${key} is declared twice`, false);
    seen.add(key);
  }
}

function sortByKey(desired: readonly DesiredClusterProfile[]): DesiredClusterProfile[] {
  return [...desired].sort((a, b) => {
    const ka = clusterKey(a.namespace, a.name);
    const kb = clusterKey(b.namespace, b.name);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}

/** Runs `fn` over `items`, at most `limit` at a time; rejects with the first error (the rest still finish). */
async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(workers);
}

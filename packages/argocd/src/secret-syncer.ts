import { HubServerRefusedError, KUBECONFIG_SECRET_ANNOTATION } from '@mco/cluster-access';
import type { ClusterProfile } from '@mco/core';
import {
  APPLIED_DIGEST_ANNOTATION,
  SECRETS,
  syncOwnedObjects,
  type DesiredObject,
  type KubeObject,
  type ObjectWriter,
} from '@mco/kube-runtime';
import { silentLogger, toMcoError, type Logger, type ReconcileRecorder } from '@mco/runtime';
import type { ObjectCache } from './cache.js';
import {
  CLUSTER_PROFILE_ANNOTATION,
  DEFAULT_MANAGER,
  RELEASED_AT_ANNOTATION,
  MANAGED_BY_LABEL,
  SECRET_TYPE_LABEL,
  buildClusterSecret,
  isUpToDate,
  isValidSecretName,
  type ClusterAccessLike,
  type ClusterSecret,
} from './cluster-secret.js';
import { argoClusterName } from './parameters.js';

/** A Secret as read from the API server. */
export interface ExistingSecret {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  data?: Record<string, string>;
}

/** The Secret calls of the syncer, in the Argo CD namespace (`createSecretClient` implements it). */
export interface SecretClient {
  /** Secrets carrying both the cluster secret-type label and mco's managed-by label. */
  listOwned(): Promise<ExistingSecret[]>;
  get(name: string): Promise<ExistingSecret | undefined>;
  create(secret: ClusterSecret): Promise<void>;
  /** PUT with `metadata.resourceVersion`: a concurrent change makes it fail with 409. */
  replace(secret: ClusterSecret): Promise<void>;
  /** Sets (or, with undefined, removes) one annotation, with the Secret's resourceVersion. */
  setAnnotation(secret: ExistingSecret, key: string, value: string | undefined): Promise<void>;
  /** Deletes with uid and resourceVersion preconditions; resolves quietly if it is gone. */
  delete(name: string, uid: string | undefined, resourceVersion: string | undefined): Promise<void>;
}

/**
 * How to reach a ClusterProfile's cluster; rejects (with a message naming the
 * profile and the field) when it cannot or must not: a server, proxy or TLS
 * setting outside the provider's bounds, or a server an older profile among
 * `peers` (every cached ClusterProfile) names. `(p, peers) =>
 * createClusterAccess(...).accessFor(p, undefined, peers)` of
 * @mco/cluster-access fits, and caches access and credentials per profile.
 */
export type AccessResolver = (profile: ClusterProfile, peers: readonly ClusterProfile[]) => Promise<ClusterAccessLike>;

export interface SecretSyncerOptions {
  readonly clusterProfiles: ObjectCache<ClusterProfile>;
  readonly secrets: SecretClient;
  readonly resolveAccess: AccessResolver;
  /** Called when a ClusterProfile is gone, to drop cached access (`ClusterAccessManager.forget`). */
  readonly forgetAccess?: (key: string) => void;
  /** Namespace Argo CD reads cluster Secrets from. */
  readonly namespace: string;
  /** Value of the managed-by label; run several syncers into one namespace with different values. */
  readonly manager?: string;
  /**
   * True while a placement still lists the cluster: the Secret of a deleted
   * profile is kept until then, so Argo CD can still remove the workload
   * from an evicted cluster. Undefined when it cannot tell (the placement
   * cache is not synced or has gone silent): the Secret is kept and the key
   * retried, never deleted on a guess. Without it, no placement is consulted.
   */
  readonly isClusterInUse?: (namespace: string, name: string) => boolean | undefined;
  /**
   * How long the Secret of a vanished profile outlives the last placement that
   * listed its cluster, recorded on it as RELEASED_AT_ANNOTATION (default 15 min):
   * Argo CD deletes the Applications of a released cluster after the placement
   * drops it, and its cascade delete needs the Secret.
   */
  readonly releaseGraceMs?: number;
  /**
   * The Argo CD Applications whose destination is the cluster (by its Secret's
   * `name` or `server`), read live from the API server when a released Secret
   * is due: Argo CD needs the Secret to delete an Application's resources
   * from the member, so it stays while one exists, one being deleted (its
   * finalizer) included. A rejection keeps the Secret and retries. Without
   * it, the grace period alone decides.
   */
  readonly applicationsUsing?: (cluster: { name: string; server: string }) => Promise<{ deleting: boolean }[]>;
  /**
   * How long after the grace period a released Secret is kept for
   * Applications that are being deleted (a member that does not answer:
   * their finalizer waits); then it is deleted and Argo CD can no longer
   * reach that member (default 1 h; Infinity keeps it).
   */
  readonly applicationHoldTimeoutMs?: number;
  /** Rewrite a Secret this long before its credential expires (default 5 min, at most half the lifetime). */
  readonly refreshBeforeMs?: number;
  /**
   * Share of the time until that latest refresh point by which a refresh is
   * randomly brought forward, 0..1 (default 0.2): credentials minted together
   * drift apart instead of being refreshed together at every expiry.
   */
  readonly refreshJitter?: number;
  /** Profiles reconciled at once, i.e. credential plugins run at once (default 16). */
  readonly concurrency?: number;
  /** For tests: 0 <= random() < 1 (default Math.random). */
  readonly random?: () => number;
  /** Full reconcile of every profile and owned Secret this often (default 10 min). */
  readonly resyncMs?: number;
  /** First retry delay after an error, doubled up to 5 min (default 1 s). */
  readonly retryMs?: number;
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Each reconciled key is recorded (`reconcileMetrics` of @mco/runtime). */
  readonly reconciles?: ReconcileRecorder;
}

/** Longest delay setTimeout accepts; a later refresh is re-planned by the periodic resync anyway. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * When to refresh a credential that expires `lifetimeMs` from now: at the
 * latest `refreshBeforeMs` (at most half the lifetime) before expiry, brought
 * forward by a random share of up to `jitter` of the time until then. At
 * least 1 s, so an already expired credential is not retried in a tight loop.
 */
export function refreshDelay(
  lifetimeMs: number,
  refreshBeforeMs: number,
  jitter: number,
  random: () => number = Math.random,
): number {
  const latest = lifetimeMs - Math.min(refreshBeforeMs, lifetimeMs / 2);
  const share = Math.min(Math.max(jitter, 0), 1) * random();
  return Math.max(1000, Math.round(latest * (1 - share)));
}

export interface SecretSyncer {
  /** Reconciles every profile and every owned Secret (orphans of profiles deleted while mco was down included), then follows changes. */
  start(): Promise<void>;
  stop(): void;
  /** Queues one ClusterProfile key (`namespace/name`) for reconciliation, e.g. when a placement released it. */
  enqueue(key: string): void;
  /** Resolves when the queue is empty and nothing runs (for tests and shutdown). */
  idle(): Promise<void>;
}

/**
 * Keeps one Argo CD cluster Secret per ClusterProfile. Level-triggered: each
 * key is re-read from the cache, the desired Secret computed and written only
 * when it differs. It only ever changes or deletes Secrets that carry its
 * managed-by label; a Secret of the same name made by someone else is left
 * alone (and logged). When access or the credential cannot be obtained, the
 * existing Secret is kept as it is (fail static) and the key retried.
 */
export function createSecretSyncer(options: SecretSyncerOptions): SecretSyncer {
  const logger = (options.logger ?? silentLogger).child({ component: 'argocd-cluster-sync' });
  const manager = options.manager ?? DEFAULT_MANAGER;
  const now = options.now ?? Date.now;
  const refreshBeforeMs = options.refreshBeforeMs ?? 5 * 60_000;
  const baseRetryMs = options.retryMs ?? 1000;
  const releaseGraceMs = options.releaseGraceMs ?? 15 * 60_000;
  const refreshJitter = options.refreshJitter ?? 0.2;
  const random = options.random ?? Math.random;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 16));
  /** Keys waiting for a worker, in arrival order; a key is never reconciled twice at once. */
  const queue = new Set<string>();
  const active = new Set<string>();
  const idleWaiters: (() => void)[] = [];
  const timers = new Map<string, NodeJS.Timeout>();
  const failures = new Map<string, number>();
  /** Per profile: the expiry of the credential last written and when (jittered, drawn once) to refresh it. */
  const refreshPlans = new Map<string, { readonly expiresAt: number; readonly refreshAt: number }>();
  let started = false;
  let resyncTimer: NodeJS.Timeout | undefined;
  let handlerAdded = false;

  const enqueue = (key: string) => {
    if (!started) return;
    queue.add(key);
    pump();
  };

  const later = (key: string, delayMs: number) => {
    clearTimeout(timers.get(key));
    const timer = setTimeout(
      () => {
        timers.delete(key);
        enqueue(key);
      },
      Math.min(delayMs, MAX_TIMER_MS),
    );
    timer.unref();
    timers.set(key, timer);
  };

  /**
   * Starts queued keys while fewer than `concurrency` run: one slow credential
   * plugin (up to its timeout) then delays only its own cluster, and a fleet
   * whose credentials fall due together is refreshed `concurrency` at a time.
   */
  function pump(): void {
    while (started && active.size < concurrency) {
      let next: string | undefined;
      for (const key of queue) {
        if (!active.has(key)) {
          next = key;
          break;
        }
      }
      if (next === undefined) break;
      const key = next;
      queue.delete(key);
      active.add(key);
      void work(key).finally(() => {
        active.delete(key);
        pump();
        if (active.size === 0 && (queue.size === 0 || !started)) for (const resolve of idleWaiters.splice(0)) resolve();
      });
    }
  }

  /** Reconciles one key; never rejects: a failure is logged and retried with backoff. */
  async function work(key: string): Promise<void> {
    try {
      await reconcile(key);
      failures.delete(key);
      options.reconciles?.record('ok');
    } catch (error) {
      options.reconciles?.record('error');
      const attempt = (failures.get(key) ?? 0) + 1;
      failures.set(key, attempt);
      const delay = Math.min(baseRetryMs * 2 ** (attempt - 1), 5 * 60_000);
      logger.warn('cluster Secret sync failed; retrying', {
        cluster: key,
        error: toMcoError(error),
        retryInMs: delay,
      });
      later(key, delay);
    }
  }

  /** `namespace/name` of a ClusterProfile. */
  async function reconcile(key: string): Promise<void> {
    const [namespace = '', name = ''] = key.split('/', 2);
    const secretName = argoClusterName(namespace, name);
    if (!isValidSecretName(secretName)) {
      logger.error('cannot name an Argo CD cluster Secret for this ClusterProfile (longer than 253 characters)', {
        cluster: key,
      });
      return;
    }
    if (!options.clusterProfiles.hasSynced()) {
      later(key, baseRetryMs);
      return;
    }
    const profile = options.clusterProfiles.get(key);
    const existing = await options.secrets.get(secretName);
    const owned = existing !== undefined && isOwned(existing);
    if (existing && !owned) {
      logger.warn('a cluster Secret of this name exists and is not managed by mco; leaving it alone', {
        cluster: key,
        secretName: `${options.namespace}/${secretName}`,
      });
      return;
    }
    if (!profile || profile.metadata.deletionTimestamp) {
      options.forgetAccess?.(key);
      refreshPlans.delete(key);
      if (!existing) return;
      await releaseSecret(key, namespace, name, existing);
      return;
    }
    // Fail static: when access or the credential cannot be had, or the profile
    // is refused (a reserved, duplicate or disallowed server), the existing
    // Secret stays as it is (never rewritten with the refused server, never
    // deleted on doubt) and the key is retried with backoff.
    // The exception: a server that is the hub's own (HubServerRefusedError) is not a doubt; the
    // Secret goes, so Argo CD does not reach the hub with it either.
    const clusterAccess = await options
      .resolveAccess(profile, options.clusterProfiles.list())
      .catch(async (error: unknown) => {
        if (error instanceof HubServerRefusedError && existing) {
          logger.warn("ClusterProfile's server is the hub's own API server; removing its cluster Secret", {
            cluster: key,
            reason: error.message,
          });
          await writeOwned(key, existing, []);
        }
        if (offersAccess(profile)) throw error;
        // Just created (`mco clusters apply`): its status lists no access provider yet. Its status
        // update queues it again; an existing Secret stays as it is.
        logger.debug('ClusterProfile lists no access provider yet; waiting for its status', { cluster: key });
        return undefined;
      });
    if (!clusterAccess) return;
    let credential = await clusterAccess.getCredential();
    const plan = refreshPlans.get(key);
    if (plan && now() >= plan.refreshAt && credential.expiresAt?.getTime() === plan.expiresAt) {
      // Our (jittered) refresh time came before the credential cache's own: ask for a new one.
      clusterAccess.invalidate?.();
      credential = await clusterAccess.getCredential();
    }
    const desired = buildClusterSecret(profile, clusterAccess, credential, { namespace: options.namespace, manager });
    if (credential.expiresAt) {
      const expiresAt = credential.expiresAt.getTime();
      let refreshAt = refreshPlans.get(key)?.expiresAt === expiresAt ? refreshPlans.get(key)!.refreshAt : undefined;
      if (refreshAt === undefined || refreshAt <= now()) {
        refreshAt = now() + refreshDelay(expiresAt - now(), refreshBeforeMs, refreshJitter, random);
        refreshPlans.set(key, { expiresAt, refreshAt });
      }
      later(key, refreshAt - now());
    } else refreshPlans.delete(key);
    // A released Secret whose profile returned is in use again: the rewrite drops the release time.
    if (existing && isUpToDate(existing, desired) && !existing.metadata?.annotations?.[RELEASED_AT_ANNOTATION]) return;
    await writeOwned(key, existing, [desired]);
  }

  /**
   * The shared safe apply and prune (`syncOwnedObjects`) on one Secret, observed by name:
   * `desired` written (create, or a whole replace with the read resourceVersion), or, with
   * none desired, the Secret deleted (uid and resourceVersion preconditions). Logs each
   * write; throws on a failed one (retried with backoff); a Secret changed since it was read
   * is kept and looked at again.
   */
  async function writeOwned(key: string, existing: ExistingSecret | undefined, desired: ClusterSecret[]) {
    // Whether to write was decided by `isUpToDate` (as Argo CD reads the Secret, which
    // predates the applied digest): the helper is shown the Secret without its digest, so it writes.
    const observed = existing && desired.length > 0 ? withoutDigest(existing) : existing;
    const report = await syncOwnedObjects(null, {
      resource: SECRETS,
      namespace: options.namespace,
      ownedLabels: { [SECRET_TYPE_LABEL]: 'cluster', [MANAGED_BY_LABEL]: manager },
      desired: desired as unknown as DesiredObject[],
      existing: observed ? [observed as KubeObject] : [],
      mayPrune: () => desired.length === 0,
      fieldManager: manager,
      writer: secretWriter(existing),
      logger: logger.child({ cluster: key }),
    });
    if (report.failed[0]) throw report.failed[0].error;
    if (report.kept.length > 0) later(key, baseRetryMs);
  }

  /** Writes through the Secret client: create, or replace with the read resourceVersion (RBAC create, update). */
  function secretWriter(existing: ExistingSecret | undefined): ObjectWriter {
    return {
      async apply(object) {
        const secret = object as unknown as ClusterSecret;
        if (existing) {
          const resourceVersion = existing.metadata?.resourceVersion ?? '';
          await options.secrets.replace({ ...secret, metadata: { ...secret.metadata, resourceVersion } });
        } else await options.secrets.create(secret);
        return object;
      },
      delete: (object) =>
        options.secrets.delete(object.metadata?.name ?? '', object.metadata?.uid, object.metadata?.resourceVersion),
    };
  }

  /** The Secret of a vanished profile: kept while in use or unknown, deleted a grace period after release. */
  async function releaseSecret(key: string, namespace: string, name: string, existing: ExistingSecret): Promise<void> {
    const secretName = existing.metadata?.name ?? '';
    const inUse = options.isClusterInUse ? options.isClusterInUse(namespace, name) : false;
    const releasedAt = existing.metadata?.annotations?.[RELEASED_AT_ANNOTATION];
    if (inUse === undefined) {
      logger.info('ClusterProfile is gone and the placements are not known yet; keeping its Secret', { cluster: key });
      later(key, Math.max(baseRetryMs, 5000));
      return;
    }
    if (inUse) {
      logger.info('ClusterProfile is gone but a placement still lists the cluster; keeping its Secret', {
        cluster: key,
      });
      // Listed again after a release: the next release starts a new grace period.
      if (releasedAt !== undefined) await options.secrets.setAnnotation(existing, RELEASED_AT_ANNOTATION, undefined);
      return;
    }
    const since = releasedAt === undefined ? NaN : Date.parse(releasedAt);
    if (Number.isNaN(since)) {
      await options.secrets.setAnnotation(existing, RELEASED_AT_ANNOTATION, new Date(now()).toISOString());
      logger.info(
        'no placement lists the cluster of a removed ClusterProfile; keeping its Secret for the grace period',
        {
          cluster: key,
          secretName,
          releaseGraceMs,
        },
      );
      later(key, releaseGraceMs);
      return;
    }
    const left = since + releaseGraceMs - now();
    if (left > 0) {
      later(key, left);
      return;
    }
    if (options.applicationsUsing && (await heldByApplications(key, existing, since + releaseGraceMs))) return;
    await writeOwned(key, existing, []);
  }

  /**
   * Whether Applications targeting the cluster keep its released Secret now
   * (a live read): any that is not being deleted, or ones being deleted until
   * `applicationHoldTimeoutMs` after `dueAt`. Schedules the next look.
   */
  async function heldByApplications(key: string, existing: ExistingSecret, dueAt: number): Promise<boolean> {
    const decode = (field: string) => Buffer.from(existing.data?.[field] ?? '', 'base64').toString('utf8');
    const users = await options.applicationsUsing!({ name: decode('name'), server: decode('server') });
    if (users.length === 0) return false;
    const holdUntil = dueAt + (options.applicationHoldTimeoutMs ?? 60 * 60_000);
    const onlyDeleting = users.every((u) => u.deleting);
    if (onlyDeleting && now() >= holdUntil) {
      logger.warn(
        'a released cluster Secret outlived applicationHoldTimeoutMs held by Applications being deleted; deleting it',
        { cluster: key, applications: users.length },
      );
      return false;
    }
    logger.info('Argo CD Applications still target a released cluster; keeping its Secret', {
      cluster: key,
      applications: users.length,
      beingDeleted: users.filter((u) => u.deleting).length,
    });
    later(key, onlyDeleting ? Math.min(30_000, Math.max(1000, holdUntil - now())) : 30_000);
    return true;
  }

  function isOwned(secret: ExistingSecret): boolean {
    const labels = secret.metadata?.labels ?? {};
    return labels[MANAGED_BY_LABEL] === manager && labels[SECRET_TYPE_LABEL] === 'cluster';
  }

  /** Every profile in the cache and every owned Secret's profile (orphans included). */
  async function resync(): Promise<void> {
    const keys = new Set(options.clusterProfiles.list().map((p) => `${p.metadata.namespace}/${p.metadata.name}`));
    for (const secret of await options.secrets.listOwned()) {
      if (!isOwned(secret)) continue;
      const key = secret.metadata?.annotations?.[CLUSTER_PROFILE_ANNOTATION];
      if (key && key.includes('/')) keys.add(key);
      else
        logger.warn('owned cluster Secret without a ClusterProfile annotation', { secretName: secret.metadata?.name });
    }
    for (const key of [...keys].sort()) enqueue(key);
  }

  const scheduleResync = () => {
    resyncTimer = setTimeout(
      () => {
        resync()
          .catch((error: unknown) => logger.warn('resync failed', { error: toMcoError(error) }))
          .finally(() => started && scheduleResync());
      },
      options.resyncMs ?? 10 * 60_000,
    );
    resyncTimer.unref();
  };

  return {
    async start() {
      if (started) return;
      started = true;
      if (!handlerAdded) {
        handlerAdded = true;
        options.clusterProfiles.addHandler((_event, profile) =>
          enqueue(`${profile.metadata.namespace}/${profile.metadata.name}`),
        );
      }
      // The first full pass waits for the profile cache: an unsynced cache would look like deleted profiles.
      while (started && !options.clusterProfiles.hasSynced()) await sleep(100);
      for (;;) {
        try {
          await resync();
          break;
        } catch (error) {
          logger.warn('listing owned cluster Secrets failed; retrying', { error: toMcoError(error) });
          await sleep(baseRetryMs);
          if (!started) return;
        }
      }
      scheduleResync();
    },
    stop() {
      started = false;
      clearTimeout(resyncTimer);
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      queue.clear();
      if (active.size === 0) for (const resolve of idleWaiters.splice(0)) resolve();
    },
    enqueue,
    idle() {
      if (active.size === 0 && (queue.size === 0 || !started)) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}

/** A copy without the applied digest, so the shared helper writes it again. */
function withoutDigest(secret: ExistingSecret): ExistingSecret {
  const annotations = { ...secret.metadata?.annotations };
  delete annotations[APPLIED_DIGEST_ANNOTATION];
  return { ...secret, metadata: { ...secret.metadata, annotations } };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether a profile names a way in: an access provider (or deprecated credential provider), or a kubeconfig Secret. */
function offersAccess(profile: ClusterProfile): boolean {
  return (
    (profile.status?.accessProviders?.length ?? 0) + (profile.status?.credentialProviders?.length ?? 0) > 0 ||
    profile.metadata.annotations?.[KUBECONFIG_SECRET_ANNOTATION] !== undefined
  );
}

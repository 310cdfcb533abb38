import { HubServerRefusedError, type ClusterAccess } from '@mco/cluster-access';
import type { ClusterProfile, Placement } from '@mco/core';
import {
  WorkQueue,
  WriteOverlay,
  listObjects,
  syncOwnedObjects,
  type DesiredObject,
  type KubeClient,
  type KubeObject,
  type ObjectWriter,
  type Resource,
} from '@mco/kube-runtime';
import { silentLogger, toMcoError, type Logger, type ReconcileRecorder } from '@mco/runtime';
import { desiredState, isRemovalObserved, type DesiredState } from './desired.js';
import { buildKubeconfigSecret } from './kubeconfig.js';
import { CLUSTER_PROFILE_ANNOTATION, MANAGED_BY_LABEL, PLACEMENT_ANNOTATION, kubeconfigSecretName } from './names.js';
import type { FluxTemplate } from './templates.js';

/** The part of an informer the sync reads (`Informer` of @mco/kube-runtime fits it). */
export interface ObjectCache<T> {
  get(key: string): T | undefined;
  list(): T[];
  hasSynced(): boolean;
  /** False while the API does not serve the kind (its CRD is missing): nothing of it is planned then. */
  served?(): boolean;
  addHandler(handler: (event: 'add' | 'update' | 'delete', object: T, previous: T | undefined) => void): void;
}

/** One kind of object mco writes: its resource, its cache (in the Flux namespace) and its writer. */
export interface OwnedKind {
  readonly resource: Resource;
  /**
   * Every object of the kind in the Flux namespace (for Kustomizations and
   * HelmReleases: all of them, so a Secret a Flux object still uses is kept),
   * or only mco's (input providers, Secrets: a label selector).
   */
  readonly cache: ObjectCache<KubeObject>;
  readonly writer: ObjectWriter;
}

export interface FluxSyncOptions {
  /** The hub (the owned objects come from the caches, the writes go through each kind's writer). */
  readonly hub: KubeClient;
  readonly placements: ObjectCache<Placement>;
  readonly clusterProfiles: ObjectCache<ClusterProfile>;
  /** Present in Flux Operator mode. */
  readonly inputProviders?: OwnedKind;
  readonly kustomizations: OwnedKind;
  /** Absent when helm-controller (its CRD) is not installed: no HelmRelease templates then. */
  readonly helmReleases?: OwnedKind;
  readonly secrets: OwnedKind;
  /**
   * Access to a ClusterProfile's cluster (`(p, peers) => createClusterAccess(...).accessFor(p, undefined, peers)`);
   * rejects when there is none or the profile is refused (server, proxy, TLS, or an older profile
   * among `peers` names the same server): the cluster's kubeconfig Secret is then kept as it is.
   */
  readonly resolveAccess: (
    profile: ClusterProfile,
    peers: readonly ClusterProfile[],
  ) => Promise<
    Pick<ClusterAccess, 'server' | 'caData' | 'tlsServerName' | 'proxyUrl' | 'insecureSkipTlsVerify' | 'getCredential'>
  >;
  /** The Flux namespace. */
  readonly namespace: string;
  readonly manager: string;
  readonly templates: readonly FluxTemplate[];
  /** Rewrite a kubeconfig Secret this long before its credential expires (default 5 min, at most half the lifetime). */
  readonly refreshBeforeMs?: number;
  /** A full pass this often even when nothing changed (default 10 min). */
  readonly resyncMs?: number;
  /**
   * How long the kubeconfig Secret of a cluster no placement lists is kept
   * for Flux objects that are being deleted and still use it (their
   * finalizer waits for Flux to delete the workload from a member that does
   * not answer), counted from the last of their deletionTimestamps, so a
   * restart of mco does not start it again. After it the Secret is deleted:
   * Flux then removes its finalizer without pruning that member. Default
   * 1 h; Infinity keeps it.
   */
  readonly secretHoldTimeoutMs?: number;
  /**
   * How long live reads must keep finding no Flux object that uses the
   * kubeconfig Secret of a cluster no placement lists before it is deleted
   * (default 10 s with input providers, else 0). flux-operator may still be
   * finishing a reconcile that read the cluster's input provider before mco
   * deleted it: the Kustomization it creates then is applied through the
   * Secret and, once garbage-collected, needs the Secret again to prune the
   * member.
   */
  readonly secretQuietMs?: number;
  /**
   * How long an input provider of a cluster no placement lists is kept while
   * a Flux object using that cluster's Secret is still being applied (see
   * `secretsBeingApplied`), and a rendered object no longer desired is kept
   * until its controller has recorded its apply (see `isApplyRecorded`);
   * default 2 min. After it the object goes, and a warning is logged.
   */
  readonly applyWaitMs?: number;
  /** A live read of one kind in the Flux namespace (default: a paged list from `hub`, no cache). */
  readonly listLive?: (resource: Resource) => Promise<KubeObject[]>;
  /** Concurrent writes of a pass (default 8). */
  readonly concurrency?: number;
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Each pass is recorded: ok, or error when a write, a credential or the pass failed. */
  readonly reconciles?: ReconcileRecorder;
}

/** What one pass did. */
export interface PassResult {
  readonly applied: number;
  readonly pruned: number;
  /** Owned objects not desired and kept, because their removal was not observed. */
  readonly kept: number;
  /** Clusters whose kubeconfig Secret could not be built this pass (kept as it is, retried). */
  readonly credentialFailures: number;
  readonly writeFailures: number;
  /** Kubeconfig Secrets of clusters no placement lists, kept because a Flux object uses them (read live). */
  readonly secretsHeld: number;
}

export interface FluxSync {
  start(): void;
  stop(): Promise<void>;
  /** Asks for a pass soon (a cache became available without an event, say). */
  trigger(): void;
  /** Runs one pass now, on a sync that was not started (tests, benchmarks). Caches must be synced. */
  pass(): Promise<PassResult>;
  /** The last pass's result. */
  readonly last: PassResult | undefined;
}

const KEY = 'flux';
/** The finalizer Flux's controllers put on the objects they apply. */
const FLUX_FINALIZER = 'finalizers.fluxcd.io';
/** A Kustomization's Ready reasons after an apply that went through: its inventory is written after its conditions. */
const APPLIED_THEN_FAILED = new Set(['HealthCheckFailed', 'PruneFailed']);
/** How soon a pass whose delete was refused on a stale copy (409) looks again. */
const CONFLICT_RETRY_MS = 1000;
/** In the set of Secrets being applied: every one (the live read failed). */
const ALL = '*';

/** A Flux object or input provider that uses a kubeconfig Secret; `deletingSince` is its deletionTimestamp (ms). */
interface SecretUser {
  readonly deleting: boolean;
  readonly deletingSince: number;
}

/**
 * Keeps mco's Flux objects in step with the placements: one level-triggered
 * pass over the whole fleet (cheap: it compares against the caches and
 * writes only differences) whenever a placement, a ClusterProfile or one of
 * mco's objects changes, when a credential nears expiry, and every
 * `resyncMs`. Passes wait until every cache has synced; nothing is ever
 * deleted on doubt (see `isRemovalObserved` and `secretsToDelete`).
 */
export function createFluxSync(options: FluxSyncOptions): FluxSync {
  const logger = (options.logger ?? silentLogger).child({ component: 'flux-sync' });
  const now = options.now ?? Date.now;
  const refreshBeforeMs = options.refreshBeforeMs ?? 5 * 60_000;
  const queue = new WorkQueue({ backoff: { baseMs: 1000, maxMs: 5 * 60_000, jitter: 0.1 } });
  const kinds = [options.inputProviders, options.kustomizations, options.helmReleases, options.secrets].filter(
    (k): k is OwnedKind => k !== undefined,
  );
  const overlays = new Map(kinds.map((k) => [k, new WriteOverlay<KubeObject>()]));
  let running: Promise<void> | undefined;
  let last: PassResult | undefined;
  let resyncTimer: NodeJS.Timeout | undefined;
  const holdTimeoutMs = options.secretHoldTimeoutMs ?? 60 * 60_000;
  // Only flux-operator makes Flux objects from what mco writes; rendered objects are mco's own and in its overlay.
  const applyWaitMs = options.applyWaitMs ?? 120_000;
  /** Per Flux object (uid) its controller is applying: since when, to bound the wait. */
  const applyingSince = new Map<string, number>();
  /** Per rendered object (uid) kept from deletion until its controller has recorded its apply: since when. */
  const unrecordedSince = new Map<string, number>();
  const quietMs = options.secretQuietMs ?? (options.inputProviders ? 10_000 : 0);
  /** Per kubeconfig Secret of a cluster no placement lists: since when live reads find nothing using it. */
  const unusedSince = new Map<string, number>();
  const listLive = options.listLive ?? ((resource: Resource) => listObjects(options.hub, resource, options.namespace));

  const synced = () =>
    options.placements.hasSynced() && options.clusterProfiles.hasSynced() && kinds.every((k) => k.cache.hasSynced());

  /**
   * The cache seen through what this process wrote and the cache has not delivered yet
   * (`byKey`: the cache by key, when the caller has it already).
   */
  function observed(
    kind: OwnedKind,
    owned: boolean,
    byKey = new Map(kind.cache.list().map((o) => [keyOf(o), o])),
  ): KubeObject[] {
    const overlay = overlays.get(kind);
    const keys = new Set([...byKey.keys(), ...(overlay?.keys() ?? [])]);
    const out: KubeObject[] = [];
    for (const key of keys) {
      const object = overlay ? overlay.resolve(key, byKey.get(key)) : byKey.get(key);
      if (object && (!owned || object.metadata?.labels?.[MANAGED_BY_LABEL] === options.manager)) out.push(object);
    }
    return out;
  }

  async function pass(): Promise<PassResult> {
    const placements = options.placements.list();
    const placementsByKey = new Map(placements.map((p) => [`${p.metadata.namespace ?? ''}/${p.metadata.name}`, p]));
    const profiles = options.clusterProfiles;
    const accessErrors = new Map<string, string>();
    /** Profiles whose server is the hub's own: their kubeconfig Secret goes, used or not (not a doubt). */
    const hubServers = new Set<string>();
    const endpoints = new Map<string, Awaited<ReturnType<FluxSyncOptions['resolveAccess']>>>();
    // The server of every listed cluster comes from its access provider; resolve each once per pass.
    const clusterKeys = new Set<string>();
    for (const p of placements) {
      const clusters = (p.status as { clusters?: unknown } | undefined)?.clusters;
      if (Array.isArray(clusters)) {
        for (const c of clusters as { namespace?: string; name?: string }[]) {
          if (c?.namespace && c.name) clusterKeys.add(`${c.namespace}/${c.name}`);
        }
      }
    }
    const peers = profiles.list();
    await Promise.all(
      [...clusterKeys].map(async (key) => {
        const profile = profiles.get(key);
        if (!profile || profile.metadata.deletionTimestamp) return;
        try {
          endpoints.set(key, await options.resolveAccess(profile, peers));
        } catch (error) {
          accessErrors.set(key, toMcoError(error).message);
          if (error instanceof HubServerRefusedError) hubServers.add(key);
        }
      }),
    );
    const desired = desiredState(
      {
        placements,
        clusterProfile: (namespace, name) => profiles.get(`${namespace}/${name}`),
        serverOf: (profile) => endpoints.get(`${profile.metadata.namespace}/${profile.metadata.name}`)?.server,
      },
      {
        namespace: options.namespace,
        manager: options.manager,
        inputProviders: options.inputProviders !== undefined,
        templates: options.templates,
      },
    );
    for (const problem of desired.problems) logger.debug('not writing', { reason: problem });

    const mayPrune = (o: KubeObject) => isRemovalObserved(o, placementsByKey, desired.trusted);
    const plans: { kind: OwnedKind; desired: readonly DesiredObject[]; mayPrune: (o: KubeObject) => boolean }[] = [];
    // A rendered object goes only once its controller has recorded its apply, so its finalizer prunes what it applied.
    const t = now();
    const unrecorded = new Set<string>();
    let applyRecheckMs: number | undefined;
    const mayDeleteRendered = (o: KubeObject, kustomization: boolean) => {
      if (!mayPrune(o)) return false;
      if (isApplyRecorded(o, kustomization)) return true;
      const uid = o.metadata?.uid ?? keyOf(o);
      const since = unrecordedSince.get(uid) ?? t;
      unrecordedSince.set(uid, since);
      unrecorded.add(uid);
      const left = since + applyWaitMs - t;
      const fields = { object: keyOf(o), ...logFields(o) };
      if (left <= 0) {
        logger.warn(
          'deleting a Flux object whose controller has not recorded its apply within applyWaitMs; it may not prune all it applied',
          { ...fields, applyWaitMs },
        );
        return true;
      }
      applyRecheckMs = Math.min(applyRecheckMs ?? Infinity, left);
      logger.debug('keeping a Flux object until its controller has recorded its apply', fields);
      return false;
    };
    const planFor = (kind: OwnedKind | undefined, wanted: readonly DesiredObject[], kustomization: boolean) => {
      if (!kind || kind.cache.served?.() === false) return;
      plans.push({ kind, desired: wanted, mayPrune: (o) => mayDeleteRendered(o, kustomization) });
    };
    // An input provider goes only once Flux has finished applying through its cluster's Secret.
    let applying: Set<string> | undefined;
    if (options.inputProviders && options.inputProviders.cache.served?.() !== false) {
      const wanted = new Set(desired.inputProviders.map((o) => keyOf(o as KubeObject)));
      const leaving = observed(options.inputProviders, true).some((o) => !wanted.has(keyOf(o)) && mayPrune(o));
      if (leaving) applying = await secretsBeingApplied();
      plans.push({
        kind: options.inputProviders,
        desired: desired.inputProviders,
        mayPrune: (o) => {
          if (!mayPrune(o)) return false;
          const names = new Set<string>();
          addReference(names, o);
          const busy =
            applying === undefined ? undefined : [...names].find((name) => applying!.has(name) || applying!.has(ALL));
          if (busy) logger.debug('keeping an input provider while Flux applies through its cluster', { secret: busy });
          return busy === undefined;
        },
      });
    }
    planFor(
      options.kustomizations,
      desired.rendered.filter((o) => o.kind === 'Kustomization'),
      true,
    );
    planFor(
      options.helmReleases,
      desired.rendered.filter((o) => o.kind === 'HelmRelease'),
      false,
    );

    // Kubeconfig Secrets: one per listed cluster whose credential can be had.
    const secrets: DesiredObject[] = [];
    let nextRefresh = Infinity;
    let credentialFailures = 0;
    for (const key of [...desired.clusters].sort()) {
      const endpoint = endpoints.get(key);
      const [namespace = '', name = ''] = key.split('/', 2);
      if (!endpoint) {
        credentialFailures++;
        const hub = hubServers.has(key);
        logger.warn(`no access to a placed cluster; its kubeconfig Secret is ${hub ? 'removed' : 'kept as it is'}`, {
          cluster: key,
          reason: accessErrors.get(key) ?? 'ClusterProfile not found',
        });
        continue;
      }
      try {
        const credential = await endpoint.getCredential();
        secrets.push(
          buildKubeconfigSecret(namespace, name, endpoint, credential, {
            namespace: options.namespace,
            manager: options.manager,
          }),
        );
        if (credential.expiresAt) {
          const lifetime = credential.expiresAt.getTime() - now();
          nextRefresh = Math.min(nextRefresh, Math.max(1000, lifetime - Math.min(refreshBeforeMs, lifetime / 2)));
        }
      } catch (error) {
        credentialFailures++;
        logger.warn('cannot get a credential for a placed cluster; its kubeconfig Secret is kept as it is', {
          cluster: key,
          error: toMcoError(error),
        });
      }
    }
    const referenced = secretReferences(options, desired);
    const secretsMayGo = await secretsToDelete(desired, referenced);
    // Secrets first, so a new input provider or rendered object finds its kubeconfig.
    plans.unshift({
      kind: options.secrets,
      desired: secrets,
      // A cluster whose server is the hub's own loses its Secret at once: that credential must not reach the hub.
      mayPrune: (o) => isHubClusterSecret(o, hubServers) || secretsMayGo.deletable.has(o.metadata?.name ?? ''),
    });

    let applied = 0;
    let pruned = 0;
    let kept = 0;
    let writeFailures = 0;
    let conflicts = 0;
    for (const plan of plans) {
      const { kind } = plan;
      const overlay = overlays.get(kind)!;
      // Kept for the writes' overlay: the version each write replaces is the cache's before it (WriteOverlay.set).
      const cached = new Map(kind.cache.list().map((o) => [keyOf(o), o]));
      const report = await syncOwnedObjects(options.hub, {
        resource: kind.resource,
        namespace: options.namespace,
        ownedLabels: { [MANAGED_BY_LABEL]: options.manager },
        desired: plan.desired,
        existing: observed(kind, false, cached),
        mayPrune: plan.mayPrune,
        fieldManager: options.manager,
        writer: kind.writer,
        concurrency: options.concurrency ?? 8,
        onWritten: (key, written) => overlay.set(key, cached.get(key)?.metadata?.resourceVersion, written),
        logger,
        logFields,
      });
      applied += report.applied.length;
      pruned += report.deleted.length;
      kept += report.kept.length;
      writeFailures += report.failed.length;
      conflicts += report.conflicted.length;
      for (const key of report.conflicted) {
        logger.debug('not deleted: changed since it was read; looking again', {
          object: `${kind.resource.plural} ${key}`,
        });
      }
      for (const { key, error } of report.failed) logger.warn('write failed; retrying', { object: key, error });
      for (const key of report.notOwned) {
        logger.warn('an object of this name exists and is not managed by mco; leaving it alone', {
          object: `${kind.resource.plural} ${key}`,
        });
      }
    }
    for (const uid of unrecordedSince.keys()) if (!unrecorded.has(uid)) unrecordedSince.delete(uid);
    if (applyRecheckMs !== undefined) queue.addAfter(KEY, applyRecheckMs);
    if (nextRefresh !== Infinity) queue.addAfter(KEY, nextRefresh);
    if (secretsMayGo.recheckMs !== undefined) queue.addAfter(KEY, secretsMayGo.recheckMs);
    if (applying && applying.size > 0) queue.addAfter(KEY, 5000);
    // A delete refused on a stale copy: the change that made it stale may bring no event of its own.
    if (conflicts > 0) queue.addAfter(KEY, CONFLICT_RETRY_MS);
    return { applied, pruned, kept, credentialFailures, writeFailures, secretsHeld: secretsMayGo.held };
  }

  /**
   * Which kubeconfig Secrets of clusters no placement lists may go now. The
   * caches may not hold a Flux object created moments ago (and Flux needs the
   * Secret to delete what it applied), so a Secret the caches show unused is
   * deleted only after a live read of the input providers, Kustomizations and
   * HelmReleases finds none that uses it, one being deleted included, and
   * keeps finding none for `secretQuietMs`; a Secret held only by objects
   * being deleted goes `secretHoldTimeoutMs` after the last of their deletions.
   */
  async function secretsToDelete(
    desired: DesiredState,
    cached: ReadonlySet<string>,
  ): Promise<{ deletable: Set<string>; held: number; recheckMs?: number }> {
    const unlisted = observed(options.secrets, true).filter((o) => secretOfUnlistedCluster(o, desired));
    const names = new Set(unlisted.map((o) => o.metadata!.name!));
    const clusterOf = new Map(
      unlisted.map((o) => [o.metadata!.name!, o.metadata?.annotations?.[CLUSTER_PROFILE_ANNOTATION]]),
    );
    for (const name of unusedSince.keys()) if (!names.has(name)) unusedSince.delete(name);
    if (names.size === 0) return { deletable: new Set(), held: 0 };
    let live: Map<string, SecretUser[]>;
    try {
      live = await liveSecretUsers();
    } catch (error) {
      logger.warn('cannot read which Flux objects use the kubeconfig Secrets; keeping them', {
        error: toMcoError(error),
      });
      return { deletable: new Set(), held: names.size, recheckMs: 5000 };
    }
    const deletable = new Set<string>();
    let recheckMs: number | undefined;
    const t = now();
    for (const name of names) {
      const users = live.get(name) ?? [];
      if (users.length === 0) {
        // The caches still show a user the live read did not: it is gone, and its delete event is on the way.
        if (cached.has(name)) {
          recheckMs = Math.min(recheckMs ?? Infinity, 5000);
          continue;
        }
        const since = unusedSince.get(name) ?? t;
        unusedSince.set(name, since);
        const quietLeft = since + quietMs - t;
        if (quietLeft <= 0) deletable.add(name);
        else recheckMs = Math.min(recheckMs ?? Infinity, quietLeft);
        continue;
      }
      unusedSince.delete(name);
      if (!users.every((u) => u.deleting)) continue;
      // The hold runs from the last of their deletions, as the API server recorded it: a restart does not reset it.
      const since = Math.max(...users.map((u) => u.deletingSince));
      const left = since + holdTimeoutMs - t;
      if (left <= 0) {
        logger.warn(
          'a kubeconfig Secret outlived secretHoldTimeoutMs held by Flux objects being deleted; deleting it, so Flux removes their finalizers without pruning that member',
          {
            secret: name,
            cluster: clusterOf.get(name),
            objects: users.length,
            secretHoldTimeoutMs: holdTimeoutMs,
          },
        );
        deletable.add(name);
      } else recheckMs = Math.min(recheckMs ?? Infinity, left, 30_000);
    }
    return { deletable, held: names.size - deletable.size, ...(recheckMs === undefined ? {} : { recheckMs }) };
  }

  /**
   * Kubeconfig Secrets through which Flux is applying right now: a
   * Kustomization or HelmRelease using it whose controller has not recorded
   * its apply yet (`isApplyRecorded`: not yet reconciled, reconciling, or its
   * inventory not yet written after its conditions). Deleted in that window (by flux-operator, once mco
   * deletes the input provider), kustomize-controller finalizes it from a
   * cache that lacks the inventory its apply just wrote, so it prunes nothing
   * and the workload stays on the member. One stuck that way for
   * `applyWaitMs` no longer counts.
   */
  async function secretsBeingApplied(): Promise<Set<string>> {
    const names = new Set<string>();
    const t = now();
    const seen = new Set<string>();
    for (const kind of [options.kustomizations, options.helmReleases]) {
      if (!kind) continue;
      // The cache and a live read: one flux-operator created a moment ago may be in either only.
      let live: KubeObject[] = [];
      if (kind.cache.served?.() !== false) {
        try {
          live = await listLive(kind.resource);
        } catch (error) {
          logger.warn('cannot read which Flux objects are being applied; keeping the input providers', {
            error: toMcoError(error),
          });
          return new Set([ALL]);
        }
      }
      for (const o of [...observed(kind, false), ...live]) {
        if (o.metadata?.deletionTimestamp || isApplyRecorded(o, kind === options.kustomizations)) continue;
        const uid = o.metadata?.uid ?? keyOf(o);
        seen.add(uid);
        const since = applyingSince.get(uid) ?? t;
        applyingSince.set(uid, since);
        if (t - since < applyWaitMs) addReference(names, o);
      }
    }
    for (const uid of applyingSince.keys()) if (!seen.has(uid)) applyingSince.delete(uid);
    return names;
  }

  /** Kubeconfig Secret name → the objects that use it, read from the API server. */
  async function liveSecretUsers(): Promise<Map<string, SecretUser[]>> {
    const users = new Map<string, SecretUser[]>();
    for (const kind of [options.inputProviders, options.kustomizations, options.helmReleases]) {
      if (!kind || kind.cache.served?.() === false) continue;
      for (const object of await listLive(kind.resource)) {
        const names = new Set<string>();
        addReference(names, object);
        for (const name of names) {
          const list = users.get(name) ?? [];
          const deletion = object.metadata?.deletionTimestamp;
          // An unreadable deletionTimestamp counts as now: the hold starts rather than ends.
          list.push({
            deleting: deletion !== undefined,
            deletingSince: deletion === undefined ? NaN : Date.parse(deletion) || now(),
          });
          users.set(name, list);
        }
      }
    }
    return users;
  }

  async function worker(): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        if (!synced()) {
          // An informer whose initial list is empty reports no event once it
          // syncs: look again shortly rather than wait for the resync.
          queue.addAfter(KEY, 250);
          continue;
        }
        last = await pass();
        if (last.applied || last.pruned) logger.debug('flux pass', { ...last });
        const failed = last.credentialFailures > 0 || last.writeFailures > 0;
        options.reconciles?.record(failed ? 'error' : 'ok');
        if (failed) queue.addRateLimited(KEY);
        else queue.forget(KEY);
      } catch (error) {
        options.reconciles?.record('error');
        logger.warn('flux pass failed; retrying', { error: toMcoError(error) });
        queue.addRateLimited(KEY);
      } finally {
        queue.done(key);
      }
    }
  }

  const trigger = () => queue.add(KEY);
  let started = false;
  return {
    start() {
      if (started) return;
      started = true;
      options.placements.addHandler(trigger);
      options.clusterProfiles.addHandler(trigger);
      for (const kind of kinds) {
        const overlay = overlays.get(kind)!;
        kind.cache.addHandler((_e, object) => {
          overlay.observe(keyOf(object), kind.cache.get(keyOf(object)));
          trigger();
        });
      }
      running = worker();
      const resync = () => {
        resyncTimer = setTimeout(
          () => {
            trigger();
            resync();
          },
          options.resyncMs ?? 10 * 60_000,
        );
        resyncTimer.unref();
      };
      resync();
      trigger();
    },
    async stop() {
      clearTimeout(resyncTimer);
      queue.shutDown();
      await running;
    },
    trigger,
    pass: async () => (last = await pass()),
    get last() {
      return last;
    },
  };
}

/**
 * Names of kubeconfig Secrets something still uses: desired objects, and every
 * input provider, Kustomization and HelmRelease the caches hold — whoever made
 * it (a ResourceSet's included) and even while it is being deleted or pruned
 * in this very pass: Flux needs the kubeconfig to delete what it applied to the
 * member cluster, so a Secret goes at the earliest in the pass after the last
 * object using it was seen gone.
 */
function secretReferences(options: FluxSyncOptions, desired: DesiredState): Set<string> {
  const names = new Set<string>();
  for (const o of [...desired.inputProviders, ...desired.rendered]) addReference(names, o);
  for (const kind of [options.inputProviders, options.kustomizations, options.helmReleases]) {
    for (const o of kind?.cache.list() ?? []) addReference(names, o);
  }
  return names;
}

function addReference(names: Set<string>, object: KubeObject): void {
  const spec = (object as { spec?: Record<string, unknown> }).spec;
  const ref = (spec?.kubeConfig as { secretRef?: { name?: unknown } } | undefined)?.secretRef?.name;
  if (typeof ref === 'string') names.add(ref);
  const input = (spec?.defaultValues as { kubeconfigSecretName?: unknown } | undefined)?.kubeconfigSecretName;
  if (typeof input === 'string') names.add(input);
}

/** Whether a Secret is mco's kubeconfig Secret of a cluster no trusted placement lists. */
function secretOfUnlistedCluster(secret: KubeObject, desired: DesiredState): boolean {
  const cluster = secret.metadata?.annotations?.[CLUSTER_PROFILE_ANNOTATION];
  if (!cluster || desired.clusters.has(cluster)) return false;
  return isKubeconfigSecretOf(secret, cluster);
}

/** Whether a Secret is mco's kubeconfig Secret of a cluster whose server is the hub's own. */
function isHubClusterSecret(secret: KubeObject, hubServers: ReadonlySet<string>): boolean {
  const cluster = secret.metadata?.annotations?.[CLUSTER_PROFILE_ANNOTATION];
  return cluster !== undefined && hubServers.has(cluster) && isKubeconfigSecretOf(secret, cluster);
}

function isKubeconfigSecretOf(secret: KubeObject, cluster: string): boolean {
  const [namespace = '', name = ''] = cluster.split('/', 2);
  return secret.metadata?.name === kubeconfigSecretName(namespace, name);
}

/** The placement and cluster an object of mco's is for, as log fields. */
function logFields(o: KubeObject): Record<string, string> {
  const annotations = o.metadata?.annotations ?? {};
  const [placement, cluster] = [annotations[PLACEMENT_ANNOTATION], annotations[CLUSTER_PROFILE_ANNOTATION]];
  return { ...(placement ? { placement } : {}), ...(cluster ? { cluster } : {}) };
}

/**
 * Whether deleting this copy of a rendered Flux object (the delete names its
 * resourceVersion) lets its controller's finalizer prune everything it
 * applied. kustomize-controller finalizes from its cache, pruning what the
 * copy's `status.inventory` lists; a reconcile writes its conditions first and
 * its inventory in a second write, and one under way when the object is
 * deleted writes that inventory after the deletion, so the finalizer can read
 * a copy without it and prune nothing. Safe copies: no Flux finalizer (nothing
 * applied, and the delete removes the object at once); not being reconciled
 * and, after a success, the current generation observed and, for a
 * Kustomization, the last attempted revision applied (the inventory of what
 * any reconcile of this spec applies is written); after a failure, for a
 * Kustomization, one that records no inventory (it failed before or while
 * applying) or an inventory written.
 */
function isApplyRecorded(object: KubeObject, kustomization: boolean): boolean {
  const finalizers = (object.metadata as { finalizers?: readonly string[] } | undefined)?.finalizers ?? [];
  if (!finalizers.includes(FLUX_FINALIZER)) return true;
  if (isReconciling(object)) return false;
  const status =
    (
      object as {
        status?: {
          observedGeneration?: number;
          lastAppliedRevision?: string;
          lastAttemptedRevision?: string;
          inventory?: unknown;
        };
      }
    ).status ?? {};
  const ready = conditionsOf(object).find((c) => c.type === 'Ready');
  if (ready?.status === 'False') {
    return !kustomization || !APPLIED_THEN_FAILED.has(ready.reason ?? '') || status.inventory != null;
  }
  if (status.observedGeneration === undefined || status.observedGeneration !== object.metadata?.generation) {
    return false;
  }
  return (
    !kustomization ||
    (status.lastAppliedRevision !== undefined && status.lastAppliedRevision === status.lastAttemptedRevision)
  );
}

/** Whether a Flux object's controller is reconciling it now (`Reconciling` True, reason `Progressing`). */
export function isReconciling(object: KubeObject): boolean {
  return conditionsOf(object).some(
    (c) => c.type === 'Reconciling' && c.status === 'True' && c.reason === 'Progressing',
  );
}

function conditionsOf(object: KubeObject): readonly { type?: string; status?: string; reason?: string }[] {
  return (
    (object as { status?: { conditions?: { type?: string; status?: string; reason?: string }[] } }).status
      ?.conditions ?? []
  );
}

function keyOf(object: KubeObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

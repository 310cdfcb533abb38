import type { ClusterAccessManager } from '@mco/cluster-access';
import { clusterKey, type ClusterProfile, type Placement } from '@mco/core';
import {
  CLUSTER_PROFILES,
  LeaderElector,
  PLACEMENTS,
  WorkQueue,
  createInformer,
  objectKey,
  type BackoffOptions,
  type InformerTuning,
} from '@mco/kube-runtime';
import { hubClient, type HubSource } from '@mco/kube-runtime/client-node';
import { silentLogger, toMcoError, type Logger } from '@mco/runtime';
import { createHubWriter, memberObjects, type HubWriter, type MemberObjects } from './kube.js';
import { DELIVERED_ANNOTATION, isConfigSyncPlacement } from './record.js';
import { createReconciler, type ReconcileResult } from './reconciler.js';
import type { TemplatePolicy } from './template.js';

/** The hub: `hub`, a connection (`loadKubeConfig` of @mco/kube-runtime), or a client-node `kubeConfig`. */
export interface ConfigSyncDeliveryOptions extends HubSource {
  /** Credentials and clients for member clusters (`createClusterAccess` of @mco/cluster-access). */
  readonly access: ClusterAccessManager;
  readonly logger?: Logger;
  /** Placements reconciled at once (default 4). */
  readonly workers?: number;
  /** Member clusters of one placement worked on at once (default 8). */
  readonly clusterConcurrency?: number;
  /** Deadline of one member request (default 15 s). */
  readonly memberTimeoutMs?: number;
  /** How often a placement's member sync status is read again (default 60 s). */
  readonly statusIntervalMs?: number;
  /** How soon to look again while Config Sync works (a finalizer, a first sync; default 5 s). */
  readonly waitingIntervalMs?: number;
  /** Retry backoff of a placement with an unreachable member (default `RETRY_BACKOFF`; tests shorten it). */
  readonly retryBackoff?: BackoffOptions;
  /** Run only while holding this Lease (several replicas); omit for a single instance. */
  readonly leaderElection?: { readonly namespace: string; readonly name: string; readonly identity: string };
  /** What a placement's template may deliver (`--root-sync-namespaces`, `--allowed-role-refs`). */
  readonly templatePolicy?: TemplatePolicy;
  /** Replace the hub writes (benchmarks count them). */
  readonly hubWriter?: HubWriter;
  /** Replace the member calls (benchmarks); default: through `access`. */
  readonly member?: (profile: ClusterProfile) => Promise<MemberObjects>;
  /** Only ClusterProfiles in these namespaces are read (`--cluster-profile-namespaces`); empty or absent: all. */
  readonly clusterProfileNamespaces?: readonly string[];
  /** Informer tuning (tests shorten these). */
  readonly informers?: InformerTuning;
  /** Called after each reconcile (tests and benchmarks observe progress). */
  readonly onReconciled?: (key: string, result: ReconcileResult | Error) => void;
}

/**
 * A placement with an unreachable member is retried after 1 s, doubling up to
 * 10 s: a member that answers again gets its pending cleanup within about
 * 10 s (plus one request), however long it was away. A retry costs one
 * credential check and a few reads per unreachable member.
 */
export const RETRY_BACKOFF: BackoffOptions = { baseMs: 1000, maxMs: 10_000, jitter: 0.2 };

export interface ConfigSyncDelivery {
  /** True once the placement and ClusterProfile caches are synced. */
  ready(): boolean;
  /** True while this replica waits for the Lease (leader election): it has nothing to sync yet. */
  standby(): boolean;
  /** Queues a placement (`namespace/name`). */
  enqueue(key: string): void;
  stop(): Promise<void>;
}

/**
 * Runs Config Sync delivery: informers on placements and ClusterProfiles
 * (@mco/kube-runtime), a de-duplicating work queue with per-key backoff, and
 * workers that run the reconciler. A placement is looked at when it changes,
 * when a ClusterProfile it lists changes, while Config Sync works, and every
 * `statusIntervalMs` to bring the members' sync status back.
 */
export function startConfigSyncDelivery(options: ConfigSyncDeliveryOptions): ConfigSyncDelivery {
  const logger = (options.logger ?? silentLogger).child({ component: 'configsync' });
  const informer = { logger, tuning: options.informers };
  const hub = hubClient(options);
  const placements = createInformer<Placement>(hub, PLACEMENTS, informer);
  const clusterProfiles = createInformer<ClusterProfile>(hub, CLUSTER_PROFILES, {
    ...informer,
    scope: { namespaces: options.clusterProfileNamespaces },
  });
  const timeoutMs = options.memberTimeoutMs ?? 15_000;
  const member =
    options.member ??
    (async (profile: ClusterProfile) => {
      const signal = AbortSignal.timeout(timeoutMs);
      // Every cached profile is a peer: one naming an older profile's server is refused.
      const client = await options.access.clientFor(profile, signal, clusterProfiles.list());
      // The credential first, within the deadline (a credential plugin may hang).
      await client.access.getCredential(signal);
      return memberObjects(client, timeoutMs);
    });
  const { reconcile } = createReconciler({
    placements,
    clusterProfiles,
    member,
    hub: options.hubWriter ?? createHubWriter(hub),
    ...(options.templatePolicy ? { templatePolicy: options.templatePolicy } : {}),
    ...(options.clusterConcurrency ? { clusterConcurrency: options.clusterConcurrency } : {}),
    logger,
  });
  const queue = new WorkQueue({ backoff: options.retryBackoff ?? RETRY_BACKOFF });
  const statusIntervalMs = options.statusIntervalMs ?? 60_000;
  const waitingIntervalMs = options.waitingIntervalMs ?? 5_000;

  const isOurs = isConfigSyncPlacement;
  placements.addHandler((_event, placement, previous) => {
    if (isOurs(placement) || isOurs(previous)) queue.add(objectKey(placement));
  });
  // A profile's access changed (or it came back): retry the placements that list or recorded it.
  clusterProfiles.addHandler((_event, profile) => {
    const cluster = clusterKey(profile.metadata.namespace, profile.metadata.name);
    if (_event === 'delete') options.access.forget(cluster);
    for (const p of placements.list()) {
      if (!isOurs(p)) continue;
      const listed = (p.status?.clusters ?? []).some((c) => clusterKey(c.namespace, c.name) === cluster);
      if (listed || p.metadata.annotations?.[DELIVERED_ANNOTATION]?.includes(JSON.stringify(cluster))) {
        queue.add(objectKey(p));
      }
    }
  });

  let running = false;
  const workers: Promise<void>[] = [];
  const work = async () => {
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      try {
        const result = await reconcile(key);
        options.onReconciled?.(key, result);
        if (result.retry) queue.addRateLimited(key);
        else {
          queue.forget(key);
          queue.addAfter(key, result.waiting ? waitingIntervalMs : statusIntervalMs);
        }
      } catch (error) {
        const failure = toMcoError(error, `placement ${key}`);
        logger.warn('Config Sync delivery failed; retrying', { placement: key, error: failure });
        options.onReconciled?.(key, failure);
        queue.addRateLimited(key);
      } finally {
        queue.done(key);
      }
    }
  };
  const begin = () => {
    if (running) return;
    running = true;
    placements.start();
    clusterProfiles.start();
    for (let i = 0; i < (options.workers ?? 4); i++) workers.push(work());
  };
  const elector = options.leaderElection
    ? new LeaderElector({
        client: hub,
        ...options.leaderElection,
        logger,
        onStartedLeading: begin,
        // Losing the Lease mid-write is what leader election exists for: stop at once.
        onStoppedLeading: () => queue.shutDown(),
      })
    : undefined;
  if (elector) elector.start();
  else begin();
  // Everything queued before the caches synced waits: the reconciler does nothing on an unsynced cache.
  const syncWatch = setInterval(() => {
    if (!placements.hasSynced() || !clusterProfiles.hasSynced()) return;
    clearInterval(syncWatch);
    for (const p of placements.list()) if (isOurs(p)) queue.add(objectKey(p));
  }, 100);
  syncWatch.unref();

  return {
    ready: () => placements.hasSynced() && clusterProfiles.hasSynced(),
    standby: () => elector !== undefined && !running,
    enqueue: (key) => queue.add(key),
    async stop() {
      clearInterval(syncWatch);
      queue.shutDown();
      await Promise.all(workers);
      await elector?.stop();
      await Promise.all([placements.stop(), clusterProfiles.stop()]);
    },
  };
}

import { randomBytes } from 'node:crypto';
import {
  httpStatusOf,
  silentLogger,
  type CapacitySignalSource,
  type CapacitySource,
  type KubeConnection,
  type Logger,
} from '@mco/runtime';
import type { Registry } from 'prom-client';
import {
  CLUSTER_PROFILES,
  createListWatch,
  Informer,
  KubeClient,
  objectKey,
  objectPath,
  PLACEMENT_DECISIONS,
  PLACEMENTS,
  PRIORITY,
  WakeableSleep,
  WorkQueue,
  backoffDelay,
  type KubeObject,
  type ListWatch,
  type Priority,
} from '@mco/kube-runtime';
import { placementsAffectedBy, type ProfileChange } from './affected.js';
import {
  isStub,
  readWhole,
  ShardedInformer,
  stubPlacement,
  stubPlacementDecision,
  trimClusterProfile,
  trimPlacement,
  trimPlacementDecision,
} from './cache.js';
import { EventRecorder } from './events.js';
import {
  CONFIG_MAPS,
  DEFAULT_CONTROLLER_NAMESPACE,
  CONFIRMATION_FIELD_SELECTOR,
  InventoryLossGuard,
  type InventoryLossGuardOptions,
} from './inventory-guard.js';
import { SharedInventoryLoss } from './inventory-loss-state.js';
import { createHubClient, type HubClient } from './kube.js';
import { createMetrics, type ControllerMetrics } from './metrics.js';
import { DecisionBacklog, PeerActivity } from './lanes.js';
import { affectsDecisions, DECISIONS_LABEL_SELECTOR, NotLeaderError, Reconciler } from './reconciler.js';
import { fieldManagerOf, registerShardMetrics, shardOf, ShardCoordinator, type ShardSettings } from './shards.js';

/** Shards over Leases (shards.ts); one shard (the default) is leader election over the Lease `name`. */
export type LeaderElectionSettings = ShardSettings;

export interface ControllerOptions {
  /** The hub (`loadKubeConfig` of @mco/kube-runtime). */
  readonly hub: KubeConnection;
  readonly logger?: Logger;
  /** Where metrics are registered; a fresh registry by default. */
  readonly registry?: Registry;
  /** Also export process metrics (CPU, memory, event-loop lag). */
  readonly defaultMetrics?: boolean;
  /**
   * This replica's name in the Lease and in Events. `<install>/<replica>`
   * (the chart: `<release namespace>/<release name>/<pod>_<suffix>`) tells
   * installs apart: every install shares one Lease, and a replica that sees
   * another install holding it stands by, unready, and says so.
   */
  readonly identity?: string;
  /** Leader election or shards; undefined: this replica owns every placement (a single replica, or tests). */
  readonly leaderElection?: LeaderElectionSettings | undefined;
  readonly workers?: number;
  /**
   * Only ClusterProfiles in these namespaces are inventory (`--cluster-profile-namespaces`);
   * empty or absent: every namespace.
   */
  readonly clusterProfileNamespaces?: readonly string[];
  /** Every placement is reconciled at least this often (a safety net; events drive the rest). */
  readonly resyncPeriodMs?: number;
  readonly signalSources?: ReadonlyMap<string, CapacitySignalSource>;
  readonly defaultSignalSource?: string | undefined;
  /** Per source, the placement namespaces that may use it (its `placementNamespaces`); absent: every namespace. */
  readonly signalSourceNamespaces?: ReadonlyMap<string, readonly string[]>;
  /** Capacity sources, asked about autoscaling placements' next scale-out candidates (docs/signals.md#capacity-sources). */
  readonly capacitySources?: ReadonlyMap<string, CapacitySource>;
  /** Per capacity source, the placement namespaces that may use it; absent: every namespace. */
  readonly capacitySourceNamespaces?: ReadonlyMap<string, readonly string[]>;
  /** How many scale-out candidates each capacity source is asked about (default 3). */
  readonly capacityCandidates?: number;
  /** A trusted single-tenant hub: placements may name workloads outside their namespace (default false). */
  readonly allowCrossNamespaceWorkloads?: boolean;
  readonly signalPollIntervalMs?: number;
  readonly signalTimeoutMs?: number;
  /** The inventory-loss guard (docs/placement-rules.md §10.5; defaults 30%, at least 3, within 5 min). */
  readonly inventoryLoss?: InventoryLossGuardOptions;
  /**
   * The controller's own namespace (default mco-system): it reads the operator's
   * inventory-loss confirmation there, the ConfigMap INVENTORY_LOSS_CONFIRMATION.
   */
  readonly namespace?: string;
  /** Informers relist when no event or bookmark arrived for this long. */
  readonly watchIdleTimeoutMs?: number;
  /**
   * Bounds of each watch cache (objects, JSON bytes; 0 or absent: none). A
   * cache cannot drop objects: past a bound it keeps them all and alerts
   * (metric mco_controller_informer_over_limit, a warning).
   */
  readonly cacheLimits?: { readonly maxObjects?: number; readonly maxBytes?: number };
  /** Server-side watch timeout (randomised up to twice this). */
  readonly watchTimeoutSeconds?: number;
  readonly requestTimeoutMs?: number;
  /** Record Kubernetes Events for transitions. */
  readonly events?: boolean;
  /** Longest wait for in-flight reconciles on shutdown. */
  readonly shutdownTimeoutMs?: number;
  /** How long PlacementDecisions may trail their status while status work waits (default 30 s). */
  readonly decisionsMaxDeferMs?: number;
  /** Tests: replace the API client or the list/watch of an informer. */
  readonly client?: HubClient;
  readonly listWatch?: {
    placements?: ListWatch<KubeObject>;
    clusterProfiles?: ListWatch<KubeObject>;
    placementDecisions?: ListWatch<KubeObject>;
    inventoryLossConfirmation?: ListWatch<KubeObject>;
  };
  readonly now?: () => Date;
  /** Benchmarks: called after each reconcile with where its time went. */
  readonly onReconcile?: (trace: ReconcileTrace) => void;
  /** Benchmarks: called after each deferred PlacementDecision write, with how far it trailed the status. */
  readonly onDecisions?: (trace: DecisionTrace) => void;
}

/** Where one reconcile's time went (`onReconcile`). */
export interface ReconcileTrace {
  readonly key: string;
  readonly priority: Priority;
  /** From queued to taken by a worker. */
  readonly queueWaitMs: number;
  /** Reading the caches, asking the signal source and deciding. */
  readonly evaluateMs: number;
  /** The status write (PlacementDecisions follow in the lower-priority lane). */
  readonly writeMs: number;
  readonly statusWritten: boolean;
}

/** A deferred PlacementDecision write (`onDecisions`). */
export interface DecisionTrace {
  readonly key: string;
  /** From the reconcile that found the PlacementDecisions behind its status to their writes done. */
  readonly lagMs: number;
  /** Objects created, replaced or deleted. */
  readonly writes: number;
}

/**
 * PlacementDecisions behind their status this long are written even while
 * status work waits, so a controller that never runs out of reconciles still
 * brings them up to date (consumers such as Argo CD's clusterDecisionResource
 * generator poll them every few minutes).
 */
const DECISIONS_MAX_DEFER_MS = 30_000;
/**
 * At most this many workers write overdue PlacementDecisions while status
 * work waits: a slow, steady drain. A busy API server gives each request in
 * flight about an equal share of its CPU, whatever the request's size (a
 * 100-decision slice costs it a third of a 333-cluster status), so each
 * overdue writer takes a worker's share from the statuses still queued
 * (docs/performance.md).
 */
const OVERDUE_WRITERS = 1;

/** Retries of the list after shards were taken: 1 s, doubling, at most 30 s. */
const LIST_BACKOFF = { baseMs: 1_000, maxMs: 30_000, jitter: 0.2 };

/** Above this many ClusterProfile changes at once (a relist, a provider's sync), every placement is simply queued. */
const MAX_TARGETED_CHANGES = 16;

export interface Controller {
  readonly metrics: ControllerMetrics;
  readonly identity: string;
  readonly informers: {
    readonly placements: Informer<KubeObject>;
    readonly clusterProfiles: Informer<KubeObject>;
    readonly placementDecisions: Informer<KubeObject>;
    readonly inventoryLossConfirmation: Informer<KubeObject>;
  };
  readonly queue: WorkQueue;
  /** Starts the informers, then campaigns for leadership (or leads at once). */
  start(): void;
  /**
   * Graceful stop: stop taking keys, wait for in-flight reconciles (bounded),
   * release the Lease, stop the informers. `release: false` imitates a crash.
   */
  stop(options?: { release?: boolean }): Promise<void>;
  /** All informers listed everything and no other install holds the Lease (the /readyz condition). */
  isReady(): boolean;
  /** The Lease holder's identity while another install holds it (this one stands by); otherwise undefined. */
  standingByFor(): string | undefined;
  /** Resolves once every informer synced. */
  waitForSync(): Promise<void>;
  isLeader(): boolean;
  /** The shards this replica owns now (with leader election; `[0]` for one shard). */
  ownedShards(): number[];
  /** Placements whose PlacementDecisions wait in the lower-priority lane, and Events waiting there. */
  deferred(): { placementDecisions: number; events: number };
}

/** The mco hub controller: informers, queue, workers, leader election, writers. */
export function createController(options: ControllerOptions): Controller {
  const logger = options.logger ?? silentLogger;
  const identity = options.identity ?? `mco-${randomBytes(4).toString('hex')}`;
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const hub = new KubeClient(options.hub, { timeoutMs: requestTimeoutMs });
  const informerOptions = {
    logger,
    idleTimeoutMs: options.watchIdleTimeoutMs ?? 180_000,
    watchTimeoutSeconds: options.watchTimeoutSeconds ?? 300,
    limits: {
      maxObjects: options.cacheLimits?.maxObjects || undefined,
      maxBytes: options.cacheLimits?.maxBytes || undefined,
    },
  };
  const lw = <T extends KubeObject>(given: ListWatch<T> | undefined, make: () => ListWatch<T>) => given ?? make();
  // With shards, placements and their PlacementDecisions are whole only for the shards held (cache.ts).
  const sharded = options.leaderElection !== undefined;
  // With more than one shard a replica holds a share of them: their lists bring metadata only (stubs,
  // a fraction of the API server's work), and each reconcile reads its own objects whole. With one
  // shard the holder keeps everything, which one whole list reads fastest.
  const metadataOnlyList = (options.leaderElection?.shards ?? 1) > 1;
  const readFrom = (resource: typeof PLACEMENTS) => async (key: string, signal?: AbortSignal) => {
    const [namespace = '', name = ''] = key.split('/');
    try {
      return await hub.get<KubeObject>(objectPath(resource, namespace, name), signal ? { signal } : {});
    } catch (error) {
      if (httpStatusOf(error) === 404) return undefined;
      throw error;
    }
  };
  const cached = (name: string, resource: typeof PLACEMENTS, listWatch: ListWatch<KubeObject>) =>
    ({ name, listWatch, read: readFrom(resource), ...informerOptions }) as const;
  const placements = new ShardedInformer({
    ...cached(
      'placements',
      PLACEMENTS,
      lw(options.listWatch?.placements, () => createListWatch(hub, PLACEMENTS, { requestTimeoutMs, metadataOnlyList })),
    ),
    transform: trimPlacement,
    holds: (placement) => !sharded || ownsKey(objectKey(placement)),
    stub: stubPlacement,
  });
  const clusterProfiles = new Informer<KubeObject>({
    name: 'clusterprofiles',
    listWatch: lw(options.listWatch?.clusterProfiles, () =>
      createListWatch(hub, CLUSTER_PROFILES, {
        requestTimeoutMs,
        namespaces: options.clusterProfileNamespaces,
      }),
    ),
    transform: trimClusterProfile,
    ...informerOptions,
  });
  const placementDecisions = new ShardedInformer({
    ...cached(
      'placementdecisions',
      PLACEMENT_DECISIONS,
      lw(options.listWatch?.placementDecisions, () =>
        createListWatch(hub, PLACEMENT_DECISIONS, {
          requestTimeoutMs,
          labelSelector: DECISIONS_LABEL_SELECTOR,
          metadataOnlyList,
        }),
      ),
    ),
    transform: trimPlacementDecision,
    holds: (decision) => {
      const key = sharded ? Reconciler.placementKeyOf(decision) : undefined;
      return !sharded || (key !== undefined && ownsKey(key));
    },
    stub: stubPlacementDecision,
  });
  // Only this one object, read from the API, so every replica sees the same confirmation; the
  // chart's Role lets the controller read nothing else in its namespace (list and watch by name).
  const inventoryLossConfirmation = new Informer<KubeObject>({
    name: 'inventory-loss-confirmation',
    listWatch: lw(options.listWatch?.inventoryLossConfirmation, () =>
      createListWatch(hub, CONFIG_MAPS, {
        requestTimeoutMs,
        namespace: options.namespace ?? DEFAULT_CONTROLLER_NAMESPACE,
        fieldSelector: CONFIRMATION_FIELD_SELECTOR,
      }),
    ),
    ...informerOptions,
  });
  const inventoryLossGuard = new InventoryLossGuard(options.inventoryLoss);
  // With Leases, the guard's loss is shared through one, so every replica holds the same.
  const sharedLoss =
    options.leaderElection &&
    new SharedInventoryLoss({
      client: hub,
      ...options.leaderElection,
      guard: inventoryLossGuard,
      logger,
      requestTimeoutMs,
      informerOptions,
      ...(options.now ? { now: () => options.now!().getTime() } : {}),
    });
  const informers = [placements, clusterProfiles, placementDecisions, inventoryLossConfirmation];
  if (sharedLoss) informers.push(sharedLoss.informer);
  const waits = new Map<string, { ms: number; priority: Priority }>();
  const queue = new WorkQueue({
    onDequeue: (key, ms, priority) => {
      metrics.queueWait.observe({ priority: PRIORITY_NAMES[priority] }, ms / 1000);
      if (options.onReconcile) waits.set(key, { ms, priority });
    },
  });

  let shards: ShardCoordinator | undefined;
  let leading = false;
  const isLeader = () => (shards ? shards.owned().length > 0 : leading);
  const ownsKey = (key: string) => (shards ? shards.ownsKey(key) : leading);
  let otherInstall: string | undefined;
  const onHolderChanged = (holder: string) => {
    const other =
      holder !== '' && holder !== identity && installOf(holder) !== installOf(identity) ? holder : undefined;
    if (other && !otherInstall) {
      logger.warn('another mco install holds the controller lease; this install stands by and is not ready', {
        holder: other,
        install: installOf(identity),
        lease: `${options.leaderElection?.namespace}/${options.leaderElection?.name}`,
      });
    } else if (!other && otherInstall) {
      logger.info('the other install no longer holds the controller lease', { holder });
    }
    otherInstall = other;
  };

  const metrics = createMetrics(
    {
      queueDepth: () => queue.length,
      queueDelayed: () => queue.delayedCount,
      isLeader,
      standingBy: () => otherInstall !== undefined,
      informers: () => informers.map((i) => i.health()),
      inventoryLossGuardEngaged: () => inventoryLossGuard.engaged,
    },
    { ...(options.registry ? { registry: options.registry } : {}), defaultMetrics: options.defaultMetrics ?? false },
  );
  if (options.leaderElection) registerShardMetrics(metrics.registry, () => shards?.owned().length ?? 0);
  // Each replica writes under its own field manager: managedFields name the replica of each write.
  const client = options.client ?? createHubClient(hub, fieldManagerOf(identity));
  // Two lanes: reconciles (and their status writes) from the queue, and, only while no key waits there,
  // the PlacementDecision writes and Events that follow them, so a status never waits behind those.
  const backlog = new DecisionBacklog();
  const peers = new PeerActivity();
  let peersQuiet: NodeJS.Timeout | undefined;
  /** Workers waiting for a key. */
  let idle = 0;
  const wake = () => {
    if (idle > 0) queue.add(WAKE_KEY);
  };
  const events =
    options.events === false
      ? undefined
      : new EventRecorder({
          client,
          component: 'mco-controller',
          instance: identity,
          metrics,
          logger,
          onPending: wake,
        });
  const reconciler = new Reconciler({
    placements,
    clusterProfiles,
    placementDecisions,
    client,
    signalSources: options.signalSources,
    defaultSignalSource: options.defaultSignalSource,
    ...(options.signalSourceNamespaces ? { signalSourceNamespaces: options.signalSourceNamespaces } : {}),
    ...(options.capacitySources ? { capacitySources: options.capacitySources } : {}),
    ...(options.capacitySourceNamespaces ? { capacitySourceNamespaces: options.capacitySourceNamespaces } : {}),
    ...(options.capacityCandidates ? { capacityCandidates: options.capacityCandidates } : {}),
    ...(options.allowCrossNamespaceWorkloads ? { allowCrossNamespaceWorkloads: true } : {}),
    signalPollIntervalMs: options.signalPollIntervalMs,
    signalTimeoutMs: options.signalTimeoutMs,
    inventoryLossGuard,
    inventoryLossConfirmation,
    events,
    metrics,
    logger,
    isLeader: ownsKey,
    ...(sharded
      ? {
          readWhole: (key: string, decisionKeys: Iterable<string>, signal?: AbortSignal) =>
            readWhole(placements, placementDecisions, key, decisionKeys, signal),
        }
      : {}),
    ...(options.now ? { now: options.now } : {}),
  });

  // Every change enqueues the placements it can affect. A ClusterProfile
  // change queues the placements it affects at high priority, ahead of the
  // periodic resync's low-priority sweep (the safety net for the rest). No
  // sweep follows each change: at 5,000 x 5,000 a sweep is about 20 s of the
  // event loop, which every affected placement's writes then wait for
  // (docs/performance.md). A burst of changes is coalesced into one pass, and
  // a large one (a relist, a provider's sync) queues every placement.
  let sweepScheduled: Priority | undefined;
  const enqueueAll = (priority: Priority) => {
    if (sweepScheduled !== undefined && sweepScheduled <= priority) return;
    const first = sweepScheduled === undefined;
    sweepScheduled = priority;
    if (first)
      setImmediate(() => {
        const at = sweepScheduled!;
        sweepScheduled = undefined;
        for (const key of placements.keys()) if (ownsKey(key)) queue.add(key, at);
      });
  };
  let profileChanges: ProfileChange[] | undefined;
  let guardWasEngaged = false;
  const enqueueAffected = (change: ProfileChange) => {
    if (profileChanges) {
      profileChanges.push(change);
      return;
    }
    profileChanges = [change];
    setImmediate(() => {
      const changes = profileChanges!;
      profileChanges = undefined;
      // While the inventory-loss guard holds removals, and when it engages or
      // releases, every placement looks again (held removals are anywhere).
      const guardChanged = inventoryLossGuard.engaged !== guardWasEngaged;
      guardWasEngaged = inventoryLossGuard.engaged;
      if (
        changes.length > MAX_TARGETED_CHANGES ||
        guardChanged ||
        inventoryLossGuard.engaged ||
        !clusterProfiles.hasSynced() ||
        !placements.hasSynced()
      ) {
        enqueueAll(PRIORITY.normal);
        return;
      }
      // Only this replica's shards: other replicas reconcile theirs. A stub of a shard held (it came
      // before the shard did) cannot be judged: it is queued, and its reconcile reads it whole.
      const mine = placements.list().filter((p) => ownsKey(objectKey(p)));
      for (const p of mine) if (isStub(p)) queue.add(objectKey(p), PRIORITY.high);
      const judged = mine.filter((p) => !isStub(p));
      for (const key of placementsAffectedBy(changes, judged, Date.now())) queue.add(key, PRIORITY.high);
    });
  };
  placements.addHandler((event, object) => {
    // Our own status writes come back as updates and need no reconcile.
    if (event === 'update' && reconciler.isOwnStatusWrite(object)) return;
    if (ownsKey(objectKey(object))) queue.add(objectKey(object), PRIORITY.high);
    else if (shards && event === 'update') peers.seen();
  });
  clusterProfiles.addHandler((event, object, previous) => {
    if (!affectsDecisions(event, object, previous)) return;
    enqueueAffected({ before: event === 'add' ? undefined : previous, after: event === 'delete' ? undefined : object });
  });
  // A confirmation may release the guard: every held placement looks again.
  inventoryLossConfirmation.addHandler(() => {
    if (inventoryLossGuard.engaged) enqueueAll(PRIORITY.normal);
  });
  placementDecisions.addHandler((event, object) => {
    // Someone else changed or deleted one of our PlacementDecisions: put it right.
    if (reconciler.isOwnDecisionWrite(event, object)) return;
    const key = Reconciler.placementKeyOf(object);
    if (key) queue.add(key);
  });

  const workers = options.workers ?? 4;
  const inFlight = new Set<Promise<void>>();
  let leadership: AbortController | undefined;
  let resyncTimer: NodeJS.Timeout | undefined;
  let stopped = false;

  /**
   * Placements whose last PlacementDecision write failed. Their retry is a reconcile that writes no
   * status and succeeds; it must not reset the key's backoff, or the write is tried again every few
   * milliseconds for as long as the API server refuses it.
   */
  const decisionsFailing = new Set<string>();
  /**
   * Reconciles `key` again with backoff after a failure. A conflict means our
   * cache is behind: the watch brings the new version and the retry starts from it.
   */
  const retryLater = (key: string, what: string, error: unknown): 'conflict' | 'error' => {
    const result = (error as { code?: string }).code === 'Conflict' ? 'conflict' : 'error';
    (result === 'conflict' ? logger.debug : logger.warn)(`${what} failed; retrying`, {
      placement: key,
      error,
      retries: queue.retries(key),
    });
    queue.addRateLimited(key);
    return result;
  };

  const processKey = async (key: string, abort: AbortSignal) => {
    // Another replica's shard: it reconciles this key.
    if (!ownsKey(key)) {
      queue.forget(key);
      decisionsFailing.delete(key);
      backlog.delete(key);
      return queue.done(key);
    }
    const started = performance.now();
    let result = 'success';
    backlog.begin(key);
    try {
      const reconcile = () => reconciler.reconcile(key, abort);
      const outcome = await (shards ? shards.track(key, reconcile) : reconcile());
      if (options.onReconcile) {
        const wait = waits.get(key);
        options.onReconcile({
          key,
          priority: wait?.priority ?? PRIORITY.normal,
          queueWaitMs: wait?.ms ?? 0,
          evaluateMs: outcome.evaluateMs,
          writeMs: outcome.writeMs,
          statusWritten: outcome.statusWritten,
        });
      }
      if (outcome.decisionsBehind) backlog.add(key);
      if (!outcome.decisionsBehind || !decisionsFailing.has(key)) {
        queue.forget(key);
        decisionsFailing.delete(key);
      }
      if (outcome.requeueAfterMs !== undefined) queue.addAfter(key, outcome.requeueAfterMs);
    } catch (error) {
      if (error instanceof NotLeaderError || abort.aborted) {
        result = 'not_leader';
      } else {
        result = retryLater(key, 'reconcile', error);
      }
    } finally {
      backlog.end(key);
      waits.delete(key);
      queue.done(key);
      const seconds = (performance.now() - started) / 1000;
      metrics.reconciles.inc({ result });
      if (result !== 'not_leader') metrics.shared.record(result === 'success' ? 'ok' : 'error');
      metrics.reconcileDuration.observe({ result }, seconds);
    }
  };

  /** Brings a placement's PlacementDecisions in line with its latest status; a failure reconciles it again. */
  const writeDecisions = async ({ key, since }: { key: string; since: number }, abort: AbortSignal) => {
    try {
      if (!ownsKey(key)) {
        decisionsFailing.delete(key);
        return;
      }
      // Its objects may have become stubs since its reconcile (the shard was lost and taken again).
      const write = async () => {
        await reconciler.readWhole(key, abort);
        return reconciler.writeDecisions(key);
      };
      const writes = await (shards ? shards.track(key, write) : write());
      if (decisionsFailing.delete(key)) queue.forget(key);
      if (writes > 0) options.onDecisions?.({ key, lagMs: performance.now() - since, writes });
    } catch (error) {
      if (!(error instanceof NotLeaderError || abort.aborted)) {
        decisionsFailing.add(key);
        retryLater(key, 'writing PlacementDecisions', error);
      }
    } finally {
      backlog.end(key);
    }
  };

  /** Whether the other replicas' status work has paused; if not, a worker is woken when it has. */
  const peersQuietNow = () => {
    const wait = peers.waitMs();
    if (wait === 0) return true;
    if (!peersQuiet) {
      peersQuiet = setTimeout(() => {
        peersQuiet = undefined;
        wake();
      }, wait);
      peersQuiet.unref?.();
    }
    return false;
  };

  /**
   * The lower-priority lane's next write, started: PlacementDecisions first (not while peers write
   * statuses: they are bounded by the overdue rule), then Events (small, and with no such bound).
   */
  const nextDeferred = (abort: AbortSignal): Promise<void> | undefined => {
    const behind = backlog.size > 0 && peersQuietNow() ? backlog.take() : undefined;
    return behind ? writeDecisions(behind, abort) : events?.sendNext();
  };
  /** PlacementDecisions behind for decisionsMaxDeferMs, written ahead of waiting status work by one worker. */
  let overdueWriters = 0;
  const overdueDecisions = (abort: AbortSignal): Promise<void> | undefined => {
    if (overdueWriters >= OVERDUE_WRITERS) return undefined;
    const behind = backlog.take(options.decisionsMaxDeferMs ?? DECISIONS_MAX_DEFER_MS);
    if (!behind) return undefined;
    overdueWriters++;
    return writeDecisions(behind, abort).finally(() => overdueWriters--);
  };

  const worker = async (abort: AbortSignal) => {
    while (!abort.aborted) {
      // Status work first, this replica's and (for PlacementDecisions) its peers': a deferred write
      // starts only while no key waits in the queue, or once overdue.
      const deferred = queue.length === 0 ? nextDeferred(abort) : overdueDecisions(abort);
      if (deferred) {
        if (backlog.size > 0 || (events?.pendingCount ?? 0) > 0) wake();
        await deferred;
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      idle++;
      const key = await queue.get();
      idle--;
      if (key === undefined) return;
      if (key === WAKE_KEY) {
        queue.done(key);
        continue;
      }
      if (abort.aborted) {
        queue.done(key);
        queue.add(key); // keep it for the next leader term
        return;
      }
      await processKey(key, abort);
      // Let timers, I/O and the HTTP server run between two reconciles.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  /** Queues the placements of a shard just taken (all of them with no shards), and those with decisions. */
  const enqueueShard = (shard: number | undefined) => {
    const mine = (key: string) => shard === undefined || shardOf(key, shards!.shards) === shard;
    for (const key of placements.keys()) if (mine(key)) queue.add(key);
    for (const key of placementDecisions.list().map((d) => Reconciler.placementKeyOf(d)))
      if (key && mine(key)) queue.add(key);
  };
  // One whole list after shards were taken (again once more if another was taken while it ran, and after
  // a failure: until it succeeds, each reconcile of those shards reads its objects one by one). Not with
  // metadata-only lists: there every reconcile reads its own objects.
  let listing: Promise<void> | undefined;
  let listAgain = false;
  let listFailures = 0;
  const listRetry = new WakeableSleep();
  const readHeld = () => {
    if (metadataOnlyList) return;
    if (listing) {
      listAgain = true;
      return;
    }
    const started = performance.now();
    listing = Promise.all([placements.readHeld(), placementDecisions.readHeld()])
      .then(() => {
        listFailures = 0;
        logger.info('listed the objects of shards taken', { ms: Math.round(performance.now() - started) });
      })
      .catch((error: unknown) => {
        listAgain = true;
        const retryInMs = backoffDelay(listFailures++, LIST_BACKOFF);
        logger.warn('cannot list the objects of shards taken; reconciles read them meanwhile', { error, retryInMs });
        return listRetry.sleep(retryInMs);
      })
      .finally(() => {
        listing = undefined;
        if (listAgain && !stopped && shards?.owned().length) {
          listAgain = false;
          readHeld();
        }
      });
  };
  const startLeading = (shard?: number) => {
    if (stopped) return;
    if (leadership) return enqueueShard(shard);
    leading = true;
    leadership = new AbortController();
    const abort = leadership.signal;
    logger.info('leading: reconciling placements', { identity, workers, ...(shard === undefined ? {} : { shard }) });
    enqueueShard(shard);
    for (let i = 0; i < workers; i++) {
      const run = worker(abort).catch((error: unknown) => logger.error('worker crashed', { error }));
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run));
    }
    const resync = options.resyncPeriodMs ?? 600_000;
    resyncTimer = setInterval(() => enqueueAll(PRIORITY.low), resync);
    resyncTimer.unref?.();
  };
  const stopLeading = (stopping = false) => {
    // Workers stop when this replica owns no shard any more.
    if (!stopping && shards?.owned().length) return;
    leading = false;
    clearInterval(resyncTimer);
    clearTimeout(peersQuiet);
    peersQuiet = undefined;
    if (!leadership) return;
    leadership.abort();
    leadership = undefined;
    // Idle workers wait in queue.get(); wake them so they see the abort.
    for (let i = 0; i < workers; i++) queue.add(WAKE_KEY);
  };

  const waitForSync = async () => {
    await Promise.all(informers.map((i) => i.waitForSync()));
  };

  return {
    metrics,
    identity,
    informers: { placements, clusterProfiles, placementDecisions, inventoryLossConfirmation },
    queue,
    start() {
      // With Leases, the shards come first (a cold start takes them in a round or two), then the placements
      // and PlacementDecisions list: with one shard whole once held; with more, metadata only. A shard
      // taken after a whole list began is read again once they synced (readHeld).
      const byShard: Informer<KubeObject>[] = [placements, placementDecisions];
      for (const informer of informers) if (!options.leaderElection || !byShard.includes(informer)) informer.start();
      let listed = false;
      let synced = false;
      let readAfterSync = false;
      if (options.leaderElection) {
        shards = new ShardCoordinator({
          client: hub,
          ...options.leaderElection,
          identity,
          logger,
          onAcquired: (shard) => {
            if (!listed) return;
            if (!synced) {
              readAfterSync = true;
              return;
            }
            readHeld();
            startLeading(shard);
          },
          onLost: () => {
            placements.dropUnheld();
            placementDecisions.dropUnheld();
            stopLeading();
          },
          onHolderChanged,
          otherInstall: (holder) => holder !== '' && installOf(holder) !== installOf(identity),
        });
        shards.start();
        void shards.tookFirst().then(() => {
          listed = true;
          if (!stopped) for (const informer of byShard) informer.start();
        });
      }
      void waitForSync().then(() => {
        if (stopped) return;
        synced = true;
        reconciler.watchInventoryLoss();
        logger.info('caches synced', {
          placements: placements.size,
          clusterProfiles: clusterProfiles.size,
          placementDecisions: placementDecisions.size,
          ...(shards ? { shards: shards.owned() } : {}),
        });
        if (!shards) return startLeading();
        shards.setSynced();
        if (readAfterSync) readHeld();
        for (const shard of shards.owned()) startLeading(shard);
      });
    },
    async stop(stopOptions = {}) {
      stopped = true;
      listRetry.wake();
      stopLeading(true);
      queue.shutDown();
      const timeout = new Promise((resolve) => setTimeout(resolve, options.shutdownTimeoutMs ?? 20_000).unref());
      await Promise.race([Promise.all([...inFlight, listing]), timeout]);
      await shards?.stop(stopOptions);
      // A loss record being written is waited for, so that the next replica to start reads it.
      await Promise.race([sharedLoss?.settled(), timeout]);
      await Promise.race([events?.flush(), timeout]);
      await Promise.all(informers.map((i) => i.stop()));
      hub.close();
      logger.info('stopped', { identity });
    },
    isReady: () => otherInstall === undefined && informers.every((i) => i.hasSynced()),
    standingByFor: () => otherInstall,
    waitForSync,
    isLeader,
    ownedShards: () => shards?.owned() ?? [],
    deferred: () => ({ placementDecisions: backlog.size, events: events?.pendingCount ?? 0 }),
  };
}

/** The install part of a Lease identity `<install>/<replica>`: everything before the last `/` ('' without one). */
export function installOf(identity: string): string {
  const slash = identity.lastIndexOf('/');
  return slash < 0 ? '' : identity.slice(0, slash);
}

const PRIORITY_NAMES: Record<Priority, string> = { 0: 'high', 1: 'normal', 2: 'low' };

/** A key no placement can have (names cannot contain a NUL); wakes idle workers. */
const WAKE_KEY = '\u0000wake';

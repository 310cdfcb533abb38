import {
  buildPlacementDecisions,
  clusterKey,
  compilePlacementSpec,
  crossNamespaceWorkload,
  CONDITION_SATISFIED,
  CONDITION_VALID,
  CONTROL_PLANE_HEALTHY,
  createInventory,
  decide,
  MAX_DECISIONS_PER_SLICE,
  placementDecisionName,
  PLACEMENT_API_VERSION,
  PLACEMENT_KEY_LABEL,
  PLACEMENT_KIND,
  setCondition,
  SignalSchema,
  TAINTS_ANNOTATION,
  type CapacityAnswer,
  type ClusterProfile,
  type CompiledSpec,
  type Condition,
  type Inventory,
  type PlacementSpec,
  type PlacementStatus,
  type PreviousSlice,
  type Signal,
  type Transition,
} from '@mco/core';
import {
  McoError,
  RepeatLimiter,
  silentLogger,
  toMcoError,
  type CapacitySignalSource,
  type CapacitySource,
  type Logger,
  type SignalError,
} from '@mco/runtime';
import {
  jsonEqual,
  objectKey,
  WriteOverlay,
  type Informer,
  type InformerEvent,
  type KubeObject,
} from '@mco/kube-runtime';
import type { EventRecorder, EventType } from './events.js';
import type { HubClient } from './kube.js';
import type { ControllerMetrics } from './metrics.js';
import { answerByDeadline, askCapacity, DEADLINE_GRACE_MS, serves } from './capacity.js';
import {
  CONFIRMED_AT_KEY,
  INVENTORY_LOSS_CONFIRMATION,
  MAX_CONFIRMATION_AHEAD_MS,
  readConfirmation,
  type InventoryLossGuard,
} from './inventory-guard.js';

/** Marks the PlacementDecisions this controller owns (the informer selects on it). */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'mco';
export const DECISIONS_LABEL_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE},${PLACEMENT_KEY_LABEL}`;

/** How soon an autoscaling placement is evaluated again after clusters were added to it. */
const NEW_CLUSTER_OBSERVE_MS = 1_000;

/** Satisfied=Unknown reasons when an autoscaling placement cannot get signals. */
export const REASON_NO_SIGNAL_SOURCE = 'NoSignalSource';
export const REASON_UNKNOWN_SIGNAL_SOURCE = 'UnknownSignalSource';
export const REASON_SIGNAL_SOURCE_NOT_ALLOWED = 'SignalSourceNotAllowed';

export interface ReconcilerOptions {
  readonly placements: Informer<KubeObject>;
  readonly clusterProfiles: Informer<KubeObject>;
  readonly placementDecisions: Informer<KubeObject>;
  readonly client: HubClient;
  readonly signalSources?: ReadonlyMap<string, CapacitySignalSource>;
  /** The source for autoscaling placements that name none. */
  readonly defaultSignalSource?: string | undefined;
  /** Per source, the placement namespaces that may use it; a source not in the map serves every namespace. */
  readonly signalSourceNamespaces?: ReadonlyMap<string, readonly string[]>;
  /** A trusted single-tenant hub: placements may name workloads in other namespaces. */
  readonly allowCrossNamespaceWorkloads?: boolean;
  readonly signalTimeoutMs?: number;
  /**
   * Capacity sources: every one serving an autoscaling placement's namespace
   * is asked about its next scale-out candidates, within the signal timeout,
   * and its answers go to the engine (`DecideInput.capacity`).
   */
  readonly capacitySources?: ReadonlyMap<string, CapacitySource>;
  /** Per capacity source, the placement namespaces that may use it; absent from the map: every namespace. */
  readonly capacitySourceNamespaces?: ReadonlyMap<string, readonly string[]>;
  /** How many scale-out candidates, in the engine's order, capacity sources are asked about (default 3). */
  readonly capacityCandidates?: number;
  /** Holds removals caused by missing ClusterProfiles after a sudden loss of many (docs/placement-rules.md §10.5). */
  readonly inventoryLossGuard?: InventoryLossGuard;
  /** Where the operator's confirmation is read: the ConfigMap INVENTORY_LOSS_CONFIRMATION (this informer holds it). */
  readonly inventoryLossConfirmation?: Informer<KubeObject>;
  /** Autoscaling placements are re-evaluated at least this often, to read fresh signals. */
  readonly signalPollIntervalMs?: number;
  /** A placement's repeated "could not observe" warning is logged at most this often, with a count (default 10 min). */
  readonly repeatedWarningIntervalMs?: number;
  readonly events?: EventRecorder;
  readonly metrics?: ControllerMetrics;
  readonly logger?: Logger;
  /** Checked before every write of a placement's status or decisions: only the replica owning its shard writes. */
  readonly isLeader?: (key: string) => boolean;
  /**
   * With shards: makes the placement and these PlacementDecisions whole in the caches (where they hold
   * stubs of a shard taken since), or throws a Conflict while the caches are behind (cache.ts).
   */
  readonly readWhole?: (key: string, decisionKeys: Iterable<string>, signal?: AbortSignal) => Promise<void>;
  readonly now?: () => Date;
}

export interface ReconcileResult {
  /** Reconcile again after this long (the engine's RequeueAfter, or the signal poll interval). */
  readonly requeueAfterMs: number | undefined;
  /** Whether the status was written. */
  readonly statusWritten: boolean;
  /**
   * Whether the placement's PlacementDecisions differ from its status (or it is gone and some are left):
   * `writeDecisions` brings them in line, later, in the lower-priority lane.
   */
  readonly decisionsBehind: boolean;
  /** Time spent evaluating (caches, signals, the engine) and writing the status. */
  readonly evaluateMs: number;
  readonly writeMs: number;
}

/** Thrown when this replica lost leadership before a write; the key is dropped, the new leader has it. */
export class NotLeaderError extends Error {
  override readonly name = 'NotLeaderError';
}

/** Kubernetes timestamps have one-second resolution, like the engine. */
function formatTime(date: Date): string {
  return new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * Reconciles one placement key (`namespace/name`), level-triggered: read
 * from the caches, ask the signal source, decide, and write the status only
 * where it differs, carrying the resourceVersion it was computed from. The
 * PlacementDecisions follow the status: `reconcile` says whether they are
 * behind, and `writeDecisions` writes them from the latest status (the
 * controller runs it when no status work waits).
 */
export class Reconciler {
  private readonly logger: Logger;
  private readonly isLeader: (key: string) => boolean;
  private readonly now: () => Date;
  private readonly sources: ReadonlyMap<string, CapacitySignalSource>;
  private readonly placementOverlay = new WriteOverlay<KubeObject>();
  private readonly decisionOverlay = new WriteOverlay<KubeObject>();
  /** Placement key -> keys of its PlacementDecisions in the cache. */
  private readonly decisionIndex = new Map<string, Set<string>>();
  private inventory: Inventory | undefined;
  /** Placement key -> resourceVersion returned by our last status write. */
  private readonly ownWrites = new Map<string, string>();
  /** PlacementDecision key -> resourceVersion of our last write, or null for our delete. */
  private readonly ownDecisionWrites = new Map<string, string | null>();
  /** Placement key (capacity: `capacity:` + key) -> when its signal-error warning was last logged. */
  private readonly signalWarnings: RepeatLimiter;
  /** The resourceVersion of the confirmation last refused: each write is reported once. */
  private refusedConfirmation: string | undefined;

  constructor(private readonly options: ReconcilerOptions) {
    this.logger = options.logger ?? silentLogger;
    this.isLeader = options.isLeader ?? (() => true);
    this.now = options.now ?? (() => new Date());
    this.sources = options.signalSources ?? new Map();
    this.signalWarnings = new RepeatLimiter(options.repeatedWarningIntervalMs ?? 600_000, () => this.now().getTime());
    options.clusterProfiles.addHandler(() => {
      this.inventory = undefined;
      this.watchInventoryLoss();
    });
    options.placements.addHandler((_event, object) => {
      const key = objectKey(object);
      this.placementOverlay.observe(key, options.placements.get(key));
    });
    options.placementDecisions.addHandler((event, object, previous) => {
      const key = objectKey(object);
      this.decisionOverlay.observe(key, options.placementDecisions.get(key));
      if (previous) this.unindex(previous, key);
      if (event !== 'delete') this.index(object, key);
    });
  }

  /** Whether this cache update is the echo of our own status write (it needs no reconcile). */
  isOwnStatusWrite(placement: KubeObject): boolean {
    const key = objectKey(placement);
    const rv = this.ownWrites.get(key);
    if (rv === undefined) return false;
    this.ownWrites.delete(key);
    return rv === placement.metadata?.resourceVersion;
  }

  /** Whether this PlacementDecision event is the echo of our own write or delete (it needs no reconcile). */
  isOwnDecisionWrite(event: InformerEvent, decision: KubeObject): boolean {
    const key = objectKey(decision);
    if (!this.ownDecisionWrites.has(key)) return false;
    const rv = this.ownDecisionWrites.get(key);
    this.ownDecisionWrites.delete(key);
    return event === 'delete' ? rv === null : rv === decision.metadata?.resourceVersion;
  }

  /** The placement key a PlacementDecision belongs to (its namespace and placement-key label). */
  static placementKeyOf(decision: KubeObject): string | undefined {
    // The owner names the placement in full; the label holds a hashed form of a long name.
    const owners = decision.metadata?.ownerReferences as
      { kind?: string; name?: string; controller?: boolean }[] | undefined;
    const owner = owners?.find((o) => o.kind === PLACEMENT_KIND && o.controller)?.name;
    const labels = decision.metadata?.labels as Record<string, string> | undefined;
    const name = owner ?? labels?.[PLACEMENT_KEY_LABEL];
    return name ? `${decision.metadata?.namespace}/${name}` : undefined;
  }

  /**
   * Feeds the ClusterProfile count (once the cache is whole) to the inventory-loss guard and reports changes.
   * Called on every ClusterProfile event, and once the caches synced: a standby replica, which does not
   * reconcile, then knows the count before a loss too, and holds after a failover as the leader did.
   */
  watchInventoryLoss(): void {
    const guard = this.options.inventoryLossGuard;
    if (!guard || !this.options.clusterProfiles.hasSynced()) return;
    const count = this.options.clusterProfiles.size;
    const change = guard.observe(count, this.now().getTime(), this.confirmationObject()?.metadata?.resourceVersion);
    if (change === 'engaged')
      this.logger.warn(
        'ClusterProfiles vanished suddenly; removals of their clusters are held until the count recovers or the removal is confirmed (mco clusters confirm-removal)',
        { before: guard.baseline, now: count },
      );
    else if (change === 'released')
      this.logger.info('the ClusterProfile count recovered; held removals resume', { now: count });
  }

  /** The operator's confirmation object, read from the API through its informer (every replica sees the same). */
  private confirmationObject(): KubeObject | undefined {
    return this.options.inventoryLossConfirmation?.list().find((o) => o.metadata?.name === INVENTORY_LOSS_CONFIRMATION);
  }

  /**
   * Whether the inventory-loss guard holds removals, after taking the
   * operator's confirmation into account. Placements play no part: nothing a
   * tenant writes can release the fleet-wide guard.
   */
  private holdsProfileLossRemovals(now: Date): boolean {
    const guard = this.options.inventoryLossGuard;
    if (!guard?.engaged) return false;
    const object = this.confirmationObject();
    const confirmation = readConfirmation(object);
    if (confirmation && 'error' in confirmation) {
      this.refuseConfirmation(object!, confirmation.error);
      return true;
    }
    const count = this.options.clusterProfiles.size;
    const outcome = guard.confirm(confirmation, count, now.getTime());
    if (outcome === 'ahead' || outcome === 'before') {
      const named = `data.${CONFIRMED_AT_KEY} (${formatTime(new Date(confirmation!.at))})`;
      this.refuseConfirmation(
        object!,
        outcome === 'ahead'
          ? `${named} is more than ${MAX_CONFIRMATION_AHEAD_MS / 1000} s ahead of the controller's clock (${formatTime(now)}): correct the clock and run mco clusters confirm-removal again`
          : `${named} is earlier than the loss of ClusterProfiles the controller saw at ${formatTime(new Date(guard.lossSeenAt!))}: check the clocks and run mco clusters confirm-removal again`,
      );
      return true;
    }
    if (outcome !== 'released') return true;
    this.logger.info('the loss of ClusterProfiles was confirmed; held removals resume', {
      confirmation: objectKey(object!),
      confirmedAt: formatTime(new Date(confirmation!.at)),
      profiles: count,
    });
    return false;
  }

  /** Reports a confirmation the guard does not apply (a log line and a Warning Event on it), once per write. */
  private refuseConfirmation(object: KubeObject, reason: string): void {
    const version = object.metadata?.resourceVersion;
    if (version === this.refusedConfirmation) return;
    this.refusedConfirmation = version;
    const message = `the inventory-loss confirmation is refused; held removals stay held: ${reason}`;
    this.logger.warn(message, { confirmation: objectKey(object) });
    this.options.events?.record(
      { apiVersion: 'v1', kind: 'ConfigMap', ...object },
      'Warning',
      'InventoryLossConfirmationRefused',
      message,
    );
  }

  /** The fleet snapshot, built once per ClusterProfile change and shared by every placement. */
  currentInventory(): Inventory {
    if (!this.inventory) {
      this.inventory = createInventory(this.options.clusterProfiles.list() as unknown as ClusterProfile[]);
      // The first reconcile records the count the initial listing brought (its events came before the sync).
      this.watchInventoryLoss();
    }
    return this.inventory;
  }

  /** With shards: the placement and its PlacementDecisions whole in the caches before anything reads them. */
  async readWhole(key: string, abort?: AbortSignal): Promise<void> {
    await this.options.readWhole?.(key, this.decisionIndex.get(key) ?? [], abort);
  }

  async reconcile(key: string, abort?: AbortSignal): Promise<ReconcileResult> {
    const started = performance.now();
    await this.readWhole(key, abort);
    const cached = this.options.placements.get(key);
    const placement = this.placementOverlay.resolve(key, cached);
    if (!placement) {
      this.ownWrites.delete(key);
      this.signalWarnings.forget(key);
      const decisionsBehind = this.planDecisions(key, undefined).length > 0;
      return { requeueAfterMs: undefined, statusWritten: false, decisionsBehind, evaluateMs: 0, writeMs: 0 };
    }
    if (placement.metadata?.deletionTimestamp)
      return { requeueAfterMs: undefined, statusWritten: false, decisionsBehind: false, evaluateMs: 0, writeMs: 0 };

    const now = this.now();
    const previous = (placement.status ?? {}) as PlacementStatus;
    const generation = placement.metadata?.generation as number | undefined;
    const inventory = this.currentInventory();
    const evaluation = await this.evaluate(placement, previous, generation, inventory, now, abort);
    const evaluated = performance.now();

    let current = placement;
    let statusWritten = false;
    if (!jsonEqual(evaluation.status, placement.status ?? {})) {
      current = await this.writeStatus(key, placement, evaluation.status);
      statusWritten = true;
      this.announce(placement, previous, evaluation.status, evaluation.transitions);
    }
    return {
      requeueAfterMs: evaluation.requeueAfterMs,
      statusWritten,
      decisionsBehind: this.planDecisions(key, current).length > 0,
      evaluateMs: evaluated - started,
      writeMs: performance.now() - evaluated,
    };
  }

  private async evaluate(
    placement: KubeObject,
    previous: PlacementStatus,
    generation: number | undefined,
    inventory: Inventory,
    now: Date,
    abort: AbortSignal | undefined,
  ): Promise<{ status: PlacementStatus; transitions: readonly Transition[]; requeueAfterMs: number | undefined }> {
    const metadata = placement.metadata as { name: string; namespace?: string; generation?: number };
    const compiled = compilePlacementSpec(placement.spec);
    const isolated = this.options.allowCrossNamespaceWorkloads !== true;
    // A workload in another namespace is never observed: the engine reports the spec invalid.
    const autoscale =
      compiled.ok && !(isolated && crossNamespaceWorkload(compiled.value.spec, metadata.namespace))
        ? compiled.value.spec.scaling?.autoscaleForCapacity
        : undefined;
    let signals: readonly Signal[] = [];
    let signalErrors: readonly SignalError[] | undefined;
    let pollMs: number | undefined;
    let missingSource: { reason: string; message: string } | undefined;
    // An invalid spec needs no signals: the engine reports it and changes no cluster.
    // Capacity answers are asked for alongside the signals, within the same deadline.
    const capacity =
      compiled.ok && autoscale
        ? this.askCapacity(placement, previous, compiled.value, inventory, now, abort)
        : Promise.resolve(undefined);
    // Awaited below; until then (or when observing throws) its rejection is not unhandled.
    capacity.catch(() => undefined);
    if (compiled.ok && autoscale) {
      const name = autoscale.signalSource ?? this.options.defaultSignalSource;
      const usable = (n: string) => this.servesNamespace(n, metadata.namespace);
      const source = name === undefined || !usable(name) ? undefined : this.sources.get(name);
      if (source) {
        const observed = await this.observe(name!, source, placement, previous, compiled.value.spec, inventory, abort);
        signals = observed.signals;
        signalErrors = observed.errors;
        pollMs = this.options.signalPollIntervalMs ?? 30_000;
      } else {
        // Decide with no signals: the engine's fail-static rule places up to
        // the minimum and never scales out or in on missing data.
        // Only the sources this namespace may use are named: other teams' stay unknown to it.
        const configured = [...this.sources.keys()].filter(usable).sort().join(', ') || 'none';
        missingSource =
          name === undefined
            ? {
                reason: REASON_NO_SIGNAL_SOURCE,
                message: 'no capacity-signal source is configured (see --signal-sources)',
              }
            : this.sources.has(name) && !usable(name)
              ? {
                  reason: REASON_SIGNAL_SOURCE_NOT_ALLOWED,
                  message: `capacity-signal source "${name}" does not serve namespace "${metadata.namespace ?? ''}" (its placementNamespaces; usable here: ${configured})`,
                }
              : {
                  reason: REASON_UNKNOWN_SIGNAL_SOURCE,
                  message: `capacity-signal source "${name}" is not configured (usable here: ${configured})`,
                };
      }
    }
    const answers = await capacity;
    const decision = decide({
      now,
      placement: { metadata, spec: placement.spec, status: previous },
      clusterProfiles: inventory,
      signals,
      ...(answers ? { capacity: answers } : {}),
      holdProfileLossRemovals: this.holdsProfileLossRemovals(now),
      requireWorkloadInPlacementNamespace: isolated,
    });
    const status = missingSource
      ? withoutSignalSource(decision.status, previous, missingSource, now)
      : signalErrors === undefined
        ? withoutCondition(decision.status, CONDITION_SIGNALS_OBSERVED)
        : withSignalCondition(decision.status, signalErrors, generation, now);
    // A cluster just added has not been observed yet: look again soon, not a poll interval later.
    if (pollMs !== undefined && decision.transitions.some((t) => t.id === 'P1' || t.id === 'P3'))
      pollMs = Math.min(pollMs, NEW_CLUSTER_OBSERVE_MS);
    const engineMs = decision.requeueAfterSeconds === null ? undefined : decision.requeueAfterSeconds * 1000;
    const requeueAfterMs =
      engineMs === undefined ? pollMs : pollMs === undefined ? engineMs : Math.min(engineMs, pollMs);
    return { status, transitions: decision.transitions, requeueAfterMs };
  }

  /** Whether a placement in `namespace` may use the signal source `name` (its `placementNamespaces`). */
  private servesNamespace(name: string, namespace: string | undefined): boolean {
    return serves(this.options.signalSourceNamespaces, name, namespace);
  }

  /** Asks the capacity sources (askCapacity), logging and counting what they could not answer. */
  private askCapacity(
    placement: KubeObject,
    previous: PlacementStatus,
    compiled: Extract<CompiledSpec, { ok: true }>['value'],
    inventory: Inventory,
    now: Date,
    abort: AbortSignal | undefined,
  ): Promise<readonly CapacityAnswer[] | undefined> {
    const namespace = String(placement.metadata?.namespace);
    const name = String(placement.metadata?.name);
    const placementKey = `${namespace}/${name}`;
    return askCapacity({
      sources: this.options.capacitySources ?? new Map(),
      ...(this.options.capacitySourceNamespaces ? { sourceNamespaces: this.options.capacitySourceNamespaces } : {}),
      ...(this.options.capacityCandidates ? { candidates: this.options.capacityCandidates } : {}),
      placement: { namespace, name },
      status: previous,
      compiled,
      inventory,
      now,
      timeoutMs: this.options.signalTimeoutMs ?? 10_000,
      ...(abort ? { abort } : {}),
      report: {
        failed: (source, error) => {
          this.options.metrics?.capacityErrors.inc({ source });
          this.logger.warn('the capacity source gave no answer; the engine keeps its order', {
            placement: placementKey,
            source,
            error: toMcoError(error).message,
          });
        },
        errors: (source, errors) => {
          const sorted = sortSignalErrors(errors);
          if (sorted.length === 0) {
            this.signalWarnings.forget(`capacity:${placementKey}`);
            return;
          }
          this.options.metrics?.capacityErrors.inc({ source }, sorted.length);
          const held = this.signalWarnings.admit(`capacity:${placementKey}`);
          if (held !== undefined) {
            this.logger.warn('the capacity source could not answer for some clusters', {
              placement: placementKey,
              source,
              errors: sorted.slice(0, 5),
              ...(held > 0 ? { repeatedSinceLastLog: held } : {}),
            });
          }
        },
        invalid: (source, answer) =>
          this.logger.warn('dropping an invalid capacity answer', { source, cluster: String(answer.cluster) }),
      },
    });
  }

  /** Asks the source about the listed clusters; invalid signals are dropped (a missing signal is safe). */
  private async observe(
    name: string,
    source: CapacitySignalSource,
    placement: KubeObject,
    previous: PlacementStatus,
    spec: PlacementSpec,
    inventory: Inventory,
    abort: AbortSignal | undefined,
  ): Promise<{ signals: readonly Signal[]; errors: readonly SignalError[] }> {
    const clusters = [];
    for (const c of previous.clusters ?? []) {
      const cluster = inventory.byKey.get(clusterKey(c.namespace, c.name));
      if (cluster) clusters.push({ key: cluster.key, profile: cluster.profile });
    }
    const timeoutMs = this.options.signalTimeoutMs ?? 10_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = abort ? AbortSignal.any([abort, timeout]) : timeout;
    let observation: Awaited<ReturnType<CapacitySignalSource['observe']>>;
    try {
      observation = await answerByDeadline(
        source.observe(
          {
            placement: {
              namespace: String(placement.metadata?.namespace),
              name: String(placement.metadata?.name),
              spec,
            },
            clusters,
          },
          signal,
        ),
        timeout,
        DEADLINE_GRACE_MS,
      );
    } catch (error) {
      if (!timeout.aborted || abort?.aborted) {
        this.options.metrics?.signalErrors.inc({ source: name });
        throw toMcoError(error, `signal source "${name}"`);
      }
      // A source that rejects or hangs at the deadline (instead of answering with what it has,
      // as the contract asks) costs its signals, never the placement's evaluation.
      observation = {
        signals: [],
        errors: clusters.map((c) => ({
          cluster: c.key,
          code: 'Timeout' as const,
          message: `signal source "${name}" gave no answer within the signal timeout (${timeoutMs / 1000} s); signal left missing`,
        })),
      };
    }
    const errors = sortSignalErrors(observation.errors);
    const placementKey = `${placement.metadata?.namespace}/${placement.metadata?.name}`;
    if (errors.length > 0) {
      this.options.metrics?.signalErrors.inc({ source: name }, errors.length);
      const held = this.signalWarnings.admit(placementKey);
      if (held !== undefined) {
        this.logger.warn('the signal source could not observe some clusters; their signals are missing', {
          placement: placementKey,
          source: name,
          errors: errors.slice(0, 5),
          ...(held > 0 ? { repeatedSinceLastLog: held } : {}),
        });
      }
    } else {
      this.signalWarnings.forget(placementKey);
    }
    const signals: Signal[] = [];
    for (const s of observation.signals) {
      const parsed = SignalSchema.safeParse(s);
      if (parsed.success) signals.push(parsed.data);
      else this.logger.warn('dropping an invalid signal', { source: name, issue: parsed.error.issues[0]?.message });
    }
    return { signals, errors };
  }

  private async writeStatus(key: string, placement: KubeObject, status: PlacementStatus): Promise<KubeObject> {
    if (!this.isLeader(key)) throw new NotLeaderError('not the leader');
    const body: KubeObject = { ...placement, status };
    try {
      const written = await this.options.client.replacePlacementStatus(body);
      this.options.metrics?.statusWrites.inc({ result: 'written' });
      this.placementOverlay.set(key, placement.metadata?.resourceVersion, written);
      const rv = written.metadata?.resourceVersion;
      if (rv) this.ownWrites.set(key, rv);
      return written;
    } catch (error) {
      const e = toMcoError(error, `writing the status of ${key}`);
      this.options.metrics?.statusWrites.inc({ result: e.code === 'Conflict' ? 'conflict' : 'error' });
      throw e;
    }
  }

  /** Events and metrics for what a written status changed. */
  private announce(
    placement: KubeObject,
    previous: PlacementStatus,
    status: PlacementStatus,
    transitions: readonly Transition[],
  ): void {
    const byKey = new Map((status.clusters ?? []).map((c) => [clusterKey(c.namespace, c.name), c]));
    // One Event per transition id and reason, listing its clusters: a new
    // placement over a large fleet makes one "P1Added" Event, not hundreds.
    const groups = new Map<string, { type: EventType; transitions: Transition[] }>();
    const key = `${placement.metadata?.namespace ?? ''}/${placement.metadata?.name ?? ''}`;
    for (const t of transitions) {
      this.options.metrics?.transitions.inc({ transition: t.id });
      // One line per transition: what an operator greps for (docs/operations.md#logs).
      this.logger.info('transition', {
        placement: key,
        cluster: t.cluster,
        from: t.from ?? 'not listed',
        to: t.to ?? 'removed',
        transition: t.id,
        reason: t.reason,
      });
      const reason = `${t.id}${t.to === null ? 'Removed' : (byKey.get(t.cluster)?.reason ?? t.to)}`;
      const type = t.id === 'H1' || t.id === 'H3' || t.id === 'R2' ? 'Warning' : 'Normal';
      const group = groups.get(reason) ?? { type, transitions: [] };
      group.transitions.push(t);
      groups.set(reason, group);
    }
    for (const [reason, { type, transitions: list }] of groups) {
      const first = list[0]!;
      const names = list.slice(0, 10).map((t) => t.cluster);
      const more = list.length > 10 ? ` and ${list.length - 10} more` : '';
      this.options.events?.record(
        placement,
        type,
        reason,
        `${names.join(', ')}${more}: ${first.from ?? 'not listed'} -> ${first.to ?? 'removed'}: ${first.reason}`,
      );
    }
    for (const type of [CONDITION_VALID, CONDITION_SATISFIED]) {
      const before = previous.conditions?.find((c) => c.type === type);
      const after = status.conditions?.find((c) => c.type === type);
      if (!after || (before?.status === after.status && before?.reason === after.reason)) continue;
      if (after.status === 'True' && !before) continue; // the normal start needs no event
      this.options.events?.record(
        placement,
        after.status === 'False' || after.reason === 'InventoryShrunk' ? 'Warning' : 'Normal',
        after.reason ?? type,
        `${type}=${after.status}: ${after.message ?? ''}`,
      );
    }
  }

  /**
   * Brings the placement's PlacementDecision slices in line with its latest
   * status (the cache, or our own write it has not shown yet), or deletes
   * them once the placement is gone. Returns how many objects it wrote.
   */
  async writeDecisions(key: string): Promise<number> {
    const placement = this.placementOverlay.resolve(key, this.options.placements.get(key));
    // A placement being deleted: its owner references let the garbage collector take them.
    if (placement?.metadata?.deletionTimestamp) return 0;
    const plan = this.planDecisions(key, placement);
    for (const step of plan) {
      if (!this.isLeader(key)) throw new NotLeaderError('not the leader');
      if (step.want) await this.putDecision(step.key, step.want, step.have);
      else await this.deleteDecision(step.key, step.have!);
    }
    return plan.length;
  }

  /** The PlacementDecision writes that would bring `key`'s slices in line with `placement`'s status. */
  private planDecisions(key: string, placement: KubeObject | undefined): DecisionStep[] {
    const existing = new Map<string, KubeObject>();
    for (const decisionKey of this.decisionIndex.get(key) ?? []) {
      const object = this.decisionOverlay.resolve(decisionKey, this.options.placementDecisions.get(decisionKey));
      if (object) existing.set(decisionKey, object);
    }
    const steps: DecisionStep[] = [];
    const desired = placement ? this.desiredDecisions(placement, existing) : [];
    for (const want of desired) {
      const decisionKey = objectKey(want);
      const have = existing.get(decisionKey) ?? this.decisionOverlay.resolve(decisionKey, undefined);
      existing.delete(decisionKey);
      if (!have || !sameDecision(have, want)) steps.push({ key: decisionKey, want, have });
    }
    for (const [decisionKey, stale] of existing) steps.push({ key: decisionKey, have: stale });
    return steps;
  }

  private async putDecision(decisionKey: string, want: KubeObject, have: KubeObject | undefined): Promise<void> {
    const operation = have ? 'update' : 'create';
    try {
      const written = have
        ? await this.options.client.replacePlacementDecision({
            ...want,
            metadata: { ...want.metadata, resourceVersion: have.metadata?.resourceVersion },
          })
        : await this.options.client.createPlacementDecision(want);
      this.options.metrics?.decisionWrites.inc({ operation, result: 'written' });
      this.decisionOverlay.set(decisionKey, have?.metadata?.resourceVersion, written);
      if (written.metadata?.resourceVersion) this.ownDecisionWrites.set(decisionKey, written.metadata.resourceVersion);
    } catch (error) {
      const e = toMcoError(error, `${operation} PlacementDecision ${decisionKey}`);
      this.options.metrics?.decisionWrites.inc({ operation, result: e.code === 'Conflict' ? 'conflict' : 'error' });
      throw e;
    }
  }

  private async deleteDecision(decisionKey: string, stale: KubeObject): Promise<void> {
    try {
      await this.options.client.deletePlacementDecision(
        String(stale.metadata?.namespace),
        String(stale.metadata?.name),
        stale.metadata?.uid as string | undefined,
      );
      this.options.metrics?.decisionWrites.inc({ operation: 'delete', result: 'written' });
    } catch (error) {
      const e = toMcoError(error, `delete PlacementDecision ${decisionKey}`);
      if (e.code !== 'NotFound') {
        this.options.metrics?.decisionWrites.inc({ operation: 'delete', result: 'error' });
        throw e;
      }
    }
    this.decisionOverlay.set(decisionKey, stale.metadata?.resourceVersion, null);
    this.ownDecisionWrites.set(decisionKey, null);
  }

  /**
   * The slices `placement`'s status wants, built around those written before
   * (`existing`, and our own creates the cache does not show yet), so that a
   * cluster in or out rewrites one slice.
   */
  private desiredDecisions(placement: KubeObject, existing: ReadonlyMap<string, KubeObject>): KubeObject[] {
    const metadata = placement.metadata as { name: string; namespace?: string; uid?: string };
    const status = placement.status as PlacementStatus | undefined;
    const previous = [...existing.values()];
    const count = Math.ceil((status?.clusters?.length ?? 0) / MAX_DECISIONS_PER_SLICE);
    for (let index = 0; index < count; index++) {
      const decisionKey = `${metadata.namespace}/${placementDecisionName(metadata.name, index)}`;
      const created = existing.has(decisionKey) ? undefined : this.decisionOverlay.resolve(decisionKey, undefined);
      if (created) previous.push(created);
    }
    return buildPlacementDecisions({ metadata }, status, previous as unknown as PreviousSlice[]).map((d) => ({
      ...d,
      metadata: {
        ...d.metadata,
        labels: { ...d.metadata.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
        // For a cluster's garbage collector; the controller also deletes them itself.
        ownerReferences: [
          {
            apiVersion: PLACEMENT_API_VERSION,
            kind: PLACEMENT_KIND,
            name: metadata.name,
            uid: String(metadata.uid),
            controller: true,
          },
        ],
      },
    })) as unknown as KubeObject[];
  }

  private index(decision: KubeObject, decisionKey: string): void {
    const key = Reconciler.placementKeyOf(decision);
    if (!key) return;
    let keys = this.decisionIndex.get(key);
    if (!keys) this.decisionIndex.set(key, (keys = new Set()));
    keys.add(decisionKey);
  }

  private unindex(decision: KubeObject, decisionKey: string): void {
    const key = Reconciler.placementKeyOf(decision);
    const keys = key ? this.decisionIndex.get(key) : undefined;
    if (!keys) return;
    keys.delete(decisionKey);
    if (keys.size === 0) this.decisionIndex.delete(key!);
  }
}

/**
 * Whether a ClusterProfile change can change a decision: what the engine
 * reads (labels, taints, deletion, the ControlPlaneHealthy condition) changed, or the
 * profile came or went. Status heartbeats and property updates do not
 * re-evaluate every placement.
 */
export function affectsDecisions(event: InformerEvent, profile: KubeObject, previous: KubeObject | undefined): boolean {
  if (event !== 'update' || !previous) return true;
  const healthy = (p: KubeObject) =>
    (p.status as { conditions?: { type: string; status?: string }[] } | undefined)?.conditions?.find(
      (c) => c.type === CONTROL_PLANE_HEALTHY,
    )?.status;
  return (
    !jsonEqual(profile.metadata?.labels ?? {}, previous.metadata?.labels ?? {}) ||
    profile.metadata?.deletionTimestamp !== previous.metadata?.deletionTimestamp ||
    profile.metadata?.annotations?.[TAINTS_ANNOTATION] !== previous.metadata?.annotations?.[TAINTS_ANNOTATION] ||
    healthy(profile) !== healthy(previous)
  );
}

/** One PlacementDecision write: `want` created or replacing `have`, or `have` deleted. */
interface DecisionStep {
  readonly key: string;
  readonly want?: KubeObject;
  readonly have?: KubeObject | undefined;
}

/** What the controller writes into a PlacementDecision, compared field by field. */
function sameDecision(have: KubeObject, want: KubeObject): boolean {
  const h = have.metadata ?? {};
  const w = want.metadata ?? {};
  return (
    jsonEqual(h.labels, w.labels) &&
    jsonEqual(h.ownerReferences, w.ownerReferences) &&
    have.schedulerName === want.schedulerName &&
    jsonEqual(have.decisions ?? [], want.decisions ?? [])
  );
}

/**
 * An autoscaling placement decided without signals: the engine placed it up
 * to its minimum and scales neither out nor in. Satisfied says so and names
 * the missing source; an engine verdict of False (no eligible cluster,
 * maxClusters) stays False, with the missing source added to its message.
 */
export function withoutSignalSource(
  status: PlacementStatus,
  previous: PlacementStatus,
  missing: { readonly reason: string; readonly message: string },
  now: Date,
): PlacementStatus {
  const decided = withoutCondition(status, CONDITION_SIGNALS_OBSERVED);
  const satisfied = decided.conditions?.find((c) => c.type === CONDITION_SATISFIED);
  if (!satisfied) return decided;
  const placed = (decided.clusters ?? []).filter((c) => c.state === 'ACTIVE').length;
  const condition: Condition =
    satisfied.status === 'False'
      ? { ...satisfied, message: `${satisfied.message ?? ''}; ${missing.message}` }
      : {
          ...satisfied,
          status: 'Unknown',
          reason: missing.reason,
          message: `placed on ${placed} ACTIVE cluster(s), up to minClustersBelowCapacityCeiling; it cannot scale out or in: ${missing.message}`,
        };
  // The engine saw the previous Unknown as a change to True: the transition
  // time comes from the previous status, or every evaluation would rewrite it.
  const before = previous.conditions?.find((c) => c.type === CONDITION_SATISFIED);
  const lastTransitionTime =
    before?.status === condition.status && before.lastTransitionTime ? before.lastTransitionTime : formatTime(now);
  return {
    ...decided,
    conditions: decided.conditions!.map((c) => (c === satisfied ? { ...condition, lastTransitionTime } : c)),
  };
}

/** Condition type that says whether the signal source could observe every listed cluster. */
export const CONDITION_SIGNALS_OBSERVED = 'SignalsObserved';

function withoutCondition(status: PlacementStatus, type: string): PlacementStatus {
  if (!status.conditions?.some((c) => c.type === type)) return status;
  return { ...status, conditions: status.conditions.filter((c) => c.type !== type) };
}

/**
 * Signal errors in a total order (cluster, code, message): a source observes
 * clusters concurrently and reports them in the order they finish, and a
 * status written from that order would change with nothing changed.
 */
export function sortSignalErrors(errors: readonly SignalError[]): SignalError[] {
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...errors].sort(
    (a, b) => compare(a.cluster, b.cluster) || compare(a.code, b.code) || compare(a.message, b.message),
  );
}

/** Adds SignalsObserved: False names the clusters without a (complete) signal and why (errors sorted). */
function withSignalCondition(
  status: PlacementStatus,
  errors: readonly SignalError[],
  generation: number | undefined,
  now: Date,
): PlacementStatus {
  const message =
    errors.length === 0
      ? 'every listed cluster was observed'
      : errors
          .slice(0, 5)
          // Codes only: a source's message may carry remote text (a member's error body,
          // a credential file's line); it goes to the log, never to a tenant's status.
          .map((e) => `${e.cluster}: ${e.code}`)
          .join('; ') + (errors.length > 5 ? `; and ${errors.length - 5} more` : '');
  const conditions = setCondition(
    status.conditions,
    {
      type: CONDITION_SIGNALS_OBSERVED,
      status: errors.length === 0 ? 'True' : 'False',
      reason: errors.length === 0 ? 'Observed' : 'ObserveFailed',
      message: message.slice(0, 2048),
      observedGeneration: generation,
    },
    formatTime(now),
  );
  return { ...status, conditions };
}

export { McoError };

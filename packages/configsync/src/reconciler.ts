import { PlacementSchema, setCondition, type ClusterProfile, type Placement, type PlacementCluster } from '@mco/core';
import { readPlacementStatus, syncOwnedObjects, type KubeObject } from '@mco/kube-runtime';
import { McoError, httpStatusOf, silentLogger, toMcoError, type Logger } from '@mco/runtime';
import { MEMBER_RESOURCES, type ExistingObject, type HubWriter, type MemberObjects } from './kube.js';
import {
  CLEANUP_FINALIZER,
  DELIVERED_ANNOTATION,
  isConfigSyncPlacement,
  mergeRefs,
  readRecord,
  writeRecord,
} from './record.js';
import {
  CONDITION_TYPE,
  summarizeCondition,
  summarizeSyncStatus,
  type ClusterPhase,
  type ClusterReport,
  type SyncStatus,
} from './sync-status.js';
import {
  APPLIED_HASH_ANNOTATION,
  CLUSTER_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PLACEMENT_ANNOTATION,
  TEMPLATE_ANNOTATION,
  desiredObjects,
  formatRef,
  parseTemplate,
  refOf,
  type MemberObject,
  type MemberObjectRef,
  type TemplatePolicy,
} from './template.js';

/** The part of an informer the reconciler reads (`Informer` of @mco/kube-runtime fits it). */
export interface Cache<T> {
  get(key: string): T | undefined;
  hasSynced(): boolean;
}

export interface ReconcilerOptions {
  readonly placements: Cache<Placement>;
  readonly clusterProfiles: Cache<ClusterProfile>;
  /** The member calls for a cluster; rejects when it cannot be reached (no access, no credential). */
  readonly member: (profile: ClusterProfile) => Promise<MemberObjects>;
  readonly hub: HubWriter;
  /** What a template may deliver (default: RepoSyncs in the placement's namespace, RoleBindings to ClusterRole/edit). */
  readonly templatePolicy?: TemplatePolicy;
  /** Member clusters of one placement worked on at once (default 8). */
  readonly clusterConcurrency?: number;
  readonly now?: () => Date;
  readonly logger?: Logger;
}

export interface ReconcileResult {
  /** Something failed or could not be reached: retry with backoff. */
  readonly retry: boolean;
  /** Waiting on Config Sync (a finalizer, a first status): look again soon. */
  readonly waiting: boolean;
  /** Writes made on members (applies and deletes) and on the hub. */
  readonly memberWrites: number;
  readonly hubWrites: number;
}

interface ClusterOutcome {
  readonly report: ClusterReport;
  /** The refs to keep in the record for this cluster; empty once everything there is gone. */
  readonly refs: readonly MemberObjectRef[];
  readonly writes: number;
  /** What this pass did there, for the placement's Events: created the sync object (its ref) or removed everything. */
  readonly change?: { created: string } | 'removed';
}

const isSync = (ref: MemberObjectRef) => ref.kind !== 'RoleBinding';

/**
 * Level-triggered Config Sync delivery for one placement: reads it from the
 * cache, applies the template on every listed cluster and removes it from
 * clusters that left — and from every cluster when the placement is deleted.
 *
 * Safety, in order: nothing happens before both caches synced; an invalid
 * placement, template or record changes nothing on any member; a cluster is
 * written into the record (annotation `configsync.mco.x-k8s.io/delivered`)
 * before anything is applied there and leaves it only when its objects are
 * confirmed gone, so nothing is forgotten; an object mco did not create is
 * never changed or deleted; an unreachable member keeps what it has and is
 * retried with backoff. Only a cluster that is in the record and no longer
 * listed in the (valid) status is cleaned up.
 */
export function createReconciler(options: ReconcilerOptions) {
  const logger = (options.logger ?? silentLogger).child({ component: 'configsync' });
  const now = options.now ?? (() => new Date());
  const concurrency = options.clusterConcurrency ?? 8;
  /** Last phase reported per placement and cluster, so an Event is recorded on a change only. */
  const phases = new Map<string, Map<string, ClusterPhase>>();
  /** Last warning per placement (invalid template, record or placement), so it is recorded once. */
  const warnings = new Map<string, string>();

  const event = (p: Placement, type: 'Normal' | 'Warning', reason: string, message: string) =>
    options.hub.createEvent(p, type, reason, message).catch((error: unknown) => {
      logger.warn('cannot record an event', { reason, error: toMcoError(error) });
    });

  /** Reports a problem that stops this placement's delivery (nothing is changed anywhere). */
  async function stopWith(p: Placement, key: string, reason: string, message: string): Promise<ReconcileResult> {
    logger.warn('placement left as it is', { placement: key, reason, message });
    let hubWrites = 0;
    if (warnings.get(key) !== message) {
      warnings.set(key, message);
      await event(p, 'Warning', reason, message);
      hubWrites += 1 + (await writeCondition(p, { status: 'False', reason, message }));
    }
    return { retry: false, waiting: false, memberWrites: 0, hubWrites };
  }

  async function writeCondition(
    p: Placement,
    next: { status: 'True' | 'False' | 'Unknown'; reason: string; message: string },
  ): Promise<number> {
    const previous = p.status?.conditions?.find((c) => c.type === CONDITION_TYPE);
    if (previous?.status === next.status && previous.reason === next.reason && previous.message === next.message) {
      return 0;
    }
    const stamp = now()
      .toISOString()
      .replace(/\.\d+Z$/, 'Z');
    const [condition] = setCondition(previous ? [previous] : [], { type: CONDITION_TYPE, ...next }, stamp);
    await options.hub.applyCondition(p, condition!);
    return 1;
  }

  async function reconcile(key: string): Promise<ReconcileResult> {
    const idle: ReconcileResult = { retry: false, waiting: false, memberWrites: 0, hubWrites: 0 };
    // An unsynced cache looks like deleted placements and profiles: do nothing yet.
    if (!options.placements.hasSynced() || !options.clusterProfiles.hasSynced()) return { ...idle, waiting: true };
    const raw = options.placements.get(key);
    if (!raw) {
      phases.delete(key);
      warnings.delete(key);
      return idle;
    }
    if (!isConfigSyncPlacement(raw)) return idle;
    const parsed = PlacementSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return stopWith(raw, key, 'InvalidPlacement', `${issue.path.join('.')}: ${issue.message}; nothing changed`);
    }
    const placement = parsed.data;
    const record = readRecord(placement);
    if (!record.ok) return stopWith(placement, key, 'InvalidRecord', `${record.error}; nothing changed`);
    const deleting = placement.metadata.deletionTimestamp !== undefined;
    const template = parseTemplate(placement, options.templatePolicy);
    if (!template && record.record.size === 0) {
      // No template and nothing delivered: not (or no longer) a Config Sync placement; let go of it.
      return { ...idle, hubWrites: await writeMetadata(placement, record.record, true) };
    }
    if (!deleting && !template?.ok) {
      const why = template ? template.error : `annotation ${TEMPLATE_ANNOTATION} was removed`;
      return stopWith(placement, key, template ? 'InvalidTemplate' : 'TemplateMissing', `${why}; nothing changed`);
    }
    const tpl = template?.ok ? template.template : undefined;
    // Deleting: every recorded cluster leaves. Otherwise: every listed cluster, whatever its state —
    // and nothing at all changes while the status gives no information (shared rule of every adapter).
    let listed: readonly PlacementCluster[] = [];
    if (!deleting && tpl) {
      const reading = readPlacementStatus(placement);
      if (!reading.ok && reading.why === 'Invalid') {
        return stopWith(placement, key, 'InvalidPlacementStatus', `${reading.reason}; nothing changed`);
      }
      if (!reading.ok) {
        // Not evaluated yet (or restored without its status): wait for the controller.
        logger.debug('placement left as it is until the controller evaluates it', {
          placement: key,
          reason: reading.reason,
        });
        return { ...idle, waiting: true };
      }
      listed = reading.clusters;
    }
    warnings.delete(key);

    const desired = new Map<string, PlacementCluster>(listed.map((c) => [`${c.namespace ?? ''}/${c.name}`, c]));
    const objects = new Map(
      [...desired].map(([c, cluster]) => [c, tpl ? desiredObjects(tpl, placement, cluster) : []]),
    );

    // Record first: a cluster is known before anything is applied there.
    let hubWrites = 0;
    const recorded = new Map(record.record);
    for (const [c, objs] of objects) recorded.set(c, mergeRefs(recorded.get(c) ?? [], objs.map(refOf)));
    hubWrites += await writeMetadata(placement, recorded, deleting);

    const clusters = [...new Set([...desired.keys(), ...recorded.keys()])].sort();
    const outcomes = new Map<string, ClusterOutcome>();
    await forEachLimited(clusters, concurrency, async (c) => {
      outcomes.set(c, await reconcileCluster(key, c, objects.get(c), recorded.get(c) ?? []));
    });

    const after = new Map<string, readonly MemberObjectRef[]>();
    for (const [c, outcome] of outcomes) if (outcome.refs.length > 0) after.set(c, outcome.refs);
    hubWrites += await writeMetadata(placement, after, deleting);

    const reports = [...outcomes.values()].map((o) => o.report);
    if (!deleting) hubWrites += await writeCondition(placement, summarizeCondition(reports));
    hubWrites += await recordEvents(placement, key, outcomes);

    return {
      retry: reports.some((r) => r.phase === 'Unreachable'),
      waiting: reports.some((r) => r.phase === 'Deleting' || r.phase === 'Syncing'),
      memberWrites: [...outcomes.values()].reduce((n, o) => n + o.writes, 0),
      hubWrites,
    };
  }

  /**
   * Writes the record and the cleanup finalizer when they differ from the
   * placement's; the finalizer goes once nothing is recorded while deleting.
   * Updates the (parsed, private) copy so a second call compares with what was written.
   */
  async function writeMetadata(
    placement: Placement,
    next: ReadonlyMap<string, readonly MemberObjectRef[]>,
    deleting: boolean,
  ): Promise<number> {
    const meta = placement.metadata as Placement['metadata'] & { finalizers?: string[] };
    const text = writeRecord(next);
    const hasFinalizer = (meta.finalizers ?? []).includes(CLEANUP_FINALIZER);
    const wantFinalizer = !deleting || next.size > 0;
    if (meta.annotations?.[DELIVERED_ANNOTATION] === text && hasFinalizer === wantFinalizer) return 0;
    await options.hub.applyPlacementMetadata(
      placement,
      { [DELIVERED_ANNOTATION]: text },
      wantFinalizer ? [CLEANUP_FINALIZER] : [],
    );
    meta.annotations = { ...meta.annotations, [DELIVERED_ANNOTATION]: text };
    const others = (meta.finalizers ?? []).filter((f) => f !== CLEANUP_FINALIZER);
    meta.finalizers = wantFinalizer ? [...others, CLEANUP_FINALIZER] : others;
    return 1;
  }

  async function reconcileCluster(
    placementKey: string,
    cluster: string,
    wanted: MemberObject[] | undefined,
    recordedRefs: readonly MemberObjectRef[],
  ): Promise<ClusterOutcome> {
    const unreachable = (message: string): ClusterOutcome => ({
      report: { cluster, phase: 'Unreachable', message },
      refs: recordedRefs,
      writes: 0,
    });
    const profile = options.clusterProfiles.get(cluster);
    if (!profile) return unreachable(`ClusterProfile ${cluster} not found; its objects are kept and retried`);
    let member: MemberObjects;
    try {
      member = await options.member(profile);
    } catch (error) {
      return unreachable(describeError(error));
    }
    try {
      let writes = 0;
      const wantedRefs = (wanted ?? []).map(refOf);
      if (wanted) {
        const applied = await applyAll(member, placementKey, cluster, wanted);
        writes += applied.writes;
        if (applied.problem) return { report: { cluster, ...applied.problem }, refs: recordedRefs, writes };
        // Stale refs of a listed cluster: the template renamed or dropped an object.
        const keep = new Set(wantedRefs.map(formatRef));
        const removed = await removeAll(
          member,
          placementKey,
          cluster,
          recordedRefs.filter((r) => !keep.has(formatRef(r))),
        );
        return {
          report: summarizeSyncStatus(cluster, applied.syncStatus),
          refs: [...wantedRefs, ...removed.remaining],
          writes: writes + removed.writes,
          ...(applied.created ? { change: { created: applied.created } } : {}),
        };
      }
      // The cluster left: sync objects first, then, once Config Sync's finalizer has removed
      // what they applied, the RoleBindings their reconciler used.
      const removed = await removeAll(member, placementKey, cluster, recordedRefs);
      const gone = removed.remaining.length === 0;
      return {
        report: { cluster, phase: 'Deleting', message: gone ? 'removed' : removed.message },
        refs: removed.remaining,
        writes: removed.writes,
        ...(gone ? { change: 'removed' as const } : {}),
      };
    } catch (error) {
      return unreachable(describeError(error));
    }
  }

  async function applyAll(
    member: MemberObjects,
    placementKey: string,
    cluster: string,
    wanted: readonly MemberObject[],
  ): Promise<{
    writes: number;
    created?: string;
    syncStatus?: SyncStatus;
    problem?: { phase: ClusterPhase; message: string };
  }> {
    let writes = 0;
    let syncStatus: SyncStatus | undefined;
    let created: string | undefined;
    for (const object of wanted) {
      const ref = refOf(object);
      const existing = await member.get(ref);
      if (existing && !isOwnedBy(existing, placementKey, cluster)) {
        const message = `${formatRef(ref)} exists and was not created by mco for this placement; left alone`;
        return { writes, problem: { phase: 'NotOwned', message } };
      }
      if (existing?.metadata?.deletionTimestamp) {
        const message = `${formatRef(ref)} is still being deleted; applied again once it is gone`;
        return { writes, problem: { phase: 'Deleting', message } };
      }
      let current = existing;
      // Unchanged since mco last applied it: no write (a resync costs reads only).
      if (
        existing?.metadata?.annotations?.[APPLIED_HASH_ANNOTATION] !==
        object.metadata.annotations[APPLIED_HASH_ANNOTATION]
      ) {
        current = (await writeOwned(member, placementKey, cluster, ref, existing, object)) ?? current;
        writes++;
        if (!existing && isSync(ref)) created = formatRef(ref);
      }
      if (isSync(ref)) syncStatus = current?.status as SyncStatus | undefined;
    }
    return { writes, ...(created ? { created } : {}), ...(syncStatus ? { syncStatus } : {}) };
  }

  async function removeAll(
    member: MemberObjects,
    placementKey: string,
    cluster: string,
    stale: readonly MemberObjectRef[],
  ): Promise<{ writes: number; remaining: MemberObjectRef[]; message: string }> {
    let writes = 0;
    const remaining: MemberObjectRef[] = [];
    const waiting: string[] = [];
    for (const group of [stale.filter(isSync), stale.filter((r) => !isSync(r))]) {
      if (remaining.length > 0) {
        remaining.push(...group); // RoleBindings wait for the sync objects
        continue;
      }
      for (const ref of group) {
        const existing = await member.get(ref);
        if (!existing) continue; // gone: forget it
        if (!isOwnedBy(existing, placementKey, cluster)) {
          logger.warn("a recorded object is no longer mco's; forgetting it without deleting it", {
            object: formatRef(ref),
          });
          continue;
        }
        remaining.push(ref);
        if (existing.metadata?.deletionTimestamp) {
          const finalizers = existing.metadata.finalizers ?? [];
          waiting.push(`${formatRef(ref)} waits for finalizers ${finalizers.join(', ') || '(none)'}`);
          continue;
        }
        await writeOwned(member, placementKey, cluster, ref, existing);
        writes++;
        waiting.push(`${formatRef(ref)} deleted; waiting for Config Sync to finish`);
      }
    }
    return { writes, remaining, message: waiting.join('; ') || 'waiting for the sync objects to go' };
  }

  /**
   * One member object through the shared safe apply and prune (`syncOwnedObjects`), as
   * read by name and found mco's for this placement and cluster: `object` applied, or,
   * without one, the object deleted (uid precondition). Whether to apply was decided by the
   * template's hash. Logs the write; throws on a failed one, or when the object changed
   * since it was read (the member is retried).
   */
  async function writeOwned(
    member: MemberObjects,
    placementKey: string,
    cluster: string,
    ref: MemberObjectRef,
    existing: ExistingObject | undefined,
    object?: MemberObject,
  ): Promise<ExistingObject | undefined> {
    let written: ExistingObject | undefined;
    const report = await syncOwnedObjects(null, {
      resource: MEMBER_RESOURCES[ref.kind],
      namespace: ref.namespace,
      ownedLabels: { [MANAGED_BY_LABEL]: MANAGED_BY },
      desired: object ? [object] : [],
      existing: existing ? [{ kind: ref.kind, ...existing } as KubeObject] : [],
      mayPrune: () => true,
      fieldManager: MANAGED_BY,
      writer: {
        apply: async (o) => (written = await member.apply(o as unknown as MemberObject)) as KubeObject,
        delete: (o) => member.delete(ref, o.metadata?.uid),
      },
      logger: logger.child({ placement: placementKey, cluster }),
    });
    if (report.failed[0]) throw report.failed[0].error;
    if (report.kept.length > 0) {
      throw new McoError('Conflict', `${formatRef(ref)} changed since it was read; looked at again`, true);
    }
    return written;
  }

  /**
   * Events of one pass: one Normal event each for the clusters that got the
   * sync object, lost it, or became Synced (a thousand clusters make three
   * events, not three thousand); a Warning per cluster that turned to an
   * error, unreachable or held by someone else. Phases are remembered per
   * placement, so a steady state records nothing.
   */
  async function recordEvents(placement: Placement, key: string, outcomes: ReadonlyMap<string, ClusterOutcome>) {
    const last = phases.get(key) ?? new Map<string, ClusterPhase>();
    phases.set(key, last);
    const created = new Map<string, string[]>();
    const removed: string[] = [];
    const synced: string[] = [];
    const warnings: [string, string][] = [];
    for (const [cluster, { report, change, refs }] of outcomes) {
      if (change === 'removed') removed.push(cluster);
      else if (change) created.set(change.created, [...(created.get(change.created) ?? []), cluster]);
      if (refs.length === 0) {
        last.delete(cluster);
        continue;
      }
      const before = last.get(cluster);
      if (before === report.phase) continue;
      last.set(cluster, report.phase);
      // Said once per outage, not on every retry.
      if (report.phase === 'Unreachable') {
        logger.warn('member unreachable; its objects are kept and retried', {
          placement: key,
          cluster,
          reason: report.message,
        });
      } else if (before === 'Unreachable') logger.info('member reachable again', { placement: key, cluster });
      if (report.phase === 'Synced') synced.push(`${cluster}: ${report.message}`);
      if (report.phase === 'Error' || report.phase === 'Unreachable' || report.phase === 'NotOwned') {
        warnings.push([eventReason(report.phase), `${cluster}: ${report.message}`]);
      }
    }
    const normal: [string, string][] = [
      ...[...created].map(([ref, clusters]): [string, string] => [
        'SyncObjectApplied',
        `${ref} applied on ${clusters.join(', ')}`,
      ]),
      ...(removed.length > 0
        ? [['SyncObjectDeleted', `Config Sync objects removed from ${removed.join(', ')}`] as [string, string]]
        : []),
      ...(synced.length > 0 ? [['Synced', synced.join('; ')] as [string, string]] : []),
    ];
    for (const [reason, message] of normal) await event(placement, 'Normal', reason, message);
    for (const [reason, message] of warnings) await event(placement, 'Warning', reason, message);
    return normal.length + warnings.length;
  }

  return { reconcile };
}

function eventReason(phase: ClusterPhase): string {
  return phase === 'Error' ? 'SyncError' : phase === 'Unreachable' ? 'MemberUnreachable' : phase;
}

/** Created by mco for this placement on this cluster (two profiles may point at one cluster). */
function isOwnedBy(object: ExistingObject, placementKey: string, cluster: string): boolean {
  return (
    object.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY &&
    object.metadata.annotations?.[PLACEMENT_ANNOTATION] === placementKey &&
    object.metadata.annotations[CLUSTER_ANNOTATION] === cluster
  );
}

/**
 * A short reason for a member failure: the error code, the HTTP status and the
 * API server's own message, without the request line the error's message
 * starts with.
 */
function describeError(error: unknown): string {
  const e = toMcoError(error);
  const status = httpStatusOf(error);
  if (status === undefined) return `${e.code}: ${e.message}`;
  const body = (error as { body?: unknown }).body;
  let detail = '';
  try {
    detail = (JSON.parse(String(body)) as { message?: string }).message ?? '';
  } catch {
    // not a Status object
  }
  return `${e.code} (HTTP ${status})${detail ? `: ${detail}` : ''}`;
}

async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const run = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

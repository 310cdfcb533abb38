import { clusterKey, type Condition } from '../api/common.js';
import type { Transition, TransitionId } from '../api/decision.js';
import {
  DEFAULT_SPREAD_TOPOLOGY_KEY,
  type ClusterState,
  type Draining,
  type FailBackStatus,
  type PlacementCluster,
  type PlacementStatus,
} from '../api/placement.js';
import { CONDITION_SATISFIED } from '../conditions.js';
import type { ResolvedBehavior } from '../scaling/behavior.js';
import type { SignalAssessment } from '../scaling/signals.js';
import type { Inventory, InventoryCluster } from '../selection/inventory.js';
import type { SelectionResult } from '../selection/select.js';
import type { FreshCapacity } from './capacity.js';
import { formatTime, parseTime, SECOND } from '../time.js';

/** The well-known label, and the ClusterProfile property, that name a cluster's region (docs/placement-rules.md §10.7). */
export const REGION_LABEL = DEFAULT_SPREAD_TOPOLOGY_KEY;
export const REGION_PROPERTY = 'region';

/**
 * Hears why an evaluation did not do more (docs/placement-rules.md §10.4): `cluster` is a
 * ClusterProfile `namespace/name`, or undefined for the placement as a whole.
 */
export type NoteSink = (cluster: string | undefined, note: string) => void;

export const NO_NOTES: NoteSink = () => {};

/** A listed cluster while the evaluation works on it. */
export interface Entry {
  readonly key: string;
  readonly name: string;
  readonly namespace: string | undefined;
  state: ClusterState;
  lastTransitionTime: string;
  reason: string | undefined;
  message: string | undefined;
  draining: Draining | undefined;
  scaleInCandidateSince: string | undefined;
  /** behavior.failBack: since when this ACTIVE cluster has been below its ceiling (fresh signal). */
  belowCeilingSince: string | undefined;
  /** behavior.failBack: since when this SCALING_IN cluster has lingered warm with calm preferred clusters. */
  lingerSince?: string | undefined;
  /** Rule O3: the ready replicas of the last fresh signal. */
  lastReadyReplicas?: number | undefined;
  /** Rule O3: the replica floor of a replacement, and the lost cluster it replaces. */
  desiredMinReplicas?: number | undefined;
  replacesCluster?: string | undefined;
  /** Rule F7: moved by fail-back in this evaluation after its probe; the receivers' ready replicas before it. */
  probedFrom?: number | undefined;
  readonly signal: SignalAssessment;
  /** Entered SCALING_IN or EVICTING in this evaluation. */
  enteredDrain: boolean;
  /** Reactivated (P3) in this evaluation: its signal still shows the drain cap, not the cluster. */
  reactivated: boolean;
  removed: boolean;
  /** The health phase left its R1 to the standby phase, which may keep it warm. */
  removalHeld?: boolean;
  /** Kept warm (standby or lingering): its drain stops at `size`, where it takes `reason`. */
  keepWarm?: { readonly size: number; readonly reason: 'WarmStandby' | 'Lingering'; readonly message: string };
}

/**
 * The state one evaluation shares between its phases (like the scheduler
 * framework's CycleState): the listed clusters, the transitions made, the
 * timers that could change the result, and the helpers every phase uses.
 */
export class Evaluation {
  readonly transitions: Transition[] = [];
  readonly entries: Entry[] = [];
  readonly byKey = new Map<string, Entry>();
  readonly timers: number[] = [];
  lastAdditionTime: string | undefined;
  lastClusterRemovalTime: string | undefined;
  satisfied: Omit<Condition, 'lastTransitionTime'> = { type: CONDITION_SATISFIED, status: 'True' };
  holdProfileLossRemovals = false;
  /** Listed clusters kept only because the inventory-loss guard holds removals. */
  readonly held: string[] = [];
  /** The fail-back backoff (status.failBack). */
  failBackStatus: FailBackStatus | undefined;
  /** Drains stepping on the clock alone (rule D1 has nothing to check), for the Satisfied message. */
  readonly unprotectedDrains: string[] = [];
  /** The label that groups clusters for rule O2 and `spread` (spread.ts). */
  topologyKey = REGION_LABEL;
  /** `spread.minGroups`: the distinct groups the headroom clusters should span. */
  spreadMinGroups = 1;
  /** Fresh capacity answers that know a number, by cluster (capacity.ts). */
  capacity: ReadonlyMap<string, FreshCapacity> = new Map();
  /** Scale-out candidates passed over for NoCapacity, and why, for the Satisfied message. */
  readonly noCapacity = new Map<string, string>();

  constructor(
    readonly nowMs: number,
    readonly now: string,
    readonly previous: PlacementStatus,
    readonly selected: SelectionResult,
    readonly inventory: Inventory,
    readonly behavior: ResolvedBehavior,
    readonly assess: (key: string) => SignalAssessment,
    readonly note: NoteSink = NO_NOTES,
  ) {
    this.lastAdditionTime = previous.lastAdditionTime;
    this.lastClusterRemovalTime = previous.lastClusterRemovalTime;
    this.failBackStatus = previous.failBack;
    for (const c of previous.clusters ?? []) {
      const key = clusterKey(c.namespace, c.name);
      if (this.byKey.has(key)) continue; // a duplicate entry cannot mean anything more; keep the first
      const entry: Entry = {
        key,
        name: c.name,
        namespace: c.namespace,
        state: c.state,
        lastTransitionTime: c.lastTransitionTime,
        reason: c.reason,
        message: c.message,
        draining: c.draining,
        scaleInCandidateSince: c.scaleInCandidateSince,
        belowCeilingSince: c.belowCeilingSince,
        lingerSince: c.lingerSince,
        lastReadyReplicas: c.lastReadyReplicas,
        desiredMinReplicas: c.desiredMinReplicas,
        replacesCluster: c.replacesCluster,
        signal: assess(key),
        enteredDrain: false,
        reactivated: false,
        removed: false,
      };
      this.entries.push(entry);
      this.byKey.set(key, entry);
    }
  }

  // ---- transitions -------------------------------------------------------

  move(entry: Entry, id: TransitionId, to: ClusterState | null, reason: string, message: string): void {
    this.transitions.push({ cluster: entry.key, id, from: entry.removed ? null : entry.state, to, reason: message });
    if (to === null) {
      entry.removed = true;
      this.lastClusterRemovalTime = this.now;
      return;
    }
    if (to === 'SCALING_IN' || to === 'EVICTING') entry.enteredDrain = true;
    else entry.draining = undefined;
    // A transition restarts the scale-in window (a reactivated lingering cluster included).
    entry.scaleInCandidateSince = undefined;
    if (to !== 'ACTIVE') entry.belowCeilingSince = undefined;
    entry.lingerSince = undefined;
    entry.state = to;
    entry.lastTransitionTime = this.now;
    entry.reason = reason;
    entry.message = message;
  }

  /** Whether a draining cluster may return to ACTIVE (P3): still eligible, healthy and reachable. */
  mayReactivate(entry: Entry): boolean {
    return (
      this.selected.isStillEligible(entry.key) &&
      !this.unhealthyBecause(entry.key, entry.signal) &&
      !entry.signal.unreachable
    );
  }

  /** P3: a draining cluster back to ACTIVE with every pod it still runs. */
  reactivate(entry: Entry, message: string): void {
    this.move(entry, 'P3', 'ACTIVE', 'Reactivated', message);
    entry.reactivated = true;
  }

  /**
   * Adds `cluster` as ACTIVE. `inStatus: false` keeps the message out of the
   * cluster's status entry (the transition and its Event keep it): a message
   * that every cluster of the placement would repeat only makes each status
   * write larger, and the API server's cost per write grows with its size.
   */
  add(cluster: InventoryCluster, message: string, inStatus = true): void {
    const entry: Entry = {
      key: cluster.key,
      name: cluster.name,
      namespace: cluster.namespace,
      state: 'ACTIVE',
      lastTransitionTime: this.now,
      reason: 'Added',
      message: inStatus ? message : undefined,
      draining: undefined,
      scaleInCandidateSince: undefined,
      belowCeilingSince: undefined,
      signal: this.assess(cluster.key),
      enteredDrain: false,
      reactivated: false,
      removed: false,
    };
    this.entries.push(entry);
    this.byKey.set(entry.key, entry);
    this.transitions.push({ cluster: entry.key, id: 'P1', from: null, to: 'ACTIVE', reason: message });
    this.lastAdditionTime = this.now;
  }

  // ---- queries -----------------------------------------------------------

  live(): Entry[] {
    return this.entries.filter((e) => !e.removed);
  }

  /** Listed clusters in priority order: eligible ones first, the others by namespace/name. */
  byPriority(entries: Entry[]): Entry[] {
    const rank = (e: Entry) => this.selected.rankOf(e.key) ?? Infinity;
    return [...entries].sort((a, b) => rank(a) - rank(b) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** The ACTIVE clusters of higher priority than `entry`: the preferred ones that fail-back, linger and burst look at. */
  activeAbove(entry: Entry): Entry[] {
    const rank = (key: string) => this.selected.rankOf(key) ?? Infinity;
    return this.live().filter((e) => e.state === 'ACTIVE' && rank(e.key) < rank(entry.key));
  }

  /** Absent from the inventory, and not because it is being deleted. */
  isProfileMissing(key: string): boolean {
    return !this.inventory.byKey.has(key) && !this.inventory.deleting.has(key);
  }

  /** Why a cluster is unhealthy, or undefined (unknown is not unhealthy). */
  unhealthyBecause(key: string, signal: SignalAssessment): string | undefined {
    if (this.inventory.byKey.get(key)?.controlPlaneHealthy === false) return 'ControlPlaneUnhealthy';
    if (signal.workloadUnhealthy) return 'WorkloadUnhealthy';
    return undefined;
  }

  /**
   * A cluster's region (rule O2, docs/placement-rules.md §10.7): its ClusterProfile label
   * `topologyKey`; for `topology.kubernetes.io/region`, else its property `region`; undefined when it has neither.
   */
  regionOf(key: string): string | undefined {
    const c = this.inventory.byKey.get(key);
    const label = c?.labels[this.topologyKey];
    return this.topologyKey === REGION_LABEL ? (label ?? c?.properties.get(REGION_PROPERTY)?.value) : label;
  }

  /** The regions of the listed clusters that match `which` (each cluster without a region is left out). */
  regionsOf(which: (e: Entry) => boolean): Set<string> {
    const regions = new Set<string>();
    for (const e of this.live()) {
      const region = which(e) ? this.regionOf(e.key) : undefined;
      if (region !== undefined) regions.add(region);
    }
    return regions;
  }

  /** `clusters` with those outside `regions` first, each part in its order (stable). */
  outside<T extends { readonly key: string }>(clusters: readonly T[], regions: ReadonlySet<string>): T[] {
    if (regions.size === 0) return [...clusters];
    const inside = (c: T) => {
      const region = this.regionOf(c.key);
      return region !== undefined && regions.has(region);
    };
    return [...clusters.filter((c) => !inside(c)), ...clusters.filter(inside)];
  }

  /** H2 needs evidence: a cluster marked unhealthy by its workload needs a fresh healthy signal. */
  isHealthyAgain(entry: Entry): boolean {
    if (this.unhealthyBecause(entry.key, entry.signal)) return false;
    return entry.reason !== 'WorkloadUnhealthy' || entry.signal.workloadHealthy;
  }

  // ---- time --------------------------------------------------------------

  elapsedSeconds(since: string | undefined): number {
    const t = parseTime(since);
    return t === undefined ? Infinity : (this.nowMs - t) / SECOND;
  }

  timer(sinceMs: number | undefined, seconds: number): void {
    if (sinceMs !== undefined) this.timers.push(sinceMs + seconds * SECOND);
  }

  timeAfter(since: string | number | undefined, seconds: number): string {
    const t = typeof since === 'number' ? since : parseTime(since);
    return t === undefined ? 'now' : formatTime(t + seconds * SECOND);
  }

  // ---- output ------------------------------------------------------------

  /**
   * `satisfied`, or Unknown while the inventory-loss guard keeps clusters this
   * evaluation would remove; either way naming the drains that step unprotected.
   */
  satisfiedOrHeld(): Omit<Condition, 'lastTransitionTime'> {
    const condition: Omit<Condition, 'lastTransitionTime'> =
      this.held.length === 0
        ? this.satisfied
        : {
            type: CONDITION_SATISFIED,
            status: 'Unknown',
            reason: 'InventoryShrunk',
            message: `the fleet's ClusterProfile count dropped suddenly; ${this.held.length} cluster(s) whose ClusterProfile is missing stay listed until it recovers or the removal is confirmed: ${this.held.join(', ')}`,
          };
    const notes = this.unprotectedDrains;
    return notes.length === 0 ? condition : { ...condition, message: [condition.message, ...notes].join('; ') };
  }

  listedClusters(useDraining: boolean): PlacementCluster[] {
    return this.byPriority(this.live()).map((e) => {
      const cluster: PlacementCluster = {
        name: e.name,
        ...(e.namespace !== undefined ? { namespace: e.namespace } : {}),
        state: e.state,
        lastTransitionTime: e.lastTransitionTime,
      };
      if (e.signal.fresh) cluster.atCapacityCeiling = e.signal.atCapacityCeiling && !e.reactivated;
      if (useDraining && e.draining) cluster.draining = e.draining;
      if (e.reason !== undefined) cluster.reason = e.reason;
      if (e.message !== undefined) cluster.message = e.message;
      if (e.scaleInCandidateSince !== undefined) cluster.scaleInCandidateSince = e.scaleInCandidateSince;
      if (e.belowCeilingSince !== undefined) cluster.belowCeilingSince = e.belowCeilingSince;
      if (e.lingerSince !== undefined) cluster.lingerSince = e.lingerSince;
      if (e.lastReadyReplicas !== undefined) cluster.lastReadyReplicas = e.lastReadyReplicas;
      if (e.desiredMinReplicas !== undefined) {
        cluster.desiredMinReplicas = e.desiredMinReplicas;
        if (e.replacesCluster !== undefined) cluster.replacesCluster = e.replacesCluster;
      }
      return cluster;
    });
  }

  /** The earliest timer, including a listed cluster's signal turning stale. */
  requeueAfterSeconds(): number | null {
    let next = Infinity;
    const staleAts = this.live().flatMap((e) => (e.signal.staleAt !== undefined ? [e.signal.staleAt] : []));
    // A time-limited toleration running out can make a cluster ineligible (tolerationSeconds).
    const expiry = this.selected.tolerationExpiresAt;
    if (expiry !== undefined) staleAts.push(expiry);
    for (const t of [...this.timers, ...staleAts]) if (t > this.nowMs && t < next) next = t;
    return next === Infinity ? null : Math.max(1, Math.ceil((next - this.nowMs) / SECOND));
  }
}

// What the soak observed, as a time-ordered history (Jepsen-style), and the
// invariant checkers that judge it. Everything here is pure: the checkers run
// on the live run's history at the end and on recorded histories in tests.
import type { FaultKind } from './schedule.js';

/** A placement's cluster as its status lists it (members are named by their ClusterProfile name). */
export interface ListedCluster {
  readonly member: string;
  readonly state: string;
  readonly reason?: string;
}

/** Every event has `t`, milliseconds since the soak's start, when the harness saw it. */
export type SoakEvent =
  | {
      readonly t: number;
      readonly type: 'status';
      readonly placement: string;
      readonly clusters: readonly ListedCluster[];
      /** `status.lastClusterRemovalTime`, ms since the start: when the controller removed a cluster. */
      readonly removedAt?: number;
    }
  /**
   * The clusters the load wants a placement on (its cluster-list rule, written by the harness), and the
   * kinds of delivery object that follow it (default: a Kustomization; see `deliveryWanted`).
   */
  | {
      readonly t: number;
      readonly type: 'intent';
      readonly placement: string;
      readonly members: readonly string[];
      readonly deliveries?: readonly DeliveryKind[];
      /** An autoscaling placement: `members` are those its signals make it need, not its rules. */
      readonly scaling?: boolean;
    }
  | { readonly t: number; readonly type: 'profile'; readonly member: string; readonly present: boolean }
  /** A delivered workload object on a member; `gap`: its deletion was found by a re-list after a watch gap. */
  | {
      readonly t: number;
      readonly type: 'object';
      readonly member: string;
      readonly placement: string;
      readonly kind: string;
      readonly name: string;
      readonly present: boolean;
      readonly gap?: boolean;
      /** `metadata.uid`: a deletion and a re-creation under one name are two objects. */
      readonly uid?: string;
    }
  /**
   * A delivery path's per-cluster object (`kind`, default a Flux Kustomization): on the hub, or, for a
   * RepoSync, on the member; an Argo CD cluster Secret, one per member, is recorded for each placement
   * Argo CD delivers.
   */
  | {
      readonly t: number;
      readonly type: 'delivery';
      readonly member: string;
      readonly placement: string;
      readonly name: string;
      /** False from the moment its deletion is asked for (a finalizer may keep it a while: see `gone`). */
      readonly present: boolean;
      readonly gap?: boolean;
      readonly kind?: DeliveryKind;
      /** The object itself went: its finalizers (a Flux prune) are done. */
      readonly gone?: boolean;
    }
  | {
      readonly t: number;
      readonly type: 'fault';
      readonly id: number;
      readonly kind: FaultKind;
      readonly target: string;
      readonly phase: 'start' | 'end';
      readonly error?: string;
      /** What the injector saw as it undid the fault (`profile-moved`: what delivery put on the other server). */
      readonly detail?: string;
    }
  | { readonly t: number; readonly type: 'gap'; readonly source: string; readonly error: string }
  | { readonly t: number; readonly type: 'rss'; readonly process: string; readonly pid: number; readonly kb: number };

/**
 * The delivery objects the checkers follow: `mco flux`'s Kustomization, the Argo CD Application (the
 * ApplicationSet's, from `mco argocd-plugin`) and cluster Secret (`mco argocd-sync`), and the RepoSync
 * `mco configsync` applies on a member.
 */
export type DeliveryKind = 'Kustomization' | 'Application' | 'Secret' | 'RepoSync';

const kindOf = (e: { readonly kind?: DeliveryKind }): DeliveryKind => e.kind ?? 'Kustomization';

/**
 * Whether a delivery object of `kind` belongs to a cluster the placement
 * lists (`listed`) or not, with its ClusterProfile present or not; undefined
 * when either is right. A Kustomization, an Application and a RepoSync follow
 * the placement's list. A cluster Secret follows the ClusterProfile: kept
 * while a placement lists the cluster (evicted included), and after its
 * profile went away kept for a 15-minute grace period (docs/argocd.md), so
 * never owed gone within a soak's bounds.
 */
export function deliveryWanted(kind: DeliveryKind, listed: boolean, profile: boolean): boolean | undefined {
  if (kind !== 'Secret') return listed;
  return listed || profile ? true : undefined;
}

/** An event before the harness stamps its time. */
type Untimed<E> = E extends unknown ? Omit<E, 't'> : never;
export type UntimedEvent = Untimed<SoakEvent>;

/** The bounds, fixed before a run (docs/reliability.md). */
export interface Bounds {
  /** (b) a placement may have fewer ACTIVE clusters than its minimum for this long, plus the downtime of faults that stop decisions. */
  readonly minActiveMs: number;
  /** (c) status, decisions and delivery converge within this long after a fault ends. */
  readonly convergeMs: number;
  /** (d) a cluster that left a placement holds none of its workload objects this long after it left (plus its member's downtime). */
  readonly leftoverMs: number;
  /** (e) largest RSS growth of a process over the measured window. */
  readonly rssGrowth: number;
}

export const DEFAULT_BOUNDS: Bounds = { minActiveMs: 30_000, convergeMs: 120_000, leftoverMs: 120_000, rssGrowth: 0.1 };

/** Reasons that mean doubt: a cluster removed for one of these lost its workload on doubt. */
export const DOUBT_REASONS: ReadonlySet<string> = new Set([
  'ClusterProfileMissing',
  'ControlPlaneUnhealthy',
  'WorkloadUnhealthy',
  'InventoryShrunk',
]);

export interface Violation {
  readonly invariant: 'a' | 'b' | 'c' | 'd' | 'e';
  readonly t: number;
  readonly message: string;
}

/** Faults that stop status from changing while they last (nothing can decide or write). */
const STALLING: ReadonlySet<FaultKind> = new Set([
  'controller-kill',
  'controller-restart',
  'hub-restart',
  'etcd-restart',
]);

interface Window {
  readonly start: number;
  readonly end: number;
  readonly kind: FaultKind;
  readonly target: string;
}

/** Each fault's [start, end] (end: the run's end when it never ended). */
export function faultWindows(history: readonly SoakEvent[], endT: number): Window[] {
  const open = new Map<number, { start: number; kind: FaultKind; target: string }>();
  const windows: Window[] = [];
  for (const e of history) {
    if (e.type !== 'fault') continue;
    if (e.phase === 'start') open.set(e.id, { start: e.t, kind: e.kind, target: e.target });
    else {
      const o = open.get(e.id);
      if (o) windows.push({ ...o, end: e.t });
      open.delete(e.id);
    }
  }
  for (const o of open.values()) windows.push({ ...o, end: endT });
  return windows.sort((a, b) => a.start - b.start);
}

const overlap = (a0: number, a1: number, b0: number, b1: number) => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

/** The last `status` event of `placement` at or before `t`. */
function statusAt(history: readonly SoakEvent[], placement: string, t: number) {
  let last: Extract<SoakEvent, { type: 'status' }> | undefined;
  for (const e of history) {
    if (e.t > t) break;
    if (e.type === 'status' && e.placement === placement) last = e;
  }
  return last;
}

/** The members the placement's rules listed at `t` (the last intent written before it). */
function intentAt(history: readonly SoakEvent[], placement: string, t: number): readonly string[] | undefined {
  let last: readonly string[] | undefined;
  for (const e of history) {
    if (e.t > t) break;
    if (e.type === 'intent' && e.placement === placement) last = e.members;
  }
  return last;
}

/**
 * (a) A workload object or delivery object of placement P on member M is
 * deleted only after P's status removed M (by `lastClusterRemovalTime`, 1 s
 * resolution) and did not list M again since; and if M's last state before
 * the removal was doubt (UNHEALTHY, a missing ClusterProfile ...), only if
 * P's rules no longer listed M by then.
 */
export function checkDeletions(history: readonly SoakEvent[]): Violation[] {
  return judgeDeletions(history).violations;
}

/**
 * (a)'s verdict, with the deletions it judged to be an earlier removal's
 * prune landing after the cluster was listed again (`latePrune`).
 */
export function judgeDeletions(history: readonly SoakEvent[]): { violations: Violation[]; latePrunes: Violation[] } {
  const violations: Violation[] = [];
  const latePrunes: Violation[] = [];
  const asked = new Set<string>();
  for (const e of history) {
    if (e.type === 'delivery') {
      // A delivery object going after its deletion was asked for is that deletion, judged once.
      const key = `${kindOf(e)}|${e.placement}|${e.member}|${e.name}`;
      if (e.present) asked.delete(key);
      else if (e.gone && asked.delete(key)) continue;
      else if (!e.gone) asked.add(key);
    }
    if ((e.type !== 'object' && e.type !== 'delivery') || e.present) continue;
    const what = `${e.type === 'object' ? e.kind : kindOf(e)} ${e.name}`;
    const where = `${what} of ${e.placement} on ${e.member}${e.gap ? ' (seen by a re-list after a watch gap)' : ''}`;
    // The removal: the first status without M after the last one with M, seen up to a little after the deletion
    // (the hub's watch may deliver the status after the member's watch delivers the deletion it caused).
    let lastListed: Extract<SoakEvent, { type: 'status' }> | undefined;
    let removal: Extract<SoakEvent, { type: 'status' }> | undefined;
    for (const s of history) {
      if (s.t > e.t + 10_000) break;
      if (s.type !== 'status' || s.placement !== e.placement) continue;
      const listed = s.clusters.some((c) => c.member === e.member);
      if (listed) {
        if (s.t > e.t) break; // listed again after the deletion: it was listed at the deletion
        lastListed = s;
        removal = undefined;
      } else if (!removal && lastListed) removal = s;
    }
    // A deletion the status had not (yet) asked for: a violation, unless an earlier removal's prune landed.
    const flag = (message: string) => {
      const prune = e.type === 'object' ? latePrune(history, e) : undefined;
      if (prune) latePrunes.push({ invariant: 'a', t: e.t, message: `${where} deleted while listed again: ${prune}` });
      else violations.push({ invariant: 'a', t: e.t, message: `${where} ${message}` });
    };
    if (!removal || !lastListed) {
      const status = statusAt(history, e.placement, e.t);
      if (!lastListed && !status?.clusters.some((c) => c.member === e.member)) continue; // never listed: not ours
      flag(`deleted while the placement lists ${e.member}`);
      continue;
    }
    // A later removal (up to 10 s after) does not explain a deletion that came first.
    if ((removal.removedAt ?? removal.t) > e.t + 1_000) {
      flag(`deleted before the status removed ${e.member}`);
      continue;
    }
    const before = removedOnDoubt(history, e.placement, e.member, lastListed, removal);
    if (before) {
      violations.push({
        invariant: 'a',
        t: e.t,
        message: `${where} deleted after ${e.member} was removed on doubt (${before.state}, ${before.reason})`,
      });
    }
  }
  return { violations, latePrunes };
}

type StatusEvent = Extract<SoakEvent, { type: 'status' }>;

/**
 * The member's last listing before `removal` when that removal was on doubt
 * (UNHEALTHY or a doubt reason, while the placement's rules still wanted the
 * member), else undefined. Doubt decides only while the placement still wants
 * the cluster: once its rules drop it, leaving is intent.
 */
function removedOnDoubt(
  history: readonly SoakEvent[],
  placement: string,
  member: string,
  lastListed: StatusEvent,
  removal: StatusEvent,
): ListedCluster | undefined {
  const before = lastListed.clusters.find((c) => c.member === member)!;
  const wanted = intentAt(history, placement, removal.t)?.includes(member) ?? true;
  const doubt = before.state === 'UNHEALTHY' || (before.reason !== undefined && DOUBT_REASONS.has(before.reason));
  return wanted && doubt ? before : undefined;
}

/** A Kustomization's finalizer may report its prune done this long before the member's watch shows a deletion. */
const PRUNE_WATCH_SLACK_MS = 5_000;

/**
 * Whether a workload object deleted while its placement lists the member is
 * the prune of an earlier removal, still running (its member unreachable,
 * kustomize-controller restarted or retrying) when the cluster was listed
 * again; the reason, or undefined. All of: the
 * object (by uid) existed before a removal of the member from the
 * placement, that removal was not on doubt (as `judgeDeletions` judges
 * one), and a delivery object of the placement on the member whose deletion
 * was asked for at that removal was still finalizing (its prune running)
 * when the object went. Without uids (an older history) nothing is excused.
 */
function latePrune(history: readonly SoakEvent[], e: Extract<SoakEvent, { type: 'object' }>): string | undefined {
  if (!e.uid) return undefined;
  const bornAt = history.find(
    (x) =>
      x.type === 'object' &&
      x.present &&
      x.member === e.member &&
      x.kind === e.kind &&
      x.name === e.name &&
      x.uid === e.uid,
  )?.t;
  if (bornAt === undefined) return undefined;
  let lastListed: StatusEvent | undefined;
  let removal: StatusEvent | undefined;
  for (const s of history) {
    if (s.t >= e.t) break;
    if (s.type !== 'status' || s.placement !== e.placement) continue;
    const listed = s.clusters.some((c) => c.member === e.member);
    if (listed && !removal) lastListed = s;
    else if (listed)
      break; // the first re-listing after the removal: the removal before it is the one
    else if (lastListed && !removal && s.t > bornAt) removal = s; // the first status without it: later ones only list others
  }
  if (!removal || !lastListed || removedOnDoubt(history, e.placement, e.member, lastListed, removal)) return undefined;
  // The delivery object whose deletion the removal asked for, and when it went.
  for (const d of history) {
    if (d.t > e.t) break;
    if (d.type !== 'delivery' || d.present || d.placement !== e.placement || d.member !== e.member) continue;
    if (d.t < removal.t - 10_000) continue;
    const gone = history.find(
      (g) =>
        g.type === 'delivery' &&
        g.t >= d.t &&
        g.gone === true &&
        g.name === d.name &&
        kindOf(g) === kindOf(d) &&
        g.member === d.member,
    );
    if (!gone || gone.t < e.t - PRUNE_WATCH_SLACK_MS) continue;
    return `the prune of ${kindOf(d)} ${d.name}, whose deletion the removal of ${e.member} at ${(removal.t / 1000).toFixed(1)} s asked for, still running (it went at ${(gone.t / 1000).toFixed(1)} s)`;
  }
  return undefined;
}

/** Replays the history into the state at each event; `visit` sees the state after each one. */
export interface ReplayState {
  readonly status: Map<string, readonly ListedCluster[]>;
  readonly intent: Map<string, readonly string[]>;
  readonly profiles: Map<string, boolean>;
  /** `placement|member` -> names of its workload objects present there. */
  readonly objects: Map<string, Set<string>>;
  /** `placement|member` -> the kinds of its delivery objects present. */
  readonly deliveries: Map<string, Set<DeliveryKind>>;
  /** placement -> the kinds of delivery object that follow it. */
  readonly deliveredBy: Map<string, readonly DeliveryKind[]>;
  /**
   * `placement|member` -> what a `profile-moved` fault left on the member's
   * own server (workload objects as `Kind/name`, a RepoSync as its kind):
   * present when the profile moved, for a cluster not listed when it came
   * back. Delivery followed the profile to the other server, so nothing owes
   * their removal: doubt, exempt from (c) and (d) until the placement lists
   * the cluster again or they go.
   */
  readonly stranded: Map<string, Set<string>>;
  /** Members whose ClusterProfile names another server now. */
  readonly moved: Set<string>;
}

const listsMember = (s: ReplayState, placement: string, member: string) =>
  (s.status.get(placement) ?? []).some((c) => c.member === member);

export function replay(history: readonly SoakEvent[], visit: (state: ReplayState, e: SoakEvent) => void): ReplayState {
  const state: ReplayState = {
    status: new Map(),
    intent: new Map(),
    profiles: new Map(),
    objects: new Map(),
    deliveries: new Map(),
    deliveredBy: new Map(),
    stranded: new Map(),
    moved: new Set(),
  };
  for (const e of history) {
    if (e.type === 'status') {
      state.status.set(e.placement, e.clusters);
      for (const c of e.clusters) if (!state.moved.has(c.member)) state.stranded.delete(`${e.placement}|${c.member}`);
    } else if (e.type === 'fault' && e.kind === 'profile-moved') strand(state, e.target, e.phase);
    else if (e.type === 'intent') {
      state.intent.set(e.placement, e.members);
      state.deliveredBy.set(e.placement, e.deliveries ?? ['Kustomization']);
    } else if (e.type === 'profile') state.profiles.set(e.member, e.present);
    else if (e.type === 'object') {
      const key = `${e.placement}|${e.member}`;
      const set = state.objects.get(key) ?? new Set<string>();
      if (e.present) set.add(`${e.kind}/${e.name}`);
      else set.delete(`${e.kind}/${e.name}`);
      state.objects.set(key, set);
      state.stranded.get(key)?.delete(`${e.kind}/${e.name}`);
    } else if (e.type === 'delivery') {
      const key = `${e.placement}|${e.member}`;
      const set = state.deliveries.get(key) ?? new Set<DeliveryKind>();
      if (e.present) set.add(kindOf(e));
      else set.delete(kindOf(e));
      state.deliveries.set(key, set);
      state.stranded.get(key)?.delete(kindOf(e));
    }
    visit(state, e);
  }
  return state;
}

/**
 * A `profile-moved` fault on `member` starts: what is on its own server
 * (its workload objects, a RepoSync) may be stranded there; or ends: what
 * belongs to a placement that lists the member again is delivery's again.
 */
function strand(state: ReplayState, member: string, phase: 'start' | 'end'): void {
  if (phase === 'start') {
    state.moved.add(member);
    for (const [key, objects] of state.objects) {
      if (!key.endsWith(`|${member}`)) continue;
      const onServer = [...objects, ...(state.deliveries.get(key)?.has('RepoSync') ? ['RepoSync'] : [])];
      state.stranded.set(key, new Set([...(state.stranded.get(key) ?? []), ...onServer]));
    }
    return;
  }
  state.moved.delete(member);
  for (const key of [...state.stranded.keys()]) {
    const [placement, m] = key.split('|') as [string, string];
    if (m === member && listsMember(state, placement, member)) state.stranded.delete(key);
  }
}

/** What a moved ClusterProfile left on its members' own servers (`placement|member` -> names), for the report. */
export function strandedObjects(s: ReplayState): Map<string, string[]> {
  return new Map([...s.stranded].filter(([, names]) => names.size > 0).map(([key, names]) => [key, [...names].sort()]));
}

/**
 * How often an autoscaling placement's status moved on its signals: clusters
 * newly listed (scale-out, rule P1: ACTIVE, `Added`) and clusters moved to
 * SCALING_IN for scale-in (rule P2, `ScaleIn`).
 */
export function scalingMoves(history: readonly SoakEvent[], placement: string): { outs: number; ins: number } {
  let outs = 0;
  let ins = 0;
  let before: readonly ListedCluster[] | undefined;
  for (const e of history) {
    if (e.type !== 'status' || e.placement !== placement) continue;
    for (const c of e.clusters) {
      const was = before?.find((b) => b.member === c.member);
      if (before && !was && c.state === 'ACTIVE' && c.reason === 'Added') outs++;
      if (c.state === 'SCALING_IN' && c.reason === 'ScaleIn' && was?.state !== 'SCALING_IN') ins++;
    }
    before = e.clusters;
  }
  return { outs, ins };
}

/** The state after the whole history. */
export const stateAfter = (history: readonly SoakEvent[]): ReplayState => replay(history, () => undefined);

/** The clusters a placement should have ACTIVE: those it wants whose ClusterProfile exists. */
const wanted = (s: ReplayState, placement: string) =>
  (s.intent.get(placement) ?? []).filter((m) => s.profiles.get(m) !== false);

const activeCount = (s: ReplayState, placement: string) =>
  (s.status.get(placement) ?? []).filter((c) => c.state === 'ACTIVE').length;

/**
 * (b) Each placement has at least its minimum of ACTIVE clusters (the
 * clusters it wants whose ClusterProfile exists) except within a shortfall of
 * `minActiveMs` plus the time of overlapping faults that stop decisions (or
 * the placement's own invalid edit; for an autoscaling placement, a moved
 * ClusterProfile too: the other server has no HPA, so the moved cluster's
 * signal is missing and counts as below its ceiling, fail static, and the
 * scale-out that needs its ceiling waits for the profile to come back).
 * Returns the violations and the exempted share: shortfall time allowed,
 * over run time times placements.
 */
export function checkMinActive(
  history: readonly SoakEvent[],
  endT: number,
  bounds: Bounds,
): { violations: Violation[]; exemptedShare: number } {
  const windows = faultWindows(history, endT);
  const placements = new Set<string>();
  const scaling = new Set<string>();
  const episodes: { placement: string; start: number; end: number }[] = [];
  const openSince = new Map<string, number>();
  replay(history, (s, e) => {
    if (e.type === 'intent') placements.add(e.placement);
    if (e.type === 'intent' && e.scaling) scaling.add(e.placement);
    for (const p of placements) {
      const short = activeCount(s, p) < wanted(s, p).length;
      if (short && !openSince.has(p)) openSince.set(p, e.t);
      if (!short && openSince.has(p)) {
        episodes.push({ placement: p, start: openSince.get(p)!, end: e.t });
        openSince.delete(p);
      }
    }
  });
  for (const [placement, start] of openSince) episodes.push({ placement, start, end: endT });
  const violations: Violation[] = [];
  let exempted = 0;
  for (const ep of episodes) {
    const stalled = windows
      .filter(
        (w) =>
          STALLING.has(w.kind) ||
          (w.kind === 'placement-invalid' && w.target === ep.placement) ||
          (w.kind === 'profile-moved' && scaling.has(ep.placement)),
      )
      .reduce((sum, w) => sum + overlap(ep.start, ep.end, w.start, w.end), 0);
    const allowed = bounds.minActiveMs + stalled;
    const length = ep.end - ep.start;
    exempted += Math.min(length, allowed);
    if (length > allowed) {
      violations.push({
        invariant: 'b',
        t: ep.start + allowed,
        message: `${ep.placement} below its minimum of ACTIVE clusters for ${Math.round(length / 1000)} s (allowed ${Math.round(allowed / 1000)} s)`,
      });
    }
  }
  const total = Math.max(1, endT) * Math.max(1, placements.size);
  return { violations, exemptedShare: exempted / total };
}

/**
 * The delivery objects of `placement` on `member` that should be gone
 * (`deliveryWanted` false) but are present, with its workload objects.
 */
function leftOver(s: ReplayState, placement: string, member: string): string[] {
  const key = `${placement}|${member}`;
  const present = s.deliveries.get(key) ?? new Set<DeliveryKind>();
  const stranded = s.stranded.get(key);
  const kinds = (s.deliveredBy.get(placement) ?? []).filter(
    (k) => present.has(k) && deliveryWanted(k, false, s.profiles.get(member) !== false) === false,
  );
  return [...(s.objects.get(key) ?? [])].concat(kinds).filter((name) => !stranded?.has(name));
}

/**
 * Converged: every placement has ACTIVE exactly the clusters it wants, and
 * delivery matches status: each listed cluster has its delivery objects (of
 * each path that delivers the placement) and `objectsPerCluster` workload
 * objects, each other cluster none (`deliveryWanted`).
 */
export function isConverged(s: ReplayState, members: readonly string[], objectsPerCluster: number): boolean {
  for (const p of s.intent.keys()) {
    const listed = s.status.get(p) ?? [];
    const active = listed
      .filter((c) => c.state === 'ACTIVE')
      .map((c) => c.member)
      .sort();
    if (active.join() !== [...wanted(s, p)].sort().join()) return false;
    for (const m of members) {
      const on = listed.some((c) => c.member === m);
      const stranded = s.stranded.get(`${p}|${m}`);
      const objects = [...(s.objects.get(`${p}|${m}`) ?? [])].filter((o) => on || !stranded?.has(o)).length;
      if (objects !== (on ? objectsPerCluster : 0)) return false;
      const present = s.deliveries.get(`${p}|${m}`);
      for (const kind of s.deliveredBy.get(p) ?? []) {
        const want = deliveryWanted(kind, on, s.profiles.get(m) !== false);
        const has = (present?.has(kind) ?? false) && (on || !stranded?.has(kind));
        if (want !== undefined && want !== has) return false;
      }
    }
  }
  return true;
}

export interface Convergence {
  readonly id: number;
  readonly kind: FaultKind;
  readonly target: string;
  readonly end: number;
  /** Milliseconds from the fault's end to the first converged state; undefined if never before the run's end. */
  readonly ms?: number;
}

/**
 * (c) For each fault, the time from its end to the first converged state at
 * or after it (faults overlap: a later fault can lengthen an earlier one's
 * time). A violation when that state comes later than the bound after the
 * end of the busy period the fault ends in: a chain of faults, each
 * overlapping the ones before or starting before the state converged after
 * them.
 */
export function convergence(
  history: readonly SoakEvent[],
  members: readonly string[],
  objectsPerCluster: number,
  endT: number,
  bounds: Bounds,
): { convergences: Convergence[]; violations: Violation[] } {
  const convergedAt: number[] = [];
  let was = false;
  replay(history, (s, e) => {
    const now = isConverged(s, members, objectsPerCluster);
    if (now && !was) convergedAt.push(e.t);
    // A fault's end, while converged already, counts as converged at that moment.
    if (now && e.type === 'fault' && e.phase === 'end') convergedAt.push(e.t);
    was = now;
  });
  const ends = history.filter((e) => e.type === 'fault' && e.phase === 'end') as Extract<
    SoakEvent,
    { type: 'fault' }
  >[];
  const convergences: Convergence[] = [];
  const violations: Violation[] = [];
  // Faults chain: the bound runs from the end of the busy period a fault ends in: the fault windows
  // overlapping it, and those starting before the state converged after them (they hit a stack still
  // recovering). Windows are in start order, so the first that joins neither ends the chain.
  const windows = faultWindows(history, endT);
  const busyEnd = (t: number) => {
    let end = t;
    for (const w of windows) {
      if (w.end <= end) continue;
      if (w.start > end && w.start >= (convergedAt.find((c) => c >= end) ?? Infinity)) break;
      end = w.end;
    }
    return end;
  };
  for (const e of ends) {
    // The first converged moment at or after the end, where the state stayed converged at least until then.
    const at = convergedAt.find((c) => c >= e.t) ?? stillConverged(history, e.t, members, objectsPerCluster);
    const ms = at === undefined ? undefined : at - e.t;
    convergences.push({ id: e.id, kind: e.kind, target: e.target, end: e.t, ...(ms === undefined ? {} : { ms }) });
    const deadline = busyEnd(e.t) + bounds.convergeMs;
    if (at === undefined ? endT > deadline : at > deadline) {
      violations.push({
        invariant: 'c',
        t: deadline,
        message: `no convergence within ${bounds.convergeMs / 1000} s after ${e.kind} ${e.target} (fault ${e.id}) and its busy period ended${ms === undefined ? '' : `: took ${Math.round(ms / 1000)} s`}`,
      });
    }
  }
  return { convergences, violations };
}

/** When the state at `t` is converged already, `t`. */
function stillConverged(
  history: readonly SoakEvent[],
  t: number,
  members: readonly string[],
  objectsPerCluster: number,
): number | undefined {
  const state = stateAfter(history.filter((e) => e.t <= t));
  return isConverged(state, members, objectsPerCluster) ? t : undefined;
}

/**
 * (d) Within `leftoverMs` after a cluster left a placement (plus the time its
 * member's apiserver was down meanwhile), no workload object of the
 * placement remains there and no delivery object that follows the
 * placement's list (a Kustomization, an Application, a RepoSync) remains,
 * unless the placement listed it again. Removals on doubt are (a)'s concern,
 * not this one's.
 */
export function checkLeftovers(
  history: readonly SoakEvent[],
  endT: number,
  bounds: Bounds,
  // The signature judge() calls: what is left is named, not counted.
  _objectsPerCluster: number,
): Violation[] {
  const windows = faultWindows(history, endT);
  const removals: { placement: string; member: string; t: number }[] = [];
  const previous = new Map<string, readonly ListedCluster[]>();
  for (const e of history) {
    if (e.type !== 'status') continue;
    for (const c of previous.get(e.placement) ?? []) {
      if (!e.clusters.some((n) => n.member === c.member))
        removals.push({ placement: e.placement, member: c.member, t: e.t });
    }
    previous.set(e.placement, e.clusters);
  }
  const violations: Violation[] = [];
  for (const r of removals) {
    const down = windows
      .filter((w) => w.kind === 'member-down' && w.target === r.member && w.end >= r.t)
      .reduce((sum, w) => sum + (w.end - Math.max(w.start, r.t)), 0);
    const deadline = r.t + bounds.leftoverMs + down;
    if (deadline > endT) continue;
    let relisted = false;
    let left: string[] = [];
    replay(
      history.filter((e) => e.t <= deadline),
      (s, e) => {
        if (e.t > r.t && e.type === 'status' && e.placement === r.placement) {
          relisted ||= e.clusters.some((c) => c.member === r.member);
        }
        left = leftOver(s, r.placement, r.member);
      },
    );
    if (!relisted && left.length > 0) {
      violations.push({
        invariant: 'd',
        t: deadline,
        message: `${left.join(', ')} of ${r.placement} still for ${r.member} ${Math.round((deadline - r.t) / 1000)} s after it left`,
      });
    }
  }
  return violations;
}

export interface RssFigure {
  readonly process: string;
  readonly samples: number;
  readonly firstKb: number;
  readonly lastKb: number;
  readonly maxKb: number;
  /** Growth over the window (the last 30 minutes, or the second half of a shorter run) of the incarnation that lived through it; undefined when it restarted within it. */
  readonly growth?: number;
}

/**
 * (e) RSS per process: figures, and, in a run of an hour or more, a violation
 * where one incarnation grew more than `rssGrowth` over the last 30 minutes.
 */
export function checkRss(
  history: readonly SoakEvent[],
  endT: number,
  bounds: Bounds,
): { figures: RssFigure[]; violations: Violation[] } {
  const windowStart = endT - Math.min(30 * 60_000, endT / 2);
  const byProcess = new Map<string, Extract<SoakEvent, { type: 'rss' }>[]>();
  for (const e of history) if (e.type === 'rss') byProcess.set(e.process, [...(byProcess.get(e.process) ?? []), e]);
  const figures: RssFigure[] = [];
  const violations: Violation[] = [];
  for (const [process, samples] of byProcess) {
    const last = samples.at(-1)!;
    const incarnation = samples.filter((s) => s.pid === last.pid);
    const inWindow = incarnation.filter((s) => s.t >= windowStart);
    const lived = incarnation[0]!.t <= windowStart && inWindow.length >= 2;
    const growth = lived ? inWindow.at(-1)!.kb / inWindow[0]!.kb - 1 : undefined;
    figures.push({
      process,
      samples: samples.length,
      firstKb: samples[0]!.kb,
      lastKb: last.kb,
      maxKb: Math.max(...samples.map((s) => s.kb)),
      ...(growth === undefined ? {} : { growth }),
    });
    // Enforced over the issue's window only (the last 30 of at least 60 minutes): over a few
    // minutes a Node.js process's RSS moves more than 10% with its garbage collector alone.
    if (endT >= 60 * 60_000 && growth !== undefined && growth > bounds.rssGrowth) {
      violations.push({
        invariant: 'e',
        t: last.t,
        message: `${process} RSS grew ${(growth * 100).toFixed(1)}% over the last ${Math.round((endT - windowStart) / 60_000)} min`,
      });
    }
  }
  return { figures, violations };
}

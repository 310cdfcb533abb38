// The soak's fault schedule: a pure function of the seed, so one seed gives
// one schedule (replay a failing run with the seed its report prints).
import { createRandom, type Random } from '@mco/simulator';

/** Every fault kind the injector runs (docs/reliability.md lists each). */
export const FAULT_KINDS = [
  'controller-kill', // kill -9 of a controller replica; started again like a restarted pod
  'controller-restart', // SIGTERM, then started again
  'flux-kill', // kill -9 of `mco flux`
  'flux-restart',
  'hub-restart', // the hub's kube-apiserver stopped (SIGTERM) and started
  'etcd-restart', // etcd killed (-9) and started on the same data
  'member-down', // a member's kube-apiserver stopped for 10-120 s
  'member-slow', // a member reached through a proxy adding 0.5-5 s latency, or refusing connections, for 10-60 s
  'profiles-deleted', // 40% of the ClusterProfiles deleted, restored later
  'placement-invalid', // a placement edited to an invalid spec, then back
  'engine-kill', // a Flux engine killed (-9), kustomize-controller or flux-operator, started again
  'plugin-kill', // kill -9 of `mco argocd-plugin`, the server Argo CD's plugin generator calls
  'plugin-restart', // SIGTERM of `mco argocd-plugin`
  'appset-kill', // Argo CD's argocd-applicationset-controller killed (-9), started again
  'configsync-kill', // kill -9 of `mco configsync`, started again
  'configsync-restart', // SIGTERM of `mco configsync`, started again
  'argocd-sync-kill', // kill -9 of `mco argocd-sync` (cluster Secrets, ApplicationSet refresh), started again
  'argocd-sync-restart', // SIGTERM of `mco argocd-sync`, started again
  'profile-moved', // a member's ClusterProfile rewritten to name another server (a spare apiserver), then back
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * Mean time between two fault starts by default: at 9 s an hour draws 330 to
 * 400 faults, each of the 19 kinds at least 17 times (seeds 1-20).
 */
export const DEFAULT_MEAN_GAP_MS = 9_000;

export interface Fault {
  /** Milliseconds after the soak's start. */
  readonly atMs: number;
  readonly kind: FaultKind;
  /** What it hits: a replica, a member or a placement (empty when there is one target). */
  readonly target: string;
  /** How long the fault lasts before it is undone (a process's downtime, a member's outage ...). */
  readonly durationMs: number;
  /** `member-slow`: the latency added, or 0 when the proxy refuses connections (one time in four). */
  readonly latencyMs?: number;
}

export interface ScheduleOptions {
  readonly seed: number;
  readonly durationMs: number;
  /** Mean time between two fault starts (exponential inter-arrival times, so faults overlap). */
  readonly meanGapMs: number;
  readonly controllers: readonly string[];
  readonly members: readonly string[];
  readonly placements: readonly string[];
  /** The engines `engine-kill` chooses from (default: one, unnamed). */
  readonly engines?: readonly string[];
  /** No fault starts this long before the end, so that the last ones are seen to converge. */
  readonly quietTailMs: number;
  readonly kinds?: readonly FaultKind[];
}

/** Every `size`-element subset of `items`, in order. */
function subsets(items: readonly string[], size: number): string[][] {
  if (size === 0) return [[]];
  return items.flatMap((item, i) => subsets(items.slice(i + 1), size - 1).map((rest) => [item, ...rest]));
}

const between = (random: Random, low: number, high: number) => Math.round(low + random() * (high - low));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

function targetsOf(kind: FaultKind, o: ScheduleOptions): readonly string[] {
  if (kind === 'controller-kill' || kind === 'controller-restart') return o.controllers;
  if (kind === 'member-down' || kind === 'member-slow' || kind === 'profile-moved') return o.members;
  if (kind === 'placement-invalid') return o.placements;
  if (kind === 'engine-kill') return o.engines ?? [''];
  if (kind === 'profiles-deleted') return subsets(o.members, Math.ceil(o.members.length * 0.4)).map((s) => s.join(','));
  return [''];
}

/** How long each kind lasts, in milliseconds (the ranges where it gives them). */
function durationOf(kind: FaultKind, random: Random): number {
  switch (kind) {
    case 'member-down':
      return between(random, 10_000, 120_000);
    case 'profiles-deleted':
    case 'profile-moved':
      return between(random, 10_000, 90_000);
    case 'placement-invalid':
    case 'member-slow':
      return between(random, 10_000, 60_000);
    case 'etcd-restart':
      return between(random, 500, 5_000);
    default:
      // Time a killed or stopped process stays down before it is started again.
      return between(random, 1_000, 15_000);
  }
}

/** Faults of one slot never overlap: one process, member or placement; all ClusterProfile faults. */
export function slotOf(f: Pick<Fault, 'kind' | 'target'>): string {
  if (f.kind.startsWith('controller-')) return `controller/${f.target}`;
  if (f.kind.startsWith('flux-')) return 'flux';
  if (f.kind.startsWith('plugin-')) return 'plugin';
  if (f.kind.startsWith('argocd-sync-')) return 'argocd-sync';
  if (f.kind.startsWith('configsync-')) return 'configsync';
  // One spare server, and a deletion must not restore a profile another fault has moved.
  if (f.kind === 'profiles-deleted' || f.kind === 'profile-moved') return 'profiles';
  return `${f.kind}/${f.target}`;
}

/**
 * The faults of a run, in start order. Kinds are dealt from a shuffled deck
 * of every kind, shuffled again when it runs out, so that each kind comes
 * about equally often and a short run still meets most of them. A kind whose
 * slot is still busy stays in the deck and the next is tried (another target
 * or kind), so that one process is not killed while it is already down;
 * otherwise faults overlap freely.
 */
export function faultSchedule(o: ScheduleOptions): Fault[] {
  const random = createRandom(o.seed);
  const kinds = o.kinds ?? FAULT_KINDS;
  const busyUntil = new Map<string, number>();
  const faults: Fault[] = [];
  let deck: FaultKind[] = [];
  let at = 0;
  for (;;) {
    at += Math.max(1_000, Math.round(-Math.log(1 - random()) * o.meanGapMs));
    if (at > o.durationMs - o.quietTailMs) return faults;
    if (deck.length === 0) deck = shuffled(random, kinds);
    for (let attempt = 0; attempt < Math.min(8, deck.length); attempt++) {
      const kind = deck[attempt]!;
      const target = pick(random, targetsOf(kind, o));
      const durationMs = durationOf(kind, random);
      const latency = kind === 'member-slow' ? (random() < 0.25 ? 0 : between(random, 500, 5_000)) : undefined;
      const slot = slotOf({ kind, target });
      if ((busyUntil.get(slot) ?? -1) >= at) continue;
      // Restart time and slack: the next fault of the slot waits for this one to be undone.
      busyUntil.set(slot, at + durationMs + 20_000);
      faults.push({ atMs: at, kind, target, durationMs, ...(latency === undefined ? {} : { latencyMs: latency }) });
      deck.splice(attempt, 1);
      break;
    }
  }
}

/** A copy of `items` in random order (Fisher-Yates). */
export function shuffled<T>(random: Random, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

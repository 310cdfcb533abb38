import {
  decide,
  explain,
  type DecideInput,
  type Explanation,
  type ClusterProfile,
  type ClusterState,
  type TransitionId,
  type Decision,
  type FailBackStatus,
  type PlacementCluster,
  type PlacementSpec,
  type PlacementStatus,
  type Signal,
} from '@mco/core';
import { aPlacement, aSteadySignal } from '@mco/core/testing';

export const T0 = Date.UTC(2026, 0, 1);
/** The RFC 3339 time `seconds` after 2026-01-01T00:00:00Z. */
export const at = (seconds: number): string => new Date(T0 + seconds * 1000).toISOString().replace('.000Z', 'Z');

export interface Case {
  readonly spec: PlacementSpec;
  readonly status?: PlacementStatus;
  readonly profiles: readonly ClusterProfile[];
  readonly signals?: readonly Signal[];
  /** Seconds after T0. */
  readonly now: number;
}

/** The engine's input for a case. */
const inputOf = (c: Case): DecideInput => ({
  now: new Date(T0 + c.now * 1000),
  placement: aPlacement('default/web', c.spec, c.status),
  clusterProfiles: c.profiles,
  signals: c.signals ?? [],
});

export const run = (c: Case): Decision => decide(inputOf(c));

/**
 * Runs a case; when it starts a fail-back probe (rule F7), runs it again at
 * the same time with every floor the decision asks for running and ready (the
 * delivery applied desiredMinReplicas and the nodes came), and returns that
 * decision: the one that moves the fallback.
 */
export function runThroughProbe(c: Case): Decision {
  const d = run(c);
  if (!d.status.failBack?.probe || c.status?.failBack?.probe) return d;
  const floors = new Map((d.status.clusters ?? []).map((e) => [`${e.namespace}/${e.name}`, e.desiredMinReplicas]));
  const signals = (c.signals ?? []).map((s) => {
    const floor = floors.get(s.cluster);
    if (floor === undefined || !s.hpa) return s;
    const replicas = Math.max(floor, s.hpa.currentReplicas ?? 0);
    return { ...s, hpa: { ...s.hpa, currentReplicas: replicas, desiredReplicas: replicas }, readyReplicas: replicas };
  });
  return run({ ...c, status: d.status, signals });
}

/** `mco explain` of a case. */
export const explainOf = (c: Case): Explanation => explain(inputOf(c));

/** A status.clusters entry of cluster `ns/name`. */
export function listed(
  key: string,
  state: PlacementCluster['state'],
  since: number,
  extra: Partial<PlacementCluster> = {},
): PlacementCluster {
  const [namespace, name] = key.split('/') as [string, string];
  return { name, namespace, state, lastTransitionTime: at(since), ...extra };
}

/** status.failBack.provenReplicas where fleet/a and fleet/b each ran their HPA maximum of 10 before (rule F2). */
export const PROVEN = [
  { cluster: 'fleet/a', replicas: 10 },
  { cluster: 'fleet/b', replicas: 10 },
];

/** The evaluation time of the fail-back and drain tables (seconds after T0), and a fresh observation. */
export const NOW = 100_000;
export const FRESH = NOW - 10;

/** fleet/a ACTIVE, and fleet/b ACTIVE wanting scale-in for 1000 s, long after the last addition. */
export const B_WANTS_SCALE_IN: PlacementStatus = {
  clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0, { scaleInCandidateSince: at(NOW - 1000) })],
  lastAdditionTime: at(0),
};

/** A fresh signal of a cluster whose HPA runs `replicas` (max 10), all ready, no pending pods; `extra` overrides. */
export const steady = (key: string, replicas: number, extra: Omit<Signal, 'cluster' | 'observedAt'> = {}): Signal => ({
  ...aSteadySignal(key, at(FRESH), replicas),
  ...extra,
});

/** The status entry of cluster `ns/name` in a decision. */
export const clusterOf = (d: Decision, key: string): PlacementCluster | undefined =>
  d.status.clusters?.find((c) => `${c.namespace}/${c.name}` === key);

/**
 * The status after a stockout: fleet/b took load (added at 3000 s) beside the
 * preferred fleet/a, which ran its HPA maximum of 10 before (its proven size,
 * rule F2) and has had room for `room` seconds at NOW (undefined: none);
 * `failBack` adds to status.failBack.
 */
export const afterStockout = (room: number | undefined, failBack: FailBackStatus = {}): PlacementStatus => ({
  clusters: [
    listed('fleet/a', 'ACTIVE', 0, room !== undefined ? { belowCeilingSince: at(NOW - room) } : {}),
    listed('fleet/b', 'ACTIVE', 3000, { reason: 'Added' }),
  ],
  lastAdditionTime: at(3000),
  failBack: {
    ...(room !== undefined ? { roomSince: at(NOW - room) } : {}),
    provenReplicas: PROVEN,
    ...failBack,
  },
});

/** `ns/name state` for every listed cluster, in status order. */
export const states = (d: Decision): string[] =>
  (d.status.clusters ?? []).map((c) => `${c.namespace}/${c.name} ${c.state}`);

/** `id cluster from->to` for every transition. */
export const moves = (d: Decision): string[] =>
  d.transitions.map((t) => `${t.id} ${t.cluster} ${t.from ?? '-'}->${t.to ?? '-'}`);

export const condition = (d: Decision, type: string) => d.status.conditions?.find((c) => c.type === type);

/** The state table of docs/placement-rules.md §3: (from, to) of every transition id. */
export const TRANSITION_TABLE: Record<TransitionId, [ClusterState | null, ClusterState | null]> = {
  P1: [null, 'ACTIVE'],
  P2: ['ACTIVE', 'SCALING_IN'],
  P3: ['SCALING_IN', 'ACTIVE'],
  E1: ['ACTIVE', 'EVICTING'],
  E2: ['EVICTING', 'ACTIVE'],
  E3: ['SCALING_IN', 'EVICTING'],
  H1: ['ACTIVE', 'UNHEALTHY'],
  H2: ['UNHEALTHY', 'ACTIVE'],
  H3: ['SCALING_IN', 'UNHEALTHY'],
  R1: ['SCALING_IN', null],
  R2: ['UNHEALTHY', null],
  R3: ['EVICTING', null],
};

/** A deterministic pseudo-random DNS-label-ish string (benchmarks and regex-cost tests). */
export function randomName(length: number, seed: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789-';
  let x = seed >>> 0;
  let out = '';
  for (let k = 0; k < length; k++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out += alphabet[(x >>> 8) % alphabet.length];
  }
  return out;
}

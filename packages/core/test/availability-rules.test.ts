import { describe, expect, it } from 'vitest';
import {
  aClusterProfile,
  anAtCeilingSignal,
  anAutoscalingSpec,
  anUnreachableSignal,
  aScaleInSignal,
  aSignal,
} from '@mco/core/testing';
import {
  type Behavior,
  type Decision,
  type Draining,
  type FailBackStatus,
  type PlacementCluster,
  type PlacementSpec,
  type Signal,
} from '@mco/core';
import {
  afterStockout,
  at,
  B_WANTS_SCALE_IN,
  clusterOf,
  condition,
  explainOf,
  FRESH,
  listed,
  moves,
  NOW,
  run,
  states,
  steady,
  type Case,
  PROVEN,
} from './helpers.js';

// The rules of docs/placement-rules.md: safe fail-back (F1 backoff, F2
// room, F3 linger), make-before-break draining (D1), fast outage replacement
// (O1) and warm standby (W1). fleet/a is preferred over fleet/b over fleet/c.

const fleet = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b'), aClusterProfile('fleet/c')];
const fresh = FRESH;
const WINDOW = 600;

interface Options {
  readonly min?: number;
  readonly failBack?: NonNullable<Behavior['failBack']> | false;
  readonly standby?: number;
  readonly standbyReplicas?: number;
  readonly useDraining?: boolean;
}
const specOf = (o: Options = {}): PlacementSpec =>
  anAutoscalingSpec(o.min ?? 1, {
    useDraining: o.useDraining ?? true,
    ...(o.standby !== undefined ? { warmStandbyClusters: o.standby } : {}),
    ...(o.standbyReplicas !== undefined ? { warmStandbyReplicas: o.standbyReplicas } : {}),
    behavior: {
      scaleIn: { cooldownSeconds: 300 },
      ...(o.failBack !== false && o.failBack !== undefined ? { failBack: { enabled: true, ...o.failBack } } : {}),
    },
  });
const withFailBack = (extra: NonNullable<Behavior['failBack']> = {}) => specOf({ failBack: extra });

/** What a row checks of a decision: states, transitions, status.failBack and the requeue. */
/** status.failBack without its recent peaks and proven sizes (rule F2 has its own table in fail-back-peak.test.ts). */
const withoutPeaks = (f: FailBackStatus | undefined): FailBackStatus | undefined => {
  if (!f) return f;
  const { recentPeaks: _, provenReplicas: __, ...rest } = f;
  return Object.keys(rest).length > 0 ? rest : undefined;
};
const outcome = (d: Decision) => ({
  states: states(d),
  moves: moves(d),
  failBack: withoutPeaks(d.status.failBack),
  requeue: d.requeueAfterSeconds,
});

describe('F1, F2: fail-back waits for room, and backs off after each cycle', () => {
  // Rule F7: once everything holds, a is first asked for b's first step (2 ready + 25% of 8); b moves once it is ready.
  const probing = (extra: FailBackStatus) => ({
    ...extra,
    probe: { cluster: 'fleet/b', since: at(NOW), receiversReadyReplicas: 2, replicas: 2 },
  });
  const asked = { states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'], moves: [], requeue: 170 };

  it.each<{ name: string; input: Case; expected: ReturnType<typeof outcome> }>([
    {
      name: 'moves back (rule F7: asks for the first step) when the preferred cluster has had room for the replicas moved for the whole window',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: {
        ...asked,
        failBack: probing({ roomSince: at(NOW - WINDOW) }),
      },
    },
    {
      name: 'waits when the preferred cluster has room for fewer replicas than would move (10 − 6 = 4 < 8)',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [steady('fleet/a', 6), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: { states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'], moves: [], failBack: undefined, requeue: 170 },
    },
    {
      name: 'a missing pending-pod count is no room',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [{ ...steady('fleet/a', 2), pendingPods: undefined }, steady('fleet/b', 8)],
        now: NOW,
      },
      expected: { states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'], moves: [], failBack: undefined, requeue: 170 },
    },
    {
      name: 'pending pods on the preferred cluster are no room',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [steady('fleet/a', 2, { pendingPods: 1 }), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: { states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'], moves: [], failBack: undefined, requeue: 170 },
    },
    {
      name: 'a FailedScaleUp on the preferred cluster is no room',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [steady('fleet/a', 2, { failedScaleUp: true }), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: { states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'], moves: [], failBack: undefined, requeue: 170 },
    },
    {
      name: 'room for 500 s of the 600 s window: waits, and asks to be called when it ends',
      input: {
        spec: withFailBack(),
        status: afterStockout(500),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: {
        states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
        moves: [],
        failBack: { roomSince: at(NOW - 500) },
        requeue: 100,
      },
    },
    {
      name: 'after one cycle (backoff level 1) the window is 4 × 600 s: 600 s of room is not enough',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW, { backoffLevel: 1, lastCycleTime: at(NOW - 1000) }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: {
        states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
        moves: [],
        failBack: {
          backoffLevel: 1,
          lastCycleTime: at(NOW - 1000),
          roomSince: at(NOW - WINDOW),
        },
        requeue: 170, // the window ends in 1800 s; the signals turn stale first
      },
    },
    {
      name: 'at backoff level 1, 2400 s of room is enough',
      input: {
        spec: withFailBack(),
        status: afterStockout(2400, { backoffLevel: 1, lastCycleTime: at(NOW - 3000) }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: {
        ...asked,
        failBack: probing({ backoffLevel: 1, lastCycleTime: at(NOW - 3000), roomSince: at(NOW - 2400) }),
      },
    },
    {
      name: 'the backoff decays one level per quiet period (backoffDecaySeconds, 8 h) without a cycle',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW, { backoffLevel: 1, lastCycleTime: at(NOW - 28_800) }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: {
        ...asked,
        // The recorded level stays 1: it decays on reading, from lastCycleTime.
        failBack: probing({ backoffLevel: 1, lastCycleTime: at(NOW - 28_800), roomSince: at(NOW - WINDOW) }),
      },
    },
    {
      name: 'the window is capped at maxStabilizationWindowSeconds (14400 s)',
      input: {
        spec: withFailBack(),
        status: afterStockout(14_400, { backoffLevel: 9 }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 8)],
        now: NOW,
      },
      expected: {
        ...asked,
        failBack: probing({ backoffLevel: 9, roomSince: at(NOW - 14_400) }), // capped when b moves (P2)
      },
    },
    {
      name: 'a P3 of the cluster of the last fail-back completes a cycle: the level rises to 1',
      input: {
        spec: withFailBack(),
        status: {
          clusters: [
            listed('fleet/a', 'ACTIVE', 0),
            listed('fleet/b', 'SCALING_IN', NOW - 900, {
              reason: 'FailBack',
              draining: { desiredMaxReplicas: 6, lastReplicaCountDecrease: at(NOW - 60) },
            }),
          ],
          failBack: { backoffLevel: 0, lastFailBackCluster: 'fleet/b', lastFailBackTime: at(NOW - 900) },
        },
        profiles: fleet,
        signals: [anAtCeilingSignal('fleet/a', at(fresh)), steady('fleet/b', 6)],
        now: NOW,
      },
      expected: {
        states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
        moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
        failBack: { backoffLevel: 1, lastCycleTime: at(NOW), lastFailBackTime: at(NOW - 900) },
        requeue: 170,
      },
    },
    {
      name: 'adding it back (P1) after its removal completes a cycle too',
      input: {
        spec: withFailBack(),
        status: {
          clusters: [listed('fleet/a', 'ACTIVE', 0)],
          failBack: { backoffLevel: 1, lastFailBackCluster: 'fleet/b', lastFailBackTime: at(NOW - 5000) },
        },
        profiles: fleet,
        signals: [anAtCeilingSignal('fleet/a', at(fresh))],
        now: NOW,
      },
      expected: {
        states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
        moves: ['P1 fleet/b -->ACTIVE'],
        failBack: { backoffLevel: 2, lastCycleTime: at(NOW), lastFailBackTime: at(NOW - 5000) },
        requeue: 170,
      },
    },
    {
      name: 'a P1 of another cluster is no cycle',
      input: {
        spec: withFailBack(),
        status: {
          clusters: [listed('fleet/a', 'ACTIVE', 0)],
          failBack: { backoffLevel: 1, lastFailBackCluster: 'fleet/c', lastFailBackTime: at(NOW - 5000) },
        },
        profiles: fleet,
        signals: [anAtCeilingSignal('fleet/a', at(fresh))],
        now: NOW,
      },
      expected: {
        states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
        moves: ['P1 fleet/b -->ACTIVE'],
        failBack: { backoffLevel: 1, lastFailBackCluster: 'fleet/c', lastFailBackTime: at(NOW - 5000) },
        requeue: 170,
      },
    },
  ])('$name', ({ input, expected }) => {
    expect(outcome(run(input))).toEqual(expected);
  });
});

/** F5: fleet/b took load during a stockout; fleet/a has had room for the whole window. */
const failBackCase = (o: { b: number; hpaMin?: number; standbyReplicas?: number }): Case => {
  const signal = (key: string, replicas: number): Signal => {
    const s = steady(key, replicas);
    return { ...s, hpa: { ...s.hpa, minReplicas: o.hpaMin ?? 1 } };
  };
  return {
    spec: specOf({ failBack: {}, ...(o.standbyReplicas !== undefined ? { standbyReplicas: o.standbyReplicas } : {}) }),
    status: {
      clusters: [
        listed('fleet/a', 'ACTIVE', 0, { belowCeilingSince: at(NOW - WINDOW) }),
        listed('fleet/b', 'ACTIVE', 3000, { reason: 'Added' }),
      ],
      lastAdditionTime: at(3000),
      failBack: { roomSince: at(NOW - WINDOW), provenReplicas: PROVEN },
    },
    profiles: fleet,
    signals: [signal('fleet/a', 2), signal('fleet/b', o.b)],
    now: NOW,
  };
};

describe('F5: fail-back moves nothing when the lower-priority cluster runs at its warm size', () => {
  it.each<{ name: string; input: Case; moves: string[] }>([
    {
      name: "b runs 1 replica, the HPA's minReplicas (1): nothing would move, b stays",
      input: failBackCase({ b: 1 }),
      moves: [],
    },
    {
      name: "b runs 2, the HPA's minReplicas as the preferred cluster reports it (2): b stays",
      input: failBackCase({ b: 2, hpaMin: 2 }),
      moves: [],
    },
    { name: 'b runs 3, warmStandbyReplicas 3: b stays', input: failBackCase({ b: 3, standbyReplicas: 3 }), moves: [] },
    {
      name: 'b runs 3, one more than its warm size (2): it fails back (rule F7: a is asked for its first step)',
      input: failBackCase({ b: 3, hpaMin: 2 }),
      moves: ['probe fleet/b'],
    },
  ])('$name', ({ input, moves: expected }) => {
    const d = run(input);
    const probe = d.status.failBack?.probe;
    expect([...moves(d), ...(probe ? [`probe ${probe.cluster}`] : [])]).toEqual(expected);
  });
});

describe('F3: a cluster drained by fail-back lingers warm', () => {
  const lingering = (extra: Partial<PlacementCluster> = {}): Case['status'] => ({
    clusters: [
      listed('fleet/a', 'ACTIVE', 0),
      listed('fleet/b', 'SCALING_IN', NOW - 3000, {
        reason: 'FailBack',
        draining: { desiredMaxReplicas: 1, lastReplicaCountDecrease: at(NOW - 600) },
        ...extra,
      }),
    ],
  });
  // b runs 1 replica; the warm size is the HPA's minReplicas as fleet/a reports it (1).
  const signals = (a: Signal = steady('fleet/a', 6)) => [a, aScaleInSignal('fleet/b', at(fresh), 1)];
  // b has lingered 3500 s (of 3600) when fleet/a reports `a`.
  const lingeringUnder = (a: Signal): Case => ({
    spec: withFailBack(),
    status: lingering({ reason: 'Lingering', lingerSince: at(NOW - 3500) }),
    profiles: fleet,
    signals: signals(a),
    now: NOW,
  });
  const bOf = (d: Decision) => {
    const b = clusterOf(d, 'fleet/b');
    return b && { state: b.state, reason: b.reason, lingerSince: b.lingerSince };
  };

  it.each<{ name: string; input: Case; moves: string[]; b: ReturnType<typeof bOf> }>([
    {
      name: 'drained to its warm size, it lingers instead of being removed (reason Lingering, the clock starts)',
      input: { spec: withFailBack(), status: lingering(), profiles: fleet, signals: signals(), now: NOW },
      moves: [],
      b: { state: 'SCALING_IN', reason: 'Lingering', lingerSince: at(NOW) },
    },
    {
      name: 'after lingerSeconds (3600) with calm preferred clusters it is removed (R1)',
      input: {
        spec: withFailBack(),
        status: lingering({ reason: 'Lingering', lingerSince: at(NOW - 3600) }),
        profiles: fleet,
        signals: signals(),
        now: NOW,
      },
      moves: ['R1 fleet/b SCALING_IN->-'],
      b: undefined,
    },
    {
      name: 'the preferred cluster at its HPA maximum, without pending pods, restarts the linger clock',
      input: lingeringUnder(steady('fleet/a', 10)),
      moves: [],
      b: { state: 'SCALING_IN', reason: 'Lingering', lingerSince: undefined },
    },
    {
      name: 'F4: as many pending pods as half the ready ones on the preferred cluster reactivate the lingering cluster at once, below its ceiling',
      input: lingeringUnder(steady('fleet/a', 6, { pendingPods: 3 })),
      moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
      b: { state: 'ACTIVE', reason: 'Reactivated', lingerSince: undefined },
    },
    {
      name: 'F4: one pending pod at the HPA maximum reactivates the lingering cluster',
      input: lingeringUnder(steady('fleet/a', 10, { pendingPods: 1 })),
      moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
      b: { state: 'ACTIVE', reason: 'Reactivated', lingerSince: undefined },
    },
    {
      name: 'F4: two pending pods beside six ready ones are ordinary growth: no reactivation, the linger clock restarts',
      input: lingeringUnder(steady('fleet/a', 6, { pendingPods: 2 })),
      moves: [],
      b: { state: 'SCALING_IN', reason: 'Lingering', lingerSince: undefined },
    },
    {
      name: 'F4: a cluster still draining for fail-back is not reactivated: the load it hands over makes those pending pods',
      input: {
        spec: withFailBack(),
        status: lingering({ draining: { desiredMaxReplicas: 4, lastReplicaCountDecrease: at(NOW - 600) } }),
        profiles: fleet,
        signals: [steady('fleet/a', 6, { pendingPods: 3 }), steady('fleet/b', 4)],
        now: NOW,
      },
      moves: [],
      b: { state: 'SCALING_IN', reason: 'FailBack', lingerSince: undefined },
    },
    {
      name: 'F4: pending pods on a stale preferred signal reactivate nothing (fail static), and restart the linger clock',
      input: lingeringUnder({ ...steady('fleet/a', 6, { pendingPods: 3 }), observedAt: at(NOW - 100_000) }),
      moves: [],
      b: { state: 'SCALING_IN', reason: 'Lingering', lingerSince: undefined },
    },
    {
      name: 'F4: pending pods never reactivate a cluster scaled in for low demand (reason ScaleIn)',
      input: {
        spec: withFailBack(),
        status: lingering({ reason: 'ScaleIn' }),
        profiles: fleet,
        signals: signals(steady('fleet/a', 6, { pendingPods: 3 })),
        now: NOW,
      },
      moves: ['R1 fleet/b SCALING_IN->-'],
      b: undefined,
    },
    {
      name: 'F4: with fail-back off, pending pods reactivate nothing',
      input: {
        spec: specOf(),
        status: lingering({ reason: 'Lingering', lingerSince: at(NOW - 3500) }),
        profiles: fleet,
        signals: [steady('fleet/a', 6, { pendingPods: 3 }), steady('fleet/b', 4)],
        now: NOW,
      },
      moves: [],
      b: { state: 'SCALING_IN', reason: 'Lingering', lingerSince: at(NOW - 3500) },
    },
    {
      name: 'lingerSeconds is configurable (600)',
      input: {
        spec: withFailBack({ lingerSeconds: 600 }),
        status: lingering({ reason: 'Lingering', lingerSince: at(NOW - 600) }),
        profiles: fleet,
        signals: signals(),
        now: NOW,
      },
      moves: ['R1 fleet/b SCALING_IN->-'],
      b: undefined,
    },
    {
      name: 'with fail-back off nothing lingers: R1 as soon as it reports 1 replica',
      input: { spec: specOf(), status: lingering(), profiles: fleet, signals: signals(), now: NOW },
      moves: ['R1 fleet/b SCALING_IN->-'],
      b: undefined,
    },
  ])('$name', ({ input, moves: expectedMoves, b }) => {
    const d = run(input);
    expect(moves(d)).toEqual(expectedMoves);
    expect(bOf(d)).toEqual(b);
  });
});

describe("F3: the linger ends early once demand is below the preferred clusters' minimum", () => {
  // b lingers at 1 replica (the warm size: fleet/a's minReplicas is 1) since 600 s of the 3600.
  const input = (a: PlacementCluster, b: Partial<PlacementCluster>, aSignal: Signal): Case => ({
    spec: withFailBack(),
    status: {
      clusters: [
        a,
        listed('fleet/b', 'SCALING_IN', NOW - 3000, {
          reason: 'Lingering',
          lingerSince: at(NOW - 600),
          draining: { desiredMaxReplicas: 1, lastReplicaCountDecrease: at(NOW - 900) },
          ...b,
        }),
      ],
    },
    profiles: fleet,
    signals: [aSignal, aScaleInSignal('fleet/b', at(fresh), 1)],
    now: NOW,
  });
  const quietA = (since: number) => listed('fleet/a', 'ACTIVE', 0, { scaleInCandidateSince: at(since) });
  const bOf = (d: Decision) => {
    const b = clusterOf(d, 'fleet/b');
    return b && { reason: b.reason, scaleInCandidateSince: b.scaleInCandidateSince };
  };

  it.each<{ name: string; input: Case; moves: string[]; b: ReturnType<typeof bOf> }>([
    {
      name: 'it and the preferred cluster wanted scale-in for scaleIn.stabilizationWindowSeconds (300 s): removed (R1)',
      input: input(
        quietA(NOW - 400),
        { scaleInCandidateSince: at(NOW - 300) },
        aScaleInSignal('fleet/a', at(fresh), 1),
      ),
      moves: ['R1 fleet/b SCALING_IN->-'],
      b: undefined,
    },
    {
      name: 'for 200 s of 300: it lingers on, the time kept in status',
      input: input(
        quietA(NOW - 400),
        { scaleInCandidateSince: at(NOW - 200) },
        aScaleInSignal('fleet/a', at(fresh), 1),
      ),
      moves: [],
      b: { reason: 'Lingering', scaleInCandidateSince: at(NOW - 200) },
    },
    {
      name: 'the window counts from the later of the two: the preferred cluster since 100 s',
      input: input(
        quietA(NOW - 100),
        { scaleInCandidateSince: at(NOW - 3000) },
        aScaleInSignal('fleet/a', at(fresh), 1),
      ),
      moves: [],
      b: { reason: 'Lingering', scaleInCandidateSince: at(NOW - 3000) },
    },
    {
      name: 'its own HPA at its minimum is not enough while the preferred cluster serves load (a balancer may send it little traffic)',
      input: input(listed('fleet/a', 'ACTIVE', 0), { scaleInCandidateSince: at(NOW - 3000) }, steady('fleet/a', 6)),
      moves: [],
      b: { reason: 'Lingering', scaleInCandidateSince: at(NOW - 3000) },
    },
    {
      name: 'the window starts when a lingering cluster first wants scale-in',
      input: input(quietA(NOW - 400), {}, aScaleInSignal('fleet/a', at(fresh), 1)),
      moves: [],
      b: { reason: 'Lingering', scaleInCandidateSince: at(NOW) },
    },
  ])('$name', ({ input: c, moves: expectedMoves, b }) => {
    const d = run(c);
    expect(moves(d)).toEqual(expectedMoves);
    expect(bOf(d)).toEqual(b);
  });

  it('mco explain says when the linger ends', () => {
    const e = explainOf(
      input(quietA(NOW - 400), { scaleInCandidateSince: at(NOW - 200) }, aScaleInSignal('fleet/a', at(fresh), 1)),
    );
    expect(e.clusters.find((c) => c.cluster === 'fleet/b')?.notes).toContainEqual(
      expect.stringMatching(
        /^it and the preferred clusters want scale-in: its linger ends at \S+ \(scaleIn\.stabilizationWindowSeconds\)$/,
      ),
    );
  });
});

describe('D1: make-before-break draining', () => {
  /** b drains (SCALING_IN) from 8 since it began; a receives, with 5 ready replicas back then. */
  const draining = (d: Partial<Draining>, state: 'SCALING_IN' | 'EVICTING' = 'SCALING_IN', since = NOW - 600) => ({
    clusters: [
      listed('fleet/a', 'ACTIVE', 0),
      listed('fleet/b', state, since, {
        draining: {
          desiredMaxReplicas: 8,
          lastReplicaCountDecrease: at(NOW - 60),
          initialDesiredMaxReplicas: 8,
          receiversReadyReplicas: 5,
          ...d,
        },
      }),
    ],
  });
  /** fleet/a with `ready` ready replicas of the `desired` its HPA wants. */
  const receiver = (ready: number | undefined, desired: number, pendingPods = 0): Signal =>
    aSignal('fleet/a', at(fresh), {
      hpa: { currentReplicas: desired, desiredReplicas: desired, minReplicas: 1, maxReplicas: 20 },
      ...(ready !== undefined ? { readyReplicas: ready } : {}),
      pendingPods,
      failedScaleUp: false,
    });
  /** fleet/a held at its HPA minimum of 3 by TooFewReplicas, one pod of that floor pending (its pool is full). */
  const atFloor = (ready: number): Signal =>
    aSignal('fleet/a', at(fresh), {
      hpa: {
        currentReplicas: 3,
        desiredReplicas: 3,
        minReplicas: 3,
        maxReplicas: 20,
        scalingLimited: { status: 'True', reason: 'TooFewReplicas' },
      },
      readyReplicas: ready,
      pendingPods: 1,
      failedScaleUp: false,
    });
  const input = (status: Case['status'], a: Signal, spec = specOf()): Case => ({
    spec,
    status,
    profiles: fleet,
    signals: [a, aSignal('fleet/b', at(fresh), { hpa: { currentReplicas: 8, maxReplicas: 8 } })],
    now: NOW,
  });
  const stepped = (desired: number, extra: Partial<Draining> = {}): Draining => ({
    desiredMaxReplicas: desired,
    lastReplicaCountDecrease: at(NOW),
    currentReplicaCount: 8,
    initialDesiredMaxReplicas: 8,
    receiversReadyReplicas: 5,
    ...extra,
  });
  const held = (desired: number, pausedReason?: string): Draining => ({
    ...stepped(desired),
    lastReplicaCountDecrease: at(NOW - 60),
    ...(pausedReason ? { pausedReason } : {}),
  });

  it.each<{ name: string; input: Case; moves: string[]; draining: Draining | undefined; requeue: number }>([
    {
      name: 'the receivers are settled (5 of 5 desired ready, nothing pending): one step of 25%',
      input: input(draining({}), receiver(5, 5)),
      moves: [],
      draining: stepped(6),
      requeue: 60,
    },
    {
      name: 'the receivers grew by the drop so far (2: 5 → 7 ready) while still scaling up: one step',
      input: input(draining({ desiredMaxReplicas: 6 }), receiver(7, 9)),
      moves: [],
      draining: stepped(4),
      requeue: 60,
    },
    {
      name: 'the drop so far (2) exceeds the growth (1) and a still scales up: paused, ReceiversNotReady',
      input: input(draining({ desiredMaxReplicas: 6 }), receiver(6, 9)),
      moves: [],
      draining: held(6, 'ReceiversNotReady'),
      requeue: 60,
    },
    {
      name: 'pending pods make the receivers unsettled: paused',
      input: input(draining({ desiredMaxReplicas: 6 }), receiver(5, 5, 1)),
      moves: [],
      draining: held(6, 'ReceiversNotReady'),
      requeue: 60,
    },
    {
      // Its load asks at most minReplicas − 1 (2), which are ready: what it lacks is its floor, which may never be placed.
      name: 'a receiver held at its HPA minimum (TooFewReplicas), 2 of 3 ready and one pending: settled, one step',
      input: input(draining({ desiredMaxReplicas: 6 }), atFloor(2)),
      moves: [],
      draining: stepped(4),
      requeue: 60,
    },
    {
      name: 'the same receiver with 1 of 3 ready: its load may ask for 2, paused',
      input: input(draining({ desiredMaxReplicas: 6 }), atFloor(1)),
      moves: [],
      draining: held(6, 'ReceiversNotReady'),
      requeue: 60,
    },
    {
      name: 'a receiver whose pending pods the node autoscaler failed to place is not waited on: c is settled, one step',
      input: {
        ...input(draining({ desiredMaxReplicas: 6 }), { ...receiver(5, 7, 2), failedScaleUp: true }),
        status: {
          clusters: [...draining({ desiredMaxReplicas: 6 }).clusters, listed('fleet/c', 'ACTIVE', 0)],
        },
        signals: [
          { ...receiver(5, 7, 2), failedScaleUp: true },
          aSignal('fleet/b', at(fresh), { hpa: { currentReplicas: 8, maxReplicas: 8 } }),
          { ...receiver(3, 3), cluster: 'fleet/c' },
        ],
      },
      moves: [],
      draining: stepped(4),
      requeue: 60,
    },
    {
      name: 'the only receiver has pods the node autoscaler failed to place: it is at its ceiling, so b returns (P3) rather than drain onto it',
      input: input(draining({ desiredMaxReplicas: 6 }), { ...receiver(5, 7, 2), failedScaleUp: true }),
      moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
      draining: undefined,
      requeue: 170, // the signals' staleness, as for any cluster with nothing due
    },
    {
      name: 'receivers short for evictionTimeoutSeconds (1800) since the last step: the step is taken, a drain never waits for ever',
      input: input(draining({ desiredMaxReplicas: 6, lastReplicaCountDecrease: at(NOW - 1800) }), receiver(6, 9)),
      moves: [],
      draining: stepped(4),
      requeue: 60,
    },
    {
      name: "a receiver's ready replicas are unknown: no step, ReadyReplicasUnknown",
      input: input(draining({ desiredMaxReplicas: 6 }), receiver(undefined, 5)),
      moves: [],
      draining: held(6, 'ReadyReplicasUnknown'),
      requeue: 60,
    },
    {
      name: 'a drain recorded before these fields counts from now: its first step is free',
      input: input(
        {
          clusters: [
            listed('fleet/a', 'ACTIVE', 0),
            listed('fleet/b', 'SCALING_IN', NOW - 600, {
              draining: { desiredMaxReplicas: 8, lastReplicaCountDecrease: at(NOW - 60) },
            }),
          ],
        },
        receiver(5, 9),
      ),
      moves: [],
      draining: stepped(6),
      requeue: 60,
    },
    {
      name: 'within the interval nothing steps and nothing is paused',
      input: input(draining({ desiredMaxReplicas: 6, lastReplicaCountDecrease: at(NOW - 30) }), receiver(5, 9)),
      moves: [],
      draining: { ...held(6), lastReplicaCountDecrease: at(NOW - 30) },
      requeue: 30,
    },
    {
      name: "a paused EVICTING drain still ends at evictionTimeoutSeconds (R3's timeout applies)",
      input: input(
        draining({ desiredMaxReplicas: 6 }, 'EVICTING', NOW - 1800),
        receiver(6, 9),
        anAutoscalingSpec(
          1,
          { useDraining: true },
          {
            clusterSelectorRules: [{ type: 'cluster-list', arguments: { clusters: 'fleet/a' } }],
          },
        ),
      ),
      moves: ['R3 fleet/b EVICTING->-'],
      draining: undefined,
      requeue: 170,
    },
  ])('$name', ({ input: i, moves: expectedMoves, draining: expected, requeue }) => {
    const d = run(i);
    expect(moves(d)).toEqual(expectedMoves);
    expect(clusterOf(d, 'fleet/b')?.draining).toEqual(expected);
    expect(d.requeueAfterSeconds).toBe(requeue);
  });
});

describe('O1: an unreachable cluster is replaced at once, never removed for it', () => {
  it.each<{ name: string; input: Case; states: string[]; moves: string[]; satisfied: string }>([
    {
      name: 'an ACTIVE cluster unreachable on 2 polls leaves the headroom count: a replacement is added, it stays ACTIVE',
      input: {
        spec: specOf(),
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
        profiles: fleet,
        signals: [anUnreachableSignal('fleet/a', at(fresh), 2)],
        now: NOW,
      },
      states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
      moves: ['P1 fleet/b -->ACTIVE'],
      satisfied: 'True',
    },
    {
      name: 'one failed poll is only missing data: nothing is added',
      input: {
        spec: specOf(),
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
        profiles: fleet,
        signals: [anUnreachableSignal('fleet/a', at(fresh), 1)],
        now: NOW,
      },
      states: ['fleet/a ACTIVE'],
      moves: [],
      satisfied: 'True',
    },
    {
      name: 'a stale transport error is missing data too',
      input: {
        spec: specOf(),
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
        profiles: fleet,
        signals: [anUnreachableSignal('fleet/a', at(NOW - 1000), 5)],
        now: NOW,
      },
      states: ['fleet/a ACTIVE'],
      moves: [],
      satisfied: 'True',
    },
    {
      name: 'unreachable far longer than every timeout, with its replacement listed: it is never removed or evicted',
      input: {
        spec: specOf(),
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 1000)] },
        profiles: fleet,
        signals: [anUnreachableSignal('fleet/a', at(fresh), 200), steady('fleet/b', 5)],
        now: NOW,
      },
      states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
      moves: [],
      satisfied: 'True',
    },
    {
      name: 'an unreachable cluster is neither reactivated nor added as a replacement',
      input: {
        spec: specOf(),
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'SCALING_IN', 1000)] },
        profiles: fleet,
        signals: [
          anAtCeilingSignal('fleet/a', at(fresh)),
          anUnreachableSignal('fleet/b', at(fresh)),
          anUnreachableSignal('fleet/c', at(fresh)),
        ],
        now: NOW,
      },
      states: ['fleet/a ACTIVE', 'fleet/b SCALING_IN'],
      moves: [],
      satisfied: 'False',
    },
  ])('$name', ({ input, states: expectedStates, moves: expectedMoves, satisfied }) => {
    const d = run(input);
    expect(states(d)).toEqual(expectedStates);
    expect(moves(d)).toEqual(expectedMoves);
    expect(condition(d, 'Satisfied')?.status).toBe(satisfied);
  });
});

describe('W1: warm standby', () => {
  const standby = (desired: number, extra: Partial<PlacementCluster> = {}) =>
    listed('fleet/b', 'SCALING_IN', NOW - 600, {
      reason: 'WarmStandby',
      draining: {
        desiredMaxReplicas: desired,
        lastReplicaCountDecrease: at(NOW - 600),
        initialDesiredMaxReplicas: desired,
        receiversReadyReplicas: 5,
      },
      ...extra,
    });
  const view = (d: Decision) =>
    (d.status.clusters ?? []).map((c) => ({
      cluster: `${c.namespace}/${c.name}`,
      state: c.state,
      reason: c.reason,
      desiredMaxReplicas: c.draining?.desiredMaxReplicas,
    }));

  /** fleet/a ACTIVE (listed first), then `others`, with the signals given. */
  const withA = (o: Options, others: PlacementCluster[], signals: Signal[]): Case => ({
    spec: specOf(o),
    status: { clusters: [listed('fleet/a', 'ACTIVE', 0), ...others] },
    profiles: fleet,
    signals,
    now: NOW,
  });
  const row = (cluster: string, state: PlacementCluster['state'], reason?: string, desiredMaxReplicas?: number) => ({
    cluster,
    state,
    reason,
    desiredMaxReplicas,
  });
  const A = row('fleet/a', 'ACTIVE');
  const a5 = steady('fleet/a', 5);
  const bAt = (replicas: number) => aScaleInSignal('fleet/b', at(fresh), replicas);
  const newStandbyC = ['P1 fleet/c -->ACTIVE', 'P2 fleet/c ACTIVE->SCALING_IN'];

  it.each<{ name: string; input: Case; moves: string[]; clusters: ReturnType<typeof view> }>([
    {
      name: 'warmStandbyClusters 1: the next cluster is added and held SCALING_IN at warmStandbyReplicas (WarmStandby)',
      input: withA({ standby: 1, standbyReplicas: 2 }, [], [a5]),
      moves: ['P1 fleet/b -->ACTIVE', 'P2 fleet/b ACTIVE->SCALING_IN'],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'WarmStandby', 2)],
    },
    {
      name: "a standby at its size (the HPA's minReplicas, 1) stays listed even at 1 replica",
      input: withA({ standby: 1 }, [standby(1)], [a5, bAt(1)]),
      moves: [],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'WarmStandby', 1)],
    },
    {
      name: 'a standby below its size (added before any signal told the HPA minReplicas) is raised to its size at once',
      input: withA({ standby: 1, standbyReplicas: 2 }, [standby(1)], [a5, bAt(1)]),
      moves: [],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'WarmStandby', 2)],
    },
    {
      name: 'when a becomes unreachable the standby is reactivated first (P3), and the next cluster becomes the standby',
      input: withA(
        { standby: 1, standbyReplicas: 2 },
        [standby(2)],
        [anUnreachableSignal('fleet/a', at(fresh)), steady('fleet/b', 2)],
      ),
      moves: ['P3 fleet/b SCALING_IN->ACTIVE', ...newStandbyC],
      clusters: [A, row('fleet/b', 'ACTIVE', 'Reactivated'), row('fleet/c', 'SCALING_IN', 'WarmStandby', 2)],
    },
    {
      name: 'a scaled-in cluster at the standby size becomes the standby instead of being removed',
      input: withA({ standby: 1, standbyReplicas: 2 }, [standby(2, { reason: 'ScaleIn' })], [a5, bAt(2)]),
      moves: [],
      clusters: [A, row('fleet/b', 'SCALING_IN', 'WarmStandby', 2)],
    },
    {
      name: 'no longer wanted (warmStandbyClusters 0): released, and removed once at 1 replica',
      input: withA({ standby: 0 }, [standby(1)], [a5, bAt(1)]),
      moves: ['R1 fleet/b SCALING_IN->-'],
      clusters: [A],
    },
    {
      name: 'a standby does not count toward minClustersBelowCapacityCeiling: with min 2 it is reactivated',
      input: withA({ min: 2, standby: 1, standbyReplicas: 2 }, [standby(2)], [a5, steady('fleet/b', 2)]),
      moves: ['P3 fleet/b SCALING_IN->ACTIVE', ...newStandbyC],
      clusters: [A, row('fleet/b', 'ACTIVE', 'Reactivated'), row('fleet/c', 'SCALING_IN', 'WarmStandby', 2)],
    },
  ])('$name', ({ input, moves: expectedMoves, clusters }) => {
    const d = run(input);
    expect(moves(d)).toEqual(expectedMoves);
    expect(view(d)).toEqual(clusters);
  });

  it('warmStandbyClusters without useDraining is invalid (InvalidBehavior) and changes nothing', () => {
    const status = { clusters: [listed('fleet/a', 'ACTIVE', 0)] };
    const d = run({
      spec: specOf({ standby: 1, useDraining: false }),
      status,
      profiles: fleet,
      signals: [steady('fleet/a', 5)],
      now: NOW,
    });
    expect(d.transitions).toEqual([]);
    expect(d.status.clusters).toEqual(status.clusters);
    expect(condition(d, 'Valid')).toMatchObject({
      status: 'False',
      reason: 'InvalidBehavior',
      message: expect.stringMatching(/^spec\.scaling\.autoscaleForCapacity\.warmStandbyClusters: a warm standby needs/),
    });
  });
});

describe('§10.7 regions: an outage takes a region, not a cluster', () => {
  // fleet/a and fleet/b share region r1 (one by the well-known label, one by the property); fleet/c is in r2.
  const regional = (cHealthy = true) => [
    aClusterProfile('fleet/a', { labels: { 'topology.kubernetes.io/region': 'r1' } }),
    aClusterProfile('fleet/b', { properties: { region: 'r1' } }),
    aClusterProfile('fleet/c', { labels: { 'topology.kubernetes.io/region': 'r2' }, controlPlaneHealthy: cHealthy }),
  ];
  const withA = (o: Options, profiles: ReturnType<typeof regional>, signals: Signal[]): Case => ({
    spec: specOf(o),
    status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
    profiles,
    signals,
    now: NOW,
  });
  const aDown = [anUnreachableSignal('fleet/a', at(fresh))];

  it.each<{ name: string; input: Case; moves: string[]; message?: string }>([
    {
      name: 'a unreachable: the replacement comes from another region (c), not from a’s region (b)',
      input: withA({}, regional(), aDown),
      moves: ['P1 fleet/c -->ACTIVE'],
      message:
        'headroom 0 < min 1: added the highest-priority eligible cluster outside the regions of unreachable clusters',
    },
    {
      name: 'no cluster outside the region can be added (c unhealthy): b, in a’s region, is still added',
      input: withA({}, regional(false), aDown),
      moves: ['P1 fleet/b -->ACTIVE'],
      message: 'headroom 0 < min 1: added the highest-priority eligible cluster',
    },
    {
      name: 'without regions the order is the priority order (fleet has none)',
      input: { ...withA({}, regional(), aDown), profiles: fleet },
      moves: ['P1 fleet/b -->ACTIVE'],
    },
    {
      name: 'the warm standby is added outside the regions of the ACTIVE clusters: c, not b',
      input: withA({ standby: 1, standbyReplicas: 2 }, regional(), [steady('fleet/a', 5)]),
      moves: ['P1 fleet/c -->ACTIVE', 'P2 fleet/c ACTIVE->SCALING_IN'],
    },
    {
      name: 'when no other region is addable the standby shares a’s region',
      input: withA({ standby: 1, standbyReplicas: 2 }, regional(false), [steady('fleet/a', 5)]),
      moves: ['P1 fleet/b -->ACTIVE', 'P2 fleet/b ACTIVE->SCALING_IN'],
    },
  ])('$name', ({ input, moves: expected, message }) => {
    const d = run(input);
    expect(moves(d)).toEqual(expected);
    if (message !== undefined) expect(d.transitions[0]?.reason).toBe(message);
  });
});

describe('T1: scale-out adds the next cluster when the ceiling is in sight', () => {
  /** fleet/a's HPA asks for `desired` of its 10 replicas, `ready` of them ready (`ready` undefined: not reported). */
  const growing = (desired: number, ready: number | undefined, extra: Omit<Signal, 'cluster' | 'observedAt'> = {}) => {
    const { readyReplicas: _, ...signal } = steady('fleet/a', desired, extra);
    return {
      ...signal,
      hpa: { ...signal.hpa, desiredReplicas: desired },
      ...(ready !== undefined ? { readyReplicas: ready } : {}),
    };
  };
  const alone = (signal: Signal): Case => ({
    spec: specOf(),
    status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
    profiles: fleet,
    signals: [signal],
    now: NOW,
  });

  /** fleet/b has wanted scale-in for long, fleet/a's signal decides whether it may go. */
  const withScaleInCandidate = (signal: Signal): Case => ({
    spec: specOf(),
    status: B_WANTS_SCALE_IN,
    profiles: fleet,
    signals: [signal, aScaleInSignal('fleet/b', at(fresh))],
    now: NOW,
  });

  it.each<{ name: string; input: Case; moves: string[] }>([
    {
      name: 'the HPA asks for its maximum with replicas still coming: the next cluster is added',
      input: alone(growing(10, 6)),
      moves: ['P1 fleet/b -->ACTIVE'],
    },
    {
      name: 'the HPA asks for its maximum, all ready but pods pending: added',
      input: alone(growing(10, 10, { pendingPods: 2 })),
      moves: ['P1 fleet/b -->ACTIVE'],
    },
    {
      name: 'steady at its maximum, every replica ready: nothing is coming, nothing added',
      input: alone(growing(10, 10)),
      moves: [],
    },
    { name: 'growing below its maximum: nothing added', input: alone(growing(8, 4)), moves: [] },
    {
      name: 'ready replicas and pending pods unknown: no prediction (fail static)',
      input: alone(growing(10, undefined, { pendingPods: undefined })),
      moves: [],
    },
    {
      name: 'a stale signal predicts nothing',
      input: alone({ ...growing(10, 6), observedAt: at(NOW - 1000) }),
      moves: [],
    },
    {
      name: 'no scale-in of the only other cluster while the ceiling is in sight',
      input: withScaleInCandidate(growing(10, 6)),
      moves: [],
    },
    {
      name: 'the same scale-in goes ahead once the ceiling is no longer in sight',
      input: withScaleInCandidate(growing(10, 10)),
      moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    },
  ])('$name', ({ input, moves: expected }) => {
    expect(moves(run(input))).toEqual(expected);
  });

  it('when no cluster can be added, Satisfied says which cluster has its ceiling in sight', () => {
    const d = run({ ...alone(growing(10, 6)), spec: anAutoscalingSpec(1, { maxClusters: 1 }) });
    expect(moves(d)).toEqual([]);
    expect(condition(d, 'Satisfied')).toMatchObject({
      status: 'False',
      reason: 'MaxClustersReached',
      message:
        '0 of 1 required cluster(s) are ACTIVE and below their capacity ceiling (not counting fleet/a: ceiling in sight, rule T1); maxClusters (1) reached',
    });
  });

  it('mco explain says why fleet/a is not counted as headroom', () => {
    const notes = explainOf(alone(growing(10, 6))).clusters.find((c) => c.cluster === 'fleet/a')?.notes ?? [];
    expect(notes).toContain(
      'ceiling in sight: the HPA asks for its maximum (10/10) with 6 ready: not counted as headroom (rule T1)',
    );
  });
});

/** b drains from 8 (now at 6), its last step `lastStepAgo` s ago; a, the receiver, has 6 of 9 desired replicas ready (5 at the start). */
const shortReceivers = (lastStepAgo: number): Case => ({
  spec: specOf(),
  status: {
    clusters: [
      listed('fleet/a', 'ACTIVE', 0),
      listed('fleet/b', 'SCALING_IN', NOW - 600 - lastStepAgo, {
        draining: {
          desiredMaxReplicas: 6,
          lastReplicaCountDecrease: at(NOW - lastStepAgo),
          initialDesiredMaxReplicas: 8,
          receiversReadyReplicas: 5,
        },
      }),
    ],
  },
  profiles: fleet,
  signals: [
    aSignal('fleet/a', at(fresh), {
      hpa: { currentReplicas: 9, desiredReplicas: 9, maxReplicas: 20 },
      readyReplicas: 6,
      pendingPods: 0,
    }),
  ],
  now: NOW,
});
describe('mco explain names each new reason', () => {
  const notesOf = (c: Case, cluster?: string) => {
    const e = explainOf(c);
    return cluster === undefined ? e.notes : (e.clusters.find((x) => x.cluster === cluster)?.notes ?? []);
  };
  const afterStockout = (room: number, failBack: FailBackStatus = {}): Case['status'] => ({
    clusters: [
      listed('fleet/a', 'ACTIVE', 0, { belowCeilingSince: at(NOW - room) }),
      listed('fleet/b', 'ACTIVE', 3000, { reason: 'Added' }),
    ],
    lastAdditionTime: at(3000),
    failBack: { provenReplicas: PROVEN, ...failBack, roomSince: at(NOW - room) },
  });

  it.each<{ name: string; input: Case; cluster: string | undefined; note: RegExp }>([
    {
      name: 'why fail-back moves nothing: the cluster runs at its warm size (F5)',
      input: failBackCase({ b: 2, hpaMin: 2 }),
      cluster: 'fleet/b',
      note: /^no fail-back: fleet\/b runs 2 replica\(s\), no more than the 2 it would linger at: a fail-back would move no load, only cap its autoscaler \(fail-back rule F5\)$/,
    },
    {
      name: 'why fail-back waits: the backoff',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW, { backoffLevel: 1, lastCycleTime: at(NOW - 1000) }),
        profiles: fleet,
        signals: [steady('fleet/a', 2), steady('fleet/b', 8)],
        now: NOW,
      },
      cluster: undefined,
      note: /^fail-back waits until \S+: backoff level 1 after fail-back cycles: window 2400s/,
    },
    {
      name: 'why fail-back waits: no room',
      input: {
        spec: withFailBack(),
        status: afterStockout(WINDOW),
        profiles: fleet,
        signals: [steady('fleet/a', 6), steady('fleet/b', 8)],
        now: NOW,
      },
      cluster: 'fleet/b',
      note: /^fail-back waits for room: the preferred clusters have room for 4 replica\(s\), 8 would move$/,
    },
    {
      name: 'why a drain is paused',
      input: shortReceivers(60),
      cluster: 'fleet/b',
      note: /^drain paused \(ReceiversNotReady\): the drop so far \(2\) exceeds the receivers' ready-replica growth \(1: 5 → 6\), and fleet\/a has 6 of 9 desired replicas ready$/,
    },
    {
      name: 'why a drain steps although its receivers are short',
      input: shortReceivers(1800),
      cluster: 'fleet/b',
      note: /^drain stepped after waiting behavior.evictionTimeoutSeconds \(1800s\) since its last step for receivers that did not catch up \(rule D1\): the drop so far \(2\) exceeds the receivers' ready-replica growth \(1: 5 → 6\), and fleet\/a has 6 of 9 desired replicas ready$/,
    },
    {
      name: 'why a standby is kept',
      input: {
        spec: specOf({ standby: 1, standbyReplicas: 2 }),
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
        profiles: fleet,
        signals: [steady('fleet/a', 5)],
        now: NOW,
      },
      cluster: 'fleet/b',
      note: /^kept as a warm standby at 2 replica\(s\): warmStandbyClusters is 1; desiredMinReplicas 2 keeps them running \(rule W1\)$/,
    },
    {
      name: 'why a drained cluster lingers',
      input: {
        spec: withFailBack(),
        status: {
          clusters: [
            listed('fleet/a', 'ACTIVE', 0),
            listed('fleet/b', 'SCALING_IN', NOW - 3000, {
              reason: 'Lingering',
              lingerSince: at(NOW - 600),
              draining: { desiredMaxReplicas: 1, lastReplicaCountDecrease: at(NOW - 900) },
            }),
          ],
        },
        profiles: fleet,
        signals: [steady('fleet/a', 6), aScaleInSignal('fleet/b', at(fresh), 1)],
        now: NOW,
      },
      cluster: 'fleet/b',
      note: /^lingering warm at 1 replica\(s\) until \S+ \(failBack\.lingerSeconds of calm preferred clusters\), then drained and removed$/,
    },
    {
      name: 'why an unreachable cluster is replaced but kept',
      input: {
        spec: specOf(),
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
        profiles: fleet,
        signals: [anUnreachableSignal('fleet/a', at(fresh), 3)],
        now: NOW,
      },
      cluster: 'fleet/a',
      note: /^unreachable: transport error \(timeout\) on 3 consecutive polls: not counted as headroom, so a replacement may be added; it stays listed/,
    },
  ])('$name', ({ input, cluster, note }) => {
    expect(notesOf(input, cluster)).toContainEqual(expect.stringMatching(note));
  });

  it('says why a lingering cluster came back: a burst on the preferred cluster (F4)', () => {
    const e = explainOf({
      spec: withFailBack(),
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0),
          listed('fleet/b', 'SCALING_IN', NOW - 3000, {
            reason: 'Lingering',
            draining: { desiredMaxReplicas: 1, lastReplicaCountDecrease: at(NOW - 600) },
          }),
        ],
      },
      profiles: fleet,
      signals: [steady('fleet/a', 6, { pendingPods: 3 }), aScaleInSignal('fleet/b', at(fresh), 1)],
      now: NOW,
    });
    expect(e.clusters.find((c) => c.cluster === 'fleet/b')?.transitions).toEqual([
      {
        id: 'P3',
        reason: 'fleet/a has 3 pending pod(s) and 6 ready: reactivated to take the burst (fail-back rule F4)',
      },
    ]);
  });

  it('shows an unreachable signal as such, with the transport error', () => {
    const e = explainOf({
      spec: specOf(),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [anUnreachableSignal('fleet/a', at(fresh), 2)],
      now: NOW,
    });
    expect(e.clusters.find((c) => c.cluster === 'fleet/a')?.signal).toEqual({
      status: 'unreachable',
      atCapacityCeiling: false,
      wantsScaleIn: false,
      why: 'transport error (timeout) on 2 consecutive poll(s): unreachable',
    });
  });
});

import { describe, expect, it } from 'vitest';
import {
  aClusterProfile,
  anAtCeilingSignal,
  anAutoscalingSpec,
  aScaleInSignal,
  aSteadySignal,
} from '@mco/core/testing';
import type { PlacementSpec, Signal } from '@mco/core';
import { at, condition, listed, moves, run, runThroughProbe, states, type Case, PROVEN } from './helpers.js';

// Fail-back to preferred clusters (docs/placement-rules.md §10.3): fleet/a is
// preferred over fleet/b (namespace/name order, no preferences).

const fleet = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b'), aClusterProfile('fleet/c')];
const WINDOW = 600;
const COOLDOWN = 300;
const failBack = (extra: { min?: number; window?: number; useDraining?: boolean } = {}): PlacementSpec =>
  anAutoscalingSpec(extra.min ?? 1, {
    useDraining: extra.useDraining ?? true,
    behavior: {
      scaleIn: { cooldownSeconds: COOLDOWN },
      failBack: { enabled: true, ...(extra.window !== undefined ? { stabilizationWindowSeconds: extra.window } : {}) },
    },
  });

const NOW = 10_000;
const fresh = NOW - 10;
/**
 * a is preferred, ran its HPA maximum of 10 before (its proven size, rule F2) and has had room since
 * `since` (below its ceiling, and room for b's replicas: status.failBack.roomSince); b took the
 * workload during a stockout.
 */
const afterStockout = (since: number | undefined, extra: { lastAddition?: number } = {}): Case['status'] => ({
  clusters: [
    listed('fleet/a', 'ACTIVE', 0, since !== undefined ? { belowCeilingSince: at(since) } : {}),
    listed('fleet/b', 'ACTIVE', 3000, { reason: 'Added' }),
  ],
  lastAdditionTime: at(extra.lastAddition ?? 3000),
  failBack: {
    ...(since !== undefined ? { roomSince: at(since) } : {}),
    provenReplicas: PROVEN,
  },
});
// a has room (HPA max 10, 2 replicas) for the 8 replicas b would hand back (rule F2).
const bothSteady: Signal[] = [aSteadySignal('fleet/a', at(fresh), 2), aSteadySignal('fleet/b', at(fresh), 8)];

interface Row {
  readonly name: string;
  readonly input: Case;
  readonly states: string[];
  readonly moves: string[];
  readonly reasons: RegExp[];
  readonly requeue: number | null;
  /** belowCeilingSince of each listed cluster afterwards (seconds after T0), in status order. */
  readonly belowSince: (number | undefined)[];
}

const rows: Row[] = [
  {
    name: 'the preferred cluster has had room for the whole window: the fallback moves to SCALING_IN (P2, FailBack)',
    input: { spec: failBack(), status: afterStockout(NOW - WINDOW), profiles: fleet, signals: bothSteady, now: NOW },
    states: ['fleet/a ACTIVE', 'fleet/b SCALING_IN'],
    moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    reasons: [
      /^fail-back: higher-priority fleet\/a below capacity ceiling for 600s or more, and 2 more replica\(s\) ready for the first step of 2 \(rule F7\); headroom stays 1 >= min 1 without this lowest-priority cluster$/,
    ],
    requeue: 60, // the first drain step
    belowSince: [NOW - WINDOW, undefined],
  },
  {
    name: 'within the window nothing moves, and the engine asks to be called when it ends',
    input: {
      spec: failBack(),
      status: afterStockout(NOW - WINDOW + 100),
      profiles: fleet,
      signals: bothSteady,
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 100,
    belowSince: [NOW - WINDOW + 100, NOW],
  },
  {
    name: 'a preferred cluster seen below its ceiling for the first time starts the window now',
    input: { spec: failBack(), status: afterStockout(undefined), profiles: fleet, signals: bothSteady, now: NOW },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170, // the signals turn stale before the 600 s window ends
    belowSince: [NOW, NOW],
  },
  {
    name: 'the stabilization window is configurable (60 s)',
    input: {
      spec: failBack({ window: 60 }),
      status: afterStockout(NOW - 60),
      profiles: fleet,
      signals: bothSteady,
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b SCALING_IN'],
    moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    reasons: [/^fail-back: .* for 60s or more/],
    requeue: 60,
    belowSince: [NOW - 60, undefined],
  },
  {
    name: 'off by default: the same fleet keeps the fallback cluster and records nothing',
    input: {
      spec: anAutoscalingSpec(1, { useDraining: true }),
      status: afterStockout(undefined),
      profiles: fleet,
      signals: bothSteady,
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
    belowSince: [undefined, undefined],
  },
  {
    name: 'the preferred cluster is at its ceiling: its window resets and nothing moves',
    input: {
      spec: failBack(),
      status: afterStockout(NOW - WINDOW),
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
    belowSince: [undefined, NOW],
  },
  {
    name: "the preferred cluster's signal is missing: fail static, its window resets",
    input: {
      spec: failBack(),
      status: afterStockout(NOW - WINDOW),
      profiles: fleet,
      signals: [aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
    belowSince: [undefined, NOW],
  },
  {
    name: "the preferred cluster's signal is stale: fail static, its window resets",
    input: {
      spec: failBack(),
      status: afterStockout(NOW - WINDOW),
      profiles: fleet,
      signals: [aSteadySignal('fleet/a', at(NOW - 180)), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
    belowSince: [undefined, NOW],
  },
  {
    name: "the fallback cluster's own signal is missing: nothing moves on a guess",
    input: {
      spec: failBack(),
      status: afterStockout(NOW - WINDOW),
      profiles: fleet,
      signals: [aSteadySignal('fleet/a', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
    belowSince: [NOW - WINDOW, undefined],
  },
  {
    name: 'within the scale-in cooldown of the last addition nothing moves; the engine asks to be called when it ends',
    input: {
      spec: failBack(),
      status: afterStockout(NOW - WINDOW, { lastAddition: NOW - 100 }),
      profiles: fleet,
      signals: bothSteady,
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170, // the cooldown ends in 200 s, the signals turn stale first
    belowSince: [NOW - WINDOW, NOW],
  },
  {
    name: 'within the scale-in cooldown of the last reactivation (P3) nothing moves',
    input: {
      spec: failBack(),
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0, { belowCeilingSince: at(NOW - WINDOW) }),
          listed('fleet/b', 'ACTIVE', NOW - 250, { reason: 'Reactivated' }),
        ],
        lastAdditionTime: at(3000),
        failBack: { roomSince: at(NOW - WINDOW), provenReplicas: PROVEN },
      },
      profiles: fleet,
      signals: bothSteady,
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 50,
    belowSince: [NOW - WINDOW, NOW],
  },
  {
    name: 'headroom without the fallback would drop below min: nothing moves',
    input: {
      spec: failBack({ min: 2 }),
      status: afterStockout(NOW - WINDOW),
      profiles: fleet,
      signals: bothSteady,
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
    belowSince: [NOW - WINDOW, NOW],
  },
  {
    name: 'a fallback at its own ceiling gives no headroom, so it may go even with min 2 when two preferred clusters have room',
    input: {
      spec: failBack({ min: 2 }),
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0, { belowCeilingSince: at(NOW - WINDOW) }),
          listed('fleet/b', 'ACTIVE', 0, { belowCeilingSince: at(NOW - WINDOW) }),
          listed('fleet/c', 'ACTIVE', 3000, { reason: 'Added' }),
        ],
        lastAdditionTime: at(3000),
        failBack: { roomSince: at(NOW - WINDOW), provenReplicas: PROVEN },
      },
      profiles: fleet,
      signals: [...bothSteady, anAtCeilingSignal('fleet/c', at(fresh), 4)],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE', 'fleet/c SCALING_IN'],
    moves: ['P2 fleet/c ACTIVE->SCALING_IN'],
    reasons: [/^fail-back: higher-priority fleet\/a, fleet\/b below .* headroom stays 2 >= min 2/],
    requeue: 60,
    belowSince: [NOW - WINDOW, NOW - WINDOW, undefined],
  },
  {
    name: 'every higher-priority ACTIVE cluster must have had room for the window, not only the first',
    input: {
      spec: failBack(),
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0, { belowCeilingSince: at(NOW - WINDOW) }),
          listed('fleet/b', 'ACTIVE', 0, { belowCeilingSince: at(NOW - 100) }),
          listed('fleet/c', 'ACTIVE', 3000, { reason: 'Added' }),
        ],
        lastAdditionTime: at(3000),
      },
      profiles: fleet,
      signals: [...bothSteady, aSteadySignal('fleet/c', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE', 'fleet/c ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
    belowSince: [NOW - WINDOW, NOW - 100, NOW],
  },
  {
    name: 'a single ACTIVE cluster has nowhere to fail back to',
    input: {
      spec: failBack(),
      status: {
        clusters: [listed('fleet/b', 'ACTIVE', 3000, { belowCeilingSince: at(NOW - WINDOW) })],
        lastAdditionTime: at(3000),
      },
      profiles: fleet,
      signals: [aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/b ACTIVE'],
    moves: [],
    reasons: [],
    requeue: 170,
    belowSince: [NOW - WINDOW],
  },
  {
    name: 'when section-4 scale-in moves a cluster, fail-back makes no second P2',
    input: {
      spec: failBack(),
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0, { belowCeilingSince: at(NOW - WINDOW) }),
          listed('fleet/b', 'ACTIVE', 3000, { scaleInCandidateSince: at(NOW - 300) }),
        ],
        lastAdditionTime: at(3000),
      },
      profiles: fleet,
      signals: [aSteadySignal('fleet/a', at(fresh)), aScaleInSignal('fleet/b', at(fresh))],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b SCALING_IN'],
    moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
    reasons: [/^wanted scale-in for 300s/],
    requeue: 60,
    belowSince: [NOW - WINDOW, undefined],
  },
  {
    name: 'the preferred cluster hits its ceiling again while the fallback drains: scale-out reactivates it (P3)',
    input: {
      spec: failBack(),
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0, { belowCeilingSince: at(NOW - 2000) }),
          listed('fleet/b', 'SCALING_IN', NOW - 120, {
            reason: 'FailBack',
            draining: { desiredMaxReplicas: 6, lastReplicaCountDecrease: at(NOW - 60) },
          }),
        ],
        lastAdditionTime: at(3000),
      },
      profiles: fleet,
      signals: [anAtCeilingSignal('fleet/a', at(fresh)), aSteadySignal('fleet/b', at(fresh), 6)],
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE'],
    moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
    reasons: [/headroom 0 < min 1: reactivated/],
    requeue: 170,
    belowSince: [undefined, undefined],
  },
];

describe('fail-back to preferred clusters (docs/placement-rules.md §10.3)', () => {
  it.each(rows)('$name', (row) => {
    const d = runThroughProbe(row.input);
    expect(states(d)).toEqual(row.states);
    expect(moves(d)).toEqual(row.moves);
    expect(d.transitions).toHaveLength(row.reasons.length);
    d.transitions.forEach((t, i) => expect(t.reason).toMatch(row.reasons[i]!));
    expect(d.requeueAfterSeconds).toBe(row.requeue);
    expect(d.status.clusters!.map((c) => c.belowCeilingSince)).toEqual(
      row.belowSince.map((s) => (s === undefined ? undefined : at(s))),
    );
    expect(condition(d, 'Valid')?.status).toBe('True');
  });

  it('the fallback cluster enters SCALING_IN with reason FailBack and starts draining from its replicas', () => {
    const d = runThroughProbe({
      spec: failBack(),
      status: afterStockout(NOW - WINDOW),
      profiles: fleet,
      signals: bothSteady,
      now: NOW,
    });
    expect(d.status.clusters![1]).toEqual({
      name: 'b',
      namespace: 'fleet',
      state: 'SCALING_IN',
      lastTransitionTime: at(NOW),
      atCapacityCeiling: false,
      draining: {
        desiredMaxReplicas: 8,
        lastReplicaCountDecrease: at(NOW),
        currentReplicaCount: 8,
        initialDesiredMaxReplicas: 8,
        receiversReadyReplicas: 2, // a's ready replicas: the drain steps as they grow (rule D1)
      },
      reason: 'FailBack',
      message: d.transitions[0]!.reason,
      lastReadyReplicas: 8,
    });
    expect(d.status.lastAdditionTime).toBe(at(3000));
    expect(d.status.failBack).toEqual({
      backoffLevel: 0,
      lastFailBackCluster: 'fleet/b',
      lastFailBackTime: at(NOW),
      // a runs the first step (4 of its 10): room for 6 of b's 8 now, which the drain no longer needs (rule F7).
      recentPeaks: [{ since: at(NOW), replicas: 10, fewest: 10 }], // a's 2 and b's 8
      provenReplicas: PROVEN, // a ran its maximum before; b runs 8 ready now
    });
  });

  it('is restart-safe: the window counts from the time kept in status, not from when the controller started', () => {
    const spec = failBack();
    const signalsAt = (t: number) => [aSteadySignal('fleet/a', at(t)), aSteadySignal('fleet/b', at(t))];
    // The stockout is over; a is seen below its ceiling at 4000.
    const first = run({ spec, status: afterStockout(undefined), profiles: fleet, signals: signalsAt(4000), now: 4000 });
    expect(first.status.clusters![0]!.belowCeilingSince).toBe(at(4000));
    // Evaluations every 120 s keep the start time; a "restarted" controller only has the status.
    let status = first.status;
    for (let t = 4120; t < 4600; t += 120) {
      const d = run({ spec, status, profiles: fleet, signals: signalsAt(t), now: t });
      expect(moves(d)).toEqual([]);
      status = JSON.parse(JSON.stringify(d.status)) as typeof status;
    }
    expect(status!.clusters![0]!.belowCeilingSince).toBe(at(4000));
    const due = runThroughProbe({ spec, status, profiles: fleet, signals: signalsAt(4600), now: 4600 });
    expect(moves(due)).toEqual(['P2 fleet/b ACTIVE->SCALING_IN']);
  });

  it.each([
    ['enabled without useDraining', { useDraining: false }],
    ['enabled with useDraining absent', { useDraining: undefined }],
  ])(
    'fail-back %s is invalid (Valid=False, InvalidBehavior) and changes nothing in status.clusters',
    (_name, extra) => {
      const spec = anAutoscalingSpec(1, {
        ...(extra.useDraining !== undefined ? { useDraining: extra.useDraining } : {}),
        behavior: { failBack: { enabled: true } },
      });
      const status = afterStockout(NOW - WINDOW);
      const d = run({ spec, status, profiles: fleet, signals: bothSteady, now: NOW });
      expect(d.transitions).toEqual([]);
      expect(d.status.clusters).toEqual(status!.clusters);
      expect(condition(d, 'Valid')).toMatchObject({
        status: 'False',
        reason: 'InvalidBehavior',
        message: expect.stringMatching(
          /^spec\.scaling\.autoscaleForCapacity\.behavior\.failBack\.enabled: fail-back needs useDraining: true/,
        ),
      });
      expect(d.requeueAfterSeconds).toBeNull();
    },
  );

  it('failBack with enabled: false is valid without useDraining and means what no failBack means', () => {
    const off = anAutoscalingSpec(1, { behavior: { failBack: { enabled: false, stabilizationWindowSeconds: 5 } } });
    const input = { status: afterStockout(NOW - WINDOW), profiles: fleet, signals: bothSteady, now: NOW };
    expect(run({ ...input, spec: off })).toEqual(run({ ...input, spec: anAutoscalingSpec(1) }));
  });

  it('a cluster kept under IDE that is no longer eligible is the lowest priority and fails back to an eligible one', () => {
    const ide: Omit<PlacementSpec, 'scaling'> = {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            clusterSelectorTerms: [
              { matchExpressions: [{ labelSelector: { key: 'gpu', operator: 'In', values: ['l4'] } }] },
            ],
          },
        },
      },
    };
    const spec = { ...failBack(), ...ide };
    const profiles = [aClusterProfile('fleet/a', { labels: { gpu: 'l4' } }), aClusterProfile('fleet/b')];
    const d = runThroughProbe({
      spec,
      status: {
        clusters: [
          listed('fleet/b', 'ACTIVE', 0, { belowCeilingSince: at(0) }),
          listed('fleet/a', 'ACTIVE', 0, { belowCeilingSince: at(NOW - WINDOW) }),
        ],
        lastAdditionTime: at(0),
        failBack: { roomSince: at(NOW - WINDOW), provenReplicas: PROVEN },
      },
      profiles,
      signals: [aSteadySignal('fleet/a', at(fresh), 2), aSteadySignal('fleet/b', at(fresh))],
      now: NOW,
    });
    expect(moves(d)).toEqual(['P2 fleet/b ACTIVE->SCALING_IN']);
  });
});

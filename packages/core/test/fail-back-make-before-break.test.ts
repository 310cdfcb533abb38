import { describe, expect, it } from 'vitest';
import { aClusterProfile, anAutoscalingSpec } from '@mco/core/testing';
import { type Draining, type PlacementCluster, type PlacementSpec } from '@mco/core';
import { afterStockout, at, clusterOf, explainOf, listed, moves, NOW, run, steady, type Case } from './helpers.js';

// Rule F6 (docs/placement-rules.md §10.3): a fail-back drain is
// make-before-break. The receivers get a desiredMinReplicas floor of what
// they ran when it began, the drop so far and its next step, and the step
// waits until they have it ready. fleet/a is preferred over fleet/b over
// fleet/c; drain steps are 25% every 60 s (the defaults).

const fleet = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b'), aClusterProfile('fleet/c')];
const WINDOW = 600;
const spec: PlacementSpec = anAutoscalingSpec(1, {
  useDraining: true,
  behavior: { scaleIn: { cooldownSeconds: 300 }, failBack: { enabled: true } },
});

/** b, drained by fail-back (or `reason`) from 8 with a's 2 ready replicas as the baseline, last stepped 120 s ago at `desired`. */
const drainingB = (desired: number, reason = 'FailBack'): PlacementCluster =>
  listed('fleet/b', 'SCALING_IN', NOW - 600, {
    reason,
    draining: {
      desiredMaxReplicas: desired,
      initialDesiredMaxReplicas: 8,
      lastReplicaCountDecrease: at(NOW - 120),
      currentReplicaCount: desired,
      receiversReadyReplicas: 2,
    },
  });
const during = (b: PlacementCluster, a: Partial<PlacementCluster> = {}): Case['status'] => ({
  clusters: [listed('fleet/a', 'ACTIVE', 0, a), b],
  lastAdditionTime: at(3000),
  failBack: { backoffLevel: 0, lastFailBackCluster: 'fleet/b', lastFailBackTime: at(NOW - 600) },
});

const caseOf = (status: Case['status'], signals: Case['signals']): Case => ({
  spec,
  status,
  profiles: fleet,
  signals,
  now: NOW,
});

const outcome = (d: ReturnType<typeof run>) => ({
  moves: moves(d),
  floorOfA: clusterOf(d, 'fleet/a')?.desiredMinReplicas,
  drainOfB: (({ desiredMaxReplicas, pausedReason }: Partial<Draining> = {}) => ({ desiredMaxReplicas, pausedReason }))(
    clusterOf(d, 'fleet/b')?.draining,
  ),
});

describe('F6: a fail-back drain hands load over only to replicas that are ready for it', () => {
  it.each<{ name: string; input: Case; expected: ReturnType<typeof outcome> }>([
    {
      name: 'the fail-back P2 asks a for its first step at once (2 ready + 25% of 8)',
      input: caseOf(afterStockout(WINDOW), [steady('fleet/a', 2), steady('fleet/b', 8)]),
      expected: {
        moves: ['P2 fleet/b ACTIVE->SCALING_IN'],
        floorOfA: 4,
        drainOfB: { desiredMaxReplicas: 8, pausedReason: undefined },
      },
    },
    {
      name: 'a due step waits while a has not grown by it, even with its HPA settled (D1 alone would step)',
      input: caseOf(during(drainingB(8)), [steady('fleet/a', 2), steady('fleet/b', 8)]),
      expected: {
        moves: [],
        floorOfA: 4,
        drainOfB: { desiredMaxReplicas: 8, pausedReason: 'ReceiversNotReady' },
      },
    },
    {
      name: 'once a has the step ready it is taken, and a is asked for the next one (2 + 2 + 25% of 6)',
      input: caseOf(during(drainingB(8)), [steady('fleet/a', 4), steady('fleet/b', 8)]),
      expected: {
        moves: [],
        floorOfA: 6,
        drainOfB: { desiredMaxReplicas: 6, pausedReason: undefined },
      },
    },
    {
      name: 'a scale-in drain (load fell) is not fail-back: settled receivers let it step, and get no floor',
      input: caseOf(during(drainingB(8, 'ScaledIn')), [steady('fleet/a', 2), steady('fleet/b', 8)]),
      expected: {
        moves: [],
        floorOfA: undefined,
        drainOfB: { desiredMaxReplicas: 6, pausedReason: undefined },
      },
    },
    {
      name: 'a cluster lingering at its warm size moves nothing more: no floor',
      input: caseOf(during(drainingB(2, 'Lingering')), [
        steady('fleet/a', 2, { hpa: { ...steady('a', 2).hpa!, minReplicas: 2 } }),
        steady('fleet/b', 2, { hpa: { ...steady('b', 2).hpa!, minReplicas: 2 } }),
      ]),
      expected: {
        moves: [],
        floorOfA: undefined,
        drainOfB: { desiredMaxReplicas: 2, pausedReason: undefined },
      },
    },
    {
      name: 'F4: a burst on a whose HPA asks for more than its floor reactivates b before it hands more over',
      input: caseOf(during(drainingB(8), { desiredMinReplicas: 4 }), [
        steady('fleet/a', 8, {
          readyReplicas: 4,
          pendingPods: 4,
          hpa: { ...steady('a', 8).hpa!, desiredReplicas: 9 },
        }),
        steady('fleet/b', 8),
      ]),
      expected: {
        moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
        floorOfA: undefined,
        drainOfB: { desiredMaxReplicas: undefined, pausedReason: undefined },
      },
    },
  ])('$name', ({ input, expected }) => {
    expect(outcome(run(input))).toEqual(expected);
  });

  it('a floor stops at the receiver HPA maximum; the rest goes to the next receiver in priority order', () => {
    const c = listed('fleet/c', 'SCALING_IN', NOW - 600, {
      reason: 'FailBack',
      draining: {
        desiredMaxReplicas: 8,
        initialDesiredMaxReplicas: 8,
        lastReplicaCountDecrease: at(NOW - 120),
        currentReplicaCount: 8,
        receiversReadyReplicas: 11,
      },
    });
    const d = run({
      spec,
      status: {
        clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0), c],
        lastAdditionTime: at(3000),
      },
      profiles: fleet,
      signals: [steady('fleet/a', 9), steady('fleet/b', 2), steady('fleet/c', 8)],
      now: NOW,
    });
    expect([clusterOf(d, 'fleet/a')?.desiredMinReplicas, clusterOf(d, 'fleet/b')?.desiredMinReplicas]).toEqual([10, 3]);
    expect(clusterOf(d, 'fleet/c')?.draining?.pausedReason).toBe('ReceiversNotReady');
  });

  it('mco explain says what the floor is for and what the step waits for', () => {
    const e = explainOf(caseOf(during(drainingB(8)), [steady('fleet/a', 2), steady('fleet/b', 8)]));
    const notes = (key: string) => e.clusters.find((c) => c.cluster === key)?.notes.join('\n');
    expect(notes('fleet/a')).toMatch(
      'desiredMinReplicas 4 while fleet/b fails back: its replicas are ready here before fleet/b hands their load over (fail-back rule F6)',
    );
    expect(notes('fleet/b')).toMatch(
      "fail-back moves load only onto ready pods (rule F6): the receivers' ready replicas grew by 0 (2 → 2), the drop so far (0) and the next step (2) need 2",
    );
  });
});

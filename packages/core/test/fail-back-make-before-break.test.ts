import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aClusterProfile, anAtCeilingSignal, anAutoscalingSpec } from '@mco/core/testing';
import { type Draining, type PlacementCluster, type PlacementSpec } from '@mco/core';
import {
  afterStockout,
  at,
  clusterOf,
  explainOf,
  FRESH,
  listed,
  moves,
  NOW,
  run,
  steady,
  type Case,
} from './helpers.js';

// Rule F6 (docs/placement-rules.md §10.3): a fail-back drain is
// make-before-break. The receivers get a desiredMinReplicas floor of what
// they ran when it began, the drop so far and its next step, and the step
// waits until they have it ready. fleet/a is preferred over fleet/b over
// fleet/c; drain steps are 25% every 60 s (the defaults).

const fleet = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b'), aClusterProfile('fleet/c')];
const WINDOW = 600;
const options = {
  useDraining: true,
  behavior: { scaleIn: { cooldownSeconds: 300 }, failBack: { enabled: true } },
} as const;
const spec: PlacementSpec = anAutoscalingSpec(1, options);

/** b, drained by fail-back (or `reason`) from 8 with a's 2 ready replicas as the baseline, last stepped `stepAgo` s ago at `desired`. */
const drainingB = (desired: number, reason = 'FailBack', stepAgo = 120): PlacementCluster =>
  listed('fleet/b', 'SCALING_IN', NOW - 600 - stepAgo, {
    reason,
    draining: {
      desiredMaxReplicas: desired,
      initialDesiredMaxReplicas: 8,
      lastReplicaCountDecrease: at(NOW - stepAgo),
      currentReplicaCount: desired,
      receiversReadyReplicas: 2,
    },
  });
/** The same placement that also keeps two clusters warm (rule W1). */
const withStandby: PlacementSpec = anAutoscalingSpec(1, { ...options, warmStandbyClusters: 2 });
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
      name: 'fail-back asks a for its first step before the P2 (2 ready + 25% of 8; rule F7)',
      input: caseOf(afterStockout(WINDOW), [steady('fleet/a', 2), steady('fleet/b', 8)]),
      expected: {
        moves: [],
        floorOfA: 4,
        drainOfB: { desiredMaxReplicas: undefined, pausedReason: undefined },
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

  it('a warm standby added in this evaluation was never a receiver: the baseline keeps its ready replicas out', () => {
    // c is added as ACTIVE and moved to SCALING_IN at once (rule W1); its 3 ready replicas were never a's.
    const d = run({
      ...caseOf(during(drainingB(8)), [steady('fleet/a', 2), steady('fleet/b', 8), steady('fleet/c', 3)]),
      spec: withStandby,
    });
    expect(moves(d)).toEqual(['P1 fleet/c -->ACTIVE', 'P2 fleet/c ACTIVE->SCALING_IN']);
    expect(clusterOf(d, 'fleet/b')?.draining).toMatchObject({
      desiredMaxReplicas: 8,
      receiversReadyReplicas: 2,
      pausedReason: 'ReceiversNotReady',
    });
  });

  it.each([
    { name: 'a fail-back drain, its first step due', reason: 'FailBack', desired: 8 },
    { name: 'a scale-in drain (rule D1), 2 replicas dropped so far', reason: 'ScaledIn', desired: 6 },
  ])(
    'a draining cluster reactivated in this evaluation brings its ready replicas into the baseline, they are no growth: $name',
    ({ reason, desired }) => {
      // a reaches its ceiling; scale-out reactivates fleet/b (scaled in earlier, higher priority than c) with 3
      // ready replicas. They served before, so c's due step still waits for growth beyond them.
      const d = run({
        spec,
        profiles: fleet,
        now: NOW,
        status: {
          clusters: [
            listed('fleet/a', 'ACTIVE', 0),
            listed('fleet/b', 'SCALING_IN', NOW - 900, {
              reason: 'ScaledIn',
              draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: at(NOW - 30), receiversReadyReplicas: 2 },
            }),
            { ...drainingB(desired, reason), name: 'c' },
          ],
          lastAdditionTime: at(3000),
          failBack: { backoffLevel: 0, lastFailBackCluster: 'fleet/c', lastFailBackTime: at(NOW - 600) },
        },
        signals: [anAtCeilingSignal('fleet/a', at(FRESH), 2), steady('fleet/b', 3), steady('fleet/c', desired)],
      });
      expect(moves(d)).toEqual(['P3 fleet/b SCALING_IN->ACTIVE']);
      expect(clusterOf(d, 'fleet/c')?.draining).toMatchObject({
        desiredMaxReplicas: desired,
        receiversReadyReplicas: 5,
        pausedReason: 'ReceiversNotReady',
      });
    },
  );

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

// Rule F6's bound: a due step waits for its receivers at most
// failBack.stabilizationWindowSeconds (600 s) after it fell due (the last step
// + drain.stepIntervalSeconds, 60 s): 660 s after the last step the fail-back
// is abandoned. Before it, a delivery that ignores desiredMinReplicas (or a
// preferred cluster that cannot start pods) kept b SCALING_IN, paused, forever.
describe('F6 bound: a fail-back whose receivers never become ready is abandoned, never stalled', () => {
  const GIVE_UP = 60 + WINDOW;

  it.each<{ name: string; stepAgo: number; readyOnA: number; expected: ReturnType<typeof outcome> }>([
    {
      name: 'one second before the bound the step still waits (ReceiversNotReady)',
      stepAgo: GIVE_UP - 1,
      readyOnA: 3,
      expected: { moves: [], floorOfA: 4, drainOfB: { desiredMaxReplicas: 8, pausedReason: 'ReceiversNotReady' } },
    },
    {
      name: 'at the bound, with a grown by less than the step, b returns to ACTIVE with all its pods (P3)',
      stepAgo: GIVE_UP,
      readyOnA: 3,
      expected: {
        moves: ['P3 fleet/b SCALING_IN->ACTIVE'],
        floorOfA: undefined,
        drainOfB: { desiredMaxReplicas: undefined, pausedReason: undefined },
      },
    },
    {
      name: 'past the bound, receivers that have the step ready let it be taken: slow is not stalled',
      stepAgo: GIVE_UP + 300,
      readyOnA: 4,
      expected: { moves: [], floorOfA: 6, drainOfB: { desiredMaxReplicas: 6, pausedReason: undefined } },
    },
  ])('$name', ({ stepAgo, readyOnA, expected }) => {
    const input = caseOf(during(drainingB(8, 'FailBack', stepAgo)), [
      steady('fleet/a', readyOnA),
      steady('fleet/b', 8),
    ]);
    expect(outcome(run(input))).toEqual(expected);
  });

  it('the abandonment is a cycle (rule F1: the next window is 4× longer) and says why, in status and explain', () => {
    const input = caseOf(during(drainingB(8, 'FailBack', GIVE_UP)), [steady('fleet/a', 2), steady('fleet/b', 8)]);
    const d = run(input);
    const b = clusterOf(d, 'fleet/b');
    const why =
      "fail-back abandoned: the receivers did not become ready within 660s of the drain's last step (behavior.drain.stepIntervalSeconds + failBack.stabilizationWindowSeconds; rule F6): fail-back moves load only onto ready pods (rule F6): the receivers' ready replicas grew by 0 (2 → 2), the drop so far (0) and the next step (2) need 2";
    expect([b?.state, b?.reason, b?.message]).toEqual(['ACTIVE', 'Reactivated', why]);
    expect(d.status.failBack).toMatchObject({ backoffLevel: 1, lastCycleTime: at(NOW) });
    expect(d.status.failBack?.lastFailBackCluster).toBeUndefined();
    expect(d.transitions.map((t) => t.reason)).toEqual([why]);
    // The next fail-back waits for the backed-off window (4 × 600 s), not the same 600 s.
    const next = run({ ...input, status: d.status, now: NOW + WINDOW + 60 });
    expect(moves(next)).toEqual([]);
  });

  it('while paused, mco explain says when the fail-back will be abandoned, and the engine requeues for it', () => {
    const input = caseOf(during(drainingB(8, 'FailBack', 120)), [steady('fleet/a', 2), steady('fleet/b', 8)]);
    const notes = explainOf(input)
      .clusters.find((c) => c.cluster === 'fleet/b')
      ?.notes.join('\n');
    expect(notes).toMatch(
      `fail-back is abandoned at ${at(NOW - 120 + GIVE_UP)} if the receivers are not ready by then (rule F6)`,
    );
    expect(run(input).requeueAfterSeconds).toBeLessThanOrEqual(60);
  });

  it('a delivery that ignores desiredMinReplicas: evaluated every 60 s, b never moves; each probe ends within the bound (rule F7)', () => {
    let status: Case['status'] = afterStockout(WINDOW);
    let now = NOW;
    const signals = () => [steady('fleet/a', 2), steady('fleet/b', 8)].map((s) => ({ ...s, observedAt: at(now - 10) }));
    const history: string[] = [];
    for (; now < NOW + 3 * GIVE_UP; now += 60) {
      const d = run({ spec, status, profiles: fleet, signals: signals(), now });
      const [was, is] = [status?.failBack?.probe, d.status.failBack?.probe];
      if (is && !was) history.push(`${now - NOW}s asked`);
      if (was && !is) history.push(`${now - NOW}s probe ended`);
      history.push(...moves(d).map((m) => `${now - NOW}s ${m}`));
      status = d.status;
    }
    // The bound is GIVE_UP (660 s); the room then holds a whole window (600 s) again before the next probe.
    expect(history).toEqual([
      '0s asked',
      `${GIVE_UP}s probe ended`,
      `${GIVE_UP + WINDOW}s asked`,
      `${2 * GIVE_UP + WINDOW}s probe ended`,
    ]);
  });
});

describe('F6 bound, over random waits and receivers', () => {
  it('a fail-back drain is abandoned exactly when its step has waited past the bound unready; ready receivers are never abandoned', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 0, max: 10 }), (stepAgo, readyOnA) => {
        const d = run(
          caseOf(during(drainingB(8, 'FailBack', stepAgo)), [steady('fleet/a', readyOnA), steady('fleet/b', 8)]),
        );
        // The first step needs a's 2 ready replicas to grow by 2 (25% of 8).
        const unready = readyOnA < 4;
        expect(moves(d)).toEqual(unready && stepAgo >= 60 + WINDOW ? ['P3 fleet/b SCALING_IN->ACTIVE'] : []);
      }),
    );
  });
});

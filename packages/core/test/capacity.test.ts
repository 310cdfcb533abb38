import { describe, expect, it } from 'vitest';
import {
  aClusterProfile,
  aPlacement,
  anAtCeilingSignal,
  anAutoscalingSpec,
  aSteadySignal,
  anUnreachableSignal,
} from '@mco/core/testing';
import {
  CONDITION_SATISFIED,
  decide,
  explain,
  parseDecideInput,
  type CapacityAnswer,
  type DecideInput,
  type Signal,
} from '@mco/core';
import { at, condition, listed, moves, run, T0, type Case } from './helpers.js';

// §10.11: a scale-out candidate whose fresh capacity answer says it cannot add
// the replicas it would need is passed over (NoCapacity); nothing else changes.
const NOW = 3600;
const fleet = ['fleet/a', 'fleet/b', 'fleet/c', 'fleet/d'].map((k) => aClusterProfile(k));
const answer = (cluster: string, addableReplicas: number | undefined, ageSeconds = 30): CapacityAnswer => ({
  cluster,
  ...(addableReplicas !== undefined ? { addableReplicas } : {}),
  observedAt: at(NOW - ageSeconds),
  reason: addableReplicas === 0 ? 'NodePool l4: limits reached' : 'NodePool l4',
  source: 'karpenter',
});

/** fleet/a is ACTIVE at its ceiling with `pending` pods pending after a FailedScaleUp: scale-out adds one cluster. */
const stockout = (pending = 4, signals: Signal[] = []): Case => ({
  spec: anAutoscalingSpec(1),
  status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
  profiles: fleet,
  signals: [
    {
      ...anAtCeilingSignal('fleet/a', at(NOW - 10), 6),
      hpa: { currentReplicas: 6, desiredReplicas: 10, minReplicas: 2, maxReplicas: 24 },
      pendingPods: pending,
      failedScaleUp: true,
    },
    ...signals,
  ],
  now: NOW,
});
const inputWith = (c: Case, capacity: CapacityAnswer[]): DecideInput => ({
  now: new Date(T0 + c.now * 1000),
  placement: aPlacement('default/web', c.spec, c.status),
  clusterProfiles: c.profiles,
  signals: c.signals ?? [],
  capacity,
});
const decideWith = (c: Case, capacity: CapacityAnswer[]) => decide(inputWith(c, capacity));
const explainWith = (c: Case, capacity: CapacityAnswer[]) => explain(inputWith(c, capacity));

describe('§10.11 capacity answers: pass over scale-out candidates without capacity', () => {
  it('passes over fleet/b (0 addable) and adds fleet/c, naming NoCapacity in the P1, the Satisfied message and explain', () => {
    const capacity = [answer('fleet/b', 0), answer('fleet/c', 20)];
    const d = decideWith(stockout(), capacity);
    expect(moves(d)).toEqual(['P1 fleet/c -->ACTIVE']);
    expect(d.transitions[0]!.reason).toContain('(passed over for NoCapacity: fleet/b)');
    const satisfied = condition(d, CONDITION_SATISFIED)!;
    expect(satisfied.status).toBe('True');
    expect(satisfied.message).toContain(
      'passed over for NoCapacity: fleet/b (capacity source karpenter answered 0 addable replica(s) < 4 needed: NodePool l4: limits reached)',
    );
    const b = explainWith(stockout(), capacity).clusters.find((c) => c.cluster === 'fleet/b')!;
    expect(b.notes[0]).toBe(
      'not added (NoCapacity): capacity source karpenter answered 0 addable replica(s) < 4 needed: NodePool l4: limits reached',
    );
  });

  it('needs the pending replicas it takes over: 3 addable < 4 pending passes over, 4 does not', () => {
    expect(moves(decideWith(stockout(4), [answer('fleet/b', 3)]))).toEqual(['P1 fleet/c -->ACTIVE']);
    expect(moves(decideWith(stockout(4), [answer('fleet/b', 4)]))).toEqual(['P1 fleet/b -->ACTIVE']);
  });

  it("needs the HPA's minReplicas, from an ACTIVE cluster's signal, when nothing is pending", () => {
    const atMax: Case = {
      ...stockout(),
      signals: [
        {
          ...anAtCeilingSignal('fleet/a', at(NOW - 10), 24),
          hpa: {
            currentReplicas: 24,
            desiredReplicas: 26,
            minReplicas: 2,
            maxReplicas: 24,
            scalingLimited: { status: 'True', reason: 'TooManyReplicas' },
          },
          pendingPods: 0,
        },
      ],
    };
    expect(moves(decideWith(atMax, [answer('fleet/b', 1)]))).toEqual(['P1 fleet/c -->ACTIVE']);
    expect(moves(decideWith(atMax, [answer('fleet/b', 2)]))).toEqual(['P1 fleet/b -->ACTIVE']);
  });

  it('needs the replica floor (rule O3) of the lost cluster it replaces: 9 ready replicas', () => {
    const lost: Case = {
      spec: anAutoscalingSpec(1),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0, { lastReadyReplicas: 9 })] },
      profiles: fleet,
      signals: [anUnreachableSignal('fleet/a', at(NOW - 10))],
      now: NOW,
    };
    const d = decideWith(lost, [answer('fleet/b', 8), answer('fleet/c', 9)]);
    expect(moves(d)).toEqual(['P1 fleet/c -->ACTIVE']);
    expect(d.status.clusters?.find((c) => c.name === 'c')?.desiredMinReplicas).toBe(9);
  });

  it('unknown, stale, invalid or missing answers change nothing: today’s order (fleet/b)', () => {
    const today = run(stockout());
    for (const capacity of [
      [answer('fleet/b', undefined)],
      [answer('fleet/b', 0, 180)], // as old as signalStaleAfterSeconds (180): stale
      [{ ...answer('fleet/b', 0), observedAt: 'yesterday' }],
      [answer('fleet/b', -1)],
      [answer('fleet/b', 1.5)],
      [answer('fleet/x', 0)],
      [],
    ]) {
      expect(decideWith(stockout(), capacity)).toEqual(today);
    }
  });

  it('the newest answer of a cluster counts: an old 0 and a newer 20 add fleet/b', () => {
    expect(moves(decideWith(stockout(), [answer('fleet/b', 20, 10), answer('fleet/b', 0, 60)]))).toEqual([
      'P1 fleet/b -->ACTIVE',
    ]);
  });

  it('with no candidate that has capacity, nothing is added and Satisfied is False with reason NoCapacity; requeued when the answers turn stale', () => {
    const capacity = ['fleet/b', 'fleet/c', 'fleet/d'].map((k) => answer(k, 0));
    const d = decideWith(stockout(), capacity);
    expect(d.transitions).toEqual([]);
    const satisfied = condition(d, CONDITION_SATISFIED)!;
    expect(satisfied).toMatchObject({ status: 'False', reason: 'NoCapacity' });
    expect(satisfied.message).toContain('passed over for NoCapacity: fleet/b (');
    expect(d.requeueAfterSeconds).toBe(150); // 180 s after answers 30 s old
  });

  it('never removes, evicts or drains a listed cluster because of an answer', () => {
    const steady: Case = {
      spec: anAutoscalingSpec(2),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', 'ACTIVE', 0)] },
      profiles: fleet,
      signals: [aSteadySignal('fleet/a', at(NOW - 10)), aSteadySignal('fleet/b', at(NOW - 10))],
      now: NOW,
    };
    const capacity = fleet.map((p) => answer(`fleet/${p.metadata.name}`, 0));
    expect(decideWith(steady, capacity)).toEqual(run(steady));
  });
});

describe('capacity answers in a decision input document (mco decide -f, mco explain -f)', () => {
  const document = (capacity: unknown) => ({
    now: at(NOW),
    placement: { metadata: { name: 'web', namespace: 'default' }, spec: stockout().spec, status: stockout().status },
    clusterProfiles: fleet,
    signals: stockout().signals,
    capacity,
  });

  it('are parsed and used as decide’s own input', () => {
    const input = parseDecideInput(document([answer('fleet/b', 0)]));
    expect(moves(decide(input))).toEqual(['P1 fleet/c -->ACTIVE']);
    expect(explain(input).clusters.find((c) => c.cluster === 'fleet/b')!.notes[0]).toMatch(/^not added \(NoCapacity\)/);
  });

  it('a negative addableReplicas is refused, naming the field', () => {
    expect(() => parseDecideInput(document([answer('fleet/b', -1)]))).toThrow(
      /capacity.*0.*addableReplicas|addableReplicas/s,
    );
  });
});

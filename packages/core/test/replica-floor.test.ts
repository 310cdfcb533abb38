import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aClusterProfile, anAutoscalingSpec, anUnreachableSignal, aSteadySignal, aSignal } from '@mco/core/testing';
import type { Decision, PlacementCluster, PlacementStatus, Signal } from '@mco/core';
import { at, explainOf, listed, moves, run, type Case } from './helpers.js';

// Rule O3 (docs/placement-rules.md §10.8): a replacement for a lost cluster
// starts at the lost cluster's replicas. fleet/a is preferred over b over c.

const fleet = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b'), aClusterProfile('fleet/c')];
const NOW = 100_000;
const fresh = NOW - 10;
const ADDED = NOW - 300;

/** A case at NOW with a min of `min`, the given listed clusters and signals. */
const floorCase = (clusters: PlacementCluster[], signals: Signal[], min = 1, now = NOW): Case => ({
  spec: anAutoscalingSpec(min, { useDraining: true }),
  status: { clusters },
  profiles: fleet,
  signals,
  now,
});
/** fleet/a lost (unreachable), with 9 ready replicas at its last fresh signal. */
const lostA = (extra: Partial<PlacementCluster> = {}) =>
  listed('fleet/a', 'ACTIVE', 0, { lastReadyReplicas: 9, ...extra });
/** fleet/b added at ADDED to replace fleet/a, with a floor of `floor`. */
const replacementB = (floor = 9) =>
  listed('fleet/b', 'ACTIVE', ADDED, { reason: 'Added', desiredMinReplicas: floor, replacesCluster: 'fleet/a' });
const unreachableA = anUnreachableSignal('fleet/a', at(fresh), 2);
/** A fresh signal of fleet/b: HPA at `current` of max `max`, `ready` of them ready. */
const bSignal = (ready: number, max = 10, current = ready): Signal => ({
  ...aSteadySignal('fleet/b', at(fresh), current),
  readyReplicas: ready,
  hpa: { currentReplicas: current, desiredReplicas: current, minReplicas: 1, maxReplicas: max },
});

/** The floor fields of cluster `key`: [desiredMinReplicas, replacesCluster]. */
const floorOf = (d: Decision, key: string) => {
  const c = d.status.clusters?.find((x) => `${x.namespace}/${x.name}` === key);
  return [c?.desiredMinReplicas, c?.replacesCluster];
};

describe('O3: a replacement starts at the lost cluster’s replicas', () => {
  it.each<{ name: string; input: Case; moves: string[]; floor: [string, number | undefined, string | undefined] }>([
    {
      name: 'an unreachable cluster is replaced by one that starts at its last ready replicas',
      input: floorCase([lostA()], [unreachableA]),
      moves: ['P1 fleet/b -->ACTIVE'],
      floor: ['fleet/b', 9, 'fleet/a'],
    },
    {
      name: 'a lost cluster whose replicas were never seen gives no floor',
      input: floorCase([listed('fleet/a', 'ACTIVE', 0)], [unreachableA]),
      moves: ['P1 fleet/b -->ACTIVE'],
      floor: ['fleet/b', undefined, undefined],
    },
    {
      name: 'an UNHEALTHY cluster (its workload unhealthy) is replaced at the replicas of its last fresh signal',
      input: floorCase(
        [listed('fleet/a', 'ACTIVE', 0)],
        [{ ...aSteadySignal('fleet/a', at(fresh), 6), workloadHealthy: false }],
      ),
      moves: ['H1 fleet/a ACTIVE->UNHEALTHY', 'P1 fleet/b -->ACTIVE'],
      floor: ['fleet/b', 6, 'fleet/a'],
    },
    {
      name: 'a lost cluster already covered by a replacement gives no second floor',
      input: floorCase([lostA(), replacementB()], [unreachableA, bSignal(4)], 2),
      moves: ['P1 fleet/c -->ACTIVE'],
      floor: ['fleet/c', undefined, undefined],
    },
    {
      name: 'the floor stays while the replacement has fewer ready replicas',
      input: floorCase([lostA(), replacementB()], [unreachableA, bSignal(4)]),
      moves: [],
      floor: ['fleet/b', 9, 'fleet/a'],
    },
    {
      name: 'the floor is capped at the replacement’s HPA maximum once its signal shows it',
      input: floorCase([lostA(), replacementB(12)], [unreachableA, bSignal(4, 10)]),
      moves: [],
      floor: ['fleet/b', 10, 'fleet/a'],
    },
    {
      name: 'the floor is cleared once the replacement has that many ready replicas',
      input: floorCase([lostA(), replacementB()], [unreachableA, bSignal(9)]),
      moves: [],
      floor: ['fleet/b', undefined, undefined],
    },
    {
      name: 'the floor is cleared after unhealthyTimeoutSeconds (900 s) from the addition',
      input: floorCase([lostA(), replacementB()], [unreachableA, bSignal(4)], 1, ADDED + 900),
      moves: [],
      floor: ['fleet/b', undefined, undefined],
    },
    {
      name: 'the floor is cleared when the lost cluster is back (fresh signal, ACTIVE)',
      input: floorCase([lostA(), replacementB()], [aSteadySignal('fleet/a', at(fresh), 3), bSignal(4)]),
      moves: [],
      floor: ['fleet/b', undefined, undefined],
    },
    {
      name: 'the floor is cleared when the lost cluster is no longer listed',
      input: floorCase([replacementB()], [bSignal(4)]),
      moves: [],
      floor: ['fleet/b', undefined, undefined],
    },
  ])('$name', ({ input, moves: expectedMoves, floor: [key, min, replaces] }) => {
    const d = run(input);
    expect(moves(d)).toEqual(expectedMoves);
    expect(floorOf(d, key)).toEqual([min, replaces]);
  });

  it('remembers the ready replicas of the last fresh signal, and keeps them while the cluster is unreachable', () => {
    const seen = run(floorCase([listed('fleet/a', 'ACTIVE', 0)], [aSteadySignal('fleet/a', at(fresh), 7)]));
    expect(seen.status.clusters?.[0]?.lastReadyReplicas).toBe(7);
    const lost = run(floorCase(seen.status.clusters!, [unreachableA]));
    expect(lost.status.clusters?.find((c) => c.name === 'a')?.lastReadyReplicas).toBe(7);
  });

  it('requeues for the timeout of a floor', () => {
    const d = run(floorCase([lostA()], [unreachableA]));
    expect(floorOf(d, 'fleet/b')).toEqual([9, 'fleet/a']);
    // a's transport error turns stale first (180 s after it was observed).
    expect(d.requeueAfterSeconds).toBe(170);
    // Without signals, the next thing to change is the floor's timeout, 900 s after the addition.
    expect(run(floorCase([lostA(), replacementB()], [])).requeueAfterSeconds).toBe(ADDED + 900 - NOW);
  });

  it('mco explain says why the replacement starts at a floor, and why the floor was cleared', () => {
    const notesOf = (c: Case) => explainOf(c).clusters.find((x) => x.cluster === 'fleet/b')?.notes ?? [];
    expect(notesOf(floorCase([lostA()], [unreachableA]))).toContainEqual(
      expect.stringMatching(/replaces fleet\/a \(unreachable: .*\): starts at desiredMinReplicas 9 \(rule O3\)/),
    );
    expect(notesOf(floorCase([lostA(), replacementB()], [unreachableA, bSignal(4)]))).toContainEqual(
      expect.stringMatching(/starts at desiredMinReplicas 9 \(rule O3\), the replicas fleet\/a ran, until/),
    );
    expect(notesOf(floorCase([lostA(), replacementB()], [unreachableA, bSignal(9)]))).toContainEqual(
      'replica floor cleared (rule O3): 9 ready replica(s) reached the floor',
    );
  });
});

describe('O3 properties over random timelines', () => {
  // a runs `replicas`, then becomes unreachable; b replaces it and its ready
  // replicas grow at random (or its signal goes missing); a may come back.
  type Step = { readonly advance: number; readonly bReady: number | undefined; readonly aBack: boolean };
  const timeline = fc.record({
    replicas: fc.integer({ min: 0, max: 40 }),
    bMax: fc.integer({ min: 1, max: 30 }),
    steps: fc.array(
      fc.record({
        advance: fc.integer({ min: 1, max: 240 }),
        bReady: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
        aBack: fc.boolean(),
      }),
      { minLength: 1, maxLength: 30 },
    ),
  });

  it('the floor never exceeds the lost replicas, and is cleared within unhealthyTimeoutSeconds of the addition', () => {
    let floors = 0;
    fc.assert(
      fc.property(timeline, ({ replicas, bMax, steps }) => {
        let now = 1000;
        let status: PlacementStatus = { clusters: [listed('fleet/a', 'ACTIVE', 0)] };
        const step = (signals: Signal[]) => {
          const d = run({ ...floorCase(status.clusters ?? [], signals), status, now });
          status = d.status;
          return d;
        };
        step([aSteadySignal('fleet/a', at(now - 1), replicas)]);
        now += 30;
        let addedAt: number | undefined;
        for (const s of [{ advance: 0, bReady: undefined, aBack: false } as Step, ...steps]) {
          now += s.advance;
          const signals: Signal[] = [
            s.aBack ? aSteadySignal('fleet/a', at(now - 1), replicas) : anUnreachableSignal('fleet/a', at(now - 1), 2),
          ];
          if (s.bReady !== undefined)
            signals.push(
              aSignal('fleet/b', at(now - 1), {
                readyReplicas: s.bReady,
                hpa: { currentReplicas: s.bReady, minReplicas: 1, maxReplicas: bMax },
              }),
            );
          step(signals);
          const b = status.clusters?.find((c) => c.name === 'b');
          if (b && addedAt === undefined) addedAt = now;
          if (b?.desiredMinReplicas === undefined) continue;
          floors++;
          expect(b.desiredMinReplicas).toBeLessThanOrEqual(replicas);
          expect(b.desiredMinReplicas).toBeGreaterThan(0);
          expect(now - addedAt!).toBeLessThan(900);
        }
        // Eventually: past the timeout, whatever the signals say, no floor is left.
        now = (addedAt ?? now) + 900;
        step([anUnreachableSignal('fleet/a', at(now - 1), 2)]);
        expect(status.clusters?.every((c) => c.desiredMinReplicas === undefined)).toBe(true);
      }),
    );
    expect(floors).toBeGreaterThan(0); // the timelines do reach a floor
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbClusterKey, arbFleet, arbPlacementSpec, arbSignal, arbStatusClusters, aPlacement } from '@mco/core/testing';
import {
  decide,
  explain,
  type CapacityAnswer,
  type ClusterProfile,
  type DecideInput,
  type Decision,
  type PlacementSpec,
  type PlacementStatus,
  type Signal,
} from '@mco/core';

// Capacity answers (docs/placement-rules.md §10.11) and spread (§10.7) over
// the arbitraries of @mco/core/testing: what must not change today's decisions.
const NOW = new Date('2026-01-01T02:00:00Z');
const RUNS = { numRuns: 300 };

interface Scenario {
  readonly spec: PlacementSpec;
  readonly clusters: PlacementStatus['clusters'];
  readonly profiles: ClusterProfile[];
  readonly signals: Signal[];
}

const arbScenario: fc.Arbitrary<Scenario> = fc.record({
  spec: arbPlacementSpec,
  clusters: arbStatusClusters,
  profiles: arbFleet(),
  signals: fc.array(arbSignal(), { maxLength: 12 }),
});

/** An answer that must change nothing: unknown, stale (older than the 180 s default), or with a bad time. */
const arbUselessAnswer: fc.Arbitrary<CapacityAnswer> = fc
  .record({
    cluster: arbClusterKey,
    kind: fc.constantFrom('unknown', 'stale', 'bad-time'),
    addable: fc.integer({ min: 0, max: 50 }),
    age: fc.integer({ min: 0, max: 170 }),
  })
  .map(({ cluster, kind, addable, age }) => ({
    cluster,
    ...(kind === 'unknown' ? {} : { addableReplicas: addable }),
    observedAt:
      kind === 'bad-time'
        ? 'not a time'
        : new Date(NOW.getTime() - (kind === 'stale' ? 180 + age : age) * 1000).toISOString(),
    reason: kind,
    source: 'test',
  }));

/** Any answer, fresh ones included. */
const arbAnswer: fc.Arbitrary<CapacityAnswer> = fc
  .record({
    cluster: arbClusterKey,
    addableReplicas: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }),
    age: fc.integer({ min: 0, max: 400 }),
  })
  .map(({ cluster, addableReplicas, age }) => ({
    cluster,
    ...(addableReplicas !== undefined ? { addableReplicas } : {}),
    observedAt: new Date(NOW.getTime() - age * 1000).toISOString(),
    reason: 'test',
    source: 'test',
  }));

const input = (s: Scenario, more: Partial<DecideInput> = {}): DecideInput => ({
  now: NOW,
  placement: aPlacement('default/p', s.spec, { clusters: s.clusters }),
  clusterProfiles: s.profiles,
  signals: s.signals,
  ...more,
});

/** The spec with `spread` set in autoscaleForCapacity, when it autoscales. */
function withSpread(spec: PlacementSpec, spread: object): PlacementSpec {
  const autoscale = spec.scaling?.autoscaleForCapacity;
  return autoscale ? { ...spec, scaling: { ...spec.scaling, autoscaleForCapacity: { ...autoscale, spread } } } : spec;
}

describe('capacity answers and spread: properties', () => {
  it('with every answer unknown, stale or unreadable (or none), decisions and explanations are identical to today’s', () => {
    fc.assert(
      fc.property(arbScenario, fc.array(arbUselessAnswer, { maxLength: 12 }), (s, capacity) => {
        const today = decide(input(s));
        expect(decide(input(s, { capacity }))).toEqual(today);
        expect(decide(input(s, { capacity: [] }))).toEqual(today);
        expect(explain(input(s, { capacity })).clusters).toEqual(explain(input(s)).clusters);
      }),
      RUNS,
    );
  });

  it('answers never remove, evict or drain a listed cluster: every transition from a state is one today’s decision makes', () => {
    fc.assert(
      fc.property(arbScenario, fc.array(arbAnswer, { maxLength: 12 }), (s, capacity) => {
        // Only clusters listed before the evaluation: a warm standby added in it (P1, then P2 to
        // SCALING_IN) drains nothing, and which one it is may follow the cluster C1 added instead.
        const listed = new Set((s.clusters ?? []).map((c) => `${c.namespace}/${c.name}`));
        const leaving = (t: Decision['transitions'][number]) =>
          t.from !== null && t.to !== 'ACTIVE' && listed.has(t.cluster);
        const today = decide(input(s)).transitions.filter(leaving);
        const withAnswers = decide(input(s, { capacity })).transitions.filter(leaving);
        for (const t of withAnswers) expect(today.map((x) => `${x.cluster} ${x.id}`)).toContain(`${t.cluster} ${t.id}`);
      }),
      RUNS,
    );
  });

  it('spread with the default key and minGroups 1 is today’s behaviour', () => {
    fc.assert(
      fc.property(
        arbScenario,
        fc.constantFrom({}, { minGroups: 1 }, { topologyKey: 'topology.kubernetes.io/region' }),
        (s, spread) => {
          const spreadSpec = withSpread(s.spec, spread);
          expect(decide(input({ ...s, spec: spreadSpec }))).toEqual(decide(input(s)));
        },
      ),
      RUNS,
    );
  });

  it('spread only reorders scale-out: as many clusters are added (P1) as without it', () => {
    fc.assert(
      fc.property(arbScenario, fc.integer({ min: 1, max: 4 }), (s, groups) => {
        const min = s.spec.scaling?.autoscaleForCapacity?.minClustersBelowCapacityCeiling ?? 0;
        fc.pre(min >= groups);
        const standbys = (s.spec.scaling?.autoscaleForCapacity?.warmStandbyClusters ?? 0) > 0;
        fc.pre(!standbys); // a standby's additions depend on which regions are ACTIVE
        const p1 = (spec: PlacementSpec) =>
          decide(input({ ...s, spec })).transitions.filter((t) => t.id === 'P1').length;
        expect(p1(withSpread(s.spec, { topologyKey: 'region', minGroups: groups }))).toBe(p1(s.spec));
      }),
      RUNS,
    );
  });
});

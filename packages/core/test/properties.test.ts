import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbFleet, arbPlacementSpec, arbSignal, arbStatusClusters, aPlacement } from '@mco/core/testing';
import {
  ClusterProfileSchema,
  decide,
  PlacementSpecSchema,
  SignalSchema,
  type ClusterProfile,
  type Decision,
  type PlacementSpec,
  type PlacementStatus,
  type Signal,
} from '@mco/core';
import { TRANSITION_TABLE } from './helpers.js';

const NOW = new Date('2026-01-01T02:00:00Z');
const RUNS = { numRuns: 300 };

interface Scenario {
  readonly spec: PlacementSpec;
  readonly clusters: PlacementStatus['clusters'];
  readonly profiles: ClusterProfile[];
  readonly signals: Signal[];
  readonly lastAdditionTime?: string;
}

const arbScenario: fc.Arbitrary<Scenario> = fc.record(
  {
    spec: arbPlacementSpec,
    clusters: arbStatusClusters,
    profiles: arbFleet(),
    signals: fc.array(arbSignal(), { maxLength: 12 }),
    lastAdditionTime: fc.constantFrom('2026-01-01T00:00:00Z', '2026-01-01T01:58:00Z'),
  },
  { requiredKeys: ['spec', 'clusters', 'profiles', 'signals'] },
);

const evaluate = (s: Scenario, overrides: Partial<Scenario> = {}): Decision => {
  const x = { ...s, ...overrides };
  return decide({
    now: NOW,
    placement: aPlacement('default/p', x.spec, {
      clusters: x.clusters,
      ...(x.lastAdditionTime ? { lastAdditionTime: x.lastAdditionTime } : {}),
    }),
    clusterProfiles: x.profiles,
    signals: x.signals,
  });
};
const keyOf = (c: { namespace?: string | undefined; name: string }) => `${c.namespace}/${c.name}`;
const autoscale = (s: Scenario) => s.spec.scaling?.autoscaleForCapacity;

/** Clusters added as warm standbys in this evaluation: a P1 and a P2 of the same cluster. */
const standbyAdditions = (d: Decision): Set<string> =>
  new Set(
    d.transitions
      .filter((t) => t.id === 'P2' && d.transitions.some((p) => p.id === 'P1' && p.cluster === t.cluster))
      .map((t) => t.cluster),
  );

describe('properties of the engine', () => {
  it('the arbitraries of @mco/core/testing only make values the schemas accept', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        expect(PlacementSpecSchema.safeParse(s.spec).success).toBe(true);
        for (const p of s.profiles) expect(ClusterProfileSchema.safeParse(p).success).toBe(true);
        for (const g of s.signals) expect(SignalSchema.safeParse(g).success).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('is deterministic: the same input gives the same output', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        expect(evaluate(s)).toEqual(evaluate(s));
      }),
      RUNS,
    );
  });

  it('does not depend on the order of the inventory or of the signals', () => {
    fc.assert(
      fc.property(arbScenario, fc.integer(), (s, seed) => {
        const shuffle = <T>(xs: T[]) => {
          const out = [...xs];
          let r = seed;
          for (let i = out.length - 1; i > 0; i--) {
            r = (r * 1103515245 + 12345) | 0;
            const j = Math.abs(r) % (i + 1);
            [out[i], out[j]] = [out[j]!, out[i]!];
          }
          return out;
        };
        // Signals for one cluster may tie; shuffling keeps one per cluster to stay meaningful.
        const unique = [...new Map(s.signals.map((g) => [g.cluster, g])).values()];
        expect(evaluate(s, { profiles: shuffle(s.profiles), signals: shuffle(unique) })).toEqual(
          evaluate(s, { signals: unique }),
        );
      }),
      RUNS,
    );
  });

  it('never lists more than maxClusters by adding, and never adds beyond it', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const max = autoscale(s)?.maxClusters ?? 0;
        fc.pre(max > 0);
        const d = evaluate(s);
        const before = s.clusters?.length ?? 0;
        expect(d.status.clusters!.length).toBeLessThanOrEqual(Math.max(before, max));
        if (d.transitions.some((t) => t.id === 'P1')) expect(d.status.clusters!.length).toBeLessThanOrEqual(max);
      }),
      RUNS,
    );
  });

  it('never scales in (P2) when headroom without the cluster would drop below min', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const config = autoscale(s);
        fc.pre(config !== undefined);
        const d = evaluate(s);
        // A warm standby (rule W1) is added (P1) and held (P2) in one evaluation: it takes nothing from headroom.
        const standby = standbyAdditions(d);
        const scaleIns = d.transitions.filter((t) => t.id === 'P2' && !standby.has(t.cluster));
        if (scaleIns.length === 0) return;
        const headroom = d.status.clusters!.filter((c) => c.state === 'ACTIVE' && c.atCapacityCeiling !== true).length;
        expect(headroom).toBeGreaterThanOrEqual(config!.minClustersBelowCapacityCeiling);
        expect(scaleIns).toHaveLength(1);
        expect(d.transitions.some((t) => t.id === 'P3' || (t.id === 'P1' && !standby.has(t.cluster)))).toBe(false);
      }),
      RUNS,
    );
  });

  it('with no signals at all nothing is scaled in or drained away, and clusters are added only up to min (and warm standbys)', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const d = evaluate(s, { signals: [] });
        const standby = standbyAdditions(d);
        expect(d.transitions.filter((t) => (t.id === 'P2' && !standby.has(t.cluster)) || t.id === 'R1')).toEqual([]);
        const config = autoscale(s);
        if (config) expect(standby.size).toBeLessThanOrEqual(config.warmStandbyClusters ?? 0);
        if (config && d.transitions.some((t) => t.id === 'P3' || (t.id === 'P1' && !standby.has(t.cluster)))) {
          const active = d.status.clusters!.filter((c) => c.state === 'ACTIVE').length;
          expect(active).toBeLessThanOrEqual(config.minClustersBelowCapacityCeiling);
        }
      }),
      RUNS,
    );
  });

  it('a stale signal means exactly what a missing signal means', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const stale = s.signals.map((g) => ({ ...g, observedAt: '2026-01-01T01:00:00Z' }));
        expect(evaluate(s, { signals: stale }).status.clusters).toEqual(evaluate(s, { signals: [] }).status.clusters);
      }),
      RUNS,
    );
  });

  it("losing a cluster's signal never removes, evicts or scales in that cluster", () => {
    fc.assert(
      fc.property(arbScenario, fc.nat(), (s, pick) => {
        const listed = s.clusters ?? [];
        fc.pre(listed.length > 0);
        const victim = keyOf(listed[pick % listed.length]!);
        const on = (d: Decision) =>
          d.transitions
            .filter((t) => t.cluster === victim && ['P2', 'R1', 'R3', 'E1', 'E3'].includes(t.id))
            .map((t) => t.id);
        const withSignal = on(evaluate(s));
        const withoutSignal = on(evaluate(s, { signals: s.signals.filter((g) => g.cluster !== victim) }));
        for (const id of withoutSignal) expect(withSignal).toContain(id);
      }),
      RUNS,
    );
  });

  it('an invalid spec never changes status.clusters', () => {
    const breakSpec = fc.constantFrom<(spec: PlacementSpec) => unknown>(
      (spec) => ({ ...spec, clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '(' } }] }),
      (spec) => ({ ...spec, clusterSelectorRules: [{ type: 'no-such-rule' }] }),
      (spec) => ({
        ...spec,
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingRequiredDuringExecution: {
              clusterSelectorTerms: [{ matchExpressions: [{ labelSelector: { key: 'a', operator: 'Gt' } }] }],
            },
          },
        },
      }),
      (spec) => ({ ...spec, scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 0 } } }),
      (spec) => ({ ...spec, rules: [], clusterSelectorRules: [] }),
      (spec) => ({
        ...spec,
        scaling: {
          autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, behavior: { failBack: { enabled: true } } },
        },
      }),
    );
    fc.assert(
      fc.property(arbScenario, breakSpec, (s, mutate) => {
        const d = evaluate(s, { spec: mutate(s.spec) as PlacementSpec });
        expect(d.status.clusters).toEqual(s.clusters);
        expect(d.transitions).toEqual([]);
        expect(d.status.conditions?.find((c) => c.type === 'Valid')?.status).toBe('False');
      }),
      RUNS,
    );
  });

  it('every transition matches the state table of docs/placement-rules.md §3', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const d = evaluate(s);
        for (const t of d.transitions) expect([t.from, t.to]).toEqual(TRANSITION_TABLE[t.id]);
        expect(new Set(d.status.clusters!.map(keyOf)).size).toBe(d.status.clusters!.length);
      }),
      RUNS,
    );
  });
});

import { describe, expect, it } from 'vitest';
import {
  aClusterProfile,
  anAutoscalingSpec,
  anUnreachableSignal,
  aScaleInSignal,
  aSteadySignal,
} from '@mco/core/testing';
import { CONDITION_VALID, type ClusterProfile, type Spread } from '@mco/core';
import { at, condition, explainOf, listed, moves, run, type Case } from './helpers.js';

// spread (rule O2, docs/placement-rules.md §10.7): the minimum spans spread.minGroups groups of spread.topologyKey.
const NOW = 3600;
const REGION = 'topology.kubernetes.io/region';
const ZONE = 'topology.kubernetes.io/zone';
const fleet = (key: string, groups: Record<string, string>): ClusterProfile[] =>
  Object.entries(groups).map(([name, group]) => aClusterProfile(`fleet/${name}`, { labels: { [key]: group } }));
const spec = (min: number, spread?: Spread) => anAutoscalingSpec(min, spread ? { spread } : {});
const fresh = (profiles: ClusterProfile[], min: number, spread?: Spread): Case => ({
  spec: spec(min, spread),
  profiles,
  now: NOW,
});

describe('spread: the minimum across groups', () => {
  const twoRegions = fleet(REGION, { a: 'r1', b: 'r1', c: 'r2' });

  it('without spread, min 2 takes the two highest-priority clusters, both in r1', () => {
    expect(moves(run(fresh(twoRegions, 2)))).toEqual(['P1 fleet/a -->ACTIVE', 'P1 fleet/b -->ACTIVE']);
  });

  it('spread.minGroups 2 passes over fleet/b (r1 already counts) for fleet/c (r2); explain says so', () => {
    const c = fresh(twoRegions, 2, { minGroups: 2 });
    const d = run(c);
    expect(moves(d)).toEqual(['P1 fleet/a -->ACTIVE', 'P1 fleet/c -->ACTIVE']);
    expect(d.transitions[1]!.reason).toBe(
      `headroom 1 < min 2: added the highest-priority eligible cluster in another ${REGION} group, r2 (spread.minGroups 2, 1 ${REGION} group(s) counted)`,
    );
    const b = explainOf(c).clusters.find((x) => x.cluster === 'fleet/b')!;
    expect(b.notes[0]).toBe(
      `skipped for spread: its group r1 already counts (spread.minGroups 2, 1 ${REGION} group(s) counted)`,
    );
  });

  it('when no other group has a candidate, the first skipped one is added all the same, and the message says the spread is not met', () => {
    const d = run(fresh(fleet(REGION, { a: 'r1', b: 'r1' }), 2, { minGroups: 2 }));
    expect(moves(d)).toEqual(['P1 fleet/a -->ACTIVE', 'P1 fleet/b -->ACTIVE']);
    expect(d.transitions[1]!.reason).toContain(`(spread.minGroups 2 not met: no candidate in another ${REGION} group)`);
  });

  it('a custom topologyKey groups by that label', () => {
    const zones = fleet(ZONE, { a: 'z1', b: 'z1', c: 'z2' });
    expect(moves(run(fresh(zones, 2, { topologyKey: ZONE, minGroups: 2 })))).toEqual([
      'P1 fleet/a -->ACTIVE',
      'P1 fleet/c -->ACTIVE',
    ]);
  });

  it('scale-in keeps the only cluster of a group while the minimum needs it', () => {
    const c: Case = {
      spec: spec(2, { minGroups: 2 }),
      status: {
        clusters: [
          listed('fleet/a', 'ACTIVE', 0),
          listed('fleet/b', 'ACTIVE', 0),
          listed('fleet/c', 'ACTIVE', 0, { scaleInCandidateSince: at(0) }),
        ],
      },
      profiles: twoRegions,
      signals: [
        aSteadySignal('fleet/a', at(NOW - 10)),
        aSteadySignal('fleet/b', at(NOW - 10)),
        aScaleInSignal('fleet/c', at(NOW - 10)),
      ],
      now: NOW,
    };
    expect(moves(run(c))).toEqual([]);
    expect(explainOf(c).clusters.find((x) => x.cluster === 'fleet/c')!.notes).toContain(
      `wants scale-in, but without it the clusters counted toward the minimum would span 1 ${REGION} group(s) < spread.minGroups 2`,
    );
    // Without spread, the same evaluation scales fleet/c in.
    expect(moves(run({ ...c, spec: spec(2) }))).toEqual(['P2 fleet/c ACTIVE->SCALING_IN']);
  });
});

describe('spread: rule O2 groups by spread.topologyKey', () => {
  it('a replacement for an unreachable cluster comes from another zone with topologyKey zone; without it, in priority order', () => {
    const zones = fleet(ZONE, { a: 'z1', b: 'z1', c: 'z2' });
    const c = (s?: Spread): Case => ({
      spec: spec(1, s),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: zones,
      signals: [anUnreachableSignal('fleet/a', at(NOW - 10))],
      now: NOW,
    });
    expect(moves(run(c({ topologyKey: ZONE })))).toEqual(['P1 fleet/c -->ACTIVE']);
    expect(moves(run(c()))).toEqual(['P1 fleet/b -->ACTIVE']);
  });
});

describe('spread: validation names the field', () => {
  const invalid = (s: unknown) =>
    condition(run({ spec: spec(2, s as Spread), profiles: [], now: NOW }), CONDITION_VALID);

  it('minGroups above minClustersBelowCapacityCeiling is InvalidSpread', () => {
    expect(invalid({ minGroups: 3 })).toMatchObject({
      status: 'False',
      reason: 'InvalidSpread',
      message:
        'spec.scaling.autoscaleForCapacity.spread.minGroups: 3 exceeds minClustersBelowCapacityCeiling (2): each group needs a cluster counted toward the minimum',
    });
  });

  it('a minGroups of 0 or an empty topologyKey is InvalidSpec on that field', () => {
    expect(invalid({ minGroups: 0 })).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(invalid({ minGroups: 0 })!.message).toMatch(/^spec\.scaling\.autoscaleForCapacity\.spread\.minGroups: /);
    expect(invalid({ topologyKey: '' })!.message).toMatch(
      /^spec\.scaling\.autoscaleForCapacity\.spread\.topologyKey: /,
    );
  });
});

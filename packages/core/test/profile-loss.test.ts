import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aClusterProfile, anAutoscalingSpec, aPlacement, arbFleet, arbStatusClusters } from '@mco/core/testing';
import { decide, type ClusterProfile, type Decision, type PlacementCluster, type PlacementSpec } from '@mco/core';
import { at, condition, listed, moves, run, states, T0, type Case } from './helpers.js';

// docs/placement-rules.md §10.5: losing inventory is not an intent to move.

const fleet: ClusterProfile[] = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b'), aClusterProfile('fleet/c')];
const without = (key: string) => fleet.filter((p) => `${p.metadata.namespace}/${p.metadata.name}` !== key);
const deleting = (key: string) =>
  fleet.map((p) =>
    `${p.metadata.namespace}/${p.metadata.name}` === key ? aClusterProfile(key, { deleting: true }) : p,
  );
const NOW = 7200;
const everyCluster: PlacementSpec = {};
const allThree = (b: Parameters<typeof listed>[1] = 'ACTIVE', since = 0, extra = {}) => ({
  clusters: [listed('fleet/a', 'ACTIVE', 0), listed('fleet/b', b, since, extra), listed('fleet/c', 'ACTIVE', 0)],
});
const missingB = { reason: 'ClusterProfileMissing' };

interface Row {
  readonly name: string;
  readonly input: Case;
  readonly hold?: boolean;
  readonly states: string[];
  readonly moves: string[];
  readonly reasons: RegExp[];
  readonly requeue: number | null;
  readonly satisfied: string;
}

const rows: Row[] = [
  {
    name: 'without scaling a cluster whose ClusterProfile is missing is evicted but not removed (E1 only)',
    input: { spec: everyCluster, status: allThree(), profiles: without('fleet/b'), now: NOW },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE', 'fleet/b EVICTING'],
    moves: ['E1 fleet/b ACTIVE->EVICTING'],
    reasons: [/no longer eligible: its ClusterProfile is missing/],
    requeue: 300,
    satisfied: 'True AllEligibleClustersPlaced',
  },
  {
    name: 'it stays EVICTING within profileLossGraceSeconds, and the engine asks to be called when the grace ends',
    input: {
      spec: everyCluster,
      status: allThree('EVICTING', NOW - 100, missingB),
      profiles: without('fleet/b'),
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE', 'fleet/b EVICTING'],
    moves: [],
    reasons: [],
    requeue: 200,
    satisfied: 'True AllEligibleClustersPlaced',
  },
  {
    name: 'it is removed once the ClusterProfile has been missing for profileLossGraceSeconds (R3)',
    input: {
      spec: everyCluster,
      status: allThree('EVICTING', NOW - 300, missingB),
      profiles: without('fleet/b'),
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE'],
    moves: ['R3 fleet/b EVICTING->-'],
    reasons: [/ClusterProfile missing for profileLossGraceSeconds \(300s\)/],
    requeue: null,
    satisfied: 'True AllEligibleClustersPlaced',
  },
  {
    name: 'the ClusterProfile returning within the grace makes it ACTIVE again (E2)',
    input: { spec: everyCluster, status: allThree('EVICTING', NOW - 100, missingB), profiles: fleet, now: NOW },
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE', 'fleet/c ACTIVE'],
    moves: ['E2 fleet/b EVICTING->ACTIVE'],
    reasons: [/eligible again/],
    requeue: null,
    satisfied: 'True AllEligibleClustersPlaced',
  },
  {
    name: 'a ClusterProfile being deleted is an intent: without scaling its cluster is removed at once (E1 then R3)',
    input: { spec: everyCluster, status: allThree(), profiles: deleting('fleet/b'), now: NOW },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE'],
    moves: ['E1 fleet/b ACTIVE->EVICTING', 'R3 fleet/b EVICTING->-'],
    reasons: [/its ClusterProfile is being deleted/, /nothing to drain without autoscaleForCapacity/],
    requeue: null,
    satisfied: 'True AllEligibleClustersPlaced',
  },
  {
    name: 'a ClusterProfile deleted while its cluster waits out the grace ends the wait at once (R3)',
    input: {
      spec: everyCluster,
      status: allThree('EVICTING', NOW - 100, missingB),
      profiles: deleting('fleet/b'),
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE'],
    moves: ['R3 fleet/b EVICTING->-'],
    reasons: [/nothing to drain without autoscaleForCapacity/],
    requeue: null,
    satisfied: 'True AllEligibleClustersPlaced',
  },
  {
    name: 'spec.scaling.behavior.profileLossGraceSeconds sets the grace',
    input: {
      spec: { scaling: { behavior: { profileLossGraceSeconds: 60 } } },
      status: allThree(),
      profiles: without('fleet/b'),
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE', 'fleet/b EVICTING'],
    moves: ['E1 fleet/b ACTIVE->EVICTING'],
    reasons: [/its ClusterProfile is missing/],
    requeue: 60,
    satisfied: 'True AllEligibleClustersPlaced',
  },
  {
    name: 'with cluster-list rules a missing ClusterProfile is a loss too, not a rule change',
    input: {
      spec: { clusterSelectorRules: [{ type: 'cluster-list', arguments: { clusters: 'fleet/a,fleet/b,fleet/c' } }] },
      status: allThree(),
      profiles: without('fleet/b'),
      now: NOW,
    },
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE', 'fleet/b EVICTING'],
    moves: ['E1 fleet/b ACTIVE->EVICTING'],
    reasons: [/its ClusterProfile is missing/],
    requeue: 300,
    satisfied: 'True AllEligibleClustersPlaced',
  },
  {
    name: 'while the inventory-loss guard holds, a cluster past the grace stays listed and Satisfied is Unknown',
    input: {
      spec: everyCluster,
      status: allThree('EVICTING', NOW - 3600, missingB),
      profiles: without('fleet/b'),
      now: NOW,
    },
    hold: true,
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE', 'fleet/b EVICTING'],
    moves: [],
    reasons: [],
    requeue: null,
    satisfied: 'Unknown InventoryShrunk',
  },
  {
    name: 'while the guard holds, an autoscaled EVICTING cluster down to one replica whose ClusterProfile is missing stays',
    input: {
      spec: anAutoscalingSpec(1),
      status: allThree('EVICTING', NOW - 100, missingB),
      profiles: without('fleet/b'),
      signals: [{ cluster: 'fleet/b', observedAt: at(NOW - 10), hpa: { currentReplicas: 1 } }],
      now: NOW,
    },
    hold: true,
    states: ['fleet/a ACTIVE', 'fleet/c ACTIVE', 'fleet/b EVICTING'],
    moves: [],
    reasons: [],
    requeue: 170,
    satisfied: 'Unknown InventoryShrunk',
  },
  {
    name: 'while the guard holds, evictions still start (E1) and other removals go on',
    input: {
      spec: everyCluster,
      status: allThree(),
      profiles: [aClusterProfile('fleet/a'), aClusterProfile('fleet/c', { deleting: true })],
      now: NOW,
    },
    hold: true,
    states: ['fleet/a ACTIVE', 'fleet/b EVICTING'],
    moves: ['E1 fleet/b ACTIVE->EVICTING', 'E1 fleet/c ACTIVE->EVICTING', 'R3 fleet/c EVICTING->-'],
    reasons: [/its ClusterProfile is missing/, /its ClusterProfile is being deleted/, /nothing to drain/],
    requeue: null,
    satisfied: 'Unknown InventoryShrunk',
  },
  {
    name: 'the guard changes nothing for a placement that lists no cluster with a missing ClusterProfile',
    input: { spec: everyCluster, status: allThree(), profiles: fleet, now: NOW },
    hold: true,
    states: ['fleet/a ACTIVE', 'fleet/b ACTIVE', 'fleet/c ACTIVE'],
    moves: [],
    reasons: [],
    requeue: null,
    satisfied: 'True AllEligibleClustersPlaced',
  },
];

describe('a missing ClusterProfile is not an intent to move (docs/placement-rules.md §10.5)', () => {
  it.each(rows)('$name', (row) => {
    const d = decide({
      now: new Date(T0 + row.input.now * 1000),
      placement: aPlacement('default/web', row.input.spec, row.input.status),
      clusterProfiles: row.input.profiles,
      signals: row.input.signals ?? [],
      holdProfileLossRemovals: row.hold ?? false,
    });
    expect(states(d)).toEqual(row.states);
    expect(moves(d)).toEqual(row.moves);
    expect(d.transitions).toHaveLength(row.reasons.length);
    d.transitions.forEach((t, i) => expect(t.reason).toMatch(row.reasons[i]!));
    expect(d.requeueAfterSeconds).toBe(row.requeue);
    const satisfied = condition(d, 'Satisfied');
    expect(`${satisfied?.status} ${satisfied?.reason}`).toBe(row.satisfied);
  });

  it('the evicted cluster records why, and the grace runs from that transition', () => {
    const evicted = run({ spec: everyCluster, status: allThree(), profiles: without('fleet/b'), now: NOW });
    const b = evicted.status.clusters!.find((c) => c.name === 'b')!;
    expect(b).toMatchObject({ state: 'EVICTING', reason: 'ClusterProfileMissing', lastTransitionTime: at(NOW) });
    const later = (seconds: number) =>
      run({ spec: everyCluster, status: evicted.status, profiles: without('fleet/b'), now: NOW + seconds });
    expect(moves(later(299))).toEqual([]);
    expect(moves(later(300))).toEqual(['R3 fleet/b EVICTING->-']);
  });
});

const RUNS = { numRuns: 300 };
const evaluate = (
  spec: PlacementSpec,
  clusters: PlacementCluster[],
  profiles: ClusterProfile[],
  hold = false,
): Decision =>
  decide({
    now: new Date(T0 + NOW * 1000),
    placement: aPlacement('default/p', spec, { clusters }),
    clusterProfiles: profiles,
    holdProfileLossRemovals: hold,
  });
const keyOf = (p: ClusterProfile) => `${p.metadata.namespace}/${p.metadata.name}`;
const removedIds = new Set(['R1', 'R2', 'R3']);

describe('properties of profile loss', () => {
  it('a ClusterProfile vanishing never removes a listed cluster in the same evaluation, with or without scaling', () => {
    fc.assert(
      fc.property(
        arbFleet(),
        fc.func(fc.boolean()),
        fc.boolean(),
        fc.constantFrom<PlacementSpec>(everyCluster, anAutoscalingSpec(1), anAutoscalingSpec(2, { useDraining: true })),
        (profiles, vanishes, allActive, spec) => {
          // Listed ACTIVE on the whole fleet; some profiles then vanish at once.
          const clusters = profiles.map((p) => listed(keyOf(p), allActive ? 'ACTIVE' : 'SCALING_IN', 0));
          const remaining = profiles.filter((p) => !vanishes(keyOf(p)));
          const d = evaluate(spec, clusters, remaining);
          const gone = new Set(profiles.filter((p) => vanishes(keyOf(p))).map(keyOf));
          const removed = d.transitions.filter((t) => removedIds.has(t.id) && gone.has(t.cluster));
          expect(removed).toEqual([]);
          for (const key of gone) {
            const c = d.status.clusters!.find((x) => `${x.namespace}/${x.name}` === key);
            expect(c?.state).toBe('EVICTING');
          }
        },
      ),
      RUNS,
    );
  });

  it('while the guard holds, no cluster whose ClusterProfile is missing is ever removed, whatever the status says', () => {
    fc.assert(
      fc.property(
        arbStatusClusters,
        arbFleet(),
        fc.constantFrom<PlacementSpec>(everyCluster, anAutoscalingSpec(1), anAutoscalingSpec(1, { useDraining: true })),
        (clusters, profiles, spec) => {
          const present = new Set(profiles.map(keyOf));
          const d = evaluate(spec, clusters, profiles, true);
          for (const t of d.transitions) {
            if (t.id === 'R3' || t.id === 'R1') expect(present.has(t.cluster)).toBe(true);
          }
          const missingListed = (d.status.clusters ?? []).filter(
            (c) => c.state === 'EVICTING' && !present.has(`${c.namespace}/${c.name}`),
          );
          if (missingListed.length > 0) expect(condition(d, 'Satisfied')?.reason).toBe('InventoryShrunk');
        },
      ),
      RUNS,
    );
  });
});

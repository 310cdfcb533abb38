import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aClusterProfile } from '@mco/core/testing';
import { compileSelection, createInventory, selectClusters, type PlacementSpec, type Taint } from '@mco/core';
import { preferenceScores } from '../src/selection/select.js';

// The priority order (docs/placement-rules.md §2.4, 10.1, 10.2) is computed with a counting
// sort and ranks with a map or a scan of the list, depending on how many
// clusters are tracked: both are checked here against plain reference code on
// fleets larger than the other property tests use (up to 40 clusters, so more
// than 16 can be tracked).

const REGIONS = ['a', 'b', 'c'];
const EFFECTS = ['NoSelect', 'NoSelectIfNew', 'PreferNoSelect'] as const;

const arbFleet = fc
  .uniqueArray(
    fc.record({
      id: fc.integer({ min: 0, max: 99 }),
      region: fc.constantFrom(...REGIONS),
      // Repeated values make ties; "many" is not a quantity; undefined is no property.
      cost: fc.option(fc.constantFrom('1', '1.5', '1500m', '2', '3Gi', '0', 'many'), { nil: undefined }),
      taint: fc.option(fc.constantFrom(...EFFECTS), { nil: undefined, freq: 2 }),
    }),
    { selector: (c) => c.id, maxLength: 40 },
  )
  .map((clusters) =>
    clusters.map((c) =>
      aClusterProfile(`fleet/c${String(c.id).padStart(2, '0')}`, {
        labels: { region: c.region },
        ...(c.cost !== undefined ? { properties: { cost: c.cost } } : {}),
        ...(c.taint ? { taints: [{ key: 'maintenance', effect: c.taint } satisfies Taint] } : {}),
      }),
    ),
  );

const arbSpec: fc.Arbitrary<PlacementSpec> = fc
  .record({
    region: fc.constantFrom(...REGIONS),
    preferenceWeight: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
    sorter: fc.option(fc.record({ weight: fc.integer({ min: 1, max: 100 }), ascending: fc.boolean() }), {
      nil: undefined,
    }),
    tolerate: fc.boolean(),
  })
  .map(({ region, preferenceWeight, sorter, tolerate }) => ({
    ...(tolerate ? { tolerations: [{ key: 'maintenance', operator: 'Exists', effect: 'PreferNoSelect' }] } : {}),
    affinity: {
      clusterAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          ...(preferenceWeight
            ? [
                {
                  weight: preferenceWeight,
                  preference: {
                    matchExpressions: [{ labelSelector: { key: 'region', operator: 'In', values: [region] } }],
                  },
                },
              ]
            : []),
          ...(sorter
            ? [
                {
                  weight: sorter.weight,
                  propertySorter: { name: 'cost', sortOrder: sorter.ascending ? 'Ascending' : 'Descending' },
                },
              ]
            : []),
        ],
      },
    },
  }));

describe('priority order and ranks (fast-check)', () => {
  it('the eligible list is the inventory without NoSelect-tainted clusters, stably sorted by score, PreferNoSelect last', () => {
    fc.assert(
      fc.property(arbFleet, arbSpec, (profiles, spec) => {
        const selection = compileSelection(spec);
        if (!selection.ok) throw new Error(selection.error.message);
        const inventory = createInventory(profiles);
        const result = selectClusters(selection.value, inventory);
        const candidates = inventory.clusters.filter((c) => !result.taintsOf(c.key).noSelect);
        const scores = preferenceScores(candidates, selection.value);
        const score = new Map(candidates.map((c, i) => [c, scores[i]!]));
        // Array.prototype.sort is stable: ties keep namespace/name order.
        const sorted = [...candidates].sort((x, y) => score.get(y)! - score.get(x)!);
        const last = (c: (typeof sorted)[number]) => result.taintsOf(c.key).preferNoSelect !== undefined;
        const expected = [...sorted.filter((c) => !last(c)), ...sorted.filter(last)];
        expect(result.eligible.map((c) => c.key)).toEqual(expected.map((c) => c.key));
      }),
      { numRuns: 300 },
    );
  });

  it('rankOf is the position in the eligible list, whether few, many or no clusters are tracked', () => {
    fc.assert(
      fc.property(
        arbFleet.chain((profiles) =>
          fc.tuple(
            fc.constant(profiles),
            fc.subarray(profiles.map((p) => `fleet/${p.metadata.name}`)),
            fc.integer({ min: 0, max: 20 }),
          ),
        ),
        arbSpec,
        ([profiles, tracked, unknown], spec) => {
          const selection = compileSelection(spec);
          if (!selection.ok) throw new Error(selection.error.message);
          const inventory = createInventory(profiles);
          // Keys without a ClusterProfile make the tracked set large without changing the fleet.
          const trackedKeys = new Set([...tracked, ...Array.from({ length: unknown }, (_, i) => `gone/x${i}`)]);
          const asked = [...inventory.clusters.map((c) => c.key), 'gone/x0', 'gone/never'];
          for (const set of [undefined, trackedKeys]) {
            const result = selectClusters(selection.value, inventory, set);
            const position = new Map(result.eligible.map((c, i) => [c.key, i]));
            // Asked twice: a remembered rank must be the same.
            for (const key of [...asked, ...asked]) expect(result.rankOf(key)).toBe(position.get(key));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

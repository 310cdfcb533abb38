import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aClusterProfile } from '@mco/core/testing';
import {
  compileSelection,
  createInventory,
  selectClusters,
  type ClusterSelectorTerm,
  type PlacementSpec,
} from '@mco/core';

// A required selector whose every term has a labelSelector `In` looks its candidates up by label
// value (select.ts) instead of testing the whole fleet: the eligible list must be exactly the one
// the selector gives when it judges every cluster.

const VALUES = ['a', 'b', 'c'];
const KEYS = ['region', 'tier', 'constructor'];

const arbFleet = fc
  .uniqueArray(
    fc.record({
      id: fc.integer({ min: 0, max: 60 }),
      region: fc.option(fc.constantFrom(...VALUES), { nil: undefined }),
      tier: fc.option(fc.constantFrom(...VALUES), { nil: undefined }),
    }),
    { selector: (c) => c.id, maxLength: 40 },
  )
  .map((clusters) =>
    clusters.map((c) =>
      aClusterProfile(`fleet/c${String(c.id).padStart(2, '0')}`, {
        labels: {
          ...(c.region ? { region: c.region } : {}),
          ...(c.tier ? { tier: c.tier } : {}),
        },
      }),
    ),
  );

const arbExpression = fc.oneof(
  fc.record({
    key: fc.constantFrom(...KEYS),
    operator: fc.constantFrom('In', 'NotIn'),
    values: fc.uniqueArray(fc.constantFrom(...VALUES), { minLength: 1, maxLength: 2 }),
  }),
  fc.record({ key: fc.constantFrom(...KEYS), operator: fc.constantFrom('Exists', 'DoesNotExist') }),
);

const arbTerm: fc.Arbitrary<ClusterSelectorTerm> = fc
  .array(arbExpression, { minLength: 0, maxLength: 3 })
  .map((expressions) => ({ matchExpressions: expressions.map((labelSelector) => ({ labelSelector })) }));

const arbSpec: fc.Arbitrary<PlacementSpec> = fc
  .record({ terms: fc.array(arbTerm, { minLength: 1, maxLength: 3 }), preferRegion: fc.boolean() })
  .map(({ terms, preferRegion }) => ({
    affinity: {
      clusterAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: terms },
        ...(preferRegion
          ? {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 10,
                  preference: {
                    matchExpressions: [{ labelSelector: { key: 'region', operator: 'In', values: ['b'] } }],
                  },
                },
              ],
            }
          : {}),
      },
    },
  }));

describe('candidates looked up by label value (fast-check)', () => {
  it('give the eligible list, in order, that judging every cluster gives', () => {
    fc.assert(
      fc.property(arbFleet, arbSpec, (profiles, spec) => {
        const selection = compileSelection(spec);
        if (!selection.ok) throw new Error(selection.error.message);
        const inventory = createInventory(profiles);
        const required = selection.value.required!;
        // The same selector without its label hint: every cluster is judged.
        const judgeAll = { ...selection.value, required: (c: Parameters<typeof required>[0]) => required(c) };
        const keys = (s: typeof selection.value) => selectClusters(s, inventory).eligible.map((c) => c.key);
        expect(keys(selection.value)).toEqual(keys(judgeAll));
        // A second selection on the same inventory reuses its index.
        expect(keys(selection.value)).toEqual(keys(judgeAll));
      }),
      { numRuns: 500 },
    );
  });

  it('hint a selector only when every term has an In requirement', () => {
    const spec = (terms: ClusterSelectorTerm[]): PlacementSpec => ({
      affinity: {
        clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: terms } },
      },
    });
    const regionIn: ClusterSelectorTerm = {
      matchExpressions: [{ labelSelector: { key: 'region', operator: 'In', values: ['a', 'b'] } }],
    };
    const tierExists: ClusterSelectorTerm = {
      matchExpressions: [{ labelSelector: { key: 'tier', operator: 'Exists' } }],
    };
    const hint = (terms: ClusterSelectorTerm[]) => {
      const selection = compileSelection(spec(terms));
      if (!selection.ok) throw new Error(selection.error.message);
      return selection.value.required?.labelIn;
    };
    expect(hint([regionIn])).toEqual([[{ key: 'region', values: ['a', 'b'] }]]);
    expect(hint([regionIn, regionIn])).toHaveLength(2);
    expect(hint([regionIn, tierExists])).toBeUndefined();
    expect(hint([tierExists])).toBeUndefined();
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aClusterProfile } from '@mco/core/testing';
import { compileSelection, createInventory, selectClusters, type ClusterProfile, type PlacementSpec } from '@mco/core';
import { compareQuantities, parseQuantity } from '../src/selection/quantity.js';
import { scoreBySorter } from '../src/selection/properties.js';
import { condition, run } from './helpers.js';

// docs/placement-rules.md §10.2: property selectors and sorters on ClusterProfile status.properties.

const fleet: ClusterProfile[] = [
  aClusterProfile('gpu/a', {
    properties: { 'gpu-count': '8', memory: '512Gi', 'gpu-hour-cost': '2.5', model: 'a100' },
  }),
  aClusterProfile('gpu/b', {
    properties: { 'gpu-count': '16', memory: '1Ti', 'gpu-hour-cost': '1.75', model: 'h100' },
  }),
  aClusterProfile('gpu/c', { properties: { 'gpu-count': '4', memory: '549755813888', 'gpu-hour-cost': '900m' } }),
  aClusterProfile('gpu/d', { properties: { 'gpu-count': 'many', memory: '64Gi' } }),
  aClusterProfile('gpu/e', {}),
];

function eligible(spec: PlacementSpec, profiles: readonly ClusterProfile[] = fleet): string[] {
  const selection = compileSelection(spec);
  if (!selection.ok) throw new Error(`${selection.error.field}: ${selection.error.message}`);
  return selectClusters(selection.value, createInventory(profiles)).eligible.map((c) => c.key);
}

const property = (name: string, operator: string, values?: string[]) => ({
  propertySelector: { name, operator, ...(values ? { values } : {}) },
});
const required = (...expressions: object[]): PlacementSpec => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        clusterSelectorTerms: [{ matchExpressions: expressions as never }],
      },
    },
  },
});
const sorted = (...sorters: [number, string, string][]): PlacementSpec => ({
  affinity: {
    clusterAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: sorters.map(([weight, name, sortOrder]) => ({
        weight,
        propertySorter: { name, sortOrder },
      })),
    },
  },
});

describe('Kubernetes quantities compare exactly, like resource.Quantity.Cmp', () => {
  it.each<[string, string, -1 | 0 | 1]>([
    ['16', '8', 1],
    ['1.5', '1500m', 0],
    ['1Gi', '1073741824', 0],
    ['1Gi', '1G', 1],
    ['80Gi', '81G', 1],
    ['250m', '0.25', 0],
    ['1e3', '1k', 0],
    ['1E3', '1000', 0],
    ['1E', '1e18', 0],
    ['1Ki', '1024', 0],
    ['1Mi', '1Ki', 1],
    ['5n', '5u', -1],
    ['-1', '0', -1],
    ['+2', '2', 0],
    ['.5', '500m', 0],
    ['2.', '2', 0],
    ['0.1', '0.10000000000000001', -1],
    ['1e-3', '1m', 0],
  ])('%s vs %s is %i', (a, b, order) => {
    expect(compareQuantities(parseQuantity(a)!, parseQuantity(b)!)).toBe(order);
  });

  it('the float shortcut never disagrees with the exact order (fast-check), near-equal and huge values included', () => {
    const exact = (a: string, b: string) => {
      const [x, y] = [parseQuantity(a)!, parseQuantity(b)!];
      const [l, r] = [x.numerator * y.denominator, y.numerator * x.denominator];
      return l < r ? -1 : l > r ? 1 : 0;
    };
    const digits = fc.stringMatching(/^[0-9]{1,400}$/);
    const arbQuantity = fc.oneof(
      fc
        .tuple(
          fc.constantFrom('', '-'),
          digits,
          fc.option(digits, { nil: undefined }),
          fc.constantFrom('', 'm', 'Gi', 'e-60', 'E64'),
        )
        .map(
          ([sign, whole, fraction, suffix]) =>
            `${sign}${whole}${fraction === undefined ? '' : `.${fraction}`}${suffix}`,
        ),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => d.toString().replace('e+', 'e')),
    );
    fc.assert(
      fc.property(arbQuantity, arbQuantity, fc.nat(3), (a, b, tweak) => {
        // Near-equal pairs: the same digits with one more at the end.
        const c = tweak === 0 && !/[a-zA-Z]/.test(a) ? `${a}${a.includes('.') ? '' : '.'}000000000001` : b;
        if (!parseQuantity(a) || !parseQuantity(c)) return;
        expect(compareQuantities(parseQuantity(a)!, parseQuantity(c)!)).toBe(exact(a, c));
      }),
      { numRuns: 2000 },
    );
  });

  it.each(['', 'many', '1.2.3', 'Gi', '1gi', '1KiB', '1 Gi', '--1', '1e', '1e1000', '0x10', 'NaN', 'Infinity'])(
    '"%s" is not a quantity',
    (text) => {
      expect(parseQuantity(text)).toBeUndefined();
    },
  );
});

describe('property selectors', () => {
  it.each<[string, PlacementSpec, string[]]>([
    ['Eq compares quantities: 16 Eq "16.0"', required(property('gpu-count', 'Eq', ['16.0'])), ['gpu/b']],
    ['Eq compares units: 1Ti Eq "1024Gi"', required(property('memory', 'Eq', ['1024Gi'])), ['gpu/b']],
    [
      'Eq: 512Gi and a plain byte count are the same quantity',
      required(property('memory', 'Eq', ['512Gi'])),
      ['gpu/a', 'gpu/c'],
    ],
    ['Eq on a non-quantity compares the strings', required(property('model', 'Eq', ['h100'])), ['gpu/b']],
    [
      'Eq on a non-quantity value of the cluster compares the strings',
      required(property('gpu-count', 'Eq', ['many'])),
      ['gpu/d'],
    ],
    [
      'Ne matches every other value and a cluster without the property',
      required(property('gpu-count', 'Ne', ['8'])),
      ['gpu/b', 'gpu/c', 'gpu/d', 'gpu/e'],
    ],
    ['Gt', required(property('gpu-count', 'Gt', ['8'])), ['gpu/b']],
    ['Ge', required(property('gpu-count', 'Ge', ['8'])), ['gpu/a', 'gpu/b']],
    [
      'Lt: a non-quantity value and a missing property match no numeric operator',
      required(property('gpu-count', 'Lt', ['8'])),
      ['gpu/c'],
    ],
    ['Le', required(property('gpu-count', 'Le', ['8'])), ['gpu/a', 'gpu/c']],
    ['Gt with units on both sides', required(property('memory', 'Gt', ['500Gi'])), ['gpu/a', 'gpu/b', 'gpu/c']],
    ['Lt with a milli value', required(property('gpu-hour-cost', 'Lt', ['1'])), ['gpu/c']],
    [
      'a property selector is ANDed with a label selector in the same expression',
      required({ ...property('gpu-count', 'Ge', ['4']), labelSelector: { key: 'x', operator: 'DoesNotExist' } }),
      ['gpu/a', 'gpu/b', 'gpu/c'],
    ],
    [
      'expressions of a term are ANDed',
      required(property('gpu-count', 'Ge', ['4']), property('memory', 'Lt', ['1Ti'])),
      ['gpu/a', 'gpu/c'],
    ],
  ])('%s', (_name, spec, expected) => {
    expect(eligible(spec)).toEqual(expected);
  });

  it.each<[string, object, string]>([
    [
      'an unknown operator',
      property('gpu-count', 'Gte', ['1']),
      'propertySelector.operator: unknown operator "Gte"; use Eq, Ne, Gt, Ge, Lt, Le',
    ],
    ['no value', property('gpu-count', 'Gt'), 'propertySelector.values: operator Gt needs exactly one value'],
    [
      'a non-quantity for a numeric operator',
      property('gpu-count', 'Gt', ['lots']),
      'propertySelector.values: operator Gt needs a Kubernetes quantity, not "lots"',
    ],
  ])(
    '%s makes the spec invalid (InvalidSelector) and leaves the clusters where they are',
    (_name, expression, message) => {
      const previous = {
        clusters: [
          { name: 'a', namespace: 'gpu', state: 'ACTIVE' as const, lastTransitionTime: '2026-01-01T00:00:00Z' },
        ],
      };
      const d = run({ spec: required(expression), status: previous, profiles: fleet, now: 60 });
      expect(d.status.clusters).toEqual(previous.clusters);
      expect(condition(d, 'Valid')).toMatchObject({
        status: 'False',
        reason: 'InvalidSelector',
        message: `spec.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[0].matchExpressions[0].${message}`,
      });
    },
  );

  it('two values for a property selector are rejected by the schema, naming the field', () => {
    const d = run({ spec: required(property('gpu-count', 'Eq', ['1', '2'])), profiles: fleet, now: 0 });
    expect(condition(d, 'Valid')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(condition(d, 'Valid')!.message).toMatch(/matchExpressions\[0\]\.propertySelector\.values: /);
  });
});

describe('property sorters', () => {
  it.each<[string, PlacementSpec, string[]]>([
    [
      'Descending: the largest value first; non-quantities and missing properties last, in namespace/name order',
      sorted([10, 'gpu-count', 'Descending']),
      ['gpu/b', 'gpu/a', 'gpu/c', 'gpu/d', 'gpu/e'],
    ],
    [
      'Ascending: the cheapest first (900m < 1.75 < 2.5); the worst value scores 0 like a missing one',
      sorted([100, 'gpu-hour-cost', 'Ascending']),
      ['gpu/c', 'gpu/b', 'gpu/a', 'gpu/d', 'gpu/e'],
    ],
    [
      'memory compares across units (1Ti > 512Gi = 549755813888 > 64Gi)',
      sorted([10, 'memory', 'Descending']),
      ['gpu/b', 'gpu/a', 'gpu/c', 'gpu/d', 'gpu/e'],
    ],
    [
      'a sorter on a property no cluster has keeps namespace/name order',
      sorted([50, 'nope', 'Ascending']),
      ['gpu/a', 'gpu/b', 'gpu/c', 'gpu/d', 'gpu/e'],
    ],
    [
      'sorters add up: a heavy cost sorter outweighs a light gpu-count sorter',
      sorted([10, 'gpu-count', 'Descending'], [100, 'gpu-hour-cost', 'Ascending']),
      ['gpu/c', 'gpu/b', 'gpu/a', 'gpu/d', 'gpu/e'],
    ],
  ])('%s', (_name, spec, expected) => {
    expect(eligible(spec)).toEqual(expected);
  });

  it('gives the best value the weight, the worst 0 and the others linear shares; a missing or non-quantity value 0', () => {
    const inventory = createInventory(fleet);
    const scores = scoreBySorter({ weight: 100, name: 'gpu-count', ascending: false }, inventory.clusters);
    // 8 between 4 and 16: (8 - 4) / (16 - 4) of 100.
    expect([...scores]).toEqual([100 * (4 / 12), 100, 0, 0, 0]);
  });

  it('gives every cluster the weight when all valued clusters have the same value', () => {
    const profiles = [
      aClusterProfile('f/a', { properties: { cost: '1' } }),
      aClusterProfile('f/b', { properties: { cost: '1000m' } }),
      aClusterProfile('f/c'),
    ];
    const scores = scoreBySorter({ weight: 7, name: 'cost', ascending: true }, createInventory(profiles).clusters);
    expect([...scores]).toEqual([7, 7, 0]);
  });

  it('a preference item needs exactly one of preference and propertySorter', () => {
    const spec = {
      affinity: {
        clusterAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 5, preference: {}, propertySorter: { name: 'cost', sortOrder: 'Ascending' } },
          ],
        },
      },
    };
    const d = run({ spec, profiles: fleet, now: 0 });
    expect(condition(d, 'Valid')).toMatchObject({
      status: 'False',
      reason: 'InvalidSelector',
      message:
        'spec.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]: set exactly one of preference and propertySorter',
    });
  });

  it('an unknown sortOrder makes the spec invalid', () => {
    const d = run({ spec: sorted([5, 'cost', 'Cheapest']), profiles: fleet, now: 0 });
    expect(condition(d, 'Valid')).toMatchObject({
      status: 'False',
      reason: 'InvalidSelector',
      message:
        'spec.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].propertySorter.sortOrder: unknown sortOrder "Cheapest"; use Ascending or Descending',
    });
  });
});

// A property value: mostly quantities of a few units, sometimes garbage or absent.
const quantityText = fc.oneof(
  fc
    .tuple(fc.integer({ min: -1000, max: 100_000 }), fc.constantFrom('', 'm', 'k', 'Ki', 'Mi', 'Gi', 'M', 'G', 'e2'))
    .map(([n, unit]) => `${n}${unit}`),
  fc.tuple(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 999 })).map(([a, b]) => `${a}.${b}`),
  fc.constantFrom('many', '', '1.2.3'),
);
const propertyFleet = fc
  .uniqueArray(
    fc.record({ name: fc.stringMatching(/^[a-z]{1,6}$/), cost: fc.option(quantityText, { nil: undefined }) }),
    { selector: (c) => c.name, minLength: 1, maxLength: 12 },
  )
  .map((clusters) =>
    clusters.map((c) => aClusterProfile(`f/${c.name}`, c.cost !== undefined ? { properties: { cost: c.cost } } : {})),
  );

describe('sorter properties (fast-check)', () => {
  it('a sorter score is within [0, weight], and does not depend on the order of the inventory', () => {
    fc.assert(
      fc.property(
        propertyFleet.chain((profiles) =>
          fc.tuple(fc.constant(profiles), fc.shuffledSubarray(profiles, { minLength: profiles.length })),
        ),
        fc.integer({ min: 1, max: 100 }),
        fc.boolean(),
        ([profiles, shuffled], weight, ascending) => {
          const sorter = { weight, name: 'cost', ascending };
          const byKey = (ps: ClusterProfile[]) => {
            const clusters = createInventory(ps).clusters;
            // Scoring a list in its given order, not the inventory's sorted one.
            const given = ps.map((p) => clusters.find((c) => c.name === p.metadata.name)!);
            const scores = scoreBySorter(sorter, given);
            return new Map(given.map((c, i) => [c.key, scores[i]!]));
          };
          const a = byKey(profiles);
          const b = byKey(shuffled);
          for (const [key, score] of a) {
            expect(score).toBeGreaterThanOrEqual(0);
            expect(score).toBeLessThanOrEqual(weight);
            expect(b.get(key)).toBe(score);
          }
        },
      ),
    );
  });

  it('a better value never scores less than a worse one', () => {
    fc.assert(
      fc.property(propertyFleet, fc.boolean(), (profiles, ascending) => {
        const clusters = createInventory(profiles).clusters;
        const scores = scoreBySorter({ weight: 100, name: 'cost', ascending }, clusters);
        for (let i = 0; i < clusters.length; i++) {
          for (let j = 0; j < clusters.length; j++) {
            const qi = clusters[i]!.properties.get('cost')?.quantity;
            const qj = clusters[j]!.properties.get('cost')?.quantity;
            if (!qi || !qj) continue;
            const order = compareQuantities(qi, qj) * (ascending ? -1 : 1);
            if (order > 0) expect(scores[i]).toBeGreaterThanOrEqual(scores[j]!);
          }
        }
      }),
    );
  });
});

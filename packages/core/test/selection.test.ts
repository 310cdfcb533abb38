import { describe, expect, it } from 'vitest';
import { aClusterProfile } from '@mco/core/testing';
import { compileSelection, createInventory, selectClusters, type ClusterProfile, type PlacementSpec } from '@mco/core';
import { condition, listed, moves, run, states } from './helpers.js';

const fleet: ClusterProfile[] = [
  aClusterProfile('prod/us-east1', { labels: { region: 'us', gpu: 'l4', tier: 'gold' } }),
  aClusterProfile('prod/us-west1', { labels: { region: 'us', gpu: 'a100' } }),
  aClusterProfile('prod/eu-west4', { labels: { region: 'eu', gpu: 'l4' } }),
  aClusterProfile('dev/us-east1', { labels: { region: 'us' } }),
  aClusterProfile('dev/asia1', { labels: { region: 'asia', gpu: 'l4' } }),
  aClusterProfile('prod/old', { labels: { region: 'us', gpu: 'l4' }, deleting: true }),
];

/** The eligible list, as `namespace/name`, for a spec over `fleet`. */
function eligible(spec: PlacementSpec): string[] {
  const selection = compileSelection(spec);
  if (!selection.ok) throw new Error(`${selection.error.field}: ${selection.error.message}`);
  return selectClusters(selection.value, createInventory(fleet)).eligible.map((c) => c.key);
}

const label = (key: string, operator: string, values?: string[]) => ({
  labelSelector: { key, operator, ...(values ? { values } : {}) },
});
const field = (f: string, operator: string, values?: string[]) => ({
  fieldSelector: { field: f, operator, ...(values ? { values } : {}) },
});
const rde = (...terms: object[][]): PlacementSpec => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingRequiredDuringExecution: {
        clusterSelectorTerms: terms.map((matchExpressions) => ({ matchExpressions })) as never,
      },
    },
  },
});

describe('selectors read only what a cluster really has', () => {
  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'a label key "%s" matches no cluster through the object prototype',
    (key) => {
      expect({
        exists: eligible(rde([label(key, 'Exists')])),
        doesNotExist: eligible(rde([label(key, 'DoesNotExist')])).length,
      }).toEqual({ exists: [], doesNotExist: 5 });
    },
  );

  it('a field selector on "constructor" is refused as an unsupported field, not called', () => {
    const selection = compileSelection(rde([field('constructor', 'In', ['x'])]));
    expect(selection.ok ? 'ok' : `${selection.error.field}: ${selection.error.message}`).toBe(
      'spec.affinity.clusterAffinity.requiredDuringSchedulingRequiredDuringExecution.clusterSelectorTerms[0].matchExpressions[0].fieldSelector.field: unsupported field "constructor"; use metadata.name or metadata.namespace',
    );
  });
});

describe('eligibility and priority order (docs/placement-rules.md §2)', () => {
  it.each<[string, PlacementSpec, string[]]>([
    [
      'neither rules nor affinity: every candidate not being deleted, by namespace/name',
      {},
      ['dev/asia1', 'dev/us-east1', 'prod/eu-west4', 'prod/us-east1', 'prod/us-west1'],
    ],
    [
      'all-clusters returns the candidates',
      { clusterSelectorRules: [{ type: 'all-clusters' }] },
      ['dev/asia1', 'dev/us-east1', 'prod/eu-west4', 'prod/us-east1', 'prod/us-west1'],
    ],
    [
      'cluster-list returns the listed clusters in the listed order, spaces trimmed, unknown names skipped',
      {
        clusterSelectorRules: [
          { type: 'cluster-list', arguments: { clusters: ' prod/us-west1, prod/nope ,dev/asia1,prod/old' } },
        ],
      },
      ['prod/us-west1', 'dev/asia1'],
    ],
    [
      'cluster-name-regex keeps matching clusters in input order, unanchored like Go MatchString',
      { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: 'us-' } }] },
      ['dev/us-east1', 'prod/us-east1', 'prod/us-west1'],
    ],
    [
      'rules form a pipeline: a regex after a cluster-list filters the list and keeps its order',
      {
        clusterSelectorRules: [
          { type: 'cluster-list', arguments: { clusters: 'prod/us-west1,dev/asia1,prod/us-east1' } },
          { type: 'cluster-name-regex', arguments: { regex: '^prod/' } },
        ],
      },
      ['prod/us-west1', 'prod/us-east1'],
    ],
    [
      'all-clusters later in the pipeline returns every candidate again',
      {
        clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: 'asia' } }, { type: 'all-clusters' }],
      },
      ['dev/asia1', 'dev/us-east1', 'prod/eu-west4', 'prod/us-east1', 'prod/us-west1'],
    ],
    [
      'the alias rules works like clusterSelectorRules',
      { rules: [{ type: 'cluster-name-regex', arguments: { regex: 'eu' } }] },
      ['prod/eu-west4'],
    ],
    ['label In', rde([label('gpu', 'In', ['l4'])]), ['dev/asia1', 'prod/eu-west4', 'prod/us-east1']],
    ['label NotIn matches a missing key', rde([label('gpu', 'NotIn', ['l4'])]), ['dev/us-east1', 'prod/us-west1']],
    ['label Exists', rde([label('tier', 'Exists')]), ['prod/us-east1']],
    ['label DoesNotExist', rde([label('gpu', 'DoesNotExist')]), ['dev/us-east1']],
    ['field metadata.namespace In', rde([field('metadata.namespace', 'In', ['dev'])]), ['dev/asia1', 'dev/us-east1']],
    [
      'field metadata.name NotIn',
      rde([field('metadata.name', 'NotIn', ['us-east1', 'asia1'])]),
      ['prod/eu-west4', 'prod/us-west1'],
    ],
    [
      'field Exists always matches',
      rde([field('metadata.name', 'Exists')]),
      ['dev/asia1', 'dev/us-east1', 'prod/eu-west4', 'prod/us-east1', 'prod/us-west1'],
    ],
    ['field DoesNotExist never matches', rde([field('metadata.name', 'DoesNotExist')]), []],
    [
      'expressions in a term are ANDed',
      rde([label('region', 'In', ['us']), label('gpu', 'Exists')]),
      ['prod/us-east1', 'prod/us-west1'],
    ],
    [
      'terms are ORed',
      rde([label('region', 'In', ['eu'])], [label('region', 'In', ['asia'])]),
      ['dev/asia1', 'prod/eu-west4'],
    ],
    [
      'a label and a field selector in one expression are ANDed',
      rde([{ ...label('region', 'In', ['us']), ...field('metadata.namespace', 'In', ['prod']) }]),
      ['prod/us-east1', 'prod/us-west1'],
    ],
    [
      'a term without expressions matches every cluster',
      rde([]),
      ['dev/asia1', 'dev/us-east1', 'prod/eu-west4', 'prod/us-east1', 'prod/us-west1'],
    ],
    [
      'affinity filters the output of the rules, keeping its order',
      {
        clusterSelectorRules: [
          { type: 'cluster-list', arguments: { clusters: 'prod/us-west1,dev/asia1,prod/us-east1' } },
        ],
        ...rde([label('gpu', 'In', ['l4'])]),
      },
      ['dev/asia1', 'prod/us-east1'],
    ],
    [
      'preferences re-sort the eligible list stably by summed weight, highest first',
      {
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              clusterSelectorTerms: [{ matchExpressions: [label('gpu', 'Exists')] }],
            },
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 10, preference: { matchExpressions: [label('region', 'In', ['eu'])] } },
              { weight: 20, preference: { matchExpressions: [label('gpu', 'In', ['l4'])] } },
              { weight: 5, preference: { matchExpressions: [label('tier', 'In', ['gold'])] } },
            ],
          },
        },
      },
      ['prod/eu-west4', 'prod/us-east1', 'dev/asia1', 'prod/us-west1'],
    ],
  ])('%s', (_name, spec, expected) => {
    expect(eligible(spec)).toEqual(expected);
  });
});

describe('invalid specs (condition Valid=False) leave status.clusters untouched', () => {
  const status = { clusters: [listed('prod/us-east1', 'ACTIVE', 0), listed('dev/asia1', 'SCALING_IN', 10)] };
  const rules = (type: string, args?: Record<string, string>) => ({
    clusterSelectorRules: [{ type, ...(args ? { arguments: args } : {}) }],
  });

  it.each<[string, unknown, string, RegExp]>([
    [
      'an invalid regex',
      rules('cluster-name-regex', { regex: 'us-(' }),
      'InvalidRegex',
      /^spec\.clusterSelectorRules\[0\]\.arguments\.regex: .*missing closing \)/,
    ],
    [
      'a backreference (not RE2)',
      rules('cluster-name-regex', { regex: '(a)\\1' }),
      'InvalidRegex',
      /arguments\.regex: /,
    ],
    [
      'a lookahead (not RE2)',
      rules('cluster-name-regex', { regex: 'us(?=-east)' }),
      'InvalidRegex',
      /arguments\.regex: /,
    ],
    [
      'a regex over 1024 characters',
      rules('cluster-name-regex', { regex: 'a'.repeat(1025) }),
      'InvalidRegex',
      /1025 characters long; the limit is 1024/,
    ],
    [
      'an unknown rule type',
      rules('cluster-label'),
      'UnknownRuleType',
      /^spec\.clusterSelectorRules\[0\]\.type: unknown rule type "cluster-label"/,
    ],
    [
      'a cluster-list without clusters',
      rules('cluster-list'),
      'InvalidRuleArgument',
      /arguments\.clusters: rule cluster-list needs the argument "clusters"/,
    ],
    [
      'a cluster-list entry without a namespace',
      rules('cluster-list', { clusters: 'prod/a, b' }),
      'InvalidRuleArgument',
      /"b" is not of the form namespace\/name/,
    ],
    [
      'a regex rule without regex',
      rules('cluster-name-regex', {}),
      'InvalidRuleArgument',
      /needs the argument "regex"/,
    ],
    [
      'both clusterSelectorRules and rules',
      { ...rules('all-clusters'), rules: [{ type: 'all-clusters' }] },
      'InvalidSpec',
      /^spec\.rules: set either/,
    ],
    [
      'an unknown selector operator',
      rde([label('gpu', 'Gt', ['1'])]),
      'InvalidSelector',
      /matchExpressions\[0\]\.labelSelector\.operator: unknown operator "Gt"/,
    ],
    [
      'In without values',
      rde([label('gpu', 'In', [])]),
      'InvalidSelector',
      /labelSelector\.values: operator In needs at least one value/,
    ],
    [
      'Exists with values',
      rde([label('gpu', 'Exists', ['x'])]),
      'InvalidSelector',
      /labelSelector\.values: operator Exists takes no values/,
    ],
    [
      'an unsupported field',
      rde([field('metadata.labels', 'Exists')]),
      'InvalidSelector',
      /fieldSelector\.field: unsupported field "metadata\.labels"/,
    ],
    [
      'an empty expression',
      rde([{}]),
      'InvalidSelector',
      /needs a labelSelector, a fieldSelector or a propertySelector/,
    ],
    [
      'both RDE and IDE',
      {
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingRequiredDuringExecution: { clusterSelectorTerms: [] },
            requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [] },
          },
        },
      },
      'InvalidAffinity',
      /^spec\.affinity\.clusterAffinity: set only one of/,
    ],
    [
      'minClustersBelowCapacityCeiling 0',
      { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 0 } } },
      'InvalidSpec',
      /^spec\.scaling\.autoscaleForCapacity\.minClustersBelowCapacityCeiling: /,
    ],
    [
      'a string where a number belongs',
      { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, maxClusters: 'two' } } },
      'InvalidSpec',
      /autoscaleForCapacity\.maxClusters: /,
    ],
    [
      'a rule list that is not a list',
      { clusterSelectorRules: { type: 'all-clusters' } },
      'InvalidSpec',
      /^spec\.clusterSelectorRules: /,
    ],
  ])('%s', (_name, spec, reason, message) => {
    const d = run({ spec: spec as PlacementSpec, status, profiles: fleet, now: 100 });
    expect(d.status.clusters).toEqual(status.clusters);
    expect(d.transitions).toEqual([]);
    expect(d.requeueAfterSeconds).toBeNull();
    expect(condition(d, 'Valid')).toMatchObject({ status: 'False', reason });
    expect(condition(d, 'Valid')?.message).toMatch(message);
    expect(condition(d, 'Satisfied')).toMatchObject({ status: 'Unknown', reason: 'InvalidSpec' });
  });

  it('reports cluster-list names that are not ClusterProfiles without invalidating the spec', () => {
    const d = run({
      spec: rules('cluster-list', { clusters: 'prod/us-east1,prod/gone' }) as PlacementSpec,
      profiles: fleet,
      now: 100,
    });
    expect(states(d)).toEqual(['prod/us-east1 ACTIVE']);
    expect(condition(d, 'Valid')).toMatchObject({
      status: 'True',
      message: 'the spec is valid; cluster-list names clusters that are not ClusterProfiles: prod/gone',
    });
  });

  it('does not report a cluster-list name that an earlier rule dropped', () => {
    const spec = {
      clusterSelectorRules: [
        { type: 'cluster-name-regex', arguments: { regex: '^prod/' } },
        { type: 'cluster-list', arguments: { clusters: 'dev/asia1,prod/eu-west4' } },
      ],
    } as PlacementSpec;
    const d = run({ spec, profiles: fleet, now: 100 });
    expect(states(d)).toEqual(['prod/eu-west4 ACTIVE']);
    expect(condition(d, 'Valid')).toMatchObject({ status: 'True', message: 'the spec is valid' });
  });

  it('fixing the spec resumes evaluation from the untouched status', () => {
    const broken = run({
      spec: rules('cluster-name-regex', { regex: '(' }) as PlacementSpec,
      status,
      profiles: fleet,
      now: 100,
    });
    const fixed = run({
      spec: rules('cluster-name-regex', { regex: 'us-east1' }) as PlacementSpec,
      status: broken.status,
      profiles: fleet,
      now: 200,
    });
    // Without scaling, the no-longer-eligible SCALING_IN cluster is evicted and removed at once.
    expect(moves(fixed)).toEqual([
      'E3 dev/asia1 SCALING_IN->EVICTING',
      'R3 dev/asia1 EVICTING->-',
      'P1 dev/us-east1 -->ACTIVE',
    ]);
    expect(states(fixed)).toEqual(['dev/us-east1 ACTIVE', 'prod/us-east1 ACTIVE']);
    expect(condition(fixed, 'Valid')).toMatchObject({ status: 'True', lastTransitionTime: '2026-01-01T00:03:20Z' });
  });
});

describe('Satisfied condition', () => {
  it.each<[string, PlacementSpec, string, string]>([
    ['no eligible clusters', rde([label('gpu', 'In', ['h100'])]), 'False', 'NoEligibleClusters'],
    [
      'headroom met',
      { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2 } } },
      'True',
      'HeadroomAvailable',
    ],
    [
      'more required than eligible',
      { ...rde([label('tier', 'Exists')]), scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2 } } },
      'False',
      'AllClustersAtCapacity',
    ],
    [
      'maxClusters below min',
      { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 3, maxClusters: 2 } } },
      'False',
      'MaxClustersReached',
    ],
    ['no scaling and eligible clusters', {}, 'True', 'AllEligibleClustersPlaced'],
  ])('%s', (_name, spec, status, reason) => {
    expect(condition(run({ spec, profiles: fleet, now: 100 }), 'Satisfied')).toMatchObject({ status, reason });
  });
});

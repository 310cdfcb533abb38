import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aClusterProfile,
  anAutoscalingSpec,
  arbFleet,
  arbPlacementSpec,
  arbSignal,
  arbStatusClusters,
  aPlacement,
  aSteadySignal,
} from '@mco/core/testing';
import {
  decide,
  parseTaints,
  type ClusterProfile,
  type Decision,
  type PlacementSpec,
  type Taint,
  type Toleration,
} from '@mco/core';
import { compileTolerations } from '../src/selection/taints.js';
import { at, condition, listed, moves, run, states } from './helpers.js';

// docs/placement-rules.md §10.1: taints (annotation mco.x-k8s.io/taints) and tolerations (spec.tolerations).

const taint = (key: string, effect: Taint['effect'], extra: Partial<Taint> = {}): Taint => ({ key, effect, ...extra });
const autoscale = (tolerations?: Toleration[], min = 1): PlacementSpec => ({
  ...anAutoscalingSpec(
    min,
    { useDraining: true },
    {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            clusterSelectorTerms: [{ matchExpressions: [{ labelSelector: { key: 'gpu', operator: 'Exists' } }] }],
          },
        },
      },
    },
  ),
  ...(tolerations ? { tolerations } : {}),
});
const gpu = { gpu: 'l4' };

describe('the taints annotation', () => {
  it.each<[string, string | undefined, string | undefined, number]>([
    ['absent: no taints', undefined, undefined, 0],
    ['an empty list', '[]', undefined, 0],
    [
      'a taint with value and time',
      '[{"key":"maintenance","value":"kernel","effect":"NoSelect","timeAdded":"2026-01-01T00:00:00Z"}]',
      undefined,
      1,
    ],
    ['not JSON', '[{key: maintenance}]', 'not JSON', 0],
    ['not a list', '{"key":"a","effect":"NoSelect"}', 'the list: ', 0],
    ['an unknown effect', '[{"key":"a","effect":"NoExecute"}]', '[0].effect: ', 0],
    ['a taint without a key', '[{"effect":"NoSelect"}]', '[0].key: ', 0],
    [
      'a timeAdded that is not RFC 3339',
      '[{"key":"a","effect":"NoSelect","timeAdded":"yesterday"}]',
      '[0].timeAdded: ',
      0,
    ],
    [
      'one bad taint among good ones makes the whole annotation ignored',
      '[{"key":"a","effect":"NoSelect"},{"key":"b"}]',
      '[1].effect: ',
      0,
    ],
  ])('%s', (_name, text, error, count) => {
    const parsed = parseTaints(text === undefined ? undefined : { 'mco.x-k8s.io/taints': text });
    expect(parsed.taints).toHaveLength(count);
    if (error === undefined) expect(parsed.error).toBeUndefined();
    else expect(parsed.error).toContain(error);
  });
});

describe('toleration matching (Kubernetes meaning)', () => {
  const NOW = Date.UTC(2026, 0, 1, 1); // 01:00
  const t = (effect: Taint['effect'], extra: Partial<Taint> = {}) =>
    parseTaints({ 'mco.x-k8s.io/taints': JSON.stringify([taint('k', effect, { value: 'v', ...extra })]) }).taints;
  it.each<[string, Toleration[], ReturnType<typeof t>, boolean]>([
    ['no tolerations tolerate nothing', [], t('NoSelect'), false],
    ['Equal (the default) with key and value', [{ key: 'k', value: 'v' }], t('NoSelect'), true],
    ['Equal with another value', [{ key: 'k', value: 'w' }], t('NoSelect'), false],
    ['Equal without a value does not match a taint with one', [{ key: 'k' }], t('NoSelect'), false],
    [
      'Equal without a value matches a taint without one',
      [{ key: 'k' }],
      parseTaints({ 'mco.x-k8s.io/taints': '[{"key":"k","effect":"NoSelect"}]' }).taints,
      true,
    ],
    ['Exists on the key, any value', [{ key: 'k', operator: 'Exists' }], t('NoSelect'), true],
    ['Exists with an empty key tolerates every taint', [{ operator: 'Exists' }], t('NoSelectIfNew'), true],
    [
      'an effect must be the taint effect',
      [{ key: 'k', operator: 'Exists', effect: 'PreferNoSelect' }],
      t('NoSelect'),
      false,
    ],
    [
      'an empty effect tolerates every effect',
      [{ key: 'k', operator: 'Exists', effect: '' }],
      t('PreferNoSelect'),
      true,
    ],
    [
      'tolerationSeconds tolerates until timeAdded + seconds',
      [{ key: 'k', operator: 'Exists', tolerationSeconds: 3601 }],
      t('NoSelect', { timeAdded: '2026-01-01T00:00:00Z' }),
      true,
    ],
    [
      'tolerationSeconds runs out at timeAdded + seconds',
      [{ key: 'k', operator: 'Exists', tolerationSeconds: 3600 }],
      t('NoSelect', { timeAdded: '2026-01-01T00:00:00Z' }),
      false,
    ],
    [
      'tolerationSeconds without timeAdded ("since ever") has run out',
      [{ key: 'k', operator: 'Exists', tolerationSeconds: 86400 }],
      t('NoSelect'),
      false,
    ],
    [
      'tolerationSeconds applies to NoSelect only',
      [{ key: 'k', operator: 'Exists', tolerationSeconds: 1 }],
      t('NoSelectIfNew'),
      true,
    ],
    [
      'several matching tolerations: the smallest tolerationSeconds wins, as in Kubernetes',
      [
        { key: 'k', operator: 'Exists' },
        { key: 'k', operator: 'Exists', tolerationSeconds: 60 },
      ],
      t('NoSelect', { timeAdded: '2026-01-01T00:00:00Z' }),
      false,
    ],
  ])('%s', (_name, tolerations, taints, tolerated) => {
    const compiled = compileTolerations(tolerations, 'spec.tolerations');
    if (!compiled.ok) throw new Error(compiled.error.message);
    const verdict = compiled.value.judge(taints, NOW);
    const untolerated = verdict.noSelect ?? verdict.noSelectIfNew ?? verdict.preferNoSelect;
    expect(untolerated === undefined).toBe(tolerated);
  });

  it.each<[string, Toleration, string]>([
    [
      'an unknown operator',
      { key: 'k', operator: 'In' },
      'spec.tolerations[0].operator: unknown operator "In"; use Equal or Exists',
    ],
    [
      'an unknown effect',
      { key: 'k', effect: 'NoExecute' },
      'spec.tolerations[0].effect: unknown effect "NoExecute"; use NoSelect, NoSelectIfNew, PreferNoSelect or leave it empty',
    ],
    [
      'Exists with a value',
      { key: 'k', operator: 'Exists', value: 'v' },
      'spec.tolerations[0].value: operator Exists takes no value',
    ],
    ['Equal with an empty key', { value: 'v' }, 'spec.tolerations[0].key: an empty key needs operator Exists'],
  ])(
    '%s makes the spec invalid (InvalidToleration) and leaves the clusters where they are',
    (_name, toleration, message) => {
      const status = { clusters: [listed('fleet/a', 'ACTIVE', 0)] };
      const d = run({ spec: { tolerations: [toleration] }, status, profiles: [aClusterProfile('fleet/a')], now: 60 });
      expect(d.status.clusters).toEqual(status.clusters);
      expect(condition(d, 'Valid')).toMatchObject({ status: 'False', reason: 'InvalidToleration', message });
    },
  );
});

describe('taint effects in the engine', () => {
  it('NoSelect: an untolerated cluster is not eligible, so it is never placed', () => {
    const d = run({
      spec: {},
      profiles: [
        aClusterProfile('fleet/a', { taints: [taint('maintenance', 'NoSelect')] }),
        aClusterProfile('fleet/b'),
      ],
      now: 0,
    });
    expect(states(d)).toEqual(['fleet/b ACTIVE']);
  });

  it('NoSelect evicts a listed cluster under IDE too, draining it, with reason Tainted and the taint in the message', () => {
    const d = run({
      spec: autoscale(),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: [
        aClusterProfile('fleet/a', { labels: gpu, taints: [taint('maintenance', 'NoSelect', { value: 'kernel' })] }),
        aClusterProfile('fleet/b', { labels: gpu }),
      ],
      signals: [aSteadySignal('fleet/a', at(590), 8)],
      now: 600,
    });
    expect(moves(d)).toEqual(['E1 fleet/a ACTIVE->EVICTING', 'P1 fleet/b -->ACTIVE']);
    expect(d.status.clusters).toEqual([
      listed('fleet/b', 'ACTIVE', 600, {
        reason: 'Added',
        message: 'headroom 0 < min 1: added the highest-priority eligible cluster',
        // It replaces the evicted cluster: it starts at a's replicas (rule O3).
        desiredMinReplicas: 8,
        replacesCluster: 'fleet/a',
      }),
      listed('fleet/a', 'EVICTING', 600, {
        atCapacityCeiling: false,
        lastReadyReplicas: 8,
        reason: 'Tainted',
        message: 'no longer eligible: the taint maintenance=kernel:NoSelect is not tolerated',
        // The new cluster has no signal yet: its ready replicas, the drain's baseline, are unknown (rule D1).
        draining: {
          desiredMaxReplicas: 8,
          lastReplicaCountDecrease: at(600),
          currentReplicaCount: 8,
          initialDesiredMaxReplicas: 8,
        },
      }),
    ]);
  });

  it('NoSelect moves a SCALING_IN cluster to EVICTING (E3)', () => {
    const d = run({
      spec: autoscale(undefined, 1),
      status: { clusters: [listed('fleet/b', 'ACTIVE', 0), listed('fleet/a', 'SCALING_IN', 0)] },
      profiles: [
        aClusterProfile('fleet/a', { labels: gpu, taints: [taint('drain', 'NoSelect')] }),
        aClusterProfile('fleet/b', { labels: gpu }),
      ],
      now: 600,
    });
    expect(moves(d)).toEqual(['E3 fleet/a SCALING_IN->EVICTING']);
  });

  it('removing the taint makes an EVICTING cluster eligible again (E2)', () => {
    const d = run({
      spec: autoscale(),
      status: { clusters: [listed('fleet/a', 'EVICTING', 0, { reason: 'Tainted' })] },
      profiles: [aClusterProfile('fleet/a', { labels: gpu })],
      now: 60,
    });
    expect(moves(d)).toEqual(['E2 fleet/a EVICTING->ACTIVE']);
  });

  it('a tolerated NoSelect taint changes nothing', () => {
    const d = run({
      spec: autoscale([{ key: 'maintenance', operator: 'Exists', effect: 'NoSelect' }]),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: [aClusterProfile('fleet/a', { labels: gpu, taints: [taint('maintenance', 'NoSelect')] })],
      signals: [aSteadySignal('fleet/a', at(590))],
      now: 600,
    });
    expect(moves(d)).toEqual([]);
  });

  it('tolerationSeconds keeps the cluster until timeAdded + seconds, and requeueAfterSeconds names that moment', () => {
    const profiles = [
      aClusterProfile('fleet/a', { labels: gpu, taints: [taint('maintenance', 'NoSelect', { timeAdded: at(0) })] }),
    ];
    const spec = autoscale([{ key: 'maintenance', operator: 'Exists', tolerationSeconds: 900 }]);
    const status = { clusters: [listed('fleet/a', 'ACTIVE', 0)] };
    const before = run({ spec, status, profiles, now: 600 });
    expect(moves(before)).toEqual([]);
    expect(before.requeueAfterSeconds).toBe(300);
    const after = run({ spec, status, profiles, now: 900 });
    expect(moves(after)).toEqual(['E1 fleet/a ACTIVE->EVICTING']);
    expect(after.status.clusters![0]).toMatchObject({ reason: 'Tainted' });
  });

  it('NoSelectIfNew (cordon): a listed cluster stays, an unlisted one is never added; the next cluster is added instead', () => {
    const profiles = [
      aClusterProfile('fleet/a', { labels: gpu, taints: [taint('cordon', 'NoSelectIfNew')] }),
      aClusterProfile('fleet/b', { labels: gpu, taints: [taint('cordon', 'NoSelectIfNew')] }),
      aClusterProfile('fleet/c', { labels: gpu }),
    ];
    const d = run({
      spec: autoscale(undefined, 2),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles,
      now: 600,
    });
    expect(states(d)).toEqual(['fleet/a ACTIVE', 'fleet/c ACTIVE']);
    expect(moves(d)).toEqual(['P1 fleet/c -->ACTIVE']);
    const plain = run({ spec: {}, profiles, now: 0 });
    expect(states(plain)).toEqual(['fleet/c ACTIVE']);
  });

  it('NoSelectIfNew on every eligible cluster leaves the placement unsatisfied, naming the taint among the reasons', () => {
    const d = run({
      spec: autoscale(),
      profiles: [aClusterProfile('fleet/a', { labels: gpu, taints: [taint('cordon', 'NoSelectIfNew')] })],
      now: 0,
    });
    expect(d.status.clusters).toBeUndefined();
    expect(condition(d, 'Satisfied')).toMatchObject({ status: 'False', reason: 'AllClustersAtCapacity' });
    expect(condition(d, 'Satisfied')!.message).toContain('tainted NoSelectIfNew');
  });

  it('PreferNoSelect orders a cluster after every untainted one, even after preferences, and keeps it eligible', () => {
    const spec: PlacementSpec = {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [{}] },
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              preference: { matchExpressions: [{ labelSelector: { key: 'tier', operator: 'In', values: ['gold'] } }] },
            },
          ],
        },
      },
    };
    const profiles = [
      aClusterProfile('fleet/a', { labels: { tier: 'gold' }, taints: [taint('spot', 'PreferNoSelect')] }),
      aClusterProfile('fleet/b', { labels: { tier: 'gold' } }),
      aClusterProfile('fleet/c'),
    ];
    const d = run({ spec: { ...spec, ...anAutoscalingSpec(3) }, profiles, now: 0 });
    expect(states(d)).toEqual(['fleet/b ACTIVE', 'fleet/c ACTIVE', 'fleet/a ACTIVE']);
  });

  it('a malformed taints annotation is ignored (never evicts) and reported in the Valid condition of placements that list the cluster', () => {
    const d = run({
      spec: autoscale(),
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: [aClusterProfile('fleet/a', { labels: gpu, taints: '[{"key":"maintenance","effect":"NoSelect"' })],
      signals: [aSteadySignal('fleet/a', at(590))],
      now: 600,
    });
    expect(moves(d)).toEqual([]);
    expect(condition(d, 'Valid')).toMatchObject({ status: 'True', reason: 'Valid' });
    expect(condition(d, 'Valid')!.message).toMatch(
      /^the spec is valid; the mco\.x-k8s\.io\/taints annotation of fleet\/a is ignored: not JSON \(/,
    );
  });

  it('without autoscaling a NoSelect taint removes the cluster at once (E1 then R3)', () => {
    const d = run({
      spec: {},
      status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      profiles: [aClusterProfile('fleet/a', { taints: [taint('maintenance', 'NoSelect')] })],
      now: 60,
    });
    expect(moves(d)).toEqual(['E1 fleet/a ACTIVE->EVICTING', 'R3 fleet/a EVICTING->-']);
  });
});

// --- properties ----------------------------------------------------------------

const NOW = new Date('2026-01-01T02:00:00Z');
const arbTaint = fc.record({
  key: fc.constantFrom('maintenance', 'spot', 'cordon'),
  value: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }),
  effect: fc.constantFrom('NoSelect', 'NoSelectIfNew', 'PreferNoSelect') as fc.Arbitrary<Taint['effect']>,
  timeAdded: fc.option(fc.constantFrom('2026-01-01T00:00:00Z', '2026-01-01T01:59:00Z'), { nil: undefined }),
});
const withTaints = (profiles: ClusterProfile[], taints: (Taint[] | null)[]): ClusterProfile[] =>
  profiles.map((p, i) => {
    const list = taints[i % Math.max(1, taints.length)];
    return list
      ? { ...p, metadata: { ...p.metadata, annotations: { 'mco.x-k8s.io/taints': JSON.stringify(list) } } }
      : p;
  });
const arbCase = fc.record({
  spec: arbPlacementSpec,
  clusters: arbStatusClusters,
  profiles: arbFleet(),
  signals: fc.array(arbSignal(), { maxLength: 12 }),
  taints: fc.array(fc.option(fc.array(arbTaint, { minLength: 1, maxLength: 3 }), { nil: null }), {
    minLength: 1,
    maxLength: 6,
  }),
});
type Case = typeof arbCase extends fc.Arbitrary<infer T> ? T : never;
const evaluate = (c: Case, profiles: ClusterProfile[], spec: PlacementSpec = c.spec): Decision =>
  decide({
    now: NOW,
    placement: aPlacement('default/p', spec, { clusters: c.clusters }),
    clusterProfiles: profiles,
    signals: c.signals,
  });
const lifecycle = (d: Decision) => d.transitions.filter((t) => /^[EHR]/.test(t.id));
const onlyEffect = (taints: (Taint[] | null)[], effect: Taint['effect']) =>
  taints.map((list) => list && list.map((t) => ({ ...t, effect })));

describe('taint properties (fast-check)', () => {
  it('tolerating every taint is the same as having no taints', () => {
    fc.assert(
      fc.property(arbCase, (c) => {
        const tolerant = { ...c.spec, tolerations: [{ operator: 'Exists' }] };
        expect(evaluate(c, withTaints(c.profiles, c.taints), tolerant)).toEqual(evaluate(c, c.profiles, tolerant));
      }),
      { numRuns: 200 },
    );
  });

  it('a PreferNoSelect taint never removes, evicts or makes a cluster unhealthy', () => {
    fc.assert(
      fc.property(arbCase, (c) => {
        const tainted = evaluate(c, withTaints(c.profiles, onlyEffect(c.taints, 'PreferNoSelect')));
        expect(lifecycle(tainted)).toEqual(lifecycle(evaluate(c, c.profiles)));
      }),
      { numRuns: 200 },
    );
  });

  it('a NoSelectIfNew taint never adds: no P1 of a tainted cluster, and listed clusters go nowhere they would not go untainted', () => {
    fc.assert(
      fc.property(arbCase, (c) => {
        const profiles = withTaints(c.profiles, onlyEffect(c.taints, 'NoSelectIfNew'));
        const tainted = evaluate(c, profiles);
        const taintedKeys = new Set(
          profiles.filter((p) => p.metadata.annotations).map((p) => `${p.metadata.namespace}/${p.metadata.name}`),
        );
        expect(tainted.transitions.filter((t) => t.id === 'P1' && taintedKeys.has(t.cluster))).toEqual([]);
        expect(lifecycle(tainted)).toEqual(lifecycle(evaluate(c, c.profiles)));
      }),
      { numRuns: 200 },
    );
  });
});

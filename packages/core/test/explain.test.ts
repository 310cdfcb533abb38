import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aClusterProfile,
  anAtCeilingSignal,
  anAutoscalingSpec,
  arbFleet,
  arbPlacementSpec,
  arbSignal,
  arbStatusClusters,
  aPlacement,
  aSteadySignal,
} from '@mco/core/testing';
import { decide, explain, type ClusterProfile, type DecideInput, type PlacementSpec } from '@mco/core';
import { at, listed } from './helpers.js';

// docs/placement-rules.md §10.4: the engine explains an evaluation, from the evaluation decide runs.

const NOW = new Date(at(600));
const input = (
  spec: PlacementSpec,
  profiles: ClusterProfile[],
  extra: Partial<Omit<DecideInput, 'placement'>> & { status?: DecideInput['placement']['status'] } = {},
): DecideInput => ({
  now: NOW,
  placement: aPlacement('default/p', spec, extra.status),
  clusterProfiles: profiles,
  signals: extra.signals ?? [],
});
const byCluster = (e: ReturnType<typeof explain>) => new Map(e.clusters.map((c) => [c.cluster, c]));

describe('explain', () => {
  it('names the first exclusion of every ClusterProfile: deletion, rule, required term with what the cluster has, taint', () => {
    const spec: PlacementSpec = {
      clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet/' } }],
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingRequiredDuringExecution: {
            clusterSelectorTerms: [
              {
                matchExpressions: [
                  { labelSelector: { key: 'gpu', operator: 'Exists' } },
                  { propertySelector: { name: 'gpu-count', operator: 'Ge', values: ['4'] } },
                ],
              },
            ],
          },
        },
      },
    };
    const e = explain(
      input(spec, [
        aClusterProfile('fleet/ok', { labels: { gpu: 'l4' }, properties: { 'gpu-count': '8' } }),
        aClusterProfile('fleet/small', { labels: { gpu: 'l4' }, properties: { 'gpu-count': '2' } }),
        aClusterProfile('fleet/cpu'),
        aClusterProfile('fleet/gone', { labels: { gpu: 'l4' }, deleting: true }),
        aClusterProfile('other/x', { labels: { gpu: 'l4' }, properties: { 'gpu-count': '8' } }),
        aClusterProfile('fleet/tainted', {
          labels: { gpu: 'l4' },
          properties: { 'gpu-count': '8' },
          taints: [{ key: 'maintenance', effect: 'NoSelect' }],
        }),
      ]),
    );
    const c = byCluster(e);
    const term =
      'spec.affinity.clusterAffinity.requiredDuringSchedulingRequiredDuringExecution.clusterSelectorTerms[0]';
    expect(c.get('fleet/ok')).toMatchObject({ eligible: true, priority: 1, score: 0, state: 'ACTIVE' });
    expect(c.get('fleet/small')!.excludedBy).toBe(
      `matches no term: ${term}.matchExpressions[1] (property gpu-count Ge 4; has 2)`,
    );
    expect(c.get('fleet/cpu')!.excludedBy).toBe(
      `matches no term: ${term}.matchExpressions[0] (label gpu Exists; has none)`,
    );
    expect(c.get('fleet/gone')!.excludedBy).toBe('its ClusterProfile is being deleted');
    expect(c.get('other/x')!.excludedBy).toBe('spec.clusterSelectorRules[0] (cluster-name-regex) dropped it');
    expect(c.get('fleet/tainted')).toMatchObject({
      eligible: false,
      excludedBy: 'the taint maintenance:NoSelect is not tolerated',
      taints: ['maintenance:NoSelect (not tolerated)'],
    });
    expect(e.clusters[0]!.cluster).toBe('fleet/ok');
  });

  it('gives priority and preference score, signal assessment with its reason, and why nothing more happened', () => {
    const spec = anAutoscalingSpec(
      1,
      { maxClusters: 2 },
      {
        affinity: {
          clusterAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 100, propertySorter: { name: 'cost', sortOrder: 'Ascending' } },
            ],
          },
        },
      },
    );
    const profiles = [
      aClusterProfile('fleet/a', { properties: { cost: '1' } }),
      aClusterProfile('fleet/b', { properties: { cost: '2' } }),
      aClusterProfile('fleet/c', { properties: { cost: '3' }, taints: [{ key: 'cordon', effect: 'NoSelectIfNew' }] }),
    ];
    const e = explain(
      input(spec, profiles, {
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0)], lastAdditionTime: at(0) },
        signals: [anAtCeilingSignal('fleet/a', at(590)), { cluster: 'fleet/b', observedAt: at(0) }],
      }),
    );
    const c = byCluster(e);
    expect(c.get('fleet/a')).toMatchObject({
      priority: 1,
      score: 100,
      signal: { status: 'fresh', atCapacityCeiling: true, why: 'HPA at maxReplicas (10/10) with ScalingLimited' },
      stateBefore: 'ACTIVE',
      state: 'ACTIVE',
    });
    expect(c.get('fleet/b')).toMatchObject({
      priority: 2,
      score: 50,
      signal: { status: 'stale', why: 'observed 600s ago, stale after 180s: ignored' },
      stateBefore: null,
      state: 'ACTIVE',
      transitions: [{ id: 'P1' }],
    });
    expect(c.get('fleet/c')).toMatchObject({
      priority: 3,
      score: 0,
      taints: ['cordon:NoSelectIfNew (not tolerated)'],
      signal: { status: 'missing' },
      state: null,
      notes: ['not added: the taint cordon:NoSelectIfNew is not tolerated'],
    });
  });

  it('says why a scale-in waits: the window, then the cooldown', () => {
    const spec = anAutoscalingSpec(1);
    const profiles = [aClusterProfile('fleet/a'), aClusterProfile('fleet/b')];
    const wantsIn = (key: string) => ({ ...aSteadySignal(key, at(590)), wantsScaleIn: true });
    const status = {
      clusters: [listed('fleet/a', 'ACTIVE', 0), { ...listed('fleet/b', 'ACTIVE', 0), scaleInCandidateSince: at(500) }],
      lastAdditionTime: at(0),
    };
    const waiting = explain(
      input(spec, profiles, { status, signals: [aSteadySignal('fleet/a', at(590)), wantsIn('fleet/b')] }),
    );
    expect(byCluster(waiting).get('fleet/b')!.notes).toEqual([
      `wants scale-in since ${at(500)}; not before ${at(800)} (scaleIn.stabilizationWindowSeconds)`,
    ]);
    const cooling = explain(
      input(spec, profiles, {
        status: {
          ...status,
          clusters: [status.clusters[0]!, { ...status.clusters[1]!, scaleInCandidateSince: at(0) }],
          lastAdditionTime: at(400),
        },
        signals: [aSteadySignal('fleet/a', at(590)), wantsIn('fleet/b')],
      }),
    );
    expect(byCluster(cooling).get('fleet/b')!.notes).toEqual([
      `wants scale-in, but the scale-in cooldown runs until ${at(700)}`,
    ]);
  });

  it('under IDE a listed cluster that stops matching is not eligible, and the explanation says why it stays', () => {
    const spec: PlacementSpec = {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            clusterSelectorTerms: [{ matchExpressions: [{ labelSelector: { key: 'gpu', operator: 'Exists' } }] }],
          },
        },
      },
    };
    const e = explain(
      input(spec, [aClusterProfile('fleet/a')], { status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] } }),
    );
    expect(e.clusters).toMatchObject([
      {
        cluster: 'fleet/a',
        eligible: false,
        state: 'ACTIVE',
        notes: [
          'stays listed: requiredDuringSchedulingIgnoredDuringExecution does not evict a cluster that stops matching',
        ],
      },
    ]);
  });

  it('an invalid spec: the decision changes nothing and every cluster says so', () => {
    const e = explain(
      input({ tolerations: [{ key: 'k', operator: 'In' }] }, [aClusterProfile('fleet/a')], {
        status: { clusters: [listed('fleet/a', 'ACTIVE', 0)] },
      }),
    );
    expect(e.valid).toMatchObject({ status: 'False', reason: 'InvalidToleration' });
    expect(e.clusters).toMatchObject([
      { cluster: 'fleet/a', eligible: false, excludedBy: 'the spec is invalid', state: 'ACTIVE' },
    ]);
  });
});

const arbTaints = fc.option(
  fc.array(
    fc.record({
      key: fc.constantFrom('maintenance', 'spot'),
      effect: fc.constantFrom('NoSelect', 'NoSelectIfNew', 'PreferNoSelect') as fc.Arbitrary<
        'NoSelect' | 'NoSelectIfNew' | 'PreferNoSelect'
      >,
    }),
    { minLength: 1, maxLength: 2 },
  ),
  { nil: undefined },
);

describe('explain agrees with decide (fast-check)', () => {
  it('on random inputs: the same decision, each cluster’s state, eligibility and priority as decide’s status', () => {
    fc.assert(
      fc.property(
        arbPlacementSpec,
        arbStatusClusters,
        arbFleet(),
        fc.array(arbSignal(), { maxLength: 12 }),
        fc.array(arbTaints, { minLength: 1, maxLength: 6 }),
        (spec, clusters, fleet, signals, taints) => {
          const profiles = fleet.map((p, i) => {
            const list = taints[i % taints.length];
            return list
              ? { ...p, metadata: { ...p.metadata, annotations: { 'mco.x-k8s.io/taints': JSON.stringify(list) } } }
              : p;
          });
          const i: DecideInput = {
            now: NOW,
            placement: aPlacement('default/p', spec, { clusters }),
            clusterProfiles: profiles,
            signals,
          };
          const d = decide(i);
          const e = explain(i);
          expect(e.decision).toEqual(d);
          const states = new Map((d.status.clusters ?? []).map((c) => [`${c.namespace}/${c.name}`, c.state]));
          const byKey = byCluster(e);
          for (const [key, state] of states) expect(byKey.get(key)?.state).toBe(state);
          for (const c of e.clusters) {
            expect(c.state).toBe(states.get(c.cluster) ?? null);
            expect(c.eligible).toBe(c.priority !== undefined);
            if (!c.eligible) expect(c.excludedBy).toBeTruthy();
            for (const t of d.transitions.filter((x) => x.cluster === c.cluster))
              expect(c.transitions).toContainEqual({ id: t.id, reason: t.reason });
          }
          // Priorities are 1..n in order, and decide lists eligible clusters in that order.
          const eligible = e.clusters.filter((c) => c.eligible);
          expect(eligible.map((c) => c.priority)).toEqual(eligible.map((_, j) => j + 1));
          const listedEligible = (d.status.clusters ?? [])
            .map((c) => `${c.namespace}/${c.name}`)
            .filter((k) => byKey.get(k)?.eligible);
          expect(listedEligible).toEqual(eligible.map((c) => c.cluster).filter((k) => states.has(k)));
        },
      ),
      { numRuns: 300 },
    );
  });
});

import { describe, expect, it } from 'vitest';
import type { KubeObject } from '@mco/kube-runtime';
import { placementsAffectedBy } from '../src/affected.js';
import { trimClusterProfile, trimPlacement, trimPlacementDecision } from '../src/cache.js';

const profile = (name: string, labels: Record<string, string>, extra: Partial<KubeObject['metadata']> = {}) => ({
  apiVersion: 'multicluster.x-k8s.io/v1alpha1',
  kind: 'ClusterProfile',
  metadata: { name, namespace: 'fleet', labels, ...extra },
});

const regionTier = (region: string, tier: string) => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingRequiredDuringExecution: {
        clusterSelectorTerms: [
          {
            matchExpressions: [
              { labelSelector: { key: 'region', operator: 'In', values: [region] } },
              { labelSelector: { key: 'tier', operator: 'In', values: [tier] } },
            ],
          },
        ],
      },
    },
  },
});

const placement = (name: string, spec: object, listed: string[] = []): KubeObject => ({
  metadata: { name, namespace: 'apps' },
  spec,
  status: { clusters: listed.map((c) => ({ namespace: 'fleet', name: c, state: 'ACTIVE' })) },
});

const placements = [
  placement('old-tier', regionTier('r1', 't0')),
  placement('new-tier', regionTier('r1', 't1')),
  placement('other-region', regionTier('r2', 't1')),
  placement('lists-it', regionTier('r2', 't0'), ['c-7']),
  placement('by-name', { clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet/c-7$' } }] }),
  placement('other-name', {
    clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex: '^fleet/c-8$' } }],
  }),
  placement('invalid', { clusterSelectorRules: [{ type: 'no-such-rule' }] }),
  {
    ...placement('deleting', regionTier('r1', 't1')),
    metadata: { name: 'deleting', namespace: 'apps', deletionTimestamp: '2026-01-01T00:00:00Z' },
  },
];

describe('placementsAffectedBy', () => {
  const now = Date.parse('2026-02-01T00:00:00Z');

  it('a relabelled ClusterProfile affects the placements it was or becomes eligible for, and those listing it', () => {
    const before = profile('c-7', { region: 'r1', tier: 't0' });
    const after = profile('c-7', { region: 'r1', tier: 't1' });
    expect(placementsAffectedBy([{ before, after }], placements, now)).toEqual([
      'apps/old-tier',
      'apps/new-tier',
      'apps/lists-it',
      'apps/by-name',
    ]);
  });

  it('a new ClusterProfile affects the placements it is eligible for; a deleted one those it was eligible for or listed in', () => {
    const added = profile('c-9', { region: 'r2', tier: 't1' });
    expect(placementsAffectedBy([{ before: undefined, after: added }], placements, now)).toEqual(['apps/other-region']);
    const gone = profile('c-7', { region: 'r1', tier: 't1' }, { deletionTimestamp: '2026-02-01T00:00:00Z' });
    const was = profile('c-7', { region: 'r1', tier: 't1' });
    expect(placementsAffectedBy([{ before: was, after: gone }], placements, now)).toEqual([
      'apps/new-tier',
      'apps/lists-it',
      'apps/by-name',
    ]);
  });

  it('a NoSelect taint affects the placements the cluster was eligible for', () => {
    const before = profile('c-8', { region: 'r2', tier: 't1' });
    const after = profile(
      'c-8',
      { region: 'r2', tier: 't1' },
      { annotations: { 'mco.x-k8s.io/taints': JSON.stringify([{ key: 'maintenance', effect: 'NoSelect' }]) } },
    );
    expect(placementsAffectedBy([{ before, after }], placements, now)).toEqual([
      'apps/other-region',
      'apps/other-name',
    ]);
  });
});

describe('cache transforms', () => {
  it('keep what the controller reads and drop the rest', () => {
    const metadata = {
      name: 'p',
      namespace: 'apps',
      uid: 'u1',
      resourceVersion: '7',
      generation: 2,
      labels: { team: 'a' },
      annotations: { 'example.com/note': 'x'.repeat(1000), 'mco.x-k8s.io/taints': '[]' },
      creationTimestamp: '2026-01-01T00:00:00Z',
      finalizers: ['example.com/f'],
      ownerReferences: [{ kind: 'MultiKubernetesClusterPlacement', name: 'p', controller: true }],
    };
    expect(trimPlacement({ apiVersion: 'v1', kind: 'P', metadata, spec: { a: 1 }, status: { b: 2 } })).toEqual({
      apiVersion: 'v1',
      kind: 'P',
      metadata: { name: 'p', namespace: 'apps', uid: 'u1', resourceVersion: '7', generation: 2 },
      spec: { a: 1 },
      status: { b: 2 },
    });
    expect(
      trimPlacementDecision({ apiVersion: 'v1', kind: 'D', metadata, decisions: [{ c: 1 }], status: { x: 1 } }),
    ).toEqual({
      apiVersion: 'v1',
      kind: 'D',
      metadata: {
        name: 'p',
        namespace: 'apps',
        uid: 'u1',
        resourceVersion: '7',
        labels: metadata.labels,
        ownerReferences: metadata.ownerReferences,
      },
      decisions: [{ c: 1 }],
    });
    const trimmed = trimClusterProfile({ apiVersion: 'v1', kind: 'C', metadata, spec: { s: 1 }, status: { t: 1 } });
    expect(trimmed).toEqual({
      apiVersion: 'v1',
      kind: 'C',
      metadata: {
        name: 'p',
        namespace: 'apps',
        uid: 'u1',
        resourceVersion: '7',
        labels: metadata.labels,
        annotations: metadata.annotations,
      },
      spec: { s: 1 },
      status: { t: 1 },
    });
  });
});

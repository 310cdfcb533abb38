import { describe, expect, it } from 'vitest';
import {
  buildPlacementDecisions,
  placementDecisionName,
  placementLabelValue,
  PlacementDecisionSchema,
  type PlacementStatus,
} from '@mco/core';

const statusWith = (n: number): PlacementStatus => ({
  clusters: Array.from({ length: n }, (_, i) => ({
    name: `c${String(i).padStart(3, '0')}`,
    namespace: 'fleet',
    state: i % 2 === 0 ? 'ACTIVE' : 'SCALING_IN',
    lastTransitionTime: '2026-01-01T00:00:00Z',
  })),
});
const placement = { metadata: { name: 'web', namespace: 'apps' } };

describe('PlacementDecision slices (docs/placement-rules.md §8)', () => {
  it('puts every listed cluster into one slice with the placement-key label and the state as reason', () => {
    expect(buildPlacementDecisions(placement, statusWith(2))).toEqual([
      {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'PlacementDecision',
        metadata: { name: 'web-0', namespace: 'apps', labels: { 'multicluster.x-k8s.io/placement-key': 'web' } },
        schedulerName: 'mco',
        decisions: [
          { clusterProfileRef: { name: 'c000', namespace: 'fleet' }, reason: 'ACTIVE' },
          { clusterProfileRef: { name: 'c001', namespace: 'fleet' }, reason: 'SCALING_IN' },
        ],
      },
    ]);
  });

  it('keeps an empty slice when no cluster is listed, so consumers see an explicit empty decision', () => {
    const [only, ...rest] = buildPlacementDecisions(placement, {});
    expect(rest).toEqual([]);
    expect(only?.decisions).toEqual([]);
  });

  it.each([
    [100, [100]],
    [101, [100, 1]],
    [250, [100, 100, 50]],
  ])('slices %i clusters into slices of at most 100 with decision-key and decision-index', (n, sizes) => {
    const slices = buildPlacementDecisions(placement, statusWith(n));
    expect(slices.map((s) => s.decisions.length)).toEqual(sizes);
    for (const [i, s] of slices.entries()) {
      expect(PlacementDecisionSchema.safeParse(s).success).toBe(true);
      expect(s.metadata.name).toBe(`web-${i}`);
      if (slices.length > 1) {
        expect(s.metadata.labels).toEqual({
          'multicluster.x-k8s.io/placement-key': 'web',
          'multicluster.x-k8s.io/decision-key': 'web',
          'multicluster.x-k8s.io/decision-index': String(i),
        });
      }
    }
    expect(slices.flatMap((s) => s.decisions.map((d) => d.clusterProfileRef.name))).toEqual(
      statusWith(n).clusters!.map((c) => c.name),
    );
  });

  it('names slices within the 253-character limit of object names', () => {
    expect(placementDecisionName('p'.repeat(253), 12)).toHaveLength(253);
    expect(placementDecisionName('p'.repeat(253), 12).endsWith('-12')).toBe(true);
    // Two long names that share their first 240 characters still get different slice names.
    expect(placementDecisionName(`${'p'.repeat(245)}-a`, 0)).not.toBe(placementDecisionName(`${'p'.repeat(245)}-b`, 0));
  });

  it('keeps placement-key labels within 63 characters: a long name is cut and hashed, stably and distinctly', () => {
    const long = (end: string) => `${'web-'.repeat(20)}${end}`;
    const labels = (name: string, clusters: number) =>
      buildPlacementDecisions({ metadata: { name, namespace: 'apps' } }, statusWith(clusters)).map(
        (d) => d.metadata.labels,
      );
    const [a, b] = [labels(long('a'), 150), labels(long('b'), 1)];
    const value = a[0]!['multicluster.x-k8s.io/placement-key']!;
    expect({
      length: value.length,
      validLabel: /^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/.test(value),
      sameForEverySlice: a.every((l) =>
        Object.values(l ?? {})
          .filter((v) => v.length > 2)
          .every((v) => v === value),
      ),
      stable: placementLabelValue(long('a')) === value,
      distinct: b[0]!['multicluster.x-k8s.io/placement-key'] !== value,
      shortUnchanged: placementLabelValue('web'),
    }).toEqual({
      length: 63,
      validLabel: true,
      sameForEverySlice: true,
      stable: true,
      distinct: true,
      shortUnchanged: 'web',
    });
  });
});

describe('PlacementDecision slices built around the slices written before', () => {
  const names = (slices: { decisions: { clusterProfileRef: { name: string } }[] }[]) =>
    slices.map((s) => s.decisions.map((d) => d.clusterProfileRef.name));
  const without = (status: PlacementStatus, name: string): PlacementStatus => ({
    clusters: status.clusters!.filter((c) => c.name !== name),
  });
  const before = buildPlacementDecisions(placement, statusWith(167));

  it('gives the objects written before for an unchanged status, and the plain slicing from nothing', () => {
    expect(buildPlacementDecisions(placement, statusWith(167), before)).toEqual(before);
    expect(buildPlacementDecisions(placement, statusWith(167), [])).toEqual(before);
  });

  it('changes only the slice that held a removed cluster', () => {
    const after = buildPlacementDecisions(placement, without(statusWith(167), 'c010'), before);
    expect(after[1]).toEqual(before[1]);
    expect(names(after)[0]).toEqual(names(before)[0]!.filter((n) => n !== 'c010'));
    // The status order alone would have moved c100 into the first slice and rewritten both.
    expect(names(buildPlacementDecisions(placement, without(statusWith(167), 'c010')))[0]).toContain('c100');
  });

  it('puts a new cluster into the first slice with room and leaves the full ones as they are', () => {
    const fewer = buildPlacementDecisions(placement, without(statusWith(167), 'c010'), before);
    const back = buildPlacementDecisions(placement, statusWith(167), fewer);
    expect(back[1]).toEqual(fewer[1]);
    expect(names(back)[0]).toEqual([...names(fewer)[0]!, 'c010']);
    const more = buildPlacementDecisions(placement, statusWith(168), before);
    expect(more[0]).toEqual(before[0]);
    expect(names(more)[1]).toEqual([...names(before)[1]!, 'c167']);
  });

  it("updates a cluster's reason in its slice, and moves the clusters of a surplus slice into the first with room", () => {
    const changed = statusWith(167);
    changed.clusters![150] = { ...changed.clusters![150]!, state: 'EVICTING' };
    const after = buildPlacementDecisions(placement, changed, before);
    expect(after[0]).toEqual(before[0]);
    expect(after[1]!.decisions[50]).toEqual({
      clusterProfileRef: { name: 'c150', namespace: 'fleet' },
      reason: 'EVICTING',
    });

    const wide = buildPlacementDecisions(placement, statusWith(105));
    let shrunk: PlacementStatus = statusWith(105);
    for (let i = 0; i < 10; i++) shrunk = without(shrunk, `c00${i}`);
    const [only, ...rest] = buildPlacementDecisions(placement, shrunk, wide);
    expect(rest).toEqual([]);
    expect(only!.metadata.labels).toEqual({ 'multicluster.x-k8s.io/placement-key': 'web' });
    expect(names([only!])[0]).toEqual([...names(wide)[0]!.slice(10), 'c100', 'c101', 'c102', 'c103', 'c104']);
  });

  it('holds every listed cluster once and at most 100 per slice whatever the slices before held', () => {
    // Slices edited by someone else: a cluster in two slices, one not listed, one slice over-full.
    const edited = [
      {
        metadata: { name: 'web-0' },
        decisions: names(before)
          .flat()
          .map((name) => ({ clusterProfileRef: { name, namespace: 'fleet' } })),
      },
      {
        metadata: { name: 'web-1' },
        decisions: [
          { clusterProfileRef: { name: 'c000', namespace: 'fleet' } },
          { clusterProfileRef: { name: 'gone', namespace: 'fleet' } },
        ],
      },
    ];
    const after = buildPlacementDecisions(placement, statusWith(167), edited);
    expect(after.map((s) => s.decisions.length)).toEqual([100, 67]);
    expect(names(after).flat().sort()).toEqual(statusWith(167).clusters!.map((c) => c.name));
    for (const s of after) expect(PlacementDecisionSchema.safeParse(s).success).toBe(true);
  });
});

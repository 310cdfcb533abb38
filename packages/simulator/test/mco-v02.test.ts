import type { ClusterProfile, PlacementSpec, PlacementStatus, Signal } from '@mco/core';
import { describe, expect, it } from 'vitest';
import { atCeilingV02, decideMcoV02, preferenceOrder, wantsFewerThanMinV02 } from '../src/index.js';

// One test (or more) per documented rule of MCO v0.2 (src/mco-v02.ts cites each to its source).

const NOW = Date.parse('2026-01-01T01:00:00Z');
const at = (seconds: number) => new Date(NOW + seconds * 1000).toISOString().replace('.000Z', 'Z');

const profile = (name: string, labels: Record<string, string> = { gpu: 'l4' }, health?: 'False'): ClusterProfile => ({
  apiVersion: 'multicluster.x-k8s.io/v1alpha1',
  kind: 'ClusterProfile',
  metadata: { name, namespace: 'fleet', labels },
  spec: { displayName: name, clusterManager: { name: 'test' } },
  status: health
    ? {
        conditions: [
          { type: 'ControlPlaneHealthy', status: health, reason: 'Down', lastTransitionTime: '2026-01-01T00:00:00Z' },
        ],
      }
    : {},
});
const PROFILES = [profile('a'), profile('b'), profile('c')];

const spec = (autoscale: Record<string, unknown> = {}): PlacementSpec => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingRequiredDuringExecution: {
        clusterSelectorTerms: [
          { matchExpressions: [{ labelSelector: { key: 'gpu', operator: 'In', values: ['l4'] } }] },
        ],
      },
    },
  },
  scaling: {
    autoscaleForCapacity: {
      minClustersBelowCapacityCeiling: 1,
      maxClusters: 3,
      workloadDetails: { namespace: 'ml', deploymentName: 'w', hpaName: 'w' },
      ...autoscale,
    },
  },
});

/** An HPA signal; `limited` is ScalingLimited=True with that reason. */
const signal = (
  cluster: string,
  hpa: { current: number; min?: number; max?: number; limited?: string },
  extra: Partial<Signal> = {},
): Signal => ({
  cluster: `fleet/${cluster}`,
  observedAt: at(0),
  hpa: {
    currentReplicas: hpa.current,
    desiredReplicas: hpa.current,
    minReplicas: hpa.min ?? 2,
    maxReplicas: hpa.max ?? 10,
    ...(hpa.limited ? { scalingLimited: { status: 'True' as const, reason: hpa.limited } } : {}),
  },
  pendingPods: 0,
  failedScaleUp: false,
  ...extra,
});

const listed = (
  ...entries: [string, PlacementStatus['clusters'] extends (infer E)[] | undefined ? Partial<E> : never][]
) => ({
  clusters: entries.map(([name, e]) => ({
    name,
    namespace: 'fleet',
    state: 'ACTIVE' as const,
    lastTransitionTime: at(-3600),
    ...e,
  })),
});

const decide = (o: {
  status?: PlacementStatus;
  signals?: Signal[];
  spec?: PlacementSpec;
  profiles?: ClusterProfile[];
  order?: string[];
  seconds?: number;
}) =>
  decideMcoV02({
    nowMs: NOW + (o.seconds ?? 0) * 1000,
    spec: o.spec ?? spec({ useDraining: true }),
    clusterProfiles: o.profiles ?? PROFILES,
    signals: o.signals ?? [],
    status: o.status,
    order: o.order ?? ['fleet/a', 'fleet/b', 'fleet/c'],
  });
const moves = (d: ReturnType<typeof decide>) => d.transitions.map((t) => `${t.id} ${t.cluster}`);
const states = (d: ReturnType<typeof decide>) =>
  (d.status.clusters ?? []).map((c) => `${c.name}:${c.state}${c.draining ? `:${c.draining.desiredMaxReplicas}` : ''}`);

describe('MCO v0.2 as documented', () => {
  it('orders clusters only by the given (rule) order: the first eligible one is added first', () => {
    expect(moves(decide({}))).toEqual(['P1 fleet/a']);
    expect(moves(decide({ order: ['fleet/c', 'fleet/a', 'fleet/b'] }))).toEqual(['P1 fleet/c']);
    // The order is the placement's preference at the start, frozen (ASSUMPTION in the module).
    const preferring = {
      ...spec(),
      affinity: {
        clusterAffinity: {
          ...spec().affinity!.clusterAffinity,
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 10,
              preference: { matchExpressions: [{ labelSelector: { key: 'cheap', operator: 'Exists' as const } }] },
            },
          ],
        },
      },
    } as PlacementSpec;
    expect(
      preferenceOrder(preferring, [profile('a'), profile('b', { gpu: 'l4', cheap: 'yes' }), profile('x', {})]),
    ).toEqual(['fleet/b', 'fleet/a']);
  });

  it('scales out at the ceiling: pending pods with a FailedScaleUp', () => {
    const status = listed(['a', {}]);
    const stuck = signal('a', { current: 6 }, { pendingPods: 3, failedScaleUp: true });
    expect(atCeilingV02(stuck)).toBe(true);
    expect(moves(decide({ status, signals: [stuck] }))).toEqual(['P1 fleet/b']);
    // Pending pods alone (nodes on their way) are not the ceiling.
    const waiting = signal('a', { current: 6 }, { pendingPods: 3, failedScaleUp: false });
    expect(moves(decide({ status, signals: [waiting] }))).toEqual([]);
  });

  it('scales out at the ceiling: the HPA at maxReplicas with ScalingLimited=True', () => {
    const status = listed(['a', {}]);
    const full = signal('a', { current: 10, max: 10, limited: 'TooManyReplicas' });
    expect(moves(decide({ status, signals: [full] }))).toEqual(['P1 fleet/b']);
    expect(moves(decide({ status, signals: [signal('a', { current: 10, max: 10 })] }))).toEqual([]);
  });

  it('has no health checking and no notion of a transport error: neither adds a cluster', () => {
    const status = listed(['a', {}]);
    const sick = signal('a', { current: 4 }, { workloadHealthy: false });
    const down = [profile('a', { gpu: 'l4' }, 'False'), profile('b'), profile('c')];
    expect(moves(decide({ status, signals: [sick], profiles: down }))).toEqual([]);
    const unreachable: Signal = {
      cluster: 'fleet/a',
      observedAt: at(0),
      transportError: { reason: 'timeout', consecutivePolls: 9 },
    };
    expect(atCeilingV02(unreachable)).toBe(false);
    expect(moves(decide({ status, signals: [unreachable] }))).toEqual([]);
  });

  it('re-activates a SCALING_IN cluster before adding one, and adds within maxClusters', () => {
    const stuck = signal('a', { current: 10, max: 10, limited: 'TooManyReplicas' });
    const status = listed(
      ['a', {}],
      ['b', { state: 'SCALING_IN', draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: at(-30) } }],
    );
    const d = decide({ status, signals: [stuck, signal('b', { current: 3 })] });
    expect(moves(d)).toEqual(['P3 fleet/b']);
    expect(states(d)).toEqual(['a:ACTIVE', 'b:ACTIVE']);
    const capped = decide({
      status: listed(['a', {}]),
      signals: [stuck],
      spec: spec({ useDraining: true, maxClusters: 1 }),
    });
    expect(moves(capped)).toEqual([]);
  });

  it('scales in the lowest-priority cluster whose HPA wants fewer than its minimum, keeping the minimum below the ceiling', () => {
    const low = (c: string) => signal(c, { current: 2, min: 2, limited: 'TooFewReplicas' });
    expect(wantsFewerThanMinV02(low('a'))).toBe(true);
    const d = decide({ status: listed(['a', {}], ['b', {}]), signals: [low('a'), low('b')] });
    expect(moves(d)).toEqual(['P2 fleet/b']);
    expect(states(d)).toEqual(['a:ACTIVE', 'b:SCALING_IN:2']);
    // The last cluster below the ceiling stays (no scale to zero clusters).
    expect(moves(decide({ status: listed(['a', {}]), signals: [low('a')] }))).toEqual([]);
    // No window and no cooldown: right after an addition, on the first such signal.
    const justAdded = { ...listed(['a', {}], ['b', { lastTransitionTime: at(-30) }]), lastAdditionTime: at(-30) };
    expect(moves(decide({ status: justAdded, signals: [low('a'), low('b')] }))).toEqual(['P2 fleet/b']);
  });

  it('with useDraining publishes a shrinking desiredMaxReplicas and removes the cluster at about one pod', () => {
    const draining = (max: number, since: number) => ({
      state: 'SCALING_IN' as const,
      draining: { desiredMaxReplicas: max, lastReplicaCountDecrease: at(since) },
    });
    const a = signal('a', { current: 4 });
    // A step is due 60 s after the last decrease: 8 -> 6 (25%).
    expect(
      states(decide({ status: listed(['a', {}], ['b', draining(8, -60)]), signals: [a, signal('b', { current: 8 })] })),
    ).toEqual(['a:ACTIVE', 'b:SCALING_IN:6']);
    expect(
      states(decide({ status: listed(['a', {}], ['b', draining(8, -30)]), signals: [a, signal('b', { current: 8 })] })),
    ).toEqual(['a:ACTIVE', 'b:SCALING_IN:8']);
    const done = decide({
      status: listed(['a', {}], ['b', draining(1, -60)]),
      signals: [a, signal('b', { current: 1, min: 1 })],
    });
    expect(moves(done)).toEqual(['R1 fleet/b']);
    expect(done.status.lastClusterRemovalTime).toBe(at(0));
  });

  it('without useDraining publishes no draining and removal follows the HPA', () => {
    const noDrain = spec({ useDraining: false });
    const low = (c: string) => signal(c, { current: 2, min: 2, limited: 'TooFewReplicas' });
    const d = decide({ spec: noDrain, status: listed(['a', {}], ['b', {}]), signals: [low('a'), low('b')] });
    expect(states(d)).toEqual(['a:ACTIVE', 'b:SCALING_IN']);
    const next = decide({ spec: noDrain, status: d.status, signals: [low('a'), low('b')], seconds: 30 });
    expect(moves(next)).toEqual(['R1 fleet/b']);
  });

  it('evicts a cluster that stops being eligible, drains it, and removes it at about one pod', () => {
    const relabelled = [profile('a', { gpu: 'none' }), profile('b'), profile('c')];
    const d = decide({ status: listed(['a', {}]), signals: [signal('a', { current: 6 })], profiles: relabelled });
    expect(moves(d)).toEqual(['E1 fleet/a', 'P1 fleet/b']);
    expect(states(d)).toEqual(['a:EVICTING:6', 'b:ACTIVE']);
    const gone = decide({
      status: d.status,
      signals: [signal('a', { current: 1, min: 1 })],
      profiles: relabelled,
      seconds: 60,
    });
    expect(moves(gone)).toEqual(['R3 fleet/a']);
  });
});

import { aClusterProfile } from '@mco/core/testing';
import { podShapeOf, type CapacityRequest, type PodSpecFields } from '@mco/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  ClusterPropertyCapacityConfigSchema,
  createClusterPropertyCapacitySource,
  karpenterCapacity,
  type NodePool,
} from '../src/index.js';

const pod = (spec: Partial<PodSpecFields> = {}) =>
  podShapeOf({ containers: [{ resources: { requests: { cpu: '500m', memory: '1Gi' } } }], ...spec });
const pool = (name: string, spec: NodePool['spec'] = {}, used: Record<string, string> = {}): NodePool => ({
  metadata: { name },
  spec,
  status: { resources: used },
});

describe('karpenterCapacity', () => {
  it('sums, over the NodePools that admit the pod, the replicas that fit below their limits', () => {
    expect(
      karpenterCapacity(
        [
          pool('a', { limits: { cpu: '10', memory: '100Gi' } }, { cpu: '8', memory: '10Gi' }),
          pool('b', { limits: { memory: '3Gi' } }),
          pool('full', { limits: { cpu: 4 } }, { cpu: '4' }),
        ],
        pod(),
      ),
    ).toEqual({
      addableReplicas: 7,
      reason:
        'room below the NodePool limits for 7: NodePool a: 4 (cpu limit), NodePool b: 3 (memory limit), NodePool full: 0 (cpu limit)',
    });
  });

  it('is unknown when an admitting NodePool has no limit on what the pod requests, or there is no NodePool', () => {
    expect([
      karpenterCapacity([pool('a', { limits: { cpu: '10' } }), pool('open', { limits: { nodes: '5' } })], pod()),
      karpenterCapacity([pool('a', { limits: { cpu: '10' } })], podShapeOf({ containers: [{}] })),
      karpenterCapacity([], pod()),
    ]).toEqual([
      { reason: 'NodePool open admits the pod and has no limit on what it requests (cpu, memory)' },
      { reason: 'NodePool a admits the pod and has no limit on what it requests (nothing)' },
      { reason: 'no Karpenter NodePool on the cluster' },
    ]);
  });

  it('counts only the NodePools whose requirements, labels and taints admit the pod: none admitting is 0', () => {
    const limits = { cpu: '100' };
    const arm = pool('arm', {
      limits,
      template: { spec: { requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['arm64'] }] } },
    });
    const gpu = pool('gpu', {
      limits,
      template: { spec: { taints: [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }] } },
    });
    const team = pool('team', { limits, template: { metadata: { labels: { team: 'a' } } } });
    const prefer = pool('prefer', {
      limits,
      template: { spec: { taints: [{ key: 'spot', effect: 'PreferNoSchedule' }] } },
    });
    const amd = pod({ nodeSelector: { 'kubernetes.io/arch': 'amd64', team: 'b' } });
    expect(karpenterCapacity([arm, gpu, team], amd)).toEqual({
      addableReplicas: 0,
      reason:
        'no NodePool admits the pod (NodePool arm: its requirement kubernetes.io/arch In [arm64] rules out amd64; ' +
        'NodePool gpu: its nodes get no label team, which the pod selects; ' +
        'NodePool team: its nodes are labelled team=a, the pod selects b)',
    });
    const tolerant = pod({ nodeSelector: { team: 'a' }, tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists' }] });
    expect(karpenterCapacity([gpu, team, prefer], tolerant).addableReplicas).toBe(200); // gpu lacks the label team
    expect(
      karpenterCapacity([gpu, prefer], pod({ tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists' }] }))
        .addableReplicas,
    ).toBe(400);
    expect(karpenterCapacity([gpu], pod()).reason).toBe(
      'no NodePool admits the pod (NodePool gpu: the pod does not tolerate its taint nvidia.com/gpu:NoSchedule)',
    );
  });

  it('names a limit that is not a quantity', () => {
    expect(() => karpenterCapacity([pool('bad', { limits: { cpu: 'many' } })], pod())).toThrow(
      'NodePool bad spec.limits.cpu "many" is not a quantity',
    );
  });
});

describe('the cluster-property capacity source', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const profile = (name: string, value?: string) => {
    const p = aClusterProfile(`fleet/${name}`);
    return value === undefined
      ? p
      : {
          ...p,
          status: {
            ...p.status,
            properties: [{ name: 'capacity.example.com/spare', value, lastObservedTime: '2025-12-31T23:59:00Z' }],
          },
        };
  };
  const request = (profiles: ReturnType<typeof profile>[]): CapacityRequest => ({
    placement: { namespace: 'app', name: 'web', spec: {} },
    clusters: profiles.map((p) => ({ key: `fleet/${p.metadata.name}`, profile: p })),
    placed: [],
  });

  it('answers the property in replicas, or in a resource per replica; no property is unknown; a bad value an error', async () => {
    const replicas = createClusterPropertyCapacitySource({
      config: ClusterPropertyCapacityConfigSchema.parse({ property: 'capacity.example.com/spare' }),
      metrics: new Registry(),
      now: () => now,
    });
    expect(await replicas.answer(request([profile('a', '4'), profile('b'), profile('c', '2.5')]))).toEqual({
      answers: [
        {
          cluster: 'fleet/a',
          addableReplicas: 4,
          observedAt: '2025-12-31T23:59:00.000Z',
          reason: 'property capacity.example.com/spare is 4',
          source: 'cluster-property',
        },
        {
          cluster: 'fleet/b',
          observedAt: now.toISOString(),
          reason: 'no property capacity.example.com/spare on the ClusterProfile',
          source: 'cluster-property',
        },
      ],
      errors: [
        {
          cluster: 'fleet/c',
          code: 'Invalid',
          message: 'property capacity.example.com/spare is "2.5", not a whole number of replicas',
        },
      ],
    });
    const cpu = createClusterPropertyCapacitySource({
      config: ClusterPropertyCapacityConfigSchema.parse({ property: 'capacity.example.com/spare', perReplica: '250m' }),
      metrics: new Registry(),
      now: () => now,
    });
    expect((await cpu.answer(request([profile('a', '2.6')]))).answers[0]).toMatchObject({
      addableReplicas: 10,
      reason: 'property capacity.example.com/spare is 2.6 (250m per replica)',
    });
  });

  it('rejects a perReplica that is not a positive quantity, naming it', () => {
    const result = ClusterPropertyCapacityConfigSchema.safeParse({ property: 'p', perReplica: '0' });
    expect(result.success ? 'accepted' : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      'perReplica: must be a positive Kubernetes quantity, e.g. 500m',
    ]);
  });
});

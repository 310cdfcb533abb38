import type { ClusterProfile } from '@mco/core';
import { parseQuantity } from '@mco/core';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  answerEachCluster,
  capacityMetrics,
  McoError,
  podShapeOf,
  replicasThatFit,
  type CapacityRequest,
} from '../src/index.js';

const profile = (name: string) => ({ metadata: { name, namespace: 'fleet' } }) as ClusterProfile;
const request = (names: string[]): CapacityRequest => ({
  placement: { namespace: 'app', name: 'web', spec: {} },
  clusters: names.map((n) => ({ key: `fleet/${n}`, profile: profile(n) })),
  placed: [],
});
const at = new Date('2026-01-01T00:00:00Z');

describe('answerEachCluster', () => {
  it('stamps each answer with its cluster, source and time; a slow or failing cluster gets no answer, only an error; each result is counted', async () => {
    const registry = new Registry();
    const result = await answerEachCluster(
      request(['known', 'unknown', 'slow', 'broken', 'negative']),
      { source: 'test', concurrency: 2, timeoutMs: 100, metrics: capacityMetrics(registry), now: () => at },
      async ({ key }) => {
        if (key === 'fleet/slow') await new Promise((r) => setTimeout(r, 5_000));
        if (key === 'fleet/broken') throw new McoError('Unauthorized', 'cannot list nodepools', false);
        if (key === 'fleet/unknown') return { answer: { reason: 'no limits' }, errors: [] };
        if (key === 'fleet/negative') return { answer: { addableReplicas: -2.5, reason: 'over' }, errors: [] };
        return { answer: { addableReplicas: 3.7, reason: 'room for 3', observedAt: new Date(0) }, errors: [] };
      },
    );
    expect(result).toEqual({
      answers: [
        {
          cluster: 'fleet/known',
          addableReplicas: 3,
          observedAt: '1970-01-01T00:00:00.000Z',
          reason: 'room for 3',
          source: 'test',
        },
        { cluster: 'fleet/unknown', observedAt: at.toISOString(), reason: 'no limits', source: 'test' },
        { cluster: 'fleet/negative', addableReplicas: 0, observedAt: at.toISOString(), reason: 'over', source: 'test' },
      ],
      errors: [
        { cluster: 'fleet/slow', code: 'Timeout', message: 'no complete answer within 0.1 s; answer left missing' },
        { cluster: 'fleet/broken', code: 'Unauthorized', message: 'cannot list nodepools' },
      ],
    });
    const counts = (await registry.getSingleMetric('mco_capacity_answers_total')!.get()).values.map((v) => [
      v.labels.cluster,
      v.labels.result,
      v.value,
    ]);
    expect(counts.sort()).toEqual([
      ['fleet/broken', 'failed', 1],
      ['fleet/known', 'known', 1],
      ['fleet/negative', 'known', 1],
      ['fleet/slow', 'failed', 1],
      ['fleet/unknown', 'unknown', 1],
    ]);
  });

  it('at the overall deadline answers with what it has and marks the rest Timeout; rejects on shutdown', async () => {
    const deadline = AbortSignal.timeout(150);
    const answered = await answerEachCluster(
      request(['fast', 'hangs', 'never-asked']),
      { source: 'test', concurrency: 1, timeoutMs: 10_000, metrics: capacityMetrics(new Registry()), abort: deadline },
      async ({ key }) => {
        if (key !== 'fleet/fast') await new Promise(() => {});
        return { answer: { addableReplicas: 1, reason: 'ok' }, errors: [] };
      },
    );
    expect({
      answers: answered.answers.map((a) => a.cluster),
      errors: answered.errors.map((e) => e.cluster + ':' + e.code),
    }).toEqual({
      answers: ['fleet/fast'],
      errors: ['fleet/hangs:Timeout', 'fleet/never-asked:Timeout'],
    });
    const shutdown = new AbortController();
    const pending = answerEachCluster(
      request(['hangs']),
      {
        source: 'test',
        concurrency: 1,
        timeoutMs: 10_000,
        metrics: capacityMetrics(new Registry()),
        abort: shutdown.signal,
      },
      () => new Promise(() => {}),
    );
    shutdown.abort(new Error('shutting down'));
    await expect(pending).rejects.toThrow('shutting down');
  });
});

describe('podShapeOf', () => {
  const cpu = (shape: ReturnType<typeof podShapeOf>, name = 'cpu') => shape.requests.get(name)?.approximate;

  it('sums containers, sidecars and overhead; a larger plain init container wins; zero requests are dropped', () => {
    const shape = podShapeOf({
      containers: [
        { resources: { requests: { cpu: '250m', memory: '128Mi' } } },
        { resources: { requests: { cpu: '0.25', 'nvidia.com/gpu': '0' } } },
      ],
      initContainers: [
        { restartPolicy: 'Always', resources: { requests: { cpu: '100m' } } },
        { resources: { requests: { memory: '1Gi', cpu: '10m' } } },
      ],
      overhead: { cpu: '50m' },
      nodeSelector: { 'kubernetes.io/arch': 'arm64' },
      tolerations: [{ key: 'gpu', operator: 'Exists' }],
    });
    expect({
      cpu: cpu(shape),
      memory: cpu(shape, 'memory'),
      names: [...shape.requests.keys()].sort(),
      nodeSelector: shape.nodeSelector,
      tolerations: shape.tolerations,
    }).toEqual({
      cpu: 0.65,
      memory: 1024 ** 3,
      names: ['cpu', 'memory'],
      nodeSelector: { 'kubernetes.io/arch': 'arm64' },
      tolerations: [{ key: 'gpu', operator: 'Exists' }],
    });
  });

  it('names the request that is not a quantity', () => {
    expect(() =>
      podShapeOf({ containers: [{ resources: { requests: { cpu: 'lots' } } }] }, 'Deployment app/web'),
    ).toThrow('Deployment app/web: request cpu "lots" is not a quantity');
  });

  it('replicasThatFit counts whole replicas exactly', () => {
    const q = (s: string) => parseQuantity(s)!;
    expect([
      replicasThatFit(q('1'), q('250m')),
      replicasThatFit(q('999m'), q('250m')),
      replicasThatFit(q('-1'), q('1')),
    ]).toEqual([4, 3, 0]);
  });
});

import type { CapacityRequest } from '@mco/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrometheusCapacityConfigSchema, createAuth, createPrometheusCapacitySource } from '../src/index.js';
import {
  openMetrics,
  prometheusSkipReason,
  held,
  startPrometheus,
  T,
  webRequest,
  type PrometheusServer,
} from './prometheus-server.js';

// What a fleet exports about its own capacity: spare replicas per workload, and spare cpu cores per cluster.
const SERIES = openMetrics([
  {
    name: 'fleet_spare_replicas',
    type: 'gauge',
    series: [
      [{ cluster: 'east', namespace: 'shop', deployment: 'web' }, held(6)],
      [{ cluster: 'west', namespace: 'shop', deployment: 'web' }, held(0)],
      [{ cluster: 'east', namespace: 'shop', deployment: 'other' }, held(40)],
    ],
  },
  {
    name: 'fleet_spare_cpu_cores',
    type: 'gauge',
    series: [
      [{ cluster: 'east' }, held(2.6)],
      [{ cluster: 'west' }, held(0.1)],
    ],
  },
]);

const skip = prometheusSkipReason();
if (skip) console.warn(`[signals-prometheus] skipping real-Prometheus tests: ${skip}`);

describe.skipIf(!!skip)('the prometheus capacity source against a real Prometheus server', () => {
  let prometheus: PrometheusServer;
  const now = () => new Date(T * 1000);

  beforeAll(async () => {
    prometheus = await startPrometheus(SERIES);
  });
  afterAll(async () => {
    await prometheus?.stop();
  });

  const request = (...names: string[]): CapacityRequest => ({ ...webRequest(names), placed: [] });
  const source = (config: Record<string, unknown>, registry = new Registry()) =>
    createPrometheusCapacitySource({
      config: PrometheusCapacityConfigSchema.parse({ url: prometheus.url, ...config }),
      auth: createAuth(undefined),
      metrics: registry,
      now,
    });
  const observedAt = '2026-01-01T00:00:00.000Z';

  it('answers spare replicas per workload with one query per cluster; no series is unknown', async () => {
    const registry = new Registry();
    const replicas = source(
      { query: 'fleet_spare_replicas{${cluster}namespace="${namespace}",deployment="${deployment}"}' },
      registry,
    );
    expect(await replicas.answer(request('east', 'west', 'south'))).toEqual({
      answers: [
        {
          cluster: 'fleet/east',
          addableReplicas: 6,
          observedAt,
          reason: 'the capacity query answered 6 replicas',
          source: 'prometheus',
        },
        {
          cluster: 'fleet/west',
          addableReplicas: 0,
          observedAt,
          reason: 'the capacity query answered 0 replicas',
          source: 'prometheus',
        },
        { cluster: 'fleet/south', observedAt, reason: 'the capacity query selected no series', source: 'prometheus' },
      ],
      errors: [],
    });
    const counts = (await registry.getSingleMetric('mco_capacity_answers_total')!.get()).values.map(
      (v) => `${v.labels.cluster} ${v.labels.result}`,
    );
    expect(counts.sort()).toEqual(['fleet/east known', 'fleet/south unknown', 'fleet/west known']);
  });

  it('divides a spare resource by perReplica', async () => {
    const cpu = source({ query: 'fleet_spare_cpu_cores{${cluster}}', perReplica: '250m' });
    const result = await cpu.answer(request('east', 'west'));
    expect(result.answers.map((a) => [a.cluster, a.addableReplicas, a.reason])).toEqual([
      ['fleet/east', 10, 'the capacity query answered 2.6 spare (250m per replica)'],
      ['fleet/west', 0, 'the capacity query answered 0.1 spare (250m per replica)'],
    ]);
  });

  it('a query that selects several series, or a server that cannot be reached, is an error for that cluster', async () => {
    const several = await source({ query: 'fleet_spare_replicas{${cluster}}' }).answer(request('east'));
    expect(several).toEqual({
      answers: [],
      errors: [
        {
          cluster: 'fleet/east',
          code: 'Invalid',
          message: `capacity query at ${prometheus.url}/api/v1/query: 2 series answered where one was expected (check clusterLabels and the query's aggregation)`,
        },
      ],
    });
    const down = createPrometheusCapacitySource({
      config: PrometheusCapacityConfigSchema.parse({ url: 'http://127.0.0.1:1', query: 'up', timeoutSeconds: 2 }),
      auth: createAuth(undefined),
      metrics: new Registry(),
      now,
    });
    const unreachable = await down.answer(request('east'));
    expect({ answers: unreachable.answers, codes: unreachable.errors.map((e) => e.code) }).toEqual({
      answers: [],
      codes: ['Unavailable'],
    });
  });
});

describe('the prometheus capacity configuration', () => {
  it.each([
    [
      'an unknown variable',
      { url: 'http://p', query: 'x{${window}}' },
      'query: unknown variable ${window}; known: ${cluster}, ${namespace}, ${deployment}, ${hpa}',
    ],
    [
      'a perReplica that is not a quantity',
      { url: 'http://p', query: 'x', perReplica: 'half' },
      'perReplica: must be a positive Kubernetes quantity, e.g. 500m',
    ],
    ['no query', { url: 'http://p' }, 'query: '],
    ['an unknown key', { url: 'http://p', query: 'x', queries: {} }, 'Unrecognized key: "queries"'],
  ])('rejects %s, naming the field', (_name, input, message) => {
    const result = PrometheusCapacityConfigSchema.safeParse(input);
    expect(
      result.success ? 'accepted' : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    ).toContain(message);
  });
});

import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_QUERIES,
  PrometheusSignalsConfigSchema,
  clusterMatchers,
  escapeLabelValue,
  queryEndpoint,
  render,
  scalingLimitedReason,
  toObservation,
} from '../src/index.js';

const issues = (input: unknown) => {
  const r = PrometheusSignalsConfigSchema.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('PrometheusSignalsConfigSchema', () => {
  it('fills in the documented defaults', () => {
    expect(PrometheusSignalsConfigSchema.parse({ url: 'http://prometheus:9090' })).toEqual({
      url: 'http://prometheus:9090',
      allowedEndpointPrefixes: ['https://monitoring.googleapis.com/'],
      allowHttpEndpoints: false,
      clusterLabels: { cluster: '${name}' },
      queries: {},
      windowSeconds: 600,
      healthWindowSeconds: 300,
      timeoutSeconds: 5,
      maxResponseBytes: 1048576,
      concurrency: 8,
    });
  });

  it.each([
    {
      name: 'neither url nor annotation',
      input: {},
      want: ['url: set exactly one of url and metricsEndpointAnnotation'],
    },
    {
      name: 'an unknown query variable',
      input: { url: 'http://p', queries: { pendingPods: 'sum(x{ns="${ns}"})' } },
      want: [
        'queries.pendingPods: unknown variable ${ns}; known: ${cluster}, ${namespace}, ${deployment}, ${hpa}, ${window}, ${healthWindow}',
      ],
    },
    {
      name: 'a readyReplicas query with an unknown variable',
      input: { url: 'http://p', queries: { readyReplicas: 'kube_deployment_status_replicas_ready{pod="${pod}"}' } },
      want: [
        'queries.readyReplicas: unknown variable ${pod}; known: ${cluster}, ${namespace}, ${deployment}, ${hpa}, ${window}, ${healthWindow}',
      ],
    },
    {
      name: 'a readyReplicas query that is not a string',
      input: { url: 'http://p', queries: { readyReplicas: false } },
      want: ['queries.readyReplicas: Invalid input: expected string, received boolean'],
    },
    {
      name: 'an unknown query name',
      input: { url: 'http://p', queries: { pending: 'x' } },
      want: ['queries: Unrecognized key: "pending"'],
    },
    {
      name: 'a cluster label value with an unknown variable',
      input: { url: 'http://p', clusterLabels: { cluster: '${cluster}' } },
      want: [
        'clusterLabels.cluster: unknown variable ${cluster}; known: ${name}, ${namespace}, ${label:KEY}, ${annotation:KEY}, ${property:NAME}',
      ],
    },
    {
      name: 'two kinds of auth',
      input: { url: 'http://p', auth: { bearerTokenFile: '/t', metadataServer: {} } },
      want: ['auth: set at most one kind of auth'],
    },
  ])('refuses $name, naming the field', ({ input, want }) => {
    expect(issues(input)).toEqual(want);
  });
});

describe('query rendering', () => {
  it('renders the default HPA query with escaped values and the cluster matchers', () => {
    expect(
      render(DEFAULT_QUERIES.hpaMaxReplicas, {
        cluster: 'cluster="east",',
        namespace: 'shop',
        hpa: escapeLabelValue('we"b'),
      }),
    ).toBe(
      'kube_horizontalpodautoscaler_spec_max_replicas{cluster="east",namespace="shop",horizontalpodautoscaler="we\\"b"}',
    );
  });

  it("renders the default readyReplicas query on kube-state-metrics' ready-replica series of the Deployment", () => {
    expect(
      render(DEFAULT_QUERIES.readyReplicas, { cluster: 'cluster="east",', namespace: 'shop', deployment: 'web' }),
    ).toBe('kube_deployment_status_replicas_ready{cluster="east",namespace="shop",deployment="web"}');
  });

  it('builds cluster matchers from name, labels, annotations and properties, sorted by label name', () => {
    const p = aClusterProfile('fleet/us-east1', { labels: { region: 'us-east1' } }) as ClusterProfile;
    const profile = {
      ...p,
      metadata: { ...p.metadata, annotations: { 'fleet.gke.io/clusterName': 'prod-1' } },
      status: { properties: [{ name: 'project', value: 'acme' }] },
    } as ClusterProfile;
    expect(
      clusterMatchers(profile, {
        project_id: '${property:project}',
        cluster: '${annotation:fleet.gke.io/clusterName}',
        location: '${label:region}',
        profile: '${namespace}/${name}',
      }),
    ).toBe('cluster="prod-1",location="us-east1",profile="fleet/us-east1",project_id="acme",');
  });

  it.each([
    { url: 'http://p:9090', want: 'http://p:9090/api/v1/query' },
    { url: 'http://p:9090/prefix/', want: 'http://p:9090/prefix/api/v1/query' },
    {
      url: 'https://monitoring.googleapis.com/v1/projects/p/location/global/prometheus/api/v1/query',
      want: 'https://monitoring.googleapis.com/v1/projects/p/location/global/prometheus/api/v1/query',
    },
  ])('queries $url at $want', ({ url, want }) => {
    expect(queryEndpoint(url)).toBe(want);
  });
});

describe('scalingLimitedReason', () => {
  it.each([
    { name: 'clamped at min', hpa: { desiredReplicas: 2, minReplicas: 2, maxReplicas: 5 }, want: 'TooFewReplicas' },
    { name: 'clamped at max', hpa: { desiredReplicas: 5, minReplicas: 2, maxReplicas: 5 }, want: 'TooManyReplicas' },
    {
      name: 'between min and max (a rate limit)',
      hpa: { desiredReplicas: 3, minReplicas: 2, maxReplicas: 5 },
      want: undefined,
    },
    {
      name: 'min equal to max (ambiguous)',
      hpa: { desiredReplicas: 3, minReplicas: 3, maxReplicas: 3 },
      want: undefined,
    },
    { name: 'unknown desired replicas', hpa: { minReplicas: 2, maxReplicas: 5 }, want: undefined },
  ])('is $want when $name', ({ hpa, want }) => {
    expect(scalingLimitedReason(hpa)).toBe(want);
  });
});

describe('toObservation: a signal without readyReplicas says whether its source reports them (rule D1)', () => {
  const at = new Date('2026-01-01T00:00:00Z');
  const hpa = { name: 'hpaCurrentReplicas' as const, value: 4 };
  it.each([
    { name: 'the value answered: no declaration needed', ready: 3, reports: true, expected: { readyReplicas: 3 } },
    {
      name: 'the query answered nothing: doubt, declared',
      ready: undefined,
      reports: true,
      expected: { reportsReadyReplicas: true },
    },
    {
      name: 'no readyReplicas query: never reported, declared',
      ready: undefined,
      reports: false,
      expected: { reportsReadyReplicas: false },
    },
  ])('$name', ({ ready, reports, expected }) => {
    const results = [hpa, { name: 'readyReplicas' as const, value: ready }];
    expect(toObservation('fleet/a', at, results, reports).signal).toEqual({
      cluster: 'fleet/a',
      observedAt: at.toISOString(),
      hpa: { currentReplicas: 4 },
      ...expected,
    });
  });
});

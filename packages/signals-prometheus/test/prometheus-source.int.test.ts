import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { SignalRequest } from '@mco/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrometheusSignalsConfigSchema, createAuth, createPrometheusSignalSource } from '../src/index.js';
import {
  openMetrics,
  prometheusSkipReason,
  held,
  startPrometheus,
  T,
  webRequest,
  type PrometheusServer,
} from './prometheus-server.js';

const hpaLabels = (cluster: string) => ({ cluster, namespace: 'shop', horizontalpodautoscaler: 'web' });
const pod = (cluster: string, name: string) => ({ cluster, namespace: 'shop', pod: name });
const karpenterError = (cluster: string, method: string, error: string) => ({
  cluster,
  controller: 'nodeclaim.lifecycle',
  method,
  provider: 'kwok',
  error,
  nodepool: 'gpu',
});

const SERIES = openMetrics([
  {
    name: 'kube_horizontalpodautoscaler_status_current_replicas',
    type: 'gauge',
    series: [
      [hpaLabels('east'), held(5)],
      [hpaLabels('west'), held(2)],
      [hpaLabels('north'), held(3)],
    ],
  },
  {
    name: 'kube_horizontalpodautoscaler_status_desired_replicas',
    type: 'gauge',
    series: [
      [hpaLabels('east'), held(5)],
      [hpaLabels('west'), held(2)],
    ],
  },
  {
    name: 'kube_horizontalpodautoscaler_spec_min_replicas',
    type: 'gauge',
    series: [
      [hpaLabels('east'), held(2)],
      [hpaLabels('west'), held(2)],
    ],
  },
  {
    name: 'kube_horizontalpodautoscaler_spec_max_replicas',
    type: 'gauge',
    series: [
      [hpaLabels('east'), held(5)],
      [hpaLabels('west'), held(10)],
    ],
  },
  {
    name: 'kube_horizontalpodautoscaler_status_condition',
    type: 'gauge',
    series: [
      [{ ...hpaLabels('east'), condition: 'ScalingLimited', status: 'true' }, held(1)],
      [{ ...hpaLabels('east'), condition: 'ScalingLimited', status: 'false' }, held(0)],
      [{ ...hpaLabels('west'), condition: 'ScalingLimited', status: 'true' }, held(1)],
      [{ ...hpaLabels('west'), condition: 'ScalingLimited', status: 'false' }, held(0)],
    ],
  },
  {
    name: 'kube_pod_status_phase',
    type: 'gauge',
    series: [
      [{ ...pod('east', 'web-a-1'), phase: 'Pending' }, held(1)],
      [{ ...pod('east', 'web-a-2'), phase: 'Pending' }, held(1)],
      [{ ...pod('east', 'web-a-3'), phase: 'Pending' }, held(0)],
      [{ ...pod('east', 'web-a-3'), phase: 'Running' }, held(1)],
      [{ ...pod('east', 'other-x-1'), phase: 'Pending' }, held(1)],
      [{ ...pod('west', 'web-b-1'), phase: 'Pending' }, held(0)],
      [{ ...pod('west', 'web-b-1'), phase: 'Running' }, held(1)],
    ],
  },
  {
    name: 'kube_pod_owner',
    type: 'gauge',
    series: [
      [
        { ...pod('east', 'web-a-1'), owner_kind: 'ReplicaSet', owner_name: 'web-a', owner_is_controller: 'true' },
        held(1),
      ],
      [
        { ...pod('east', 'web-a-2'), owner_kind: 'ReplicaSet', owner_name: 'web-a', owner_is_controller: 'true' },
        held(1),
      ],
      [
        { ...pod('east', 'web-a-3'), owner_kind: 'ReplicaSet', owner_name: 'web-a', owner_is_controller: 'true' },
        held(1),
      ],
      [
        { ...pod('east', 'other-x-1'), owner_kind: 'ReplicaSet', owner_name: 'other-x', owner_is_controller: 'true' },
        held(1),
      ],
      [
        { ...pod('west', 'web-b-1'), owner_kind: 'ReplicaSet', owner_name: 'web-b', owner_is_controller: 'true' },
        held(1),
      ],
    ],
  },
  {
    name: 'kube_replicaset_owner',
    type: 'gauge',
    series: [
      [
        {
          cluster: 'east',
          namespace: 'shop',
          replicaset: 'web-a',
          owner_kind: 'Deployment',
          owner_name: 'web',
          owner_is_controller: 'true',
        },
        held(1),
      ],
      [
        {
          cluster: 'east',
          namespace: 'shop',
          replicaset: 'other-x',
          owner_kind: 'Deployment',
          owner_name: 'other',
          owner_is_controller: 'true',
        },
        held(1),
      ],
      [
        {
          cluster: 'west',
          namespace: 'shop',
          replicaset: 'web-b',
          owner_kind: 'Deployment',
          owner_name: 'web',
          owner_is_controller: 'true',
        },
        held(1),
      ],
    ],
  },
  {
    name: 'kube_deployment_status_condition',
    type: 'gauge',
    series: [
      [{ cluster: 'east', namespace: 'shop', deployment: 'web', condition: 'Available', status: 'true' }, held(1)],
      [{ cluster: 'west', namespace: 'shop', deployment: 'web', condition: 'Available', status: 'true' }, held(0)],
    ],
  },
  {
    name: 'kube_deployment_status_replicas_ready',
    type: 'gauge',
    series: [
      [{ cluster: 'east', namespace: 'shop', deployment: 'web' }, held(4)],
      [{ cluster: 'east', namespace: 'shop', deployment: 'other' }, held(9)],
      [{ cluster: 'west', namespace: 'shop', deployment: 'web' }, held(2)],
    ],
  },
  {
    name: 'cluster_autoscaler_failed_scale_ups',
    type: 'counter',
    series: [
      [{ cluster: 'east', reason: 'cloudProviderError' }, held(0).map(([t], i) => [t, i < 6 ? 0 : 2] as const)],
      [{ cluster: 'west', reason: 'cloudProviderError' }, held(1)],
      [{ cluster: 'both', reason: 'cloudProviderError' }, held(1)],
    ],
  },
  {
    // As Karpenter names it (sigs.k8s.io/karpenter v1.15.0 pkg/cloudprovider/metrics): south runs Karpenter
    // alone and the cloud refused a launch 4 minutes ago; quiet's errors are not a want of capacity;
    // both runs both autoscalers.
    name: 'karpenter_cloudprovider_errors',
    type: 'counter',
    series: [
      [
        karpenterError('south', 'Create', 'InsufficientCapacityError'),
        held(0).map(([t], i) => [t, i < 6 ? 0 : 1] as const),
      ],
      [
        karpenterError('quiet', 'Create', 'NodeClassNotReadyError'),
        held(0).map(([t], i) => [t, i < 6 ? 0 : 3] as const),
      ],
      [
        karpenterError('quiet', 'Delete', 'InsufficientCapacityError'),
        held(0).map(([t], i) => [t, i < 6 ? 0 : 1] as const),
      ],
      [karpenterError('quiet', 'Create', 'InsufficientCapacityError'), held(2)],
      [
        karpenterError('both', 'Create', 'InsufficientCapacityError'),
        held(0).map(([t], i) => [t, i < 9 ? 0 : 1] as const),
      ],
    ],
  },
  {
    name: 'my_failed_scale_ups',
    type: 'gauge',
    series: [[{ cluster: 'west' }, held(1)]],
  },
]);

const skip = prometheusSkipReason();
if (skip) console.warn(`[signals-prometheus] skipping real-Prometheus tests: ${skip}`);

describe.skipIf(!!skip)('the prometheus signal source against a real Prometheus server', () => {
  let prometheus: PrometheusServer;
  const now = () => new Date(T * 1000);

  beforeAll(async () => {
    const started = Date.now();
    prometheus = await startPrometheus(SERIES);
    console.log(`prometheus loaded and ready in ${Date.now() - started} ms`);
  });
  afterAll(async () => {
    await prometheus?.stop();
  });

  const request = (...names: string[]): SignalRequest => webRequest(names);
  const source = (config: Record<string, unknown> = {}, registry = new Registry()) =>
    createPrometheusSignalSource({
      config: PrometheusSignalsConfigSchema.parse({ url: prometheus.url, ...config }),
      auth: createAuth(undefined),
      metrics: registry,
      now,
    });
  const observedAt = '2026-01-01T00:00:00.000Z';

  it('reads the kube-state-metrics and cluster-autoscaler series of each cluster with the default queries (readyReplicas from kube_deployment_status_replicas_ready)', async () => {
    expect(await source().observe(request('east', 'west'))).toEqual({
      signals: [
        {
          cluster: 'fleet/east',
          observedAt,
          hpa: {
            currentReplicas: 5,
            desiredReplicas: 5,
            minReplicas: 2,
            maxReplicas: 5,
            scalingLimited: { status: 'True', reason: 'TooManyReplicas' },
          },
          pendingPods: 2,
          readyReplicas: 4,
          failedScaleUp: true,
          workloadHealthy: true,
        },
        {
          cluster: 'fleet/west',
          observedAt,
          hpa: {
            currentReplicas: 2,
            desiredReplicas: 2,
            minReplicas: 2,
            maxReplicas: 10,
            scalingLimited: { status: 'True', reason: 'TooFewReplicas' },
          },
          pendingPods: 0,
          readyReplicas: 2,
          failedScaleUp: false,
          workloadHealthy: false,
        },
      ],
      errors: [],
    });
  });

  it('leaves absent series unknown, and a cluster with no series at all without a signal', async () => {
    const registry = new Registry();
    expect(await source({}, registry).observe(request('north', 'ghost'))).toEqual({
      // north exports no ready-replica series at all: the source cannot report readyReplicas there.
      signals: [{ cluster: 'fleet/north', observedAt, hpa: { currentReplicas: 3 }, reportsReadyReplicas: false }],
      errors: [
        {
          cluster: 'fleet/ghost',
          code: 'NotFound',
          message:
            'no query selected any series: check clusterLabels, the workload names and that kube-state-metrics is scraped',
        },
      ],
    });
    const results = (await registry.getSingleMetric('mco_signal_observations_total')!.get()).values
      .map((v) => `${v.labels.cluster} ${v.labels.result}`)
      .sort();
    expect(results).toEqual(['fleet/ghost failed', 'fleet/north ok']);
  });

  it("reads Karpenter's launches refused for want of capacity as failedScaleUp, alone or beside the cluster autoscaler's", async () => {
    const result = await source().observe(request('south', 'quiet', 'both', 'east'));
    expect(result.signals.map((s) => `${s.cluster} ${s.failedScaleUp}`)).toEqual([
      'fleet/south true',
      // Another launch error, a Delete, and a counter that did not move in the window: no.
      'fleet/quiet false',
      // The cluster autoscaler's counter did not move, Karpenter's did: the sum counts both.
      'fleet/both true',
      'fleet/east true',
    ]);
  });

  it('uses an overridden query and turns off a query set to null', async () => {
    const result = await source({
      queries: {
        failedScaleUp: 'max_over_time(my_failed_scale_ups{${cluster}}[${window}])',
        workloadHealthy: null,
      },
    }).observe(request('west'));
    expect({ failedScaleUp: result.signals[0]?.failedScaleUp, healthy: result.signals[0]?.workloadHealthy }).toEqual({
      failedScaleUp: true,
      healthy: undefined,
    });
  });

  it.each([
    {
      name: 'turned off (null): the signals declare that the source does not report readyReplicas',
      readyReplicas: null,
      expected: { readyReplicas: undefined, reportsReadyReplicas: false },
    },
    {
      name: 'overridden: the override is read',
      readyReplicas: 'kube_deployment_status_replicas_ready{${cluster}namespace="${namespace}",deployment="other"}',
      expected: { readyReplicas: 9, reportsReadyReplicas: undefined },
    },
  ])('the readyReplicas query $name', async ({ readyReplicas, expected }) => {
    const result = await source({ queries: { readyReplicas } }).observe(request('east'));
    const signal = result.signals[0];
    expect({
      readyReplicas: signal?.readyReplicas,
      reportsReadyReplicas: signal?.reportsReadyReplicas,
      errors: result.errors,
    }).toEqual({
      ...expected,
      errors: [],
    });
  });

  it('maps the cluster label from a ClusterProfile label', async () => {
    const profile = aClusterProfile('fleet/us-east1', {
      labels: { 'fleet.example/cluster': 'east' },
    }) as ClusterProfile;
    const result = await source({ clusterLabels: { cluster: '${label:fleet.example/cluster}' } }).observe({
      ...request(),
      clusters: [{ key: 'fleet/us-east1', profile }],
    });
    expect({
      cluster: result.signals[0]?.cluster,
      pending: result.signals[0]?.pendingPods,
      errors: result.errors,
    }).toEqual({
      cluster: 'fleet/us-east1',
      pending: 2,
      errors: [],
    });
  });

  it('refuses to mix clusters when no cluster label selects one, and keeps the default queries valid PromQL', async () => {
    // clusterLabels {} is meant for one Prometheus per cluster; against a shared one the
    // per-HPA queries answer several series and are refused, while sums stay well-formed.
    const result = await source({ clusterLabels: {} }).observe(request('east'));
    expect({
      pendingPods: result.signals[0]?.pendingPods,
      failedScaleUp: result.signals[0]?.failedScaleUp,
      hpa: result.signals[0]?.hpa,
      refused: result.errors.map((e) => `${e.code} ${e.message.split(':')[0]}`),
      first: result.errors[0]?.message,
    }).toEqual({
      pendingPods: 2,
      failedScaleUp: true,
      hpa: undefined,
      refused: [
        'Invalid query hpaCurrentReplicas at http',
        'Invalid query hpaDesiredReplicas at http',
        'Invalid query hpaMinReplicas at http',
        'Invalid query hpaMaxReplicas at http',
        'Invalid query hpaScalingLimited at http',
        'Invalid query workloadHealthy at http',
        'Invalid query readyReplicas at http',
      ],
      first: `query hpaCurrentReplicas at ${prometheus.url}/api/v1/query: 3 series answered where one was expected (check clusterLabels and the query's aggregation)`,
    });
  });

  it('reports a query Prometheus rejects, naming the query, and keeps the other fields', async () => {
    const result = await source({ queries: { pendingPods: 'sum(' } }).observe(request('east'));
    expect({
      pendingPods: result.signals[0]?.pendingPods,
      hpa: result.signals[0]?.hpa?.currentReplicas,
      errors: result.errors.map((e) => ({ code: e.code, message: e.message.split(': ').slice(0, 3).join(': ') })),
    }).toEqual({
      pendingPods: undefined,
      hpa: 5,
      errors: [{ code: 'Invalid', message: `query pendingPods at ${prometheus.url}/api/v1/query: HTTP 400: bad_data` }],
    });
  });
});

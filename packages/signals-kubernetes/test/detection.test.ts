import type { ClusterAccessManager } from '@mco/cluster-access';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { SignalRequest } from '@mco/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { KubernetesSignalsConfigSchema, createKubernetesSignalSource } from '../src/index.js';

// A member answering from a table of paths (and field selectors), counting the requests; unit level only,
// the real API server is in karpenter.int.test.ts.
const LIMITS = 'Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=default)';
const T0 = Date.parse('2026-01-01T00:00:00Z');

type Discovery = 'karpenter' | 404 | 500;

function member(discovery: Discovery, caSays: 'ceiling' | 'nothing', deployment: 'found' | 404 = 'found') {
  const requests: string[] = [];
  const httpError = (status: number) => Object.assign(new Error(`HTTP ${status}`), { statusCode: status });
  const at = new Date(T0).toISOString();
  const answer = (path: string, query: Record<string, unknown> = {}): unknown => {
    const selector = String(query.fieldSelector ?? '');
    requests.push(selector ? `${path}?${selector}` : path);
    if (path === '/apis/karpenter.sh/v1') {
      if (discovery === 'karpenter') return { resources: [{ name: 'nodepools' }, { name: 'nodeclaims' }] };
      throw httpError(discovery);
    }
    if (path.endsWith('/horizontalpodautoscalers/web')) return { spec: { minReplicas: 1, maxReplicas: 4 } };
    if (path.endsWith('/deployments/web')) {
      if (deployment === 404) throw httpError(404);
      return { spec: { selector: { matchLabels: { app: 'web' } } }, status: { readyReplicas: 2 } };
    }
    if (path.endsWith('/pods'))
      return { items: [{ metadata: { name: 'web-1' }, status: { phase: 'Pending' } }], metadata: {} };
    const items = [];
    if (selector.startsWith('reason=NotTriggerScaleUp') && caSays === 'ceiling')
      items.push({
        involvedObject: { name: 'web-1' },
        reason: 'NotTriggerScaleUp',
        message: "pod didn't trigger scale-up: 1 max node group size reached",
        source: { component: 'cluster-autoscaler' },
        lastTimestamp: at,
      });
    if (selector.startsWith('source=karpenter'))
      items.push({
        involvedObject: { name: 'web-1' },
        reason: 'FailedScheduling',
        message: LIMITS,
        source: { component: 'karpenter' },
        lastTimestamp: at,
      });
    return { items, metadata: {} };
  };
  const access = {
    clientFor: async () => ({
      cluster: 'fleet/m',
      access: { getCredential: async () => ({ token: 't' }) },
      client: {
        get: async (path: string, options: { query?: Record<string, unknown> }) => answer(path, options.query),
      },
    }),
  } as unknown as ClusterAccessManager;
  return { access, requests };
}

const request: SignalRequest = {
  placement: {
    namespace: 'shop',
    name: 'web',
    spec: {
      scaling: {
        autoscaleForCapacity: {
          minClustersBelowCapacityCeiling: 1,
          workloadDetails: { deploymentName: 'web', hpaName: 'web' },
        },
      },
    },
  },
  clusters: [{ key: 'fleet/m', profile: aClusterProfile('fleet/m') as ClusterProfile }],
};

describe('the autoscaler of a member', () => {
  it.each([
    {
      name: 'auto on a member without Karpenter: the cluster autoscaler only',
      discovery: 404 as Discovery,
      caSays: 'nothing' as const,
      want: { failedScaleUp: false, errors: [] },
    },
    {
      name: 'auto on a Karpenter member: its NodePool at the limits counts',
      discovery: 'karpenter' as Discovery,
      caSays: 'nothing' as const,
      want: { failedScaleUp: true, errors: [] },
    },
    {
      name: 'a failed discovery leaves the verdict unknown when the cluster autoscaler saw nothing',
      discovery: 500 as Discovery,
      caSays: 'nothing' as const,
      want: { failedScaleUp: undefined, errors: ['Unavailable Karpenter events in namespace shop: HTTP 500'] },
    },
    {
      name: "a failed discovery does not hide the cluster autoscaler's ceiling",
      discovery: 500 as Discovery,
      caSays: 'ceiling' as const,
      want: { failedScaleUp: true, errors: ['Unavailable Karpenter events in namespace shop: HTTP 500'] },
    },
  ])('$name', async ({ discovery, caSays, want }) => {
    const { access } = member(discovery, caSays);
    const source = createKubernetesSignalSource({
      access,
      config: KubernetesSignalsConfigSchema.parse({}),
      metrics: new Registry(),
      now: () => new Date(T0 + 30_000),
    });
    const result = await source.observe(request);
    expect({
      failedScaleUp: result.signals[0]?.failedScaleUp,
      errors: result.errors.map((e) => `${e.code} ${e.message}`),
    }).toEqual(want);
  });

  it.each([
    { name: 'a Deployment read: its ready replicas', deployment: 'found' as const, want: { readyReplicas: 2 } },
    {
      name: 'no Deployment (not delivered yet): none, and the signal says this source reports them, so a drain waits (rule D1)',
      deployment: 404 as const,
      want: { reportsReadyReplicas: true },
    },
  ])('$name', async ({ deployment, want }) => {
    const { access } = member(404, 'nothing', deployment);
    const source = createKubernetesSignalSource({
      access,
      config: KubernetesSignalsConfigSchema.parse({}),
      metrics: new Registry(),
      now: () => new Date(T0 + 30_000),
    });
    const signal = (await source.observe(request)).signals[0];
    expect({ readyReplicas: signal?.readyReplicas, reportsReadyReplicas: signal?.reportsReadyReplicas }).toEqual({
      readyReplicas: undefined,
      reportsReadyReplicas: undefined,
      ...want,
    });
  });

  it('asks a member whether it serves Karpenter once per 10 minutes', async () => {
    const { access, requests } = member(404, 'nothing');
    let now = T0;
    const source = createKubernetesSignalSource({
      access,
      config: KubernetesSignalsConfigSchema.parse({}),
      metrics: new Registry(),
      now: () => new Date(now),
    });
    const discoveries: number[] = [];
    for (const minutes of [0, 5, 9, 10, 15]) {
      now = T0 + minutes * 60_000;
      await source.observe(request);
      discoveries.push(requests.filter((r) => r === '/apis/karpenter.sh/v1').length);
    }
    expect(discoveries).toEqual([1, 1, 1, 2, 2]);
  });

  it.each([
    {
      name: 'karpenter: no discovery and no cluster-autoscaler list',
      setting: 'karpenter',
      want: ['/api/v1/namespaces/shop/events?source=karpenter,involvedObject.kind=Pod'],
    },
    {
      name: 'cluster-autoscaler: its lists only',
      setting: 'cluster-autoscaler',
      want: [
        '/api/v1/namespaces/shop/events?reason=FailedScaleUp,involvedObject.kind=Pod',
        '/api/v1/namespaces/shop/events?reason=NotTriggerScaleUp,involvedObject.kind=Pod',
      ],
    },
  ])('set per member, $name', async ({ setting, want }) => {
    const { access, requests } = member('karpenter', 'nothing');
    const source = createKubernetesSignalSource({
      access,
      config: KubernetesSignalsConfigSchema.parse({ clusterAutoscalers: { 'fleet/m': setting } }),
      metrics: new Registry(),
      now: () => new Date(T0),
    });
    await source.observe(request);
    expect(requests.filter((r) => r.includes('events') || r.startsWith('/apis/karpenter.sh')).sort()).toEqual(want);
  });
});

import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  describeWithControlPlane,
  startControlPlane,
  startExternalMetrics,
  type ControlPlane,
  type ExternalMetrics,
} from '../src/index.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

// The path an HPA with an `External` metric takes: kube-apiserver's aggregator
// proxies external.metrics.k8s.io to the server behind the APIService.
describeWithControlPlane('startExternalMetrics: an external metrics API served through the aggregator', () => {
  let plane: ControlPlane;
  let metrics: ExternalMetrics;

  beforeAll(async () => {
    plane = await startControlPlane({ clusters: ['member'] });
    metrics = await startExternalMetrics(plane.members.member!);
  });

  afterAll(async () => {
    await metrics?.stop();
    await plane?.stop();
  });

  it('answers the value set, through kube-apiserver, in the wire format of external.metrics.k8s.io/v1beta1', async () => {
    metrics.set('queue_depth', 6.5);
    const res = await plane.members.member!.request(
      '/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_depth?labelSelector=app%3Dweb',
    );
    expect(res.status).toBe(200);
    const list = JSON.parse(res.body) as { kind: string; items: { metricName: string; value: string }[] };
    expect(list.kind).toBe('ExternalMetricValueList');
    expect(list.items.map((i) => [i.metricName, i.value])).toEqual([['queue_depth', '6500m']]);
    expect(metrics.reads.get('/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_depth')).toBe(1);
  });

  it('answers 404 for a metric never set, and refuses a bad value naming the metric', async () => {
    const res = await plane.members.member!.request('/apis/external.metrics.k8s.io/v1beta1/namespaces/default/other');
    expect(res.status).toBe(404);
    expect(() => metrics.set('queue_depth', -1)).toThrow('external metric queue_depth: value must be >= 0');
  });
});

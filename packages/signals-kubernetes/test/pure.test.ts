import type { CoreV1Event, V1Deployment, V1LabelSelector } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { deploymentHealth, eventTime, hpaSignal, labelSelectorString } from '../src/index.js';
import { KubernetesSignalsConfigSchema } from '../src/index.js';

describe('labelSelectorString', () => {
  it.each([
    { name: 'labels in key order', selector: { matchLabels: { b: '2', a: '1' } }, want: 'a=1,b=2' },
    {
      name: 'every expression operator',
      selector: {
        matchLabels: { app: 'web' },
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['b', 'a'] },
          { key: 'track', operator: 'NotIn', values: ['canary'] },
          { key: 'owner', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      },
      want: 'app=web,tier in (a,b),track notin (canary),owner,!legacy',
    },
  ] as { name: string; selector: V1LabelSelector; want: string }[])('writes $name', ({ selector, want }) => {
    expect(labelSelectorString(selector)).toBe(want);
  });
  it('refuses an unknown operator', () => {
    expect(() => labelSelectorString({ matchExpressions: [{ key: 'a', operator: 'Gt' }] })).toThrow(
      'Deployment selector operator "Gt" is not known',
    );
  });
});

describe('deploymentHealth', () => {
  const now = new Date('2026-01-01T01:00:00Z');
  const deployment = (conditions: object[]) => ({ status: { conditions } }) as V1Deployment;
  it.each([
    { name: 'Available is healthy', conditions: [{ type: 'Available', status: 'True' }], want: true },
    {
      name: 'unavailable for longer than the grace period is unhealthy',
      conditions: [{ type: 'Available', status: 'False', lastTransitionTime: new Date('2026-01-01T00:55:00Z') }],
      want: false,
    },
    {
      name: 'unavailable for a short while (a rollout, a cold start) is unknown',
      conditions: [{ type: 'Available', status: 'False', lastTransitionTime: new Date('2026-01-01T00:59:00Z') }],
      want: undefined,
    },
    {
      name: 'a progress deadline exceeded is unhealthy even while available',
      conditions: [
        { type: 'Available', status: 'True' },
        { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' },
      ],
      want: false,
    },
    { name: 'no conditions is unknown', conditions: [], want: undefined },
  ])('$name', ({ conditions, want }) => {
    expect(deploymentHealth(deployment(conditions), now, 300)).toBe(want);
  });
});

describe('hpaSignal', () => {
  it('defaults minReplicas to 1 like the API and leaves unknown fields out', () => {
    expect(hpaSignal({ spec: { maxReplicas: 4, scaleTargetRef: { kind: 'Deployment', name: 'w' } } })).toEqual({
      minReplicas: 1,
      maxReplicas: 4,
    });
  });
});

describe('eventTime', () => {
  const at = (s: string) => new Date(s);
  it.each([
    {
      name: 'the series time over the last timestamp',
      event: {
        series: { count: 2, lastObservedTime: at('2026-01-01T00:10:00Z') },
        lastTimestamp: at('2026-01-01T00:05:00Z'),
      },
      want: '2026-01-01T00:10:00Z',
    },
    {
      name: 'the last timestamp, not a later creation time',
      event: { lastTimestamp: at('2026-01-01T00:05:00Z'), metadata: { creationTimestamp: at('2026-01-01T02:00:00Z') } },
      want: '2026-01-01T00:05:00Z',
    },
    {
      name: 'the creation time as a last resort',
      event: { metadata: { creationTimestamp: at('2026-01-01T02:00:00Z') } },
      want: '2026-01-01T02:00:00Z',
    },
  ])('takes $name', ({ event, want }) => {
    expect(new Date(eventTime(event as unknown as CoreV1Event)).toISOString()).toBe(new Date(want).toISOString());
  });
});

describe('KubernetesSignalsConfigSchema', () => {
  it('fills in the documented defaults', () => {
    expect(KubernetesSignalsConfigSchema.parse({})).toEqual({
      qps: 5,
      burst: 10,
      timeoutSeconds: 5,
      concurrency: 8,
      eventWindowSeconds: 600,
      eventReasons: ['FailedScaleUp', 'NotTriggerScaleUp'],
      eventReporter: 'cluster-autoscaler',
      autoscaler: 'auto',
      clusterAutoscalers: {},
      karpenterReporter: 'karpenter',
      unavailableAfterSeconds: 300,
      maxPods: 5000,
      maxEvents: 2000,
    });
  });
  it.each([
    {
      name: 'an unknown autoscaler',
      config: { autoscaler: 'karpenter-v1' },
      want: [['autoscaler', 'Invalid option: expected one of "auto"|"cluster-autoscaler"|"karpenter"']],
    },
    {
      name: "an unknown member's autoscaler",
      config: { clusterAutoscalers: { 'fleet/west': 'keda' } },
      want: [
        ['clusterAutoscalers.fleet/west', 'Invalid option: expected one of "auto"|"cluster-autoscaler"|"karpenter"'],
      ],
    },
    {
      name: 'a Karpenter reporter a field selector would misread',
      config: { karpenterReporter: 'karpenter,reason=Nominated' },
      want: [['karpenterReporter', 'must be lowercase letters, digits, "-" and "."']],
    },
    {
      name: 'members that are not namespace/name',
      config: {
        clusterAutoscalers: { fleet: 'karpenter', 'fleet/East': 'karpenter', 'fleet/eks.us-east-1': 'karpenter' },
      },
      want: [
        ['clusterAutoscalers.fleet', 'must be a ClusterProfile as namespace/name'],
        ['clusterAutoscalers.fleet/East', 'must be a ClusterProfile as namespace/name'],
      ],
    },
  ])('refuses $name, naming the field', ({ config, want }) => {
    const r = KubernetesSignalsConfigSchema.safeParse(config);
    expect(r.success ? [] : r.error.issues.map((i) => [i.path.join('.'), i.message])).toEqual(want);
  });
  it('refuses both providersFile and providers', () => {
    const r = KubernetesSignalsConfigSchema.safeParse({ providersFile: '/p.yaml', providers: [] });
    expect(r.success ? [] : r.error.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['providers', 'set providersFile or providers, not both'],
    ]);
  });
});

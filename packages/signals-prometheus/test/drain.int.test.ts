import { decide, drainStepSize, type ClusterProfile, type PlacementStatus } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { SignalRequest } from '@mco/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrometheusSignalsConfigSchema, createAuth, createPrometheusSignalSource } from '../src/index.js';
import { openMetrics, prometheusSkipReason, startPrometheus, type PrometheusServer } from './prometheus-server.js';

// Issue 41: a drain fed by the Prometheus source, through decide. fleet/a and
// fleet/c receive (ACTIVE), fleet/b drains (SCALING_IN) from 8 replicas; b's
// HPA follows each cap one evaluation later, as a delivery applying
// desiredMaxReplicas makes it do. fleet/a's Deployment ready replicas are
// exported by kube-state-metrics; fleet/c exports them for another Deployment
// only; fleet/d exports no ready-replica series at all.

const T = Date.parse('2026-01-01T00:00:00Z') / 1000;
const STEP = 60; // behavior.drain.stepIntervalSeconds (the default)
/** One sample a minute from T-10m to T+10m: `v(t)` at each. */
const series = (v: (t: number) => number) =>
  Array.from({ length: 21 }, (_, i) => [T - 600 + i * 60, v(T - 600 + i * 60)] as const);
const held = (v: number) => series(() => v);

/** MCO's clock: the caps a drain from `start` steps through, one per interval, down to 1. */
function mcoClock(start: number): number[] {
  const caps = [start];
  while (caps.at(-1)! > 1) caps.push(Math.max(1, caps.at(-1)! - drainStepSize(caps.at(-1)!, 25)));
  return caps;
}
const CAPS = mcoClock(8); // 8, 6, 4, 3, 2, 1
/** b's HPA at time t: the cap of the step taken at t-60 (8 before the first step at T). */
const bReplicas = (t: number) => CAPS[Math.min(CAPS.length - 1, Math.max(0, Math.floor((t - T) / STEP)))]!;

const hpa = (cluster: string) => ({ cluster, namespace: 'shop', horizontalpodautoscaler: 'web' });
/** An HPA series family: the receivers a, c and d at `receivers`, the drained b at `b`. */
const hpaFamily = (name: string, receivers: number, b: ReturnType<typeof series>) => ({
  name,
  type: 'gauge' as const,
  series: [
    [hpa('a'), held(receivers)],
    [hpa('b'), b],
    [hpa('c'), held(receivers)],
    [hpa('d'), held(receivers)],
  ] as [Record<string, string>, ReturnType<typeof series>][],
});
const SERIES = openMetrics([
  hpaFamily('kube_horizontalpodautoscaler_status_current_replicas', 5, series(bReplicas)),
  hpaFamily('kube_horizontalpodautoscaler_status_desired_replicas', 5, series(bReplicas)),
  hpaFamily('kube_horizontalpodautoscaler_spec_max_replicas', 20, held(8)),
  {
    name: 'kube_deployment_status_replicas_ready',
    type: 'gauge',
    series: [
      [{ cluster: 'a', namespace: 'shop', deployment: 'web' }, held(5)],
      [{ cluster: 'c', namespace: 'shop', deployment: 'other' }, held(3)],
    ],
  },
]);

const skip = prometheusSkipReason();
if (skip) console.warn(`[signals-prometheus] skipping real-Prometheus drain tests: ${skip}`);

describe.skipIf(!!skip)('a drain observed through a real Prometheus and decided by the engine', () => {
  let prometheus: PrometheusServer;
  beforeAll(async () => {
    prometheus = await startPrometheus(SERIES);
  });
  afterAll(async () => {
    await prometheus?.stop();
  });

  const spec = {
    scaling: {
      autoscaleForCapacity: {
        minClustersBelowCapacityCeiling: 1,
        useDraining: true,
        workloadDetails: { namespace: 'shop', deploymentName: 'web', hpaName: 'web' },
      },
    },
  };
  const profiles = ['fleet/a', 'fleet/b', 'fleet/c', 'fleet/d'].map((k) => aClusterProfile(k) as ClusterProfile);
  type Receiver = 'a' | 'c' | 'd';
  /** `receiver` receives, b drains from 8 with its first step due at T. */
  const initial = (receiver: Receiver): PlacementStatus => ({
    clusters: [
      { name: receiver, namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: '2025-12-31T00:00:00Z' },
      {
        name: 'b',
        namespace: 'fleet',
        state: 'SCALING_IN',
        lastTransitionTime: new Date((T - STEP) * 1000).toISOString(),
        reason: 'ScaleIn',
        draining: {
          desiredMaxReplicas: 8,
          lastReplicaCountDecrease: new Date((T - STEP) * 1000).toISOString(),
          initialDesiredMaxReplicas: 8,
        },
      },
    ],
  });

  /**
   * Evaluates once a minute from T for `minutes`, each time observing the
   * listed clusters through the source at that instant and feeding the
   * previous status back, as the controller does. Returns b's cap (or
   * `removed`) and what the drain says, per evaluation.
   */
  async function timeline(queries: Record<string, string | null>, receiver: Receiver, minutes: number) {
    let now = T;
    const source = createPrometheusSignalSource({
      config: PrometheusSignalsConfigSchema.parse({ url: prometheus.url, queries }),
      auth: createAuth(undefined),
      metrics: new Registry(),
      now: () => new Date(now * 1000),
    });
    let status = initial(receiver);
    const seen: string[] = [];
    for (let i = 0; i < minutes; i++, now += STEP) {
      const request: SignalRequest = {
        placement: { namespace: 'default', name: 'web', spec },
        clusters: (status.clusters ?? []).map((c) => ({
          key: `fleet/${c.name}`,
          profile: profiles.find((p) => p.metadata.name === c.name)!,
        })),
      };
      const { signals, errors } = await source.observe(request);
      expect(errors).toEqual([]);
      const d = decide({
        now: new Date(now * 1000),
        placement: { metadata: { name: 'web', namespace: 'default' }, spec, status },
        clusterProfiles: profiles,
        signals,
      });
      status = d.status;
      const b = status.clusters?.find((c) => c.name === 'b');
      const drain = b?.draining;
      const notes = [
        drain?.receiversReadyReplicas !== undefined ? `receivers ${drain.receiversReadyReplicas} ready` : '',
        drain?.unprotectedReason ?? '',
        drain?.pausedReason ?? '',
      ];
      seen.push(
        b ? [`+${now - T}s ${drain?.desiredMaxReplicas}`, ...notes].filter(Boolean).join(' ') : `+${now - T}s removed`,
      );
      if (!b) break;
    }
    return seen;
  }

  it('without a readyReplicas query the drain steps on the clock, unprotected, and ends within MCO’s steps', async () => {
    const seen = await timeline({ readyReplicas: null }, 'c', 10);
    expect(seen).toEqual([
      '+0s 6 ReadyReplicasNotReported',
      '+60s 4 ReadyReplicasNotReported',
      '+120s 3 ReadyReplicasNotReported',
      '+180s 2 ReadyReplicasNotReported',
      '+240s 1 ReadyReplicasNotReported',
      '+300s removed',
    ]);
    // MCO steps through CAPS once a minute: 5 steps, and R1 once b runs 1 replica.
    expect(seen.length - 1).toBe(CAPS.length - 1);
  });

  it('with the default query, readyReplicas is read and rule D1 checks it: a settled receiver lets each step through', async () => {
    expect(await timeline({}, 'a', 10)).toEqual([
      '+0s 6 receivers 5 ready',
      '+60s 4 receivers 5 ready',
      '+120s 3 receivers 5 ready',
      '+180s 2 receivers 5 ready',
      '+240s 1 receivers 5 ready',
      '+300s removed',
    ]);
  });

  it('with the default query and no ready-replica series for the receiver’s Deployment (its cluster exports others), the drain waits, visibly (ReadyReplicasUnknown)', async () => {
    expect(await timeline({}, 'c', 3)).toEqual([
      '+0s 8 ReadyReplicasUnknown',
      '+60s 8 ReadyReplicasUnknown',
      '+120s 8 ReadyReplicasUnknown',
    ]);
  });

  it('with the default query and a receiver whose cluster exports no ready-replica series at all, the source says it cannot report them there: the drain steps on the clock, unprotected', async () => {
    expect(await timeline({}, 'd', 10)).toEqual([
      '+0s 6 ReadyReplicasNotReported',
      '+60s 4 ReadyReplicasNotReported',
      '+120s 3 ReadyReplicasNotReported',
      '+180s 2 ReadyReplicasNotReported',
      '+240s 1 ReadyReplicasNotReported',
      '+300s removed',
    ]);
  });
});

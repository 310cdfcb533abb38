import type { ClusterProfile } from '@mco/core';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  McoError,
  observeEachCluster,
  observeWorkloadOnEachCluster,
  signalMetrics,
  type SignalRequest,
} from '../src/index.js';

const profile = (name: string) => ({ metadata: { name, namespace: 'fleet' } }) as ClusterProfile;
const request = (names: string[]): SignalRequest => ({
  placement: { namespace: 'app', name: 'web', spec: {} },
  clusters: names.map((n) => ({ key: `fleet/${n}`, profile: profile(n) })),
});
const observedAt = '2026-01-01T00:00:00Z';

describe('observeEachCluster', () => {
  it('leaves only the slow, the failing and the partial clusters without a full signal, and counts each result', async () => {
    const registry = new Registry();
    const result = await observeEachCluster(
      request(['ok', 'slow', 'broken', 'partial']),
      { source: 'test', concurrency: 2, timeoutMs: 100, metrics: signalMetrics(registry) },
      async ({ key }) => {
        if (key === 'fleet/slow') await new Promise((r) => setTimeout(r, 5_000));
        if (key === 'fleet/broken') throw new McoError('Unauthorized', 'credential plugin failed', true);
        if (key === 'fleet/partial') {
          return {
            signal: { cluster: key, observedAt, pendingPods: 0 },
            errors: [{ code: 'NotFound', message: 'no HPA' }],
          };
        }
        return { signal: { cluster: key, observedAt, pendingPods: 2 }, errors: [] };
      },
    );
    expect(result).toEqual({
      signals: [
        { cluster: 'fleet/ok', observedAt, pendingPods: 2 },
        { cluster: 'fleet/partial', observedAt, pendingPods: 0 },
      ],
      errors: [
        { cluster: 'fleet/slow', code: 'Timeout', message: 'no complete answer within 0.1 s; signal left missing' },
        { cluster: 'fleet/broken', code: 'Unauthorized', message: 'credential plugin failed' },
        { cluster: 'fleet/partial', code: 'NotFound', message: 'no HPA' },
      ],
    });
    const counts = (await registry.getSingleMetric('mco_signal_observations_total')!.get()).values.map((v) => [
      v.labels.cluster,
      v.labels.result,
      v.value,
    ]);
    expect(counts.sort()).toEqual([
      ['fleet/broken', 'failed', 1],
      ['fleet/ok', 'ok', 1],
      ['fleet/partial', 'partial', 1],
      ['fleet/slow', 'failed', 1],
    ]);
  });

  it('never runs more clusters at once than the concurrency', async () => {
    let running = 0;
    let peak = 0;
    await observeEachCluster(
      request(['a', 'b', 'c', 'd', 'e']),
      { source: 'test', concurrency: 2, timeoutMs: 1000, metrics: signalMetrics(new Registry()) },
      async () => {
        peak = Math.max(peak, ++running);
        await new Promise((r) => setTimeout(r, 10));
        running--;
        return { errors: [] };
      },
    );
    expect(peak).toBe(2);
  });

  it('at the overall deadline answers with what it has and marks the rest Timeout, counting them', async () => {
    const registry = new Registry();
    const never = new Promise<never>(() => {});
    const result = await observeEachCluster(
      request(['ok-1', 'hung-1', 'hung-2', 'ok-2', 'queued']),
      {
        source: 'test',
        concurrency: 2,
        timeoutMs: 60_000,
        metrics: signalMetrics(registry),
        abort: AbortSignal.timeout(300),
      },
      async ({ key }) => {
        if (key.startsWith('fleet/hung')) await never; // ignores its signal, as a blackholed member may
        return { signal: { cluster: key, observedAt, pendingPods: 1 }, errors: [] };
      },
    );
    const missing = 'not observed before the overall signal deadline; signal left missing';
    expect(result).toEqual({
      signals: [{ cluster: 'fleet/ok-1', observedAt, pendingPods: 1 }],
      errors: ['hung-1', 'hung-2', 'ok-2', 'queued'].map((n) => ({
        cluster: `fleet/${n}`,
        code: 'Timeout',
        message: missing,
      })),
    });
    const counts = (await registry.getSingleMetric('mco_signal_observations_total')!.get()).values
      .map((v) => `${v.labels.cluster} ${v.labels.result}`)
      .sort();
    expect(counts).toEqual([
      'fleet/hung-1 failed',
      'fleet/hung-2 failed',
      'fleet/ok-1 ok',
      'fleet/ok-2 failed',
      'fleet/queued failed',
    ]);
  });

  it('asks the clusters that ran out of time lately last, so blackholed members cannot starve the reachable ones', async () => {
    const outOfTime = new Set<string>();
    const names = ['dead-1', 'dead-2', 'live-1', 'live-2'];
    const round = () =>
      observeEachCluster(
        request(names),
        {
          source: 'test',
          concurrency: 2,
          timeoutMs: 60_000,
          metrics: signalMetrics(new Registry()),
          outOfTime,
          abort: AbortSignal.timeout(200),
        },
        async ({ key }) => {
          if (key.includes('dead')) await new Promise<never>(() => {});
          return { signal: { cluster: key, observedAt }, errors: [] };
        },
      ).then((r) => r.signals.map((s) => s.cluster));
    const first = await round();
    const late = [...outOfTime].sort();
    const second = await round();
    expect({ first, late, second }).toEqual({
      first: [],
      late: ['fleet/dead-1', 'fleet/dead-2'],
      second: ['fleet/live-1', 'fleet/live-2'],
    });
  });

  it('counts polls in a row that end in a transport error, per cluster, and reports them as transportError', async () => {
    const transportErrors = new Map<string, number>();
    const down = new Set(['fleet/gone', 'fleet/flaky']);
    const poll = () =>
      observeEachCluster(
        request(['up', 'gone', 'flaky', 'denied']),
        {
          source: 'test',
          concurrency: 4,
          timeoutMs: 1000,
          metrics: signalMetrics(new Registry()),
          transportErrors,
          now: () => new Date(observedAt),
        },
        async ({ key }) => {
          if (down.has(key)) throw new McoError('Unavailable', 'connect ECONNREFUSED', true);
          if (key === 'fleet/denied') throw new McoError('Unauthorized', 'forbidden', false);
          return { signal: { cluster: key, observedAt, pendingPods: 0 }, errors: [] };
        },
      );
    const transport = (o: Awaited<ReturnType<typeof poll>>) => o.signals.filter((g) => g.transportError);
    const at = new Date(observedAt).toISOString();
    expect(transport(await poll())).toEqual([
      { cluster: 'fleet/gone', observedAt: at, transportError: { reason: 'unavailable', consecutivePolls: 1 } },
      { cluster: 'fleet/flaky', observedAt: at, transportError: { reason: 'unavailable', consecutivePolls: 1 } },
    ]);
    down.delete('fleet/flaky'); // answers again: its count starts over
    const second = await poll();
    expect(transport(second)).toEqual([
      { cluster: 'fleet/gone', observedAt: at, transportError: { reason: 'unavailable', consecutivePolls: 2 } },
    ]);
    expect(second.errors.map((e) => e.cluster)).toEqual(['fleet/gone', 'fleet/denied']); // errors are still reported
    expect([...transportErrors]).toEqual([['fleet/gone', 2]]); // a 403 is no transport error
  });

  it('reports no transportError without a counter (a source reading a central store)', async () => {
    const result = await observeEachCluster(
      request(['gone']),
      { source: 'test', concurrency: 1, timeoutMs: 1000, metrics: signalMetrics(new Registry()) },
      async () => {
        throw new McoError('Timeout', 'i/o timeout', true);
      },
    );
    expect(result.signals).toEqual([]);
  });

  it('rejects when the caller aborts', async () => {
    const abort = new AbortController();
    const pending = observeEachCluster(
      request(['a']),
      { source: 'test', concurrency: 1, timeoutMs: 1000, metrics: signalMetrics(new Registry()), abort: abort.signal },
      () => new Promise(() => {}),
    );
    abort.abort(new Error('shutting down'));
    await expect(pending).rejects.toThrow('shutting down');
  });
});

describe('observeWorkloadOnEachCluster', () => {
  const workload = { namespace: 'inference', deploymentName: 'server', hpaName: 'server' };
  it.each<[string, SignalRequest['placement']['spec'], unknown]>([
    ['observes nothing for a placement that does not autoscale for capacity', {}, { signals: [], errors: [] }],
    [
      'reports, per cluster, a placement that autoscales but names no workload',
      { scaling: { autoscaleForCapacity: {} } } as SignalRequest['placement']['spec'],
      {
        signals: [],
        errors: ['a', 'b'].map((n) => ({
          cluster: `fleet/${n}`,
          code: 'Invalid',
          message: 'spec.scaling.autoscaleForCapacity.workloadDetails is not set: nothing to observe',
        })),
      },
    ],
    [
      'hands each cluster the named workload',
      { scaling: { autoscaleForCapacity: { workloadDetails: workload } } } as SignalRequest['placement']['spec'],
      {
        signals: ['a', 'b'].map((n) => ({ cluster: `fleet/${n}`, observedAt, pendingPods: 1 })),
        errors: [],
      },
    ],
  ])('%s', async (_name, spec, expected) => {
    const result = await observeWorkloadOnEachCluster(
      { ...request(['a', 'b']), placement: { namespace: 'app', name: 'web', spec } },
      { source: 'test', concurrency: 2, timeoutMs: 1000, metrics: signalMetrics(new Registry()) },
      async ({ key }, details) => {
        expect(details).toEqual(workload);
        return { signal: { cluster: key, observedAt, pendingPods: 1 }, errors: [] };
      },
    );
    expect(result).toEqual(expected);
  });
});

import { expect, it } from 'vitest';
import { observeEachCluster, signalMetrics, type CapacitySignalSource } from '@mco/runtime';
import { Registry } from 'prom-client';
import { waitFor, describeWithHub } from './support.js';
import { testController, useControllerHub } from './support-controller.js';

describeWithHub('controller with a signal source that cannot reach most members', () => {
  const env = useControllerHub();

  it('evaluates on time at the signal deadline with 16 of 20 members blackholed, and scales out to reachable clusters', async () => {
    await env.fleet.namespace('outage');
    await env.fleet.namespace('fleet-outage');
    const names = Array.from({ length: 24 }, (_, i) => `m${String(i + 1).padStart(2, '0')}`);
    for (const name of names) await env.fleet.createProfile('fleet-outage', name, { outage: 'yes' });
    // A source built like the real ones (per-cluster budget 60 s, 4 at a time): a blackholed member
    // accepts the connection and never answers, so observing 16 of them one by one would take minutes.
    const blackholed = new Set<string>();
    const atCeiling = new Set<string>();
    const outOfTime = new Set<string>();
    const source: CapacitySignalSource = {
      observe: (request, abort) =>
        observeEachCluster(
          request,
          {
            source: 'outage',
            concurrency: 4,
            timeoutMs: 60_000,
            metrics: signalMetrics(new Registry()),
            outOfTime,
            abort,
          },
          async ({ key }) => {
            if (blackholed.has(key)) await new Promise(() => {});
            const signal = {
              cluster: key,
              observedAt: new Date().toISOString(),
              workloadHealthy: true,
              hpa: { currentReplicas: 3 },
              ...(atCeiling.has(key) ? { atCapacityCeiling: true } : {}),
            };
            return { signal, errors: [] };
          },
        ),
    };
    env.start(
      testController(env.hub.controllerKubeConfig(), {
        sources: { outage: source },
        defaultSignalSource: 'outage',
        signalTimeoutMs: 3_000,
      }),
    );
    await env.fleet.createPlacement('outage', 'web', {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingRequiredDuringExecution: {
            clusterSelectorTerms: [
              { matchExpressions: [{ labelSelector: { key: 'outage', operator: 'In', values: ['yes'] } }] },
            ],
          },
        },
      },
      scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 20 } },
    });
    const listed = await waitFor('20 clusters listed', async () => {
      const states = await env.fleet.states('outage', 'web');
      return states.length === 20 && states;
    });
    const keys = listed.map((s) => s.split(':')[0]!);
    // The regional outage: the first 16 listed members stop answering (so 4 at a time use up each
    // deadline until they are asked last); the 4 reachable ones hit their ceiling.
    for (const key of keys.slice(0, 16)) blackholed.add(key);
    for (const key of keys.slice(16)) atCeiling.add(key);
    const started = Date.now();
    const after = await waitFor(
      'scale-out to the 4 unlisted clusters',
      async () => {
        const states = await env.fleet.states('outage', 'web');
        return states.length === 24 && states;
      },
      60_000,
    );
    console.log(`scaled out ${((Date.now() - started) / 1000).toFixed(1)} s after the outage (signal timeout 3 s)`);
    const observed = (await env.fleet.condition('outage', 'web', 'SignalsObserved')) as {
      status: string;
      message?: string;
    };
    expect({
      states: after,
      added: after.filter((s) => !listed.includes(s)),
      signalsObserved: observed.status,
      firstMissing: observed.message?.split('; ')[0],
    }).toEqual({
      states: names.map((n) => `fleet-outage/${n}:ACTIVE`),
      added: names.filter((n) => !keys.includes(`fleet-outage/${n}`)).map((n) => `fleet-outage/${n}:ACTIVE`),
      signalsObserved: 'False',
      firstMissing: `${keys[0]}: Timeout`, // the message goes on after "; "
    });
  });
});

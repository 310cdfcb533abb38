import { expect, it } from 'vitest';
import { waitFor, describeWithHub } from './support.js';
import { counterValue, testController, useControllerHub } from './support-controller.js';

const byLabel = (value: string) => ({
  affinity: {
    clusterAffinity: {
      requiredDuringSchedulingRequiredDuringExecution: {
        clusterSelectorTerms: [
          { matchExpressions: [{ labelSelector: { key: 'pool', operator: 'In', values: [value] } }] },
        ],
      },
    },
  },
});

// --min-request-timeout=1: the apiserver ends every watch after 1-2 s.
describeWithHub('controller under cut watches and an apiserver restart', () => {
  const env = useControllerHub({ minRequestTimeoutSeconds: 1 });
  const { start } = env;

  it('loses no change while the apiserver cuts every watch after 1-2 s', async () => {
    await env.fleet.namespace('cut');
    await env.fleet.namespace('fleet-cut');
    const controller = start(testController(env.hub.controllerKubeConfig(), { watchTimeoutSeconds: 0 }));
    await controller.waitForSync();
    for (let i = 0; i < 3; i++) await env.fleet.createPlacement('cut', `p${i}`, byLabel(`pool${i}`));
    const expected: Record<string, string[]> = { p0: [], p1: [], p2: [] };
    // 24 changes over ~6 s: profiles created in pools, then moved between them.
    for (let i = 0; i < 12; i++) {
      await env.fleet.createProfile('fleet-cut', `c${i}`, { pool: `pool${i % 3}` });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    for (let i = 0; i < 12; i += 2) {
      await env.fleet.labelProfile('fleet-cut', `c${i}`, { pool: `pool${(i + 1) % 3}` });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    for (let i = 0; i < 12; i++) {
      const pool = i % 2 === 0 ? (i + 1) % 3 : i % 3;
      expected[`p${pool}`]!.push(`fleet-cut/c${i}:ACTIVE`);
    }
    for (const key of Object.keys(expected)) expected[key]!.sort();
    const actual = await waitFor('converged', async () => {
      const now: Record<string, string[]> = {};
      for (const key of Object.keys(expected)) now[key] = (await env.fleet.states('cut', key)).sort();
      return JSON.stringify(now) === JSON.stringify(expected) && now;
    });
    expect(actual).toEqual(expected);
    const health = controller.informers.clusterProfiles.health();
    expect({ watchesReopened: health.watches >= 3, lists: health.lists }).toEqual({ watchesReopened: true, lists: 1 });
  });

  it('keeps going through an apiserver restart and catches up with what changed', async () => {
    await env.fleet.namespace('boot');
    await env.fleet.namespace('fleet-boot');
    const controller = start(testController(env.hub.controllerKubeConfig(), { watchTimeoutSeconds: 0 }));
    await env.fleet.createProfile('fleet-boot', 'b1', { pool: 'boot' });
    await env.fleet.createPlacement('boot', 'svc', byLabel('boot'));
    await waitFor('decided', async () => (await env.fleet.states('boot', 'svc')).length === 1);
    await env.fleet.createProfile('fleet-boot', 'b2', { pool: 'boot' }); // reconciled while the server goes away
    await env.hub.plane.hub.restart();
    await env.fleet.createProfile('fleet-boot', 'b3', { pool: 'boot' });
    const states = await waitFor(
      'caught up',
      async () => {
        const s = await env.fleet.states('boot', 'svc');
        return s.length === 3 && s;
      },
      30_000,
    );
    expect({
      states,
      // PlacementDecisions may trail the status by up to decisionsMaxDeferMs (30 s) while status
      // work waits, as after a restart on a loaded machine: wait past that bound.
      decisions: await waitFor(
        'decisions',
        async () => {
          const d = await env.fleet.decisionSummary('boot');
          return d[0]?.includes('b3') && d;
        },
        45_000,
      ),
      ready: controller.isReady(),
    }).toEqual({
      states: ['fleet-boot/b1:ACTIVE', 'fleet-boot/b2:ACTIVE', 'fleet-boot/b3:ACTIVE'],
      decisions: ['svc-0: fleet-boot/b1=ACTIVE,fleet-boot/b2=ACTIVE,fleet-boot/b3=ACTIVE'],
      ready: true,
    });
    expect(await counterValue(controller, 'mco_controller_reconcile_total', { result: 'success' })).toBeGreaterThan(0);
  });
});

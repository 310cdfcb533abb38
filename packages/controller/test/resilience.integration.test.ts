import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { Controller } from '../src/index.js';
import { Fleet, startHub, waitFor, type Hub, describeWithHub } from './support.js';
import { counterValue, testController } from './support-controller.js';

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
  let hub: Hub;
  let fleet: Fleet;
  const running: Controller[] = [];
  const start = (controller: Controller) => {
    running.push(controller);
    controller.start();
    return controller;
  };

  beforeAll(async () => {
    hub = await startHub({ minRequestTimeoutSeconds: 1 });
    fleet = new Fleet(hub);
  });
  afterAll(async () => {
    await hub?.stop();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
  });

  it('loses no change while the apiserver cuts every watch after 1-2 s', async () => {
    await fleet.namespace('cut');
    await fleet.namespace('fleet-cut');
    const controller = start(testController(hub.controllerKubeConfig(), { watchTimeoutSeconds: 0 }));
    await controller.waitForSync();
    for (let i = 0; i < 3; i++) await fleet.createPlacement('cut', `p${i}`, byLabel(`pool${i}`));
    const expected: Record<string, string[]> = { p0: [], p1: [], p2: [] };
    // 24 changes over ~6 s: profiles created in pools, then moved between them.
    for (let i = 0; i < 12; i++) {
      await fleet.createProfile('fleet-cut', `c${i}`, { pool: `pool${i % 3}` });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    for (let i = 0; i < 12; i += 2) {
      await fleet.labelProfile('fleet-cut', `c${i}`, { pool: `pool${(i + 1) % 3}` });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    for (let i = 0; i < 12; i++) {
      const pool = i % 2 === 0 ? (i + 1) % 3 : i % 3;
      expected[`p${pool}`]!.push(`fleet-cut/c${i}:ACTIVE`);
    }
    for (const key of Object.keys(expected)) expected[key]!.sort();
    const actual = await waitFor('converged', async () => {
      const now: Record<string, string[]> = {};
      for (const key of Object.keys(expected)) now[key] = (await fleet.states('cut', key)).sort();
      return JSON.stringify(now) === JSON.stringify(expected) && now;
    });
    expect(actual).toEqual(expected);
    const health = controller.informers.clusterProfiles.health();
    expect({ watchesReopened: health.watches >= 3, lists: health.lists }).toEqual({ watchesReopened: true, lists: 1 });
  });

  it('keeps going through an apiserver restart and catches up with what changed', async () => {
    await fleet.namespace('boot');
    await fleet.namespace('fleet-boot');
    const controller = start(testController(hub.controllerKubeConfig(), { watchTimeoutSeconds: 0 }));
    await fleet.createProfile('fleet-boot', 'b1', { pool: 'boot' });
    await fleet.createPlacement('boot', 'svc', byLabel('boot'));
    await waitFor('decided', async () => (await fleet.states('boot', 'svc')).length === 1);
    await fleet.createProfile('fleet-boot', 'b2', { pool: 'boot' }); // reconciled while the server goes away
    await hub.plane.hub.restart();
    await fleet.createProfile('fleet-boot', 'b3', { pool: 'boot' });
    const states = await waitFor(
      'caught up',
      async () => {
        const s = await fleet.states('boot', 'svc');
        return s.length === 3 && s;
      },
      30_000,
    );
    expect({
      states,
      decisions: await waitFor('decisions', async () => {
        const d = await fleet.decisionSummary('boot');
        return d[0]?.includes('b3') && d;
      }),
      ready: controller.isReady(),
    }).toEqual({
      states: ['fleet-boot/b1:ACTIVE', 'fleet-boot/b2:ACTIVE', 'fleet-boot/b3:ACTIVE'],
      decisions: ['svc-0: fleet-boot/b1=ACTIVE,fleet-boot/b2=ACTIVE,fleet-boot/b3=ACTIVE'],
      ready: true,
    });
    expect(await counterValue(controller, 'mco_controller_reconcile_total', { result: 'success' })).toBeGreaterThan(0);
  });
});

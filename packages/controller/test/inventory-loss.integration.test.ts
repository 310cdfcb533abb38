import { ApiextensionsV1Api } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { CONFIRMED_AT_KEY, INVENTORY_LOSS_CONFIRMATION } from '../src/index.js';
import { crdSources, describeWithHub, RELEASE_NAMESPACE, waitFor } from './support.js';
import { testController, useControllerHub } from './support-controller.js';

describeWithHub('the inventory-loss guard on a real kube-apiserver (docs/placement-rules.md §10.5)', () => {
  const env = useControllerHub();

  it('keeps every cluster after 40% of the profiles vanish at once and after the ClusterProfile CRD is deleted and reinstalled, until confirmed or restored', async () => {
    await env.fleet.namespace('loss');
    await env.fleet.namespace('fleet-loss');
    const names = Array.from({ length: 10 }, (_, i) => `l${String(i + 1).padStart(2, '0')}`);
    for (const name of names) await env.fleet.createProfile('fleet-loss', name, { loss: 'yes' });
    const controller = env.start(testController(env.hub.controllerKubeConfig()));
    const guardEngaged = async () => {
      const text = await controller.metrics.registry.metrics();
      return /^mco_controller_inventory_loss_guard_engaged (\d)$/m.exec(text)?.[1];
    };
    // Without autoscaling, and a 1 s grace: only the guard keeps the clusters of missing profiles.
    await env.fleet.createPlacement('loss', 'web', {
      affinity: {
        clusterAffinity: {
          requiredDuringSchedulingRequiredDuringExecution: {
            clusterSelectorTerms: [
              { matchExpressions: [{ labelSelector: { key: 'loss', operator: 'In', values: ['yes'] } }] },
            ],
          },
        },
      },
      scaling: { behavior: { profileLossGraceSeconds: 1 } },
    });
    const all = names.map((n) => `fleet-loss/${n}:ACTIVE`);
    await waitFor(
      '10 clusters listed',
      async () => JSON.stringify(await env.fleet.states('loss', 'web')) === JSON.stringify(all),
    );

    // 40% at once: a provider, a file or a person went wrong.
    const lost = names.slice(0, 4);
    await Promise.all(lost.map((n) => env.fleet.deleteProfile('fleet-loss', n)));
    const held = await waitFor('Satisfied=Unknown InventoryShrunk', async () => {
      const c = (await env.fleet.condition('loss', 'web', 'Satisfied')) as { status: string; reason?: string };
      return c?.reason === 'InventoryShrunk' && c;
    });
    // Well past the 1 s grace (a wait: what is checked is that nothing happens).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const whileHeld = await env.fleet.states('loss', 'web');
    const event = (await env.fleet.events('loss')).find((e) => e.reason === 'InventoryShrunk');
    const engagedWhileHeld = await guardEngaged();

    // The CRD goes and comes back (as an uninstall/reinstall would): every profile vanishes.
    const crds = env.hub.admin.makeApiClient(ApiextensionsV1Api);
    await crds.deleteCustomResourceDefinition({ name: 'clusterprofiles.multicluster.x-k8s.io' });
    await waitFor(
      'CRD gone',
      async () => {
        try {
          await crds.readCustomResourceDefinition({ name: 'clusterprofiles.multicluster.x-k8s.io' });
          return false;
        } catch {
          return true;
        }
      },
      60_000,
    );
    await env.hub.plane.hub.installCrds(crdSources());
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const afterCrdLoss = await env.fleet.states('loss', 'web');
    // The provider puts the six back: they are ACTIVE again (E2); the four lost ones are still held.
    for (const name of names.slice(4)) await env.fleet.createProfile('fleet-loss', name, { loss: 'yes' });
    const restored = await waitFor(
      'six ACTIVE again',
      async () => {
        const states = await env.fleet.states('loss', 'web');
        return states.filter((s) => s.endsWith(':ACTIVE')).length === 6 && states;
      },
      30_000,
    );

    // The operator confirms (what `mco clusters confirm-removal` writes, in the controller's namespace): the four go.
    await env.hub.core.createNamespacedConfigMap({
      namespace: RELEASE_NAMESPACE,
      body: {
        metadata: { name: INVENTORY_LOSS_CONFIRMATION },
        data: { [CONFIRMED_AT_KEY]: new Date().toISOString() },
      },
    });
    const confirmed = await waitFor(
      'the four removed',
      async () => {
        const states = await env.fleet.states('loss', 'web');
        return states.length === 6 && states;
      },
      30_000,
    );
    const satisfied = (await env.fleet.condition('loss', 'web', 'Satisfied')) as { status: string };

    expect({
      held: held.status,
      whileHeld: whileHeld.sort(),
      event: event && { type: event.type, message: event.message?.slice(0, 40) },
      engagedWhileHeld,
      afterCrdLoss: afterCrdLoss.sort(),
      restored: restored.sort(),
      confirmed: confirmed.sort(),
      satisfied: satisfied.status,
      engagedAfterConfirmation: await guardEngaged(),
    }).toEqual({
      held: 'Unknown',
      whileHeld: [...lost.map((n) => `fleet-loss/${n}:EVICTING`), ...all.slice(4)],
      event: { type: 'Warning', message: "Satisfied=Unknown: the fleet's ClusterPr" },
      engagedWhileHeld: '1',
      afterCrdLoss: names.map((n) => `fleet-loss/${n}:EVICTING`),
      restored: [...lost.map((n) => `fleet-loss/${n}:EVICTING`), ...all.slice(4)],
      confirmed: all.slice(4),
      satisfied: 'True',
      engagedAfterConfirmation: '0',
    });
  });
});

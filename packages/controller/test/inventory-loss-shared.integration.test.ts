import { CoordinationV1Api } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import type { Controller } from '../src/index.js';
import { INVENTORY_LOSS_ANNOTATION, inventoryLossLeaseName } from '../src/inventory-loss-state.js';
import { shardOf } from '../src/shards.js';
import { describeWithHub, LEASE_NAME, LEASE_NAMESPACE, RELEASE_NAMESPACE, waitFor } from './support.js';
import { counterValue, FAST_LEADER_ELECTION, testController, useControllerHub } from './support-controller.js';

// Replicas agree on the inventory-loss guard (docs/placement-rules.md §10.5): the loss one replica saw is
// recorded on a Lease they share, so a replica that starts after the loss holds the same removals on
// the shards it takes, and the operator's confirmation releases every replica.

const SHARDS = 2;
const leaderElection = { ...FAST_LEADER_ELECTION, shards: SHARDS };
const PLACEMENTS = Array.from({ length: 8 }, (_, i) => `app-${i}`);

async function guardEngaged(controller: Controller): Promise<string | undefined> {
  const text = await controller.metrics.registry.metrics();
  return /^mco_controller_inventory_loss_guard_engaged (\d)$/m.exec(text)?.[1];
}

describeWithHub('the inventory-loss guard shared by replicas on a real kube-apiserver', () => {
  const env = useControllerHub();

  it('a replica started after a loss holds the same removals on the shards it takes; a confirmation releases both and clears the record', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('shared-loss');
    await fleet.namespace('fleet-shared');
    const names = ['s1', 's2', 's3', 's4', 's5', 's6'];
    for (const name of names) await fleet.createProfile('fleet-shared', name, { shared: 'yes' });
    const first = env.start(
      testController(hub.controllerKubeConfig(), { identity: 'mco-system/mco/first', leaderElection }),
    );
    // Without autoscaling, and a 1 s grace: only the guard keeps the clusters of missing profiles.
    for (const name of PLACEMENTS)
      await fleet.createPlacement('shared-loss', name, {
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingRequiredDuringExecution: {
              clusterSelectorTerms: [
                { matchExpressions: [{ labelSelector: { key: 'shared', operator: 'In', values: ['yes'] } }] },
              ],
            },
          },
        },
        scaling: { behavior: { profileLossGraceSeconds: 1 } },
      });
    const listed = async () => Promise.all(PLACEMENTS.map((p) => fleet.states('shared-loss', p)));
    await waitFor('6 clusters listed everywhere', async () => (await listed()).every((s) => s.length === 6), 30_000);

    await Promise.all(names.slice(0, 3).map((n) => fleet.deleteProfile('fleet-shared', n)));
    const leases = hub.admin.makeApiClient(CoordinationV1Api);
    const recorded = async () =>
      (await leases.readNamespacedLease({ namespace: LEASE_NAMESPACE, name: inventoryLossLeaseName(LEASE_NAME) }))
        .metadata?.annotations?.[INVENTORY_LOSS_ANNOTATION];
    const record = await waitFor('the loss recorded on the shared Lease', () => recorded().catch(() => undefined));

    // The second replica starts after the loss: its own count never dropped.
    const second = env.start(
      testController(hub.controllerKubeConfig(), { identity: 'mco-system/mco/second', leaderElection }),
    );
    const secondKeys = await waitFor('the shards shared out', async () => {
      const owned = second.ownedShards();
      return owned.length === 1 && PLACEMENTS.filter((p) => shardOf(`shared-loss/${p}`, SHARDS) === owned[0]);
    });
    // It evaluated every placement of its shard (more than the grace later, nothing may go).
    await waitFor(
      'the second replica reconciled its shard',
      async () =>
        (await counterValue(second, 'mco_controller_reconcile_total', { result: 'success' })) >= secondKeys.length,
    );
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // a wait: what is checked is that nothing happens
    const whileHeld = await listed();
    const engaged = [await guardEngaged(first), await guardEngaged(second)];

    // The operator confirms: both release; the record is cleared.
    await hub.plane.hub.apply([
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'mco-inventory-loss-confirmation', namespace: RELEASE_NAMESPACE },
        data: { confirmedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
      },
    ] as never);
    await waitFor('3 clusters left everywhere', async () => (await listed()).every((s) => s.length === 3), 30_000);
    await waitFor('the record cleared', async () => (await recorded()) === undefined);

    expect({
      record: JSON.parse(record) as unknown,
      secondOwnsPlacements: secondKeys.length > 0,
      whileHeld: whileHeld.map((s) => s.filter((c) => c.endsWith(':EVICTING')).length),
      engaged,
      released: [await guardEngaged(first), await guardEngaged(second)],
    }).toEqual({
      record: { baseline: 6, since: expect.any(Number), low: 3 },
      secondOwnsPlacements: true,
      whileHeld: PLACEMENTS.map(() => 3),
      engaged: ['1', '1'],
      released: ['0', '0'],
    });
  });
});

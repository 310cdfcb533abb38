import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { PLACEMENTS } from '@mco/kube-runtime';
import { expect, it } from 'vitest';
import type { Controller } from '@mco/controller';
import { main } from '../src/main.js';
// The controller's own integration-test harness: a real kube-apiserver with the chart's CRDs and RBAC.
import {
  describeWithHub,
  RELEASE_NAMESPACE,
  tenantKubeConfig,
  waitFor,
} from '../../../packages/controller/test/support.js';
import {
  FAST_LEADER_ELECTION,
  testController,
  useControllerHub,
} from '../../../packages/controller/test/support-controller.js';

// Who may release the fleet-wide inventory-loss guard: the operator, through
// the ConfigMap `mco clusters confirm-removal` writes in the controller's
// namespace. A tenant's placement annotation (the former way) changes nothing,
// the tenant cannot write the ConfigMap, and a time far ahead of the
// controller's clock is refused.

const CONFIRMATION = 'mco-inventory-loss-confirmation';
const OLD_ANNOTATION = 'orchestra.multicluster.x-k8s.io/inventory-loss-confirmed-at';

/** The inventory-loss guard gauge of one replica: '1' engaged, '0' not. */
async function guardEngaged(controller: Controller): Promise<string | undefined> {
  const text = await controller.metrics.registry.metrics();
  return /^mco_controller_inventory_loss_guard_engaged (\d)$/m.exec(text)?.[1];
}

async function mco(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describeWithHub('confirming an inventory loss on a real kube-apiserver', () => {
  const env = useControllerHub();

  it('a tenant cannot release the guard (its annotation is ignored, the confirmation is forbidden to it), a future time is refused, `mco clusters confirm-removal` releases it', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('team-a');
    await fleet.namespace('fleet-c');
    const dir = mkdtempSync(join(tmpdir(), 'mco-confirm-'));
    try {
      // A team's ServiceAccount: placements in its own namespace, nothing else.
      const tenant = await tenantKubeConfig(hub, 'team-a');
      const tenantKubeconfig = join(dir, 'tenant');
      writeFileSync(tenantKubeconfig, tenant.exportConfig());
      const adminKubeconfig = join(dir, 'admin');
      writeFileSync(adminKubeconfig, hub.admin.exportConfig());

      const names = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'];
      for (const name of names) await fleet.createProfile('fleet-c', name, { confirm: 'yes' });
      // Two replicas: the standby sees the loss too, and must agree with the confirmation once it leads.
      const replicas = ['first', 'second'].map((identity) =>
        env.start(testController(hub.controllerKubeConfig(), { identity, leaderElection: FAST_LEADER_ELECTION })),
      );
      const leader = await waitFor('a leader', () => replicas.find((r) => r.isLeader()));
      const standby = replicas.find((r) => r !== leader)!;
      // Without autoscaling, and a 1 s grace: only the guard keeps the clusters of missing profiles.
      await fleet.createPlacement('team-a', 'web', {
        affinity: {
          clusterAffinity: {
            requiredDuringSchedulingRequiredDuringExecution: {
              clusterSelectorTerms: [
                { matchExpressions: [{ labelSelector: { key: 'confirm', operator: 'In', values: ['yes'] } }] },
              ],
            },
          },
        },
        scaling: { behavior: { profileLossGraceSeconds: 1 } },
      });
      const all = names.map((n) => `fleet-c/${n}:ACTIVE`);
      await waitFor(
        '6 clusters listed',
        async () => JSON.stringify(await fleet.states('team-a', 'web')) === JSON.stringify(all),
      );
      const held = [...names.slice(0, 3).map((n) => `fleet-c/${n}:EVICTING`), ...all.slice(3)].sort();

      // Half the fleet at once: the guard engages.
      await Promise.all(names.slice(0, 3).map((n) => fleet.deleteProfile('fleet-c', n)));
      await waitFor('Satisfied=Unknown InventoryShrunk', async () => {
        const c = await fleet.condition('team-a', 'web', 'Satisfied');
        return c?.reason === 'InventoryShrunk';
      });

      // 1. The tenant annotates its placement as the former confirmation did: accepted by the API, ignored by mco.
      const annotated = await tenant.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
        {
          ...PLACEMENTS,
          namespace: 'team-a',
          name: 'web',
          body: { metadata: { annotations: { [OLD_ANNOTATION]: new Date().toISOString() } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      // 2. It cannot write the confirmation, neither through the API nor through the command.
      const tenantCreate = await tenant
        .makeApiClient(CoreV1Api)
        .createNamespacedConfigMap({
          namespace: RELEASE_NAMESPACE,
          body: { metadata: { name: CONFIRMATION }, data: { confirmedAt: new Date().toISOString() } },
        })
        .then(
          () => 'created',
          (error: { code?: number }) => error.code,
        );
      const tenantCommand = await mco('clusters', 'confirm-removal', '--kubeconfig', tenantKubeconfig);
      // Well past the 1 s grace (a wait: what is checked is that nothing happens).
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const afterTenant = (await fleet.states('team-a', 'web')).sort();

      // 3. A confirmation dated in the far future is refused, with a Warning Event on it.
      const [future] = await hub.plane.hub.apply([
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: CONFIRMATION, namespace: RELEASE_NAMESPACE },
          data: { confirmedAt: '2999-01-01T00:00:00Z' },
        },
      ] as never);
      const refused = await waitFor('the refusal Event', async () =>
        (await fleet.events(RELEASE_NAMESPACE)).find((e) => e.reason === 'InventoryLossConfirmationRefused'),
      );
      const afterFuture = (await fleet.states('team-a', 'web')).sort();
      const readConfirmation = () =>
        hub.core.readNamespacedConfigMap({ namespace: RELEASE_NAMESPACE, name: CONFIRMATION });
      const before = await readConfirmation();

      // 4. The command refuses -n (a confirmation is fleet-wide); a dry run stores nothing.
      const withNamespace = await mco('clusters', 'confirm-removal', '-n', 'team-a', '--kubeconfig', adminKubeconfig);
      const dryRun = await mco('clusters', 'confirm-removal', '--dry-run', '--kubeconfig', adminKubeconfig);
      const afterDryRun = await readConfirmation();

      // 5. The operator confirms: the three go.
      const confirmed = await mco('clusters', 'confirm-removal', '--kubeconfig', adminKubeconfig);
      const released = await waitFor(
        'the three removed',
        async () => {
          const states = await fleet.states('team-a', 'web');
          return states.length === 3 && states;
        },
        30_000,
      );
      const stored = await readConfirmation();
      const time = /^confirmed at (\S+Z) in/.exec(confirmed.stdout)?.[1];

      // 6. The standby saw the loss but applied nothing; once it leads it reads the same confirmation and agrees.
      const standbyBefore = await guardEngaged(standby);
      await leader.stop();
      await waitFor('the standby leads', () => standby.isLeader());
      await waitFor('its guard released', async () => (await guardEngaged(standby)) === '0');
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // a wait: nothing may come back
      const afterFailover = (await fleet.states('team-a', 'web')).sort();

      expect({
        annotated: (annotated as { metadata: { annotations: Record<string, string> } }).metadata.annotations[
          OLD_ANNOTATION
        ]?.endsWith('Z'),
        tenantCreate,
        tenantCommand: { code: tenantCommand.code, forbidden: /forbidden/i.test(tenantCommand.stderr) },
        afterTenant,
        futureStored: (future as { data?: Record<string, string> }).data,
        refused: {
          type: refused.type,
          object: `${refused.involvedObject.kind} ${refused.involvedObject.namespace}/${refused.involvedObject.name}`,
          message: refused.message,
        },
        afterFuture,
        withNamespace: { code: withNamespace.code, stderr: withNamespace.stderr.split('\n')[0] },
        dryRun: { code: dryRun.code, dry: dryRun.stdout.includes('(dry run: nothing stored)') },
        dryRunKeptVersion: afterDryRun.metadata?.resourceVersion === before.metadata?.resourceVersion,
        confirmed: { code: confirmed.code, stderr: confirmed.stderr },
        stored: stored.data,
        released: released.sort(),
        satisfied: (await fleet.condition('team-a', 'web', 'Satisfied'))?.status,
        standbyBefore,
        afterFailover,
      }).toEqual({
        annotated: true,
        tenantCreate: 403,
        tenantCommand: { code: 1, forbidden: true },
        afterTenant: held,
        futureStored: { confirmedAt: '2999-01-01T00:00:00Z' },
        refused: {
          type: 'Warning',
          object: `ConfigMap ${RELEASE_NAMESPACE}/${CONFIRMATION}`,
          message: expect.stringMatching(
            /^the inventory-loss confirmation is refused; held removals stay held: data\.confirmedAt \(2999-01-01T00:00:00Z\) is more than 60 s ahead of the controller's clock/,
          ),
        },
        afterFuture: held,
        withNamespace: {
          code: 2,
          stderr: expect.stringContaining('confirm-removal confirms for the whole fleet and takes no -n'),
        },
        dryRun: { code: 0, dry: true },
        dryRunKeptVersion: true,
        confirmed: { code: 0, stderr: '' },
        stored: { confirmedAt: time },
        released: all.slice(3),
        satisfied: 'True',
        standbyBefore: '1',
        afterFailover: all.slice(3),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

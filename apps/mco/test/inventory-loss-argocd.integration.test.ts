import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiextensionsV1Api } from '@kubernetes/client-node';
import { startArgoCdDelivery, type ArgoCdDelivery } from '@mco/argocd';
import { expect, it } from 'vitest';
import { main } from '../src/main.js';
// The controller's own integration-test harness: a real kube-apiserver with the chart's CRDs and RBAC.
import { crdSources, describeWithHub, waitFor } from '../../../packages/controller/test/support.js';
import { testController, useControllerHub } from '../../../packages/controller/test/support-controller.js';

// The Argo CD half of the inventory-loss guard (docs/placement-rules.md §10.5): when 40% of
// the ClusterProfiles vanish at once, and when the ClusterProfile CRD is
// deleted and reinstalled, the real controller holds the clusters and neither
// the cluster Secrets the syncer wrote nor the plugin generator's parameters
// lose one, until `mco clusters confirm-removal` confirms the loss.

const TOKEN = 'plugin-token-loss';

async function mco(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describeWithHub('the inventory-loss guard through Argo CD delivery on a real kube-apiserver', () => {
  const env = useControllerHub();

  it('keeps every Argo CD cluster Secret and generator parameter after 40% of the profiles vanish and after the CRD is reinstalled, until `mco clusters confirm-removal`', async () => {
    const { fleet, hub } = env;
    await fleet.namespace('loss');
    await fleet.namespace('fleet-loss');
    await fleet.namespace('argocd');
    const dir = mkdtempSync(join(tmpdir(), 'mco-loss-argocd-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, hub.admin.exportConfig());
    writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
    const names = Array.from({ length: 10 }, (_, i) => `l${String(i + 1).padStart(2, '0')}`);
    for (const name of names) await fleet.createProfile('fleet-loss', name, { loss: 'yes' });
    env.start(testController(hub.controllerKubeConfig()));
    // Without autoscaling, and a 1 s grace: only the guard keeps the clusters of missing profiles.
    await fleet.createPlacement('loss', 'web', {
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

    let delivery: ArgoCdDelivery | undefined;
    try {
      delivery = await startArgoCdDelivery({
        kubeConfig: hub.admin,
        plugin: { host: '127.0.0.1', port: 0, tokenFile: join(dir, 'token') },
        secretSync: {
          namespace: 'argocd',
          resolveAccess: async (profile) => ({
            server: `https://${profile.metadata.name}.example:6443`,
            insecureSkipTlsVerify: false,
            getCredential: async () => ({ token: 't' }),
          }),
          // Short, so a Secret released too early would be gone within the waits below.
          releaseGraceMs: 1000,
          lease: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
        },
      });
      const port = delivery.pluginAddress!.port;
      /** The `name` parameters Argo CD's plugin generator gets for loss/web, or the HTTP status when it gets none. */
      const parameters = async (): Promise<string[] | number> => {
        const response = await fetch(`http://127.0.0.1:${port}/api/v1/getparams.execute`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            applicationSetName: 'web',
            input: {
              parameters: {
                multiClusterOrchestraPlacementName: 'web',
                multiClusterOrchestraPlacementNamespace: 'loss',
              },
            },
          }),
        });
        if (response.status !== 200) return response.status;
        const body = (await response.json()) as { output: { parameters: { name: string }[] } };
        return body.output.parameters.map((p) => p.name).sort();
      };
      const secrets = async () =>
        (
          await hub.core.listNamespacedSecret({
            namespace: 'argocd',
            labelSelector: 'argocd.argoproj.io/secret-type=cluster',
          })
        ).items
          .map((s) => s.metadata!.name!)
          .sort();
      const all = names.map((n) => `fleet-loss.${n}`);
      const kept = all.slice(4);
      const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
      await waitFor(
        '10 parameters and 10 Secrets',
        async () => same(await parameters(), all) && same(await secrets(), all),
        60_000,
      );

      // 40% at once: a provider, a file or a person went wrong.
      await Promise.all(names.slice(0, 4).map((n) => fleet.deleteProfile('fleet-loss', n)));
      await waitFor('Satisfied=Unknown InventoryShrunk', async () => {
        const c = (await fleet.condition('loss', 'web', 'Satisfied')) as { reason?: string } | undefined;
        return c?.reason === 'InventoryShrunk';
      });
      // Well past the profile-loss and release graces (a wait: what is checked is that nothing goes).
      await new Promise((resolve) => setTimeout(resolve, 4000));
      const afterLoss = { parameters: await parameters(), secrets: await secrets() };

      // The CRD goes and comes back (as an uninstall/reinstall would): every profile vanishes.
      const crds = hub.admin.makeApiClient(ApiextensionsV1Api);
      await crds.deleteCustomResourceDefinition({ name: 'clusterprofiles.multicluster.x-k8s.io' });
      await waitFor(
        'CRD gone',
        () =>
          crds.readCustomResourceDefinition({ name: 'clusterprofiles.multicluster.x-k8s.io' }).then(
            () => false,
            () => true,
          ),
        60_000,
      );
      await hub.plane.hub.installCrds(crdSources());
      await new Promise((resolve) => setTimeout(resolve, 4000));
      const afterCrdLoss = { parameters: await parameters(), secrets: await secrets() };

      // The provider puts the six back; the operator confirms that the four really go.
      for (const name of kept) await fleet.createProfile('fleet-loss', name.split('.')[1]!, { loss: 'yes' });
      await waitFor(
        'six ACTIVE again',
        async () => {
          const states = await fleet.states('loss', 'web');
          return states.filter((s) => s.endsWith(':ACTIVE')).length === 6;
        },
        30_000,
      );
      const restored = { parameters: await parameters(), secrets: await secrets() };
      const confirmed = await mco('clusters', 'confirm-removal', '--kubeconfig', kubeconfig);
      await waitFor(
        'the four gone from the parameters and, after the release grace, their Secrets',
        async () => same(await parameters(), kept) && same(await secrets(), kept),
        60_000,
      );

      expect({
        afterLoss,
        afterCrdLoss,
        restored,
        confirmed: { ...confirmed, stdout: confirmed.stdout.replace(/^confirmed at \S+Z/, 'confirmed at <time>') },
      }).toEqual({
        afterLoss: { parameters: all, secrets: all },
        afterCrdLoss: { parameters: all, secrets: all },
        restored: { parameters: all, secrets: all },
        confirmed: {
          code: 0,
          stdout:
            'confirmed at <time> in ConfigMap mco-system/mco-inventory-loss-confirmation: the controller removes ' +
            'the clusters it holds for the losses of ClusterProfiles it saw before now, in every namespace\n',
          stderr: '',
        },
      });
    } finally {
      await delivery?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// A tenant of the hub, with its own ServiceAccount token, tries to reach
// beyond its namespace through Argo CD delivery: a placement named like the
// operator's, one naming a workload in kube-system, the plugin called with
// its own token, and direct writes to Argo CD's namespace. The plugin runs as
// the chart's ServiceAccount with the chart's RBAC. Where an Application goes
// (its destination namespace, its project) is the operator's ApplicationSet's
// to say; a placement only chooses among the clusters its status lists.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { PLACEMENTS } from '@mco/kube-runtime';
import { requestOptions } from '@mco/kube-runtime/client-node';
import {
  RELEASE_NAMESPACE,
  describeWithControlPlane,
  eventually,
  renderChart,
  placeOn,
  serviceAccountKubeConfig,
  thirdPartyCrd,
  startControlPlane,
  tenantKubeConfig,
  tenantPlacement,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { APPLICATION_SETS, startArgoCdDelivery, type ArgoCdDelivery, type PluginParameters } from '../src/index.js';
import { GoClient, argoBody } from './go-client.js';

vi.setConfig({ testTimeout: 60_000 });

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const TOKEN = 'plugin-token-tenancy';
/** Every key of an answer: nothing a placement's spec says (its workload, for one) reaches Argo CD. */
const KEYS = [
  'clusterProfileName',
  'clusterProfileNamespace',
  'desiredMaxReplicas',
  'desiredMinReplicas',
  'draining',
  'labels',
  'name',
  'placementName',
  'placementNamespace',
  'server',
  'state',
];

describeWithControlPlane('Argo CD delivery, tried by a tenant of the hub', { tools: ['helm', 'argocd'] }, () => {
  let plane: ControlPlane;
  let dir: string;
  let admin: KubeConfig;
  let tenant: KubeConfig;
  let delivery: ArgoCdDelivery | undefined;
  let plugin: GoClient;

  const ask = async (namespace: string, name: string, token = TOKEN) => {
    const response = await plugin.request({
      token,
      body: argoBody('web', {
        multiClusterOrchestraPlacementName: name,
        multiClusterOrchestraPlacementNamespace: namespace,
      }),
    });
    return {
      status: response.status,
      body: response.json() as { error?: string; output?: { parameters: PluginParameters[] } },
    };
  };
  const code = (p: Promise<unknown>) =>
    p.then(
      () => 'allowed',
      (error: { code?: number }) => error.code,
    );

  beforeAll(async () => {
    plane = await startControlPlane();
    await plane.hub.installCrds([
      thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
      join(REPO, 'apps/mco/chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml'),
      thirdPartyCrd('argoproj.io_applicationsets.yaml'),
    ]);
    admin = plane.hub.adminKubeConfig();
    dir = mkdtempSync(join(tmpdir(), 'mco-argocd-tenancy-'));
    writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
    await plane.hub.apply(
      ['fleet', 'apps', 'team-a', 'argocd', RELEASE_NAMESPACE].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
    );
    // The chart's account and RBAC for the plugin; the token Secret is the operator's.
    const chart = renderChart({
      'argocd.plugin.enabled': 'true',
      'argocd.plugin.existingSecret': 'mco-argocd-plugin-token',
    }).filter(
      (o) =>
        o.metadata?.labels?.['app.kubernetes.io/component'] === 'argocd-plugin' &&
        ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? ''),
    );
    await plane.hub.apply(chart);
    const account = chart.find((o) => o.kind === 'ServiceAccount')!.metadata!;
    const pluginKubeConfig = await serviceAccountKubeConfig(plane.hub, account.namespace!, account.name!);
    await admin.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: 'argocd',
      body: { metadata: { name: 'mco-argocd-plugin-token' }, stringData: { token: TOKEN } },
    });

    tenant = await tenantKubeConfig(plane.hub, 'team-a');

    await plane.hub.apply(
      ['east', 'west'].map((name) => ({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace: 'fleet' },
        spec: { displayName: name, clusterManager: { name: 'test' } },
      })) as KubernetesObject[],
    );
    await plane.hub.apply([tenantPlacement('apps', 'web')]);
    await placeOn(plane.hub, 'apps', 'web', ['fleet/east']);

    delivery = await startArgoCdDelivery({
      kubeConfig: pluginKubeConfig,
      plugin: { host: '127.0.0.1', port: 0, tokenFile: join(dir, 'token') },
    });
    plugin = new GoClient(delivery.pluginAddress!.port);
  });

  afterAll(async () => {
    plugin?.close();
    await delivery?.stop();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the tenant cannot read the plugin's token, call the plugin as itself, or write Argo CD's or another team's objects", async () => {
    const tenantToken = tenant.getCurrentUser()!.token!;
    await eventually(
      'the plugin answers',
      () => ask('apps', 'web'),
      (a) => a.status === 200,
    );
    const api = tenant.makeApiClient(CustomObjectsApi);
    expect({
      pluginAsTenant: (await ask('apps', 'web', tenantToken)).status,
      readToken: await code(
        tenant.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: 'argocd', name: 'mco-argocd-plugin-token' }),
      ),
      applicationSet: await code(
        api.createNamespacedCustomObject({
          ...APPLICATION_SETS,
          namespace: 'argocd',
          body: { apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', metadata: { name: 'x' }, spec: {} },
        }),
      ),
      placementInApps: await code(
        api.createNamespacedCustomObject({ ...PLACEMENTS, namespace: 'apps', body: tenantPlacement('apps', 'x') }),
      ),
      ownStatus: await code(
        api
          .createNamespacedCustomObject({
            ...PLACEMENTS,
            namespace: 'team-a',
            body: tenantPlacement('team-a', 'web'),
          })
          .then(() =>
            api.patchNamespacedCustomObjectStatus(
              { ...PLACEMENTS, namespace: 'team-a', name: 'web', body: { status: { observedGeneration: 1 } } },
              requestOptions(tenant, 10_000, PatchStrategy.MergePatch),
            ),
          ),
      ),
    }).toEqual({ pluginAsTenant: 403, readToken: 403, applicationSet: 403, placementInApps: 403, ownStatus: 403 });
  });

  it("a tenant placement named like the operator's, or naming a workload in kube-system, answers only for itself", async () => {
    const api = tenant.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({
      ...PLACEMENTS,
      namespace: 'team-a',
      body: tenantPlacement('team-a', 'sneaky', 'kube-system'),
    });
    // The controller's part: team-a/web is placed on west; team-a/sneaky is never evaluated.
    await placeOn(plane.hub, 'team-a', 'web', ['fleet/west']);
    const theirs = await eventually(
      "the tenant's answer",
      () => ask('team-a', 'web'),
      (a) => a.status === 200 && a.body.output?.parameters.length === 1,
    );
    expect(theirs.body.output!.parameters).toEqual([
      expect.objectContaining({ name: 'fleet.west', placementName: 'web', placementNamespace: 'team-a' }),
    ]);
    // The operator's placement of the same name is untouched by it.
    const ours = await ask('apps', 'web');
    expect(ours.body.output!.parameters.map((p) => `${p.placementNamespace}/${p.placementName} ${p.name}`)).toEqual([
      'apps/web fleet.east',
    ]);
    for (const p of [...theirs.body.output!.parameters, ...ours.body.output!.parameters]) {
      expect(Object.keys(p).sort()).toEqual(KEYS);
    }
    // No information about the never-evaluated placement: no answer Argo CD could act on.
    expect(await ask('team-a', 'sneaky')).toMatchObject({ status: 503, body: { error: 'PlacementNotEvaluated' } });
  });
});

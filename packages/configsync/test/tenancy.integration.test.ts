// A tenant of the hub, with its own ServiceAccount token, tries to take a
// member over through a placement's Config Sync template: a RootSync, a
// RepoSync in another team's namespace or kube-system, RoleBindings to
// cluster-admin or admin for any subject. mco's member identity may do
// anything on the member here, so what stops the tenant is mco's own bound on
// templates, not the member's RBAC. mco runs as the chart's ServiceAccount,
// with the chart's RBAC and ValidatingAdmissionPolicy.
import { CustomObjectsApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { KUBECONFIG_SECRET_ANNOTATION, createClusterAccess } from '@mco/cluster-access';
import { PLACEMENTS } from '@mco/kube-runtime';
import { connectionFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import {
  RELEASE_NAMESPACE,
  describeWithControlPlane,
  eventually,
  kubeconfigSecret,
  helmTemplate,
  renderChart,
  placeOn,
  serviceAccountKubeConfig,
  thirdPartyCrd,
  startControlPlane,
  tenantKubeConfig,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { fileURLToPath } from 'node:url';
import { CONDITION_TYPE, TEMPLATE_ANNOTATION, startConfigSyncDelivery, type ConfigSyncDelivery } from '../src/index.js';

vi.setConfig({ testTimeout: 180_000 });

const MKCP_CRD = fileURLToPath(
  new URL('../../core/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url),
);
const SYNCS = {
  RepoSync: { group: 'configsync.gke.io', version: 'v1beta1', plural: 'reposyncs' },
  RootSync: { group: 'configsync.gke.io', version: 'v1beta1', plural: 'rootsyncs' },
  RoleBinding: { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings' },
} as const;
const ACCOUNT = 'mco-configsync';

const repoSync = (namespace?: string) =>
  `apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\n${namespace ? `metadata: {namespace: ${namespace}}\n` : ''}spec: {sourceType: git, git: {repo: https://git.example.com/a, auth: none}}\n`;
const binding = (role: string, subject: string) =>
  `---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: grant}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${role}}\nsubjects: [${subject}]\n`;
const reconciler = (name: string, namespace = 'config-management-system') =>
  `{kind: ServiceAccount, name: ${name}, namespace: ${namespace}}`;
const ROOT_SYNC =
  'apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nspec: {sourceType: git, git: {repo: https://git.example.com/root, auth: none}}\n';

/** What a tenant of team-a writes, and the field mco names when it refuses it. */
const ATTACKS: readonly (readonly [name: string, template: string, field: string])[] = [
  ['root', ROOT_SYNC, 'document 0 field kind: a RootSync is allowed only from the hub namespaces'],
  [
    'into-team-b',
    repoSync('team-b'),
    "field metadata.namespace: a RepoSync must be in its placement's namespace team-a",
  ],
  ['into-kube-system', repoSync('kube-system'), 'not kube-system'],
  [
    'cluster-admin',
    repoSync() + binding('cluster-admin', reconciler('ns-reconciler-team-a-cluster-admin-13')),
    'field roleRef: ClusterRole/cluster-admin is not one of the roles --allowed-role-refs allows',
  ],
  [
    'admin',
    repoSync() + binding('admin', reconciler('ns-reconciler-team-a-admin-5')),
    'field roleRef: ClusterRole/admin is not one of the roles',
  ],
  [
    'any-user',
    repoSync() + binding('edit', '{kind: User, name: mallory, apiGroup: rbac.authorization.k8s.io}'),
    "field subjects[0]: only the sync's own reconciler may be bound: ServiceAccount config-management-system/ns-reconciler-team-a-any-user-8",
  ],
  [
    'system-account',
    repoSync() + binding('edit', reconciler('default', 'kube-system')),
    'field subjects[0]: only the sync',
  ],
  [
    'other-reconciler',
    repoSync() + binding('edit', reconciler('ns-reconciler-team-b')),
    'field subjects[0]: only the sync',
  ],
  [
    'helm-namespace',
    'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {sourceType: helm, helm: {repo: https://charts.example, chart: x, namespace: kube-system}}\n',
    'document 0 field spec.helm.namespace: is not a field a RepoSync from a tenant namespace may set',
  ],
  [
    'role-refs',
    'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {sourceType: git, git: {repo: https://git.example.com/a, auth: none}, override: {roleRefs: [{kind: ClusterRole, name: cluster-admin}]}}\n',
    'document 0 field spec.override.roleRefs: is not a field a RepoSync from a tenant namespace may set',
  ],
  [
    'reserved-annotation',
    'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nmetadata: {annotations: {configmanagement.gke.io/managed: enabled}}\nspec: {sourceType: git, git: {repo: https://git.example.com/a, auth: none}}\n',
    'document 0 field metadata.annotations.configmanagement.gke.io/managed: is reserved for Config Sync and mco',
  ],
];

describeWithControlPlane('Config Sync delivery, attacked by a tenant of the hub', () => {
  let cp: ControlPlane;
  let hubAdmin: KubeConfig;
  let tenant: KubeConfig;
  let account: KubeConfig;
  let delivery: ConfigSyncDelivery | undefined;

  const member = () => cp.members.east!.adminKubeConfig().makeApiClient(CustomObjectsApi);
  /** `Kind/namespace/name` of every sync object and RoleBinding on the member outside the bootstrap ones. */
  const onMember = async () => {
    const out: string[] = [];
    for (const [kind, resource] of Object.entries(SYNCS)) {
      const list = (await member().listClusterCustomObject(resource)) as { items: KubernetesObject[] };
      for (const o of list.items) {
        if (kind === 'RoleBinding' && !o.metadata?.labels?.['app.kubernetes.io/managed-by']) continue;
        out.push(`${kind}/${o.metadata?.namespace}/${o.metadata?.name}`);
      }
    }
    return out.sort();
  };
  const placement = (namespace: string, name: string) =>
    hubAdmin.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...PLACEMENTS, namespace, name }) as Promise<{
      metadata: { resourceVersion: string; generation: number };
      spec: object;
      status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
    }>;
  const condition = async (namespace: string, name: string) =>
    (await placement(namespace, name)).status?.conditions?.find((c) => c.type === CONDITION_TYPE);
  /** As the tenant, with its own token: create or replace a placement in team-a carrying `template`. */
  const tenantPlacement = async (name: string, template: string) => {
    const api = tenant.makeApiClient(CustomObjectsApi);
    const body = {
      apiVersion: `${PLACEMENTS.group}/${PLACEMENTS.version}`,
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name, namespace: 'team-a', annotations: { [TEMPLATE_ANNOTATION]: template } },
      spec: {},
    };
    try {
      await api.createNamespacedCustomObject({ ...PLACEMENTS, namespace: 'team-a', body });
    } catch (error) {
      if ((error as { code?: number }).code !== 409) throw error;
      await api.patchNamespacedCustomObject(
        { ...PLACEMENTS, namespace: 'team-a', name, body: { metadata: body.metadata } },
        requestOptions(tenant, 10_000, PatchStrategy.MergePatch),
      );
    }
  };
  /** The controller's part: the placement lists east (observed, so the adapter trusts it). */
  const placeOnEast = (namespace: string, name: string) => placeOn(cp.hub, namespace, name, ['fleet/east']);

  beforeAll(async () => {
    cp = await startControlPlane({ clusters: ['east'] });
    await cp.hub.installCrds([MKCP_CRD, thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml')]);
    hubAdmin = cp.hub.adminKubeConfig();
    const east = cp.members.east!;
    await east.installCrds([
      thirdPartyCrd('configsync.gke.io_reposyncs.yaml'),
      thirdPartyCrd('configsync.gke.io_rootsyncs.yaml'),
    ]);
    // mco's identity on the member may do anything: only mco's bounds stand between the tenant and the member.
    await east.apply([
      ...['team-a', 'team-b', 'config-management-system'].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'mco-is-cluster-admin' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'controller' }],
      },
    ] as KubernetesObject[]);

    // Hub: the chart's objects for `mco configsync` (ServiceAccount, RBAC, admission policy), not its Deployment.
    await cp.hub.apply(
      ['team-a', 'team-b', 'platform', 'fleet', RELEASE_NAMESPACE].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
    );
    const chart = renderChart({
      'configsync.enabled': 'true',
      'configsync.kubeconfigSecretNamespaces': '{fleet}',
    }).filter(
      (o) =>
        o.metadata?.labels?.['app.kubernetes.io/component'] === 'configsync' &&
        !['Deployment', 'ConfigMap'].includes(o.kind ?? ''),
    );
    expect(
      chart
        .filter((o) => o.kind?.startsWith('ValidatingAdmissionPolicy'))
        .map((o) => `${o.kind} ${o.metadata?.name}`)
        .sort(),
    ).toEqual([
      `ValidatingAdmissionPolicy ${ACCOUNT}.${RELEASE_NAMESPACE}.leases`,
      `ValidatingAdmissionPolicy ${ACCOUNT}.${RELEASE_NAMESPACE}.placement-spec`,
      `ValidatingAdmissionPolicyBinding ${ACCOUNT}.${RELEASE_NAMESPACE}.leases`,
      `ValidatingAdmissionPolicyBinding ${ACCOUNT}.${RELEASE_NAMESPACE}.placement-spec`,
    ]);
    await cp.hub.apply(chart);
    account = await serviceAccountKubeConfig(cp.hub, RELEASE_NAMESPACE, ACCOUNT);

    // A tenant: placements in team-a, nothing else (no status, no other namespace).
    tenant = await tenantKubeConfig(cp.hub, 'team-a');

    await cp.hub.apply([
      kubeconfigSecret(east, { name: 'east-kubeconfig', namespace: 'fleet' }, 'controller'),
      {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: {
          name: 'east',
          namespace: 'fleet',
          annotations: { [KUBECONFIG_SECRET_ANNOTATION]: 'east-kubeconfig' },
        },
        spec: { displayName: 'east', clusterManager: { name: 'test' } },
      },
    ] as unknown as KubernetesObject[]);

    // mco runs as the chart's ServiceAccount, with the operator's bounds: RootSyncs only from `platform`.
    delivery = startConfigSyncDelivery({
      kubeConfig: account,
      access: createClusterAccess({
        providers: [],
        hub: connectionFromKubeConfig(account),
        kubeconfigSecrets: { allowedServers: [cp.members.east!.server] },
      }),
      memberTimeoutMs: 5_000,
      statusIntervalMs: 1_000,
      waitingIntervalMs: 200,
      templatePolicy: { rootSyncNamespaces: ['platform'] },
    });
  });

  afterAll(async () => {
    await delivery?.stop();
    await cp?.stop();
  });

  it('every attack is refused in the placement condition, naming the field, and nothing reaches the member', async () => {
    await tenantPlacement('good', repoSync() + binding('edit', reconciler('ns-reconciler-team-a-good-4')));
    for (const [name, template] of ATTACKS) await tenantPlacement(name, template);
    for (const name of ['good', ...ATTACKS.map(([n]) => n)]) await placeOnEast('team-a', name);

    // The control: a template within bounds is delivered.
    await eventually('the good RepoSync on east', onMember, (objects) => objects.includes('RepoSync/team-a/good'));
    for (const [name, , field] of ATTACKS) {
      const c = await eventually(
        `${name} refused`,
        () => condition('team-a', name),
        (x) => x?.reason === 'InvalidTemplate',
      );
      expect(c).toMatchObject({ status: 'False', reason: 'InvalidTemplate' });
      expect(c!.message).toContain(field);
      expect(c!.message).toContain('nothing changed');
    }
    expect(await onMember()).toEqual(['RepoSync/team-a/good', 'RoleBinding/team-a/grant']);
  });

  it('a placement in the hub namespace config-management-system is refused, naming the namespace, and nothing reaches the member', async () => {
    await cp.hub.apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'config-management-system' } },
      {
        apiVersion: `${PLACEMENTS.group}/${PLACEMENTS.version}`,
        kind: 'MultiKubernetesClusterPlacement',
        metadata: {
          name: 'sys',
          namespace: 'config-management-system',
          annotations: { [TEMPLATE_ANNOTATION]: repoSync() },
        },
        spec: {},
      },
    ] as KubernetesObject[]);
    await placeOnEast('config-management-system', 'sys');
    const c = await eventually(
      'the system-namespace placement refused',
      () => condition('config-management-system', 'sys'),
      (x) => x?.reason === 'InvalidTemplate',
    );
    expect({ status: c!.status, message: c!.message.split(';')[0], onMember: await onMember() }).toMatchObject({
      status: 'False',
      message: expect.stringContaining(
        'a placement in the hub namespace config-management-system is refused: it is a Config Sync system namespace',
      ),
      onMember: expect.not.arrayContaining(['RepoSync/config-management-system/sys']),
    });
  });

  it("the tenant cannot write another team's placements or any placement's status", async () => {
    const api = tenant.makeApiClient(CustomObjectsApi);
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'allowed',
        (error: { code?: number }) => error.code,
      );
    const body = {
      apiVersion: `${PLACEMENTS.group}/${PLACEMENTS.version}`,
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name: 'x', namespace: 'team-b', annotations: { [TEMPLATE_ANNOTATION]: repoSync() } },
      spec: {},
    };
    expect({
      createInTeamB: await code(api.createNamespacedCustomObject({ ...PLACEMENTS, namespace: 'team-b', body })),
      writeOwnStatus: await code(
        api.patchNamespacedCustomObjectStatus(
          { ...PLACEMENTS, namespace: 'team-a', name: 'good', body: { status: { observedGeneration: 9 } } },
          requestOptions(tenant, 10_000, PatchStrategy.MergePatch),
        ),
      ),
    }).toEqual({ createInTeamB: 403, writeOwnStatus: 403 });
  });

  it('a delivered template turned hostile is refused and deletes nothing already delivered', async () => {
    const before = (await member().getNamespacedCustomObject({
      ...SYNCS.RepoSync,
      namespace: 'team-a',
      name: 'good',
    })) as KubernetesObject;
    await tenantPlacement('good', ROOT_SYNC);
    const c = await eventually(
      'good refused',
      () => condition('team-a', 'good'),
      (x) => x?.reason === 'InvalidTemplate',
    );
    expect(c!.message).toContain(
      'a RootSync is allowed only from the hub namespaces --root-sync-namespaces lists (platform)',
    );
    const after = (await member().getNamespacedCustomObject({
      ...SYNCS.RepoSync,
      namespace: 'team-a',
      name: 'good',
    })) as KubernetesObject;
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(await onMember()).toEqual(['RepoSync/team-a/good', 'RoleBinding/team-a/grant']);
  });

  it('a RootSync comes only from the hub namespaces the operator listed, bound to the root reconciler', async () => {
    await cp.hub.apply([
      {
        apiVersion: `${PLACEMENTS.group}/${PLACEMENTS.version}`,
        kind: 'MultiKubernetesClusterPlacement',
        metadata: {
          name: 'base',
          namespace: 'platform',
          annotations: { [TEMPLATE_ANNOTATION]: ROOT_SYNC + binding('edit', reconciler('root-reconciler-base')) },
        },
        spec: {},
      } as KubernetesObject,
    ]);
    await placeOnEast('platform', 'base');
    await eventually('the RootSync on east', onMember, (objects) =>
      objects.includes('RootSync/config-management-system/base'),
    );
    expect(await onMember()).toEqual([
      'RepoSync/team-a/good',
      'RoleBinding/config-management-system/grant',
      'RoleBinding/team-a/grant',
      'RootSync/config-management-system/base',
    ]);
  });

  it("the hub account keeps its record on placements but cannot change a placement's spec (admission policy)", async () => {
    const api = account.makeApiClient(CustomObjectsApi);
    // The account's own writes went through: the record annotation and the cleanup finalizer.
    const good = await placement('team-a', 'good');
    expect(JSON.stringify(good)).toContain('configsync.mco.x-k8s.io/delivered');
    const spec = (value: number) =>
      api.patchNamespacedCustomObject(
        {
          ...PLACEMENTS,
          namespace: 'team-a',
          name: 'good',
          body: { spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: value } } } },
        },
        requestOptions(account, 10_000, PatchStrategy.MergePatch),
      );
    // The API server loads a new policy within a few seconds: wait for it to be in force.
    let attempt = 0;
    const refused = await eventually(
      'the spec change refused',
      () =>
        spec(++attempt).then(
          () => undefined,
          (error: { code?: number; body?: unknown }) => error,
        ),
      (error) => error !== undefined,
    );
    expect(refused).toMatchObject({ code: 403 });
    expect(String(refused!.body)).toContain("the Config Sync delivery account may not change a placement's spec");
    const before = await placement('team-a', 'good');
    await expect(spec(99)).rejects.toMatchObject({ code: 403 });
    expect((await placement('team-a', 'good')).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    // Its own annotation still passes; a label (not its own) is refused too.
    const DELIVERED = 'configsync.mco.x-k8s.io/delivered';
    const delivered = (good as unknown as { metadata: { annotations: Record<string, string> } }).metadata.annotations[
      DELIVERED
    ]!;
    await api.patchNamespacedCustomObject(
      {
        ...PLACEMENTS,
        namespace: 'team-a',
        name: 'good',
        // The record as it is: a write of the account's own annotation.
        body: { metadata: { annotations: { [DELIVERED]: delivered } } },
      },
      requestOptions(account, 10_000, PatchStrategy.MergePatch),
    );
    await expect(
      api.patchNamespacedCustomObject(
        { ...PLACEMENTS, namespace: 'team-a', name: 'good', body: { metadata: { labels: { touched: 'yes' } } } },
        requestOptions(account, 10_000, PatchStrategy.MergePatch),
      ),
    ).rejects.toMatchObject({ code: 403 });
  });

  it('the chart refuses Config Sync delivery on a hub without ValidatingAdmissionPolicy v1 (before 1.30)', async () => {
    const old = await helmTemplate(['--set', 'configsync.enabled=true', '--kube-version', '1.29.0']);
    expect(old.code).not.toBe(0);
    expect(old.stderr).toContain('configsync.enabled needs Kubernetes 1.30 or newer on the hub');
    expect((await helmTemplate(['--set', 'configsync.enabled=true', '--kube-version', '1.30.0'])).code).toBe(0);
  });
});

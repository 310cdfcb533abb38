// The chart's inventory account and --cluster-profile-namespaces (issue 19,
// ClusterProfile trust): when the ClusterProfile namespaces are known, the
// inventory may write ClusterProfiles (and their status) there and nowhere
// else, and every Deployment that reads ClusterProfiles is scoped to them.
// Checked with SubjectAccessReview on a real kube-apiserver.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  RELEASE_NAMESPACE,
  accessCheckKey,
  describeWithControlPlane,
  renderChart,
  helmTemplate,
  serviceAccountAccess,
  startControlPlane,
  type AccessCheck,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 60_000 });

const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const INVENTORY = {
  'inventory.enabled': 'true',
  'inventory.providers[0].name': 'lab',
  'inventory.providers[0].plugin': 'manual',
  'inventory.providers[0].config.file': '/etc/mco-inventory/clusters.yaml',
};
const SCOPED = {
  ...INVENTORY,
  'clusterProfileNamespaces[0]': 'fleet',
  'clusterProfileNamespaces[1]': 'team-a',
  'inventory.providers[0].config.namespaces[0]': 'fleet',
  'inventory.providers[0].config.namespaces[1]': 'team-a',
};
const PROFILES = 'multicluster.x-k8s.io';
const CHECKS: readonly AccessCheck[] = [
  ['list', PROFILES, 'clusterprofiles', 'fleet'],
  ['patch', PROFILES, 'clusterprofiles/status', 'fleet', 'east'],
  ['create', PROFILES, 'clusterprofiles', 'team-a'],
  ['patch', PROFILES, 'clusterprofiles/status', 'team-a', 'west'],
  ['delete', PROFILES, 'clusterprofiles', 'team-a', 'west'],
  ['patch', PROFILES, 'clusterprofiles/status', 'team-b', 'other'],
  ['create', PROFILES, 'clusterprofiles', 'team-b'],
  ['list', PROFILES, 'clusterprofiles', ''],
  ['patch', PROFILES, 'clusterprofiles/status', ''],
  ['get', '', 'secrets', 'fleet'],
];
const everything = (allowed: (c: AccessCheck) => boolean) =>
  Object.fromEntries(CHECKS.map((c) => [accessCheckKey(c), allowed(c)]));

const component = (o: KubernetesObject) => o.metadata?.labels?.['app.kubernetes.io/component'];
type Pod = { spec: { template: { spec: { containers: { args: string[] }[] } } } };

describeWithControlPlane("the chart's inventory RBAC on a real kube-apiserver", { tools: ['helm'] }, () => {
  let plane: ControlPlane;

  beforeAll(async () => {
    plane = await startControlPlane();
    await plane.hub.apply(
      [RELEASE_NAMESPACE, 'fleet', 'team-a', 'team-b'].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
    );
  });

  afterAll(async () => {
    await plane?.stop();
  });

  /** Applies the chart's inventory RBAC under its own ServiceAccount name `account`, then asks what it may do. */
  const accessOf = async (account: string, values: Record<string, string>) => {
    const rbac = renderChart({ ...values, fullnameOverride: account.replace(/-inventory$/, '') }).filter(
      (o) => component(o) === 'inventory' && RBAC_KINDS.includes(o.kind ?? ''),
    );
    await plane.hub.apply(rbac);
    return {
      kinds: rbac.map((o) => `${o.kind} ${o.metadata!.namespace ?? '(cluster)'}`).sort(),
      access: await serviceAccountAccess(plane.hub, RELEASE_NAMESPACE, account, CHECKS),
    };
  };

  it('grants Roles in the listed namespaces only, when clusterProfileNamespaces is set', async () => {
    const inListed = (c: AccessCheck) => c[3] === 'fleet' || c[3] === 'team-a';
    expect(await accessOf('scoped-inventory', SCOPED)).toEqual({
      kinds: [
        'Role fleet',
        'Role team-a',
        'RoleBinding fleet',
        'RoleBinding team-a',
        `ServiceAccount ${RELEASE_NAMESPACE}`,
      ],
      access: everything((c) => inListed(c) && c[1] === PROFILES),
    });
  });

  it('keeps the cluster-wide ClusterRole when no namespace is known', async () => {
    expect(await accessOf('wide-inventory', INVENTORY)).toEqual({
      kinds: ['ClusterRole (cluster)', 'ClusterRoleBinding (cluster)', `ServiceAccount ${RELEASE_NAMESPACE}`],
      access: everything((c) => c[1] === PROFILES),
    });
  });

  const EVERY_READER = {
    'argocd.plugin.enabled': 'true',
    'argocd.plugin.existingSecret': 'token',
    'argocd.clusterSecretSync.enabled': 'true',
    'argocd.clusterSecretSync.providers[0].name': 'google',
    'argocd.clusterSecretSync.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
    'argocd.clusterSecretSync.providers[0].execConfig.command': 'gke-gcloud-auth-plugin',
    'argocd.clusterSecretSync.providers[0].allowedServers[0]': 'https://connectgateway.googleapis.com/v1/projects/1/',
    'flux.enabled': 'true',
    'flux.providers[0].name': 'google',
    'flux.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
    'flux.providers[0].execConfig.command': 'gke-gcloud-auth-plugin',
    'flux.providers[0].allowedServers[0]': 'https://connectgateway.googleapis.com/v1/projects/1/',
    'configsync.enabled': 'true',
  };

  it('passes --cluster-profile-namespaces to every Deployment that reads ClusterProfiles', () => {
    const rendered = renderChart({ ...SCOPED, ...EVERY_READER });
    const scoped = rendered
      .filter((o) => o.kind === 'Deployment')
      .map((o) => ({
        name: o.metadata!.name,
        flag: (o as unknown as Pod).spec.template.spec.containers[0]!.args.find((a) =>
          a.startsWith('--cluster-profile-namespaces'),
        ),
      }));
    expect(scoped).toEqual([
      { name: 'mco-argocd-plugin', flag: '--cluster-profile-namespaces=fleet,team-a' },
      { name: 'mco-argocd-refresher', flag: '--cluster-profile-namespaces=fleet,team-a' },
      { name: 'mco-argocd-secret-syncer', flag: '--cluster-profile-namespaces=fleet,team-a' },
      { name: 'mco-configsync', flag: '--cluster-profile-namespaces=fleet,team-a' },
      { name: 'mco-controller', flag: '--cluster-profile-namespaces=fleet,team-a' },
      { name: 'mco-flux', flag: '--cluster-profile-namespaces=fleet,team-a' },
      // The inventory writes ClusterProfiles; its providers' own namespaces bound it (checked by the chart).
      { name: 'mco-inventory', flag: undefined },
    ]);
  });

  it('gives every Deployment that reads ClusterProfiles a Role in each listed namespace and no cluster-wide read, or the ClusterRole rule when none is listed', async () => {
    const READS: readonly AccessCheck[] = [
      ['list', PROFILES, 'clusterprofiles', 'fleet'],
      ['watch', PROFILES, 'clusterprofiles', 'team-a'],
      ['list', PROFILES, 'clusterprofiles', 'team-b'],
      ['watch', PROFILES, 'clusterprofiles', ''],
    ];
    const readers = async (values: Record<string, string>) => {
      const rendered = renderChart({ ...values, ...EVERY_READER });
      const rbac = rendered.filter((o) => component(o) !== 'inventory' && RBAC_KINDS.includes(o.kind ?? ''));
      const namespaces = [...new Set(rbac.flatMap((o) => (o.metadata?.namespace ? [o.metadata.namespace] : [])))];
      await plane.hub.apply(namespaces.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })));
      await plane.hub.apply(rbac);
      const accounts = rendered
        .filter((o) => o.kind === 'Deployment' && component(o) !== 'inventory')
        .map(
          (o) =>
            (o as unknown as { spec: { template: { spec: { serviceAccountName: string } } } }).spec.template.spec
              .serviceAccountName,
        );
      const result: Record<string, string[]> = {};
      for (const account of accounts) {
        const access = await serviceAccountAccess(plane.hub, RELEASE_NAMESPACE, account, READS);
        result[account] = READS.filter((c) => access[accessCheckKey(c)]).map(accessCheckKey);
      }
      return result;
    };
    const scoped = await readers(SCOPED);
    expect(Object.keys(scoped).length).toBe(6);
    for (const granted of Object.values(scoped)) {
      expect(granted).toEqual([accessCheckKey(READS[0]!), accessCheckKey(READS[1]!)]);
    }
    // The same accounts without clusterProfileNamespaces: the Roles are left from above, the ClusterRoles read everywhere.
    const wide = await readers(INVENTORY);
    for (const granted of Object.values(wide)) expect(granted).toEqual(READS.map(accessCheckKey));
  });

  it('refuses to render a provider that would list outside the Roles it gets, naming it', async () => {
    const result = await helmTemplate(
      Object.entries({ ...INVENTORY, 'clusterProfileNamespaces[0]': 'fleet' }).flatMap(([k, v]) => [
        '--set',
        `${k}=${v}`,
      ]),
    );
    expect({ failed: result.code !== 0, message: result.stderr.split('\n')[0] }).toEqual({
      failed: true,
      message:
        'Error: execution error at (mco/templates/inventory.yaml:59:4): inventory provider "lab": with clusterProfileNamespaces (or inventory.namespaces) set, config.namespaces must list its namespaces (the chart grants Roles there only)',
    });
  });
});

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { KUBECONFIG_SECRET_ANNOTATION, createClusterAccess } from '@mco/cluster-access';
import type { PlacementCluster, PlacementStatus } from '@mco/core';
import { PLACEMENTS } from '@mco/kube-runtime';
import { requestOptions } from '@mco/kube-runtime/client-node';
import {
  eventually as waitFor,
  describeWithControlPlane,
  parseYamlDocuments,
  requireTool,
  thirdPartyCrd,
  startControlPlane,
  toYaml,
  type ClusterHandle,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  CLEANUP_FINALIZER,
  CONDITION_TYPE,
  DELIVERED_ANNOTATION,
  TEMPLATE_ANNOTATION,
  startConfigSyncDelivery,
  type ConfigSyncDelivery,
  type ReconcileResult,
} from '../src/index.js';

// Each step waits for real apiservers (some restarted) and the caches: allow for a loaded machine.
vi.setConfig({ testTimeout: 240_000 });

const MKCP_CRD = fileURLToPath(
  new URL('../../core/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url),
);
const MEMBER_RBAC = fileURLToPath(new URL('../deploy/member-rbac.yaml', import.meta.url));
const CHART = fileURLToPath(new URL('../../../apps/mco/chart', import.meta.url));
const REPO_SYNCS = { group: 'configsync.gke.io', version: 'v1beta1', plural: 'reposyncs' };
const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings' };
/** The finalizer Config Sync's reconciler-manager puts on a sync object with Foreground deletion propagation. */
const CONFIG_SYNC_FINALIZER = 'reconciler-manager.configsync.gke.io';
const T = '2026-01-01T00:00:00Z';

const TEMPLATE = `
apiVersion: configsync.gke.io/v1beta1
kind: RepoSync
spec:
  sourceType: helm
  sourceFormat: unstructured
  helm:
    repo: https://charts.example.com
    chart: web
    version: 1.2.3
    releaseName: web
    auth: none
    values:
      replicaCount: 2
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: web-reconciler
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: shop-deployer
subjects:
  - kind: ServiceAccount
    name: ns-reconciler-fleet-web-3
    namespace: config-management-system
`;

const cluster = (name: string, extra: Partial<PlacementCluster> = {}): PlacementCluster => ({
  name,
  namespace: 'fleet',
  state: 'ACTIVE',
  lastTransitionTime: T,
  ...extra,
});

const eventually = <T>(what: string, probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 120_000) =>
  waitFor(what, probe, accept, timeoutMs);

interface Obj extends KubernetesObject {
  spec?: { helm?: { values?: Record<string, unknown> } };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

describeWithControlPlane('Config Sync delivery on real member kube-apiservers', () => {
  let cp: ControlPlane;
  let hubAdmin: KubeConfig;
  let custom: CustomObjectsApi;
  let delivery: ConfigSyncDelivery | undefined;
  let blackhole: Server;
  const sockets: Socket[] = [];
  const results: { key: string; result: ReconcileResult | Error }[] = [];

  const admin = (m: ClusterHandle) => m.adminKubeConfig().makeApiClient(CustomObjectsApi);
  const get = (m: ClusterHandle, resource: typeof REPO_SYNCS, name: string) =>
    admin(m).getNamespacedCustomObject({ ...resource, namespace: 'fleet', name }) as Promise<Obj>;
  const gone = (m: ClusterHandle, resource: typeof REPO_SYNCS, name: string) =>
    get(m, resource, name).then(
      () => false,
      (e: { code?: number }) => e.code === 404,
    );
  const mergePatch = (m: ClusterHandle, resource: typeof REPO_SYNCS, name: string, body: object, status = false) => {
    const kc = m.adminKubeConfig();
    const api = kc.makeApiClient(CustomObjectsApi);
    const args = { ...resource, namespace: 'fleet', name, body };
    const options = requestOptions(kc, 10_000, PatchStrategy.MergePatch);
    return status
      ? api.patchNamespacedCustomObjectStatus(args, options)
      : api.patchNamespacedCustomObject(args, options);
  };
  const placement = (name = 'web') =>
    custom.getNamespacedCustomObject({ ...PLACEMENTS, namespace: 'fleet', name }) as Promise<
      Obj & { metadata: { annotations?: Record<string, string>; finalizers?: string[] } }
    >;
  const setStatus = (status: PlacementStatus, name = 'web') =>
    custom.patchNamespacedCustomObjectStatus(
      { ...PLACEMENTS, namespace: 'fleet', name, body: { status: { observedGeneration: 1, ...status } } },
      requestOptions(hubAdmin, 10_000, PatchStrategy.MergePatch),
    );
  const condition = async (name = 'web') =>
    (await placement(name)).status?.conditions?.find((c) => c.type === CONDITION_TYPE);
  const recorded = async (name = 'web') =>
    Object.keys(JSON.parse((await placement(name)).metadata.annotations?.[DELIVERED_ANNOTATION] ?? '{}') as object);
  const events = async () =>
    (await hubAdmin.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: 'fleet' })).items.map(
      (e) => `${e.type} ${e.reason} ${e.message}`,
    );
  const memberWritesAfter = (from: number) =>
    results.slice(from).reduce((n, r) => n + (r.result instanceof Error ? 0 : r.result.memberWrites), 0);

  const start = () => {
    const access = createClusterAccess({
      providers: [],
      hub: cp.hub.connectionFor('plugin'),
      // The test members listen on loopback, which is reached only when named (with the port).
      kubeconfigSecrets: {
        allowedServers: [
          cp.members.east!.server,
          cp.members.west!.server,
          `https://127.0.0.1:${(blackhole.address() as { port: number }).port}`,
        ],
      },
      secretRefreshMs: 500,
    });
    delivery = startConfigSyncDelivery({
      kubeConfig: cp.hub.kubeConfigFor('plugin'),
      access,
      memberTimeoutMs: 2_000,
      statusIntervalMs: 1_000,
      waitingIntervalMs: 200,
      // Members are stopped for seconds at a time: retry often, so a return is noticed at once.
      retryBackoff: { baseMs: 200, maxMs: 1_000, jitter: 0.2 },
      onReconciled: (key, result) => results.push({ key, result }),
      // The members' deployer role, as an operator would allow it (the default is ClusterRole/edit).
      templatePolicy: { allowedRoleRefs: ['ClusterRole/shop-deployer'] },
    });
  };
  const kubeconfigSecret = (
    name: string,
    server: string,
    caData: string,
    token: string,
    extra: Record<string, unknown> = {},
  ) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${name}-kubeconfig`, namespace: 'fleet' },
    stringData: {
      kubeconfig: toYaml({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': name,
        contexts: [{ name, context: { cluster: name, user: 'mco' } }],
        clusters: [{ name, cluster: { server, 'certificate-authority-data': caData, ...extra } }],
        users: [{ name: 'mco', user: { token } }],
      }),
    },
  });

  beforeAll(async () => {
    cp = await startControlPlane({ clusters: ['east', 'west'] });
    await cp.hub.installCrds([MKCP_CRD, thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml')]);
    hubAdmin = cp.hub.adminKubeConfig();
    custom = hubAdmin.makeApiClient(CustomObjectsApi);
    blackhole = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    const slowPort = (blackhole.address() as { port: number }).port;

    // Members: Config Sync's real CRDs, the target namespace, and mco's least-privilege Role from deploy/ bound to
    // the `controller` user (the identity the kubeconfig Secrets below give mco).
    const memberRbac = readFileSync(MEMBER_RBAC, 'utf8')
      .replaceAll('TARGET_NAMESPACE', 'fleet')
      .replaceAll('REPOSYNC_RECONCILER_CLUSTERROLE', 'shop-deployer');
    for (const m of [cp.members.east!, cp.members.west!]) {
      await m.installCrds([
        thirdPartyCrd('configsync.gke.io_reposyncs.yaml'),
        thirdPartyCrd('configsync.gke.io_rootsyncs.yaml'),
      ]);
      await m.apply(
        ['fleet', 'config-management-system'].map((name) => ({
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name },
        })),
      );
      await m.apply([
        ...(parseYamlDocuments(memberRbac) as KubernetesObject[]),
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          metadata: { name: 'shop-deployer' },
          rules: [],
        } as KubernetesObject,
        ...[
          ['RoleBinding', 'mco-configsync', 'Role', 'fleet'],
          ['ClusterRoleBinding', 'mco-configsync-bind', 'ClusterRole', undefined],
        ].map(
          ([kind, name, roleKind, namespace]) =>
            ({
              apiVersion: 'rbac.authorization.k8s.io/v1',
              kind,
              metadata: { name, ...(namespace ? { namespace } : {}) },
              roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name },
              subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'controller' }],
            }) as KubernetesObject,
        ),
      ]);
    }
    // Hub: the chart's RBAC for `mco configsync` (kubeconfig Secrets readable in `fleet`), bound to the `plugin` user
    // as well as to the chart's ServiceAccount: mco runs below with exactly those rules.
    await cp.hub.apply(
      ['fleet', 'mco-system'].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
    );
    const rendered = execFileSync(
      requireTool('helm'),
      [
        'template',
        'mco',
        CHART,
        '--namespace',
        'mco-system',
        '--show-only',
        'templates/configsync.yaml',
        '--set',
        'configsync.enabled=true',
        '--set',
        'configsync.kubeconfigSecretNamespaces={fleet}',
      ],
      { encoding: 'utf8' },
    );
    const rbac = (parseYamlDocuments(rendered) as (KubernetesObject & { subjects?: object[] })[]).filter((o) =>
      ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? ''),
    );
    expect(rbac.map((o) => `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`).sort()).toEqual([
      'ClusterRole /mco-configsync',
      'ClusterRoleBinding /mco-configsync',
      'Role fleet/mco-configsync-kubeconfigs',
      // The Lease every install's `mco configsync` shares: only one acts on the members.
      'Role kube-system/mco-configsync.mco-system.leader-election',
      'RoleBinding fleet/mco-configsync-kubeconfigs',
      'RoleBinding kube-system/mco-configsync.mco-system.leader-election',
    ]);
    for (const o of rbac) o.subjects?.push({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'plugin' });
    await cp.hub.apply(rbac);
    const east = cp.members.east!;
    const west = cp.members.west!;
    await cp.hub.apply([
      kubeconfigSecret('east', east.server, east.caData, east.token('controller')),
      kubeconfigSecret('west', west.server, west.caData, west.token('controller')),
      kubeconfigSecret('bad-token', east.server, east.caData, 'not-a-token'),
      kubeconfigSecret('slow', `https://127.0.0.1:${slowPort}`, east.caData, 'unused'),
    ] as KubernetesObject[]);
    await cp.hub.apply(
      ['east', 'west', 'bad-token', 'slow'].map((name) => ({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace: 'fleet', annotations: { [KUBECONFIG_SECRET_ANNOTATION]: `${name}-kubeconfig` } },
        spec: { displayName: name, clusterManager: { name: 'test' } },
      })) as KubernetesObject[],
    );
    await cp.hub.apply([
      {
        apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
        kind: 'MultiKubernetesClusterPlacement',
        metadata: { name: 'web', namespace: 'fleet', annotations: { [TEMPLATE_ANNOTATION]: TEMPLATE } },
        spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, useDraining: true } } },
      } as KubernetesObject,
    ]);
    await setStatus({ clusters: [cluster('east')] });
    start();
  });

  afterAll(async () => {
    await delivery?.stop();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => (blackhole ? blackhole.close(() => resolve()) : resolve()));
    await cp?.stop();
  });

  it('applies the RepoSync and its RoleBinding on the placed member, through least-privilege RBAC', async () => {
    const east = cp.members.east!;
    const sync = await eventually('the RepoSync on east', () => get(east, REPO_SYNCS, 'web'), Boolean);
    expect(sync.metadata?.annotations).toMatchObject({
      'configsync.gke.io/deletion-propagation-policy': 'Foreground',
      'configsync.mco.x-k8s.io/placement': 'fleet/web',
      'configsync.mco.x-k8s.io/cluster': 'fleet/east',
    });
    expect(sync.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'mco-configsync' });
    expect(sync.spec).toMatchObject({
      sourceType: 'helm',
      helm: {
        repo: 'https://charts.example.com',
        chart: 'web',
        version: '1.2.3',
        values: {
          replicaCount: 2,
          mco: {
            cluster: 'fleet/east',
            clusterProfileName: 'east',
            clusterProfileNamespace: 'fleet',
            state: 'ACTIVE',
            draining: false,
          },
        },
      },
    });
    const binding = await get(east, ROLE_BINDINGS, 'web-reconciler');
    expect(binding.metadata?.annotations?.['configsync.mco.x-k8s.io/placement']).toBe('fleet/web');
    expect(await gone(cp.members.west!, REPO_SYNCS, 'web')).toBe(true);
    const p = await placement();
    expect(p.metadata.finalizers).toContain(CLEANUP_FINALIZER);
    expect(await recorded()).toEqual(['fleet/east']);
  });

  it('a placement whose status is cleared (restored from a backup) deletes nothing: no information, no change', async () => {
    const east = cp.members.east!;
    const before = await get(east, REPO_SYNCS, 'web');
    // As the placement reappears after a restore: no status at all, or one the controller never stamped.
    for (const patch of [
      { op: 'remove', path: '/status' },
      { op: 'add', path: '/status', value: { clusters: [] } },
    ]) {
      const from = results.length;
      await custom.patchNamespacedCustomObjectStatus(
        { ...PLACEMENTS, namespace: 'fleet', name: 'web', body: [patch] },
        requestOptions(hubAdmin, 10_000, PatchStrategy.JsonPatch),
      );
      await eventually(
        'passes over the placement without information',
        async () => results.slice(from).filter((r) => r.key === 'fleet/web').length,
        (n) => n >= 3,
      );
      expect(memberWritesAfter(from)).toBe(0);
      expect((await get(east, REPO_SYNCS, 'web')).metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
      expect(await gone(east, ROLE_BINDINGS, 'web-reconciler')).toBe(false);
      expect(await recorded()).toEqual(['fleet/east']);
    }
    await setStatus({ clusters: [cluster('east')] });
  });

  it('scale-out creates the sync object on the new member; draining reaches it through Helm values', async () => {
    const west = cp.members.west!;
    await setStatus({ clusters: [cluster('east'), cluster('west')] });
    await eventually('the RepoSync on west', () => get(west, REPO_SYNCS, 'web'), Boolean);
    expect(await recorded()).toEqual(['fleet/east', 'fleet/west']);
    await setStatus({
      clusters: [
        cluster('east'),
        cluster('west', { state: 'SCALING_IN', draining: { desiredMaxReplicas: 4, lastReplicaCountDecrease: T } }),
      ],
    });
    const drained = await eventually(
      'draining values on west',
      () => get(west, REPO_SYNCS, 'web'),
      (o) => (o.spec?.helm?.values?.mco as { desiredMaxReplicas?: number } | undefined)?.desiredMaxReplicas === 4,
    );
    expect(drained.spec?.helm?.values).toEqual({
      replicaCount: 2,
      mco: {
        cluster: 'fleet/west',
        clusterProfileName: 'west',
        clusterProfileNamespace: 'fleet',
        state: 'SCALING_IN',
        draining: true,
        desiredMaxReplicas: 4,
      },
    });
    // east did not change: its RepoSync was not rewritten.
    const east = await get(cp.members.east!, REPO_SYNCS, 'web');
    expect((east.spec?.helm?.values?.mco as { state: string }).state).toBe('ACTIVE');
  });

  it("brings each member's sync status back as a condition and Events", async () => {
    // What Config Sync's reconcilers would write.
    await mergePatch(
      cp.members.east!,
      REPO_SYNCS,
      'web',
      { status: { lastSyncedCommit: '0123456789abcdef', sync: { commit: '0123456789abcdef' } } },
      true,
    );
    await mergePatch(
      cp.members.west!,
      REPO_SYNCS,
      'web',
      {
        status: {
          sync: {
            commit: 'fedcba9876543210',
            errorSummary: { totalCount: 1 },
            errors: [{ code: '2009', errorMessage: 'apply failed: forbidden' }],
          },
        },
      },
      true,
    );
    const c = await eventually('the sync error in the condition', condition, (x) => x?.reason === 'SyncError');
    expect(c).toMatchObject({ status: 'False', reason: 'SyncError' });
    expect(c!.message).toBe(
      [
        'fleet/east: Synced: synced commit 0123456789ab',
        'fleet/west: Error: 1 error(s): sync: KNV2009 apply failed: forbidden (last synced commit fedcba987654)',
      ].join('\n'),
    );
    const seen = await eventually('Events', events, (e) => e.some((x) => x.startsWith('Warning SyncError')));
    expect(seen).toEqual(
      expect.arrayContaining([
        'Normal SyncObjectApplied RepoSync/fleet/web applied on fleet/east',
        'Normal Synced fleet/east: synced commit 0123456789ab',
        'Warning SyncError fleet/west: 1 error(s): sync: KNV2009 apply failed: forbidden (last synced commit fedcba987654)',
      ]),
    );
    // The engine's own conditions are untouched by the adapter's server-side apply.
    await mergePatch(
      cp.members.west!,
      REPO_SYNCS,
      'web',
      { status: { lastSyncedCommit: 'fedcba9876543210', sync: { errorSummary: null, errors: null } } },
      true,
    );
    await eventually('all synced', condition, (x) => x?.status === 'True' && x.reason === 'Synced');
  });

  it("scale-in deletes the sync object and waits for Config Sync's finalizer before forgetting the cluster", async () => {
    const west = cp.members.west!;
    // Config Sync's reconciler-manager adds its finalizer to a sync object with Foreground propagation.
    await mergePatch(west, REPO_SYNCS, 'web', { metadata: { finalizers: [CONFIG_SYNC_FINALIZER] } });
    await setStatus({ clusters: [cluster('east')] });
    const deleting = await eventually(
      'west RepoSync deleting',
      () => get(west, REPO_SYNCS, 'web'),
      (o) => Boolean(o.metadata?.deletionTimestamp),
    );
    expect(deleting.metadata?.finalizers).toEqual([CONFIG_SYNC_FINALIZER]);
    // Until the finalizer is done, west stays recorded and its reconciler keeps its RoleBinding.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await recorded()).toEqual(['fleet/east', 'fleet/west']);
    expect(await gone(west, ROLE_BINDINGS, 'web-reconciler')).toBe(false);
    // Config Sync finished deleting what it applied: it removes its finalizer.
    await mergePatch(west, REPO_SYNCS, 'web', { metadata: { finalizers: null } });
    await eventually('west forgotten', recorded, (r) => JSON.stringify(r) === '["fleet/east"]');
    expect(await gone(west, REPO_SYNCS, 'web')).toBe(true);
    expect(await gone(west, ROLE_BINDINGS, 'web-reconciler')).toBe(true);
    expect(await gone(cp.members.east!, REPO_SYNCS, 'web')).toBe(false);
    await eventually('deletion Event', events, (e) =>
      e.includes('Normal SyncObjectDeleted Config Sync objects removed from fleet/west'),
    );
  });

  it('keeps the sync object of an unreachable placed member untouched, reports it, and catches up when it returns', async () => {
    const east = cp.members.east!;
    const before = await get(east, REPO_SYNCS, 'web');
    await east.stop();
    await setStatus({
      clusters: [
        cluster('east', { state: 'SCALING_IN', draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: T } }),
      ],
    });
    const c = await eventually('east unreachable', condition, (x) => x?.reason === 'Unreachable');
    expect(c!.message).toMatch(/^fleet\/east: Unreachable: /);
    expect(await recorded()).toEqual(['fleet/east']);
    await east.start();
    const after = await eventually(
      'east drained',
      () => get(east, REPO_SYNCS, 'web'),
      (o) => (o.spec?.helm?.values?.mco as { desiredMaxReplicas?: number }).desiredMaxReplicas === 3,
    );
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(await events()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^Warning MemberUnreachable fleet\/east: /)]),
    );
  });

  it('a cluster that leaves while unreachable is retried and cleaned up when it returns, never forgotten', async () => {
    const west = cp.members.west!;
    await setStatus({ clusters: [cluster('east'), cluster('west')] });
    await eventually('the RepoSync on west again', () => get(west, REPO_SYNCS, 'web'), Boolean);
    await west.stop();
    await setStatus({ clusters: [cluster('east')] });
    await eventually('west unreachable', condition, (x) => Boolean(x?.message?.includes('fleet/west: Unreachable')));
    expect(await recorded()).toEqual(['fleet/east', 'fleet/west']);
    await west.start();
    await eventually('west forgotten', recorded, (r) => JSON.stringify(r) === '["fleet/east"]');
    expect(await gone(west, REPO_SYNCS, 'web')).toBe(true);
  });

  it('a 401 or a slow member is reported per cluster and changes nothing elsewhere', async () => {
    const writesBefore = results.length;
    await setStatus({ clusters: [cluster('east'), cluster('bad-token'), cluster('slow')] });
    const c = await eventually('both reported', condition, (x) =>
      Boolean(x?.message?.includes('fleet/bad-token: Unreachable') && x.message.includes('fleet/slow: Unreachable')),
    );
    expect(c!.message).toMatch(/fleet\/bad-token: Unreachable: .*Unauthorized/);
    expect(c!.message).toMatch(/fleet\/slow: Unreachable: .*(timed out|aborted|Timeout)/i);
    expect(c!.message).toMatch(/fleet\/east: (Synced|Syncing)/);
    // Nothing was written on east for this status change (its objects are up to date).
    expect(memberWritesAfter(writesBefore)).toBe(0);
    // A credential error on a placed member never deletes its sync object.
    await setStatus({ clusters: [cluster('east')] });
    await eventually('the failed clusters reported as leaving', condition, (x) => x?.status === 'False');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await recorded()).toEqual(['fleet/bad-token', 'fleet/east', 'fleet/slow']);
    expect(await gone(cp.members.east!, REPO_SYNCS, 'web')).toBe(false);
    // Once they can be reached they are checked and forgotten. bad-token is east under another name: east's
    // RepoSync belongs to cluster fleet/east, so it is not deleted on bad-token's behalf.
    const east = cp.members.east!;
    const west = cp.members.west!;
    await cp.hub.apply([
      kubeconfigSecret('bad-token', east.server, east.caData, east.token('controller')),
      kubeconfigSecret('slow', west.server, west.caData, west.token('controller')),
    ] as KubernetesObject[]);
    await eventually('failed clusters forgotten', recorded, (r) => JSON.stringify(r) === '["fleet/east"]');
    expect(await gone(east, REPO_SYNCS, 'web')).toBe(false);
  });

  it('a hostile kubeconfig Secret (the hub, a proxy, insecure TLS) is refused naming the field, and nothing connects', async () => {
    const east = cp.members.east!;
    const port = (blackhole.address() as { port: number }).port;
    const hostile = {
      'in-cluster': kubeconfigSecret('in-cluster', 'https://kubernetes.default.svc', east.caData, 'stolen'),
      proxied: kubeconfigSecret('proxied', east.server, east.caData, 'stolen', {
        'proxy-url': `http://127.0.0.1:${port}`,
      }),
      insecure: kubeconfigSecret('insecure', east.server, east.caData, 'stolen', { 'insecure-skip-tls-verify': true }),
    };
    await cp.hub.apply(Object.values(hostile) as KubernetesObject[]);
    await cp.hub.apply(
      Object.keys(hostile).map((name) => ({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace: 'fleet', annotations: { [KUBECONFIG_SECRET_ANNOTATION]: `${name}-kubeconfig` } },
        spec: { displayName: name, clusterManager: { name: 'test' } },
      })) as KubernetesObject[],
    );
    const connectionsBefore = sockets.length;
    const writesBefore = results.length;
    await setStatus({ clusters: [cluster('east'), ...Object.keys(hostile).map((name) => cluster(name))] });
    const c = await eventually('every hostile cluster reported', condition, (x) =>
      Object.keys(hostile).every((name) => x?.message?.includes(`fleet/${name}: Unreachable`)),
    );
    const reasons = Object.fromEntries(
      Object.keys(hostile).map((name) => [
        name,
        new RegExp(`fleet/${name}: Unreachable: ([^;\\n]*)`).exec(c!.message!)?.[1],
      ]),
    );
    expect({
      reasons,
      connections: sockets.length - connectionsBefore,
      memberWrites: memberWritesAfter(writesBefore),
    }).toEqual({
      reasons: {
        'in-cluster': `Invalid: ClusterProfile fleet/in-cluster: kubeconfig Secret: cluster.server "https://kubernetes.default.svc" is refused: it is the hub's own API server`,
        proxied: `Invalid: ClusterProfile fleet/proxied: kubeconfig Secret: cluster.proxy-url "http://127.0.0.1:${port}" is refused: it matches no allowedProxyURLs entry`,
        insecure:
          'Invalid: ClusterProfile fleet/insecure: kubeconfig Secret: cluster.insecure-skip-tls-verify is refused: allowInsecureSkipTLSVerify is not set',
      },
      connections: 0,
      memberWrites: 0,
    });
    // Fixed, they are reached and, no longer placed, forgotten; east's objects were never touched.
    await setStatus({ clusters: [cluster('east')] });
    await cp.hub.apply(
      Object.keys(hostile).map((name) =>
        kubeconfigSecret(name, east.server, east.caData, east.token('controller')),
      ) as KubernetesObject[],
    );
    await eventually('hostile clusters forgotten', recorded, (r) => JSON.stringify(r) === '["fleet/east"]');
    expect(await gone(east, REPO_SYNCS, 'web')).toBe(false);
  });

  it('a restart resumes from the record: no writes when nothing changed, and removals seen while down are applied', async () => {
    await delivery!.stop();
    const from = results.length;
    start();
    await eventually(
      'a resync after restart',
      async () => results.length,
      (n) => n >= from + 2,
    );
    expect(memberWritesAfter(from)).toBe(0);
    expect(await gone(cp.members.east!, REPO_SYNCS, 'web')).toBe(false);

    await delivery!.stop();
    await setStatus({ clusters: [] });
    start();
    await eventually(
      'east cleaned after restart',
      () => gone(cp.members.east!, REPO_SYNCS, 'web'),
      (g) => g,
    );
    await eventually('east forgotten after its RoleBinding went', recorded, (r) => r.length === 0);
    expect(await gone(cp.members.east!, ROLE_BINDINGS, 'web-reconciler')).toBe(true);
  });

  it('an invalid template changes nothing and is reported', async () => {
    const east = cp.members.east!;
    await setStatus({ clusters: [cluster('east')] });
    await eventually('east again', () => get(east, REPO_SYNCS, 'web'), Boolean);
    const p = await placement();
    await custom.patchNamespacedCustomObject(
      {
        ...PLACEMENTS,
        namespace: 'fleet',
        name: 'web',
        body: { metadata: { annotations: { [TEMPLATE_ANNOTATION]: 'kind: Deployment\n' } } },
      },
      requestOptions(hubAdmin, 10_000, PatchStrategy.MergePatch),
    );
    await setStatus({ clusters: [] });
    const c = await eventually('invalid template reported', condition, (x) => x?.reason === 'InvalidTemplate');
    expect(c!.message).toContain(`annotation ${TEMPLATE_ANNOTATION}: document 0 field apiVersion`);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await gone(east, REPO_SYNCS, 'web')).toBe(false);
    expect(await recorded()).toEqual(['fleet/east']);
    await custom.patchNamespacedCustomObject(
      {
        ...PLACEMENTS,
        namespace: 'fleet',
        name: 'web',
        body: { metadata: { annotations: { [TEMPLATE_ANNOTATION]: p.metadata.annotations![TEMPLATE_ANNOTATION] } } },
      },
      requestOptions(hubAdmin, 10_000, PatchStrategy.MergePatch),
    );
    await eventually(
      'east removed once valid',
      () => gone(east, REPO_SYNCS, 'web'),
      (g) => g,
    );
  });

  it('never touches a sync object it did not create', async () => {
    const east = cp.members.east!;
    const foreign = {
      apiVersion: 'configsync.gke.io/v1beta1',
      kind: 'RepoSync',
      metadata: { name: 'shop-team', namespace: 'fleet' },
      spec: { sourceType: 'git', git: { repo: 'https://git.example.com/team', auth: 'none' } },
    };
    await east.apply([foreign as KubernetesObject]);
    const theirs = await get(east, REPO_SYNCS, 'shop-team');
    await cp.hub.apply([
      {
        apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
        kind: 'MultiKubernetesClusterPlacement',
        metadata: {
          name: 'shop-team',
          namespace: 'fleet',
          annotations: { [TEMPLATE_ANNOTATION]: TEMPLATE.split('---')[0]! },
        },
        spec: {},
      } as KubernetesObject,
    ]);
    await setStatus({ clusters: [cluster('east')] }, 'shop-team');
    const c = await eventually(
      'conflict reported',
      () => condition('shop-team'),
      (x) => x?.reason === 'NotOwned',
    );
    expect(c!.message).toContain('RepoSync/fleet/shop-team exists and was not created by mco for this placement');
    await setStatus({ clusters: [] }, 'shop-team');
    await eventually(
      'placement forgets east',
      () => recorded('shop-team'),
      (r) => r.length === 0,
    );
    const after = await get(east, REPO_SYNCS, 'shop-team');
    expect(after.metadata?.resourceVersion).toBe(theirs.metadata?.resourceVersion);
  });

  it('a deleted placement keeps its finalizer until every member is cleaned up', async () => {
    const east = cp.members.east!;
    await setStatus({ clusters: [cluster('east')] });
    await eventually('east again', () => get(east, REPO_SYNCS, 'web'), Boolean);
    await mergePatch(east, REPO_SYNCS, 'web', { metadata: { finalizers: [CONFIG_SYNC_FINALIZER] } });
    await custom.deleteNamespacedCustomObject({ ...PLACEMENTS, namespace: 'fleet', name: 'web' });
    await eventually(
      'east deleting',
      () => get(east, REPO_SYNCS, 'web'),
      (o) => Boolean(o.metadata?.deletionTimestamp),
    );
    expect((await placement()).metadata.finalizers).toContain(CLEANUP_FINALIZER);
    await mergePatch(east, REPO_SYNCS, 'web', { metadata: { finalizers: null } });
    await eventually(
      'placement gone',
      () =>
        placement().then(
          () => false,
          (e: { code?: number }) => e.code === 404,
        ),
      (g) => g,
    );
    expect(await gone(east, ROLE_BINDINGS, 'web-reconciler')).toBe(true);
  });
});

import type { ClusterProfile, Placement, PlacementCluster } from '@mco/core';
import { aClusterProfile, aPlacement } from '@mco/core/testing';
import { backoffDelay } from '@mco/kube-runtime';
import { createLogger } from '@mco/runtime';
import { describe, expect, it } from 'vitest';
import {
  CLEANUP_FINALIZER,
  DELIVERED_ANNOTATION,
  RETRY_BACKOFF,
  TEMPLATE_ANNOTATION,
  createReconciler,
  desiredObjects,
  parseTemplate,
  readRecord,
  summarizeCondition,
  summarizeSyncStatus,
  writeRecord,
} from '../src/index.js';
import { FakeHub, FakeMember } from './fakes.js';

const T = '2026-01-01T00:00:00Z';
const REPO_SYNC = `apiVersion: configsync.gke.io/v1beta1
kind: RepoSync
spec: {sourceType: helm, helm: {repo: https://charts.example.com, chart: web, values: {replicaCount: 2}}}
`;
const ROLE_BINDING = `---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web-reconciler}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: ServiceAccount, name: ns-reconciler-shop-web-3, namespace: config-management-system}]
`;
const SYNC_REF = { kind: 'RepoSync', namespace: 'shop', name: 'web' } as const;
const BINDING_REF = { kind: 'RoleBinding', namespace: 'shop', name: 'web-reconciler' } as const;

const cluster = (name: string, extra: Partial<PlacementCluster> = {}): PlacementCluster => ({
  name,
  namespace: 'fleet',
  state: 'ACTIVE',
  lastTransitionTime: T,
  ...extra,
});

function placementWith(template: string | undefined, clusters: PlacementCluster[]): Placement {
  const p = aPlacement('shop/web', {}, { observedGeneration: 1, clusters });
  if (template !== undefined) p.metadata.annotations = { [TEMPLATE_ANNOTATION]: template };
  return p;
}

describe('parseTemplate', () => {
  const ROOT_SYNC = 'apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nspec: {}\n';
  const binding = (fields: string) =>
    `---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: x}\n${fields}`;
  const EDIT = 'roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\n';
  const subject = (name: string, namespace = 'config-management-system') =>
    `subjects: [{kind: ServiceAccount, name: ${name}, namespace: ${namespace}}]\n`;
  const PREFIX = 'annotation configsync.mco.x-k8s.io/template: ';
  it.each([
    ['no RepoSync or RootSync', ROLE_BINDING, 'no RepoSync or RootSync'],
    [
      'an object mco does not deliver',
      'apiVersion: apps/v1\nkind: Deployment\n',
      'document 0 field apiVersion: Invalid option: expected one of "configsync.gke.io/v1beta1"|"configsync.gke.io/v1alpha1"',
    ],
    [
      'a RepoSync in another namespace (team-b)',
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nmetadata: {namespace: team-b}\nspec: {}\n',
      "document 0 field metadata.namespace: a RepoSync must be in its placement's namespace shop, not team-b",
    ],
    [
      'a RepoSync in kube-system',
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nmetadata: {namespace: kube-system}\nspec: {}\n',
      "document 0 field metadata.namespace: a RepoSync must be in its placement's namespace shop, not kube-system",
    ],
    [
      'a RootSync from a namespace the operator did not list',
      ROOT_SYNC,
      'document 0 field kind: a RootSync is allowed only from the hub namespaces --root-sync-namespaces lists (none), not from shop',
    ],
    ['two sync objects', `${REPO_SYNC}---\n${REPO_SYNC}`, 'document 1: only one RepoSync or RootSync per placement'],
    [
      'a RoleBinding in another namespace',
      `${REPO_SYNC}${binding(`${EDIT}`).replace('{name: x}', '{name: x, namespace: other}')}`,
      "document 1 (RoleBinding x) field metadata.namespace: must be the RepoSync's namespace shop",
    ],
    [
      'a RoleBinding to cluster-admin',
      `${REPO_SYNC}${binding('roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n')}`,
      'document 1 (RoleBinding x) field roleRef: ClusterRole/cluster-admin is not one of the roles --allowed-role-refs allows (ClusterRole/edit)',
    ],
    [
      'a RoleBinding to admin',
      `${REPO_SYNC}${binding('roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}\n')}`,
      'document 1 (RoleBinding x) field roleRef: ClusterRole/admin is not one of the roles --allowed-role-refs allows (ClusterRole/edit)',
    ],
    [
      'a RoleBinding to a role of another API group',
      `${REPO_SYNC}${binding('roleRef: {apiGroup: example.com, kind: ClusterRole, name: edit}\n')}`,
      'document 1 (RoleBinding x) field roleRef.apiGroup: must be rbac.authorization.k8s.io',
    ],
    [
      'a RoleBinding for a user',
      `${REPO_SYNC}${binding(`${EDIT}subjects: [{kind: User, name: mallory, apiGroup: rbac.authorization.k8s.io}]\n`)}`,
      "document 1 (RoleBinding x) field subjects[0]: only the sync's own reconciler may be bound: ServiceAccount config-management-system/ns-reconciler-shop-web-3",
    ],
    [
      'a RoleBinding for a group',
      `${REPO_SYNC}${binding(`${EDIT}subjects: [{kind: Group, name: system:authenticated, apiGroup: rbac.authorization.k8s.io}]\n`)}`,
      "document 1 (RoleBinding x) field subjects[0]: only the sync's own reconciler may be bound: ServiceAccount config-management-system/ns-reconciler-shop-web-3",
    ],
    [
      "another sync's reconciler",
      `${REPO_SYNC}${binding(`${EDIT}${subject('ns-reconciler-team-b')}`)}`,
      "document 1 (RoleBinding x) field subjects[0]: only the sync's own reconciler may be bound: ServiceAccount config-management-system/ns-reconciler-shop-web-3",
    ],
    [
      'the reconciler name in another namespace',
      `${REPO_SYNC}${binding(`${EDIT}${subject('ns-reconciler-shop-web-3', 'shop')}`)}`,
      "document 1 (RoleBinding x) field subjects[0]: only the sync's own reconciler may be bound: ServiceAccount config-management-system/ns-reconciler-shop-web-3",
    ],
    [
      'the root reconciler',
      `${REPO_SYNC}${binding(`${EDIT}${subject('root-reconciler')}`)}`,
      "document 1 (RoleBinding x) field subjects[0]: only the sync's own reconciler may be bound: ServiceAccount config-management-system/ns-reconciler-shop-web-3",
    ],
    [
      "a RootSync's helm.namespace on a RepoSync",
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {sourceType: helm, helm: {repo: https://charts.example, chart: web, namespace: kube-system}}\n',
      'document 0 field spec.helm.namespace: is not a field a RepoSync from a tenant namespace may set',
    ],
    [
      "a RootSync's helm.deployNamespace on a RepoSync",
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {helm: {deployNamespace: team-b}}\n',
      'document 0 field spec.helm.deployNamespace: is not a field a RepoSync from a tenant namespace may set',
    ],
    [
      'override.roleRefs (RoleBindings the reconciler manager would create)',
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {override: {roleRefs: [{kind: ClusterRole, name: cluster-admin}]}}\n',
      'document 0 field spec.override.roleRefs: is not a field a RepoSync from a tenant namespace may set',
    ],
    [
      'override.enableShellInRendering',
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {override: {enableShellInRendering: true}}\n',
      'document 0 field spec.override.enableShellInRendering: is not a field a RepoSync from a tenant namespace may set',
    ],
    [
      'a spec field Config Sync does not define for a RepoSync',
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {namespace: kube-system}\n',
      'document 0 field spec.namespace: is not a field a RepoSync from a tenant namespace may set',
    ],
    [
      'a source that is not an object',
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {git: [a]}\n',
      'document 0 field spec.git: must be an object',
    ],
    [
      "Config Sync's annotation on the sync object",
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nmetadata: {annotations: {configsync.gke.io/managed: enabled}}\nspec: {}\n',
      'document 0 field metadata.annotations.configsync.gke.io/managed: is reserved for Config Sync and mco',
    ],
    [
      "mco's managed-by label on a RoleBinding",
      `${REPO_SYNC}${binding(EDIT).replace('{name: x}', '{name: x, labels: {app.kubernetes.io/managed-by: someone}}')}`,
      'document 1 field metadata.labels.app.kubernetes.io/managed-by: is reserved for Config Sync and mco',
    ],
    [
      "a RepoSync into Config Sync's namespace",
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nmetadata: {namespace: config-management-system}\nspec: {}\n',
      "document 0 field metadata.namespace: a RepoSync must be in its placement's namespace shop, not config-management-system",
    ],
    ['YAML that does not parse', 'kind: [', expect.stringMatching(/^document 0: /)],
  ])('refuses %s, naming the field', (_name, template, error) => {
    const expected =
      typeof error === 'string'
        ? `${PREFIX}${error}`
        : expect.stringMatching(/^annotation configsync.mco.x-k8s.io\/template: document 0: /);
    expect(parseTemplate(placementWith(template, []))).toEqual({ ok: false, error: expected });
  });

  it("puts a RepoSync in its placement's namespace and names it after the placement", () => {
    expect(parseTemplate(placementWith(REPO_SYNC + ROLE_BINDING, []))).toMatchObject({
      ok: true,
      template: {
        sync: { kind: 'RepoSync', metadata: { name: 'web', namespace: 'shop' } },
        roleBindings: [{ metadata: { name: 'web-reconciler', namespace: 'shop' } }],
      },
    });
    expect(parseTemplate(aPlacement('shop/web'))).toBeUndefined();
  });

  it.each([
    ['repo-sync', 'RepoSync', 'shop', 'ns-reconciler-shop'],
    ['web', 'RepoSync', 'shop', 'ns-reconciler-shop-web-3'],
    ['root-sync', 'RootSync', 'config-management-system', 'root-reconciler'],
    ['web', 'RootSync', 'config-management-system', 'root-reconciler-web'],
  ] as const)('binds the reconciler of %s %s as Config Sync names it', (name, kind, namespace, reconciler) => {
    const sync = `apiVersion: configsync.gke.io/v1beta1\nkind: ${kind}\nmetadata: {name: ${name}}\nspec: {}\n`;
    const result = parseTemplate(placementWith(sync + binding(`${EDIT}${subject(reconciler)}`), []), {
      rootSyncNamespaces: ['shop'],
    });
    expect(result).toMatchObject({ ok: true, template: { sync: { kind, metadata: { name, namespace } } } });
  });

  it('allows a RootSync, and a RepoSync elsewhere, only from the hub namespaces the operator lists', () => {
    const policy = { rootSyncNamespaces: ['platform'] };
    const root = (ns: string) =>
      parseTemplate(
        {
          ...placementWith(ROOT_SYNC, []),
          metadata: { namespace: ns, name: 'base', annotations: { [TEMPLATE_ANNOTATION]: ROOT_SYNC } },
        },
        policy,
      );
    expect(root('platform')).toMatchObject({
      ok: true,
      template: { sync: { kind: 'RootSync', metadata: { name: 'base', namespace: 'config-management-system' } } },
    });
    expect(root('shop')).toMatchObject({ ok: false, error: expect.stringContaining('(platform), not from shop') });
    const elsewhere =
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nmetadata: {namespace: kube-system}\nspec: {}\n';
    const p = placementWith(elsewhere, []);
    expect(parseTemplate({ ...p, metadata: { ...p.metadata, namespace: 'platform' } }, policy)).toMatchObject({
      ok: true,
    });
    expect(parseTemplate(p, policy)).toMatchObject({ ok: false });
  });

  it.each(['config-management-system', 'config-management-monitoring', 'resource-group-system'])(
    'refuses a placement in the hub namespace %s, and a RepoSync into it even from an operator namespace',
    (namespace) => {
      const p = placementWith(REPO_SYNC, []);
      expect(parseTemplate({ ...p, metadata: { ...p.metadata, namespace } })).toEqual({
        ok: false,
        error: `${PREFIX}a placement in the hub namespace ${namespace} is refused: it is a Config Sync system namespace (config-management-system, config-management-monitoring, resource-group-system), and its RepoSync would run beside Config Sync's own reconcilers on every member`,
      });
      const into = `apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nmetadata: {namespace: ${namespace}}\nspec: {}\n`;
      const operator = placementWith(into, []);
      expect(
        parseTemplate(
          { ...operator, metadata: { ...operator.metadata, namespace: 'platform' } },
          {
            rootSyncNamespaces: ['platform'],
          },
        ),
      ).toEqual({
        ok: false,
        error: `${PREFIX}document 0 field metadata.namespace: a RepoSync may not be in Config Sync's namespace ${namespace}`,
      });
    },
  );

  it('accepts every RepoSync spec field a tenant may set, and leaves an operator namespace the whole spec', () => {
    const spec =
      '{sourceType: git, sourceFormat: unstructured, git: {repo: https://git.example/a, branch: main, revision: HEAD, dir: web, auth: token, secretRef: {name: git}, caCertSecretRef: {name: ca}, period: 15s, proxy: "", noSSLVerify: false, gcpServiceAccountEmail: a@b.iam.gserviceaccount.com}, override: {resources: [], gitSyncDepth: 1, statusMode: enabled, reconcileTimeout: 5m, apiServerTimeout: 15s, logLevels: []}}';
    const template = `apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: ${spec}\n`;
    expect(parseTemplate(placementWith(template, []))).toMatchObject({ ok: true });
    const operator = placementWith(
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {override: {enableShellInRendering: true}}\n',
      [],
    );
    expect(
      parseTemplate(
        { ...operator, metadata: { ...operator.metadata, namespace: 'platform' } },
        {
          rootSyncNamespaces: ['platform'],
        },
      ),
    ).toMatchObject({ ok: true });
  });

  it('takes the roles a RoleBinding may refer to from the operator', () => {
    const template = `${REPO_SYNC}${binding(`roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}\n${subject('ns-reconciler-shop-web-3')}`)}`;
    expect(parseTemplate(placementWith(template, []))).toMatchObject({ ok: false });
    expect(parseTemplate(placementWith(template, []), { allowedRoleRefs: ['Role/deployer'] })).toMatchObject({
      ok: true,
    });
  });
});

describe('desiredObjects', () => {
  it("marks the objects as mco's, sets Foreground deletion and merges the cluster values for a Helm source", () => {
    const p = placementWith(REPO_SYNC + ROLE_BINDING, []);
    const template = parseTemplate(p);
    if (!template?.ok) throw new Error('template');
    const draining = cluster('west', {
      state: 'SCALING_IN',
      draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: T },
    });
    const [binding, sync] = desiredObjects(template.template, p, draining);
    expect(binding).toMatchObject({ kind: 'RoleBinding', metadata: { name: 'web-reconciler', namespace: 'shop' } });
    expect(sync!.metadata.annotations).toMatchObject({
      'configsync.gke.io/deletion-propagation-policy': 'Foreground',
      'configsync.mco.x-k8s.io/placement': 'shop/web',
      'configsync.mco.x-k8s.io/cluster': 'fleet/west',
    });
    expect(sync!.spec).toEqual({
      sourceType: 'helm',
      helm: {
        repo: 'https://charts.example.com',
        chart: 'web',
        values: {
          replicaCount: 2,
          mco: {
            cluster: 'fleet/west',
            clusterProfileName: 'west',
            clusterProfileNamespace: 'fleet',
            state: 'SCALING_IN',
            draining: true,
            desiredMaxReplicas: 3,
          },
        },
      },
    });
    // The hash changes with the values and only with them.
    const again = desiredObjects(template.template, p, draining)[1]!;
    const active = desiredObjects(template.template, p, cluster('west'))[1]!;
    const hash = 'configsync.mco.x-k8s.io/applied-hash';
    expect(again.metadata.annotations[hash]).toBe(sync!.metadata.annotations[hash]);
    expect(active.metadata.annotations[hash]).not.toBe(sync!.metadata.annotations[hash]);
  });

  it("passes a replacement's replica floor (rule O3) as desiredMinReplicas, and nothing without one", () => {
    const p = placementWith(REPO_SYNC + ROLE_BINDING, []);
    const template = parseTemplate(p);
    if (!template?.ok) throw new Error('template');
    const valuesOf = (c: ReturnType<typeof cluster>) =>
      (desiredObjects(template.template, p, c)[1]!.spec as { helm: { values: { mco: object } } }).helm.values.mco;
    expect(valuesOf(cluster('east', { desiredMinReplicas: 6, replacesCluster: 'fleet/west' }))).toEqual({
      cluster: 'fleet/east',
      clusterProfileName: 'east',
      clusterProfileNamespace: 'fleet',
      state: 'ACTIVE',
      draining: false,
      desiredMinReplicas: 6,
    });
    expect(valuesOf(cluster('east'))).not.toHaveProperty('desiredMinReplicas');
  });
});

describe('the delivered record', () => {
  it('round-trips sorted, and a record that does not parse is an error, not an empty record', () => {
    const record = new Map([
      ['fleet/west', [SYNC_REF, BINDING_REF]],
      ['fleet/east', [SYNC_REF]],
    ]);
    const text = writeRecord(record);
    expect(text).toBe(
      '{"fleet/east":["RepoSync/shop/web"],"fleet/west":["RepoSync/shop/web","RoleBinding/shop/web-reconciler"]}',
    );
    const p = aPlacement('shop/web');
    p.metadata.annotations = { [DELIVERED_ANNOTATION]: text };
    expect(readRecord(p)).toEqual({
      ok: true,
      record: new Map([
        ['fleet/east', [SYNC_REF]],
        ['fleet/west', [SYNC_REF, BINDING_REF]],
      ]),
    });
    p.metadata.annotations = { [DELIVERED_ANNOTATION]: '{"fleet/east": ["Deployment/a/b"]}' };
    expect(readRecord(p)).toEqual({
      ok: false,
      error: 'annotation configsync.mco.x-k8s.io/delivered: cluster fleet/east: not a list of Kind/namespace/name',
    });
  });
});

describe('sync status summaries', () => {
  it.each([
    ['no status yet', undefined, { phase: 'Syncing', message: 'waiting for Config Sync' }],
    [
      'a synced commit',
      { lastSyncedCommit: 'abcdef0123456789' },
      { phase: 'Synced', message: 'synced commit abcdef012345' },
    ],
    [
      'sync errors',
      {
        lastSyncedCommit: 'abc',
        sync: { errorSummary: { totalCount: 3 }, errors: [{ code: '1021', errorMessage: 'unknown kind' }] },
      },
      { phase: 'Error', message: '3 error(s): sync: KNV1021 unknown kind (last synced commit abc)' },
    ],
    [
      'a stalled reconciler',
      { conditions: [{ type: 'Stalled', status: 'True', reason: 'Validation', message: 'bad spec' }] },
      { phase: 'Error', message: '1 error(s): stalled: Validation bad spec' },
    ],
    [
      'a sync in progress',
      { lastSyncedCommit: 'abc', conditions: [{ type: 'Syncing', status: 'True', message: 'Sync in progress' }] },
      { phase: 'Syncing', message: 'Syncing: Sync in progress (last synced commit abc)' },
    ],
  ])('%s', (_name, status, expected) => {
    expect(summarizeSyncStatus('fleet/east', status)).toEqual({ cluster: 'fleet/east', ...expected });
  });

  it('makes one condition: the worst phase wins, one line per cluster in order', () => {
    expect(
      summarizeCondition([
        { cluster: 'fleet/west', phase: 'Unreachable', message: 'Timeout' },
        { cluster: 'fleet/east', phase: 'Synced', message: 'synced commit abc' },
      ]),
    ).toEqual({
      status: 'False',
      reason: 'Unreachable',
      message: 'fleet/east: Synced: synced commit abc\nfleet/west: Unreachable: Timeout',
    });
    expect(summarizeCondition([{ cluster: 'fleet/east', phase: 'Synced', message: 'x' }])).toMatchObject({
      status: 'True',
      reason: 'Synced',
    });
    expect(summarizeCondition([{ cluster: 'fleet/east', phase: 'Deleting', message: 'x' }])).toMatchObject({
      status: 'Unknown',
      reason: 'Deleting',
    });
  });
});

describe('the reconciler (fakes for the hub and members)', () => {
  function setup(placement: Placement, profiles = ['east', 'west']) {
    const placements = new Map([['shop/web', placement]]);
    const members = new Map(profiles.map((n) => [`fleet/${n}`, new FakeMember()]));
    const profileMap = new Map<string, ClusterProfile>(
      profiles.map((n) => [`fleet/${n}`, aClusterProfile(`fleet/${n}`)]),
    );
    const hub = new FakeHub(placements);
    let synced = true;
    /** The info and higher lines logged, without time and component. */
    const logs: Record<string, unknown>[] = [];
    const logger = createLogger({
      write: (line) => {
        const { time: _time, component: _component, ...rest } = JSON.parse(line) as Record<string, unknown>;
        logs.push(rest);
      },
    });
    const reconciler = createReconciler({
      logger,
      placements: { get: (k) => placements.get(k), hasSynced: () => synced },
      clusterProfiles: { get: (k) => profileMap.get(k), hasSynced: () => synced },
      member: async (profile) => members.get(`${profile.metadata.namespace}/${profile.metadata.name}`)!,
      hub,
      now: () => new Date(T),
    });
    const setStatus = (clusters: PlacementCluster[]) => {
      const p = structuredClone(placements.get('shop/web')!);
      p.status = { ...p.status, clusters };
      placements.set('shop/web', p);
    };
    const record = () =>
      Object.keys(
        JSON.parse(placements.get('shop/web')!.metadata.annotations?.[DELIVERED_ANNOTATION] ?? '{}') as object,
      );
    return { placements, members, hub, reconciler, setStatus, record, logs, unsync: () => (synced = false) };
  }

  it('applies on every listed cluster, then writes nothing on a resync', async () => {
    const t = setup(placementWith(REPO_SYNC + ROLE_BINDING, [cluster('east'), cluster('west')]));
    const first = await t.reconciler.reconcile('shop/web');
    expect(first).toMatchObject({ retry: false, memberWrites: 4 });
    expect(t.record()).toEqual(['fleet/east', 'fleet/west']);
    expect((t.placements.get('shop/web')!.metadata as { finalizers?: string[] }).finalizers).toEqual([
      CLEANUP_FINALIZER,
    ]);
    const hubWrites = t.hub.writes;
    expect(await t.reconciler.reconcile('shop/web')).toMatchObject({ memberWrites: 0, hubWrites: 0 });
    expect(t.hub.writes).toBe(hubWrites);
  });

  it('does nothing at all while a cache is not synced', async () => {
    const t = setup(placementWith(REPO_SYNC, [cluster('east')]));
    t.unsync();
    expect(await t.reconciler.reconcile('shop/web')).toEqual({
      retry: false,
      waiting: true,
      memberWrites: 0,
      hubWrites: 0,
    });
    expect(t.members.get('fleet/east')!.objects.size).toBe(0);
  });

  it.each([
    [
      'an invalid template',
      (p: Placement) => (p.metadata.annotations![TEMPLATE_ANNOTATION] = 'kind: Pod'),
      'InvalidTemplate',
    ],
    ['a removed template', (p: Placement) => delete p.metadata.annotations![TEMPLATE_ANNOTATION], 'TemplateMissing'],
    [
      'an invalid status',
      (p: Placement) => ((p.status!.clusters![0] as { state: string }).state = 'GONE'),
      'InvalidPlacement',
    ],
    [
      'a listed cluster without a namespace',
      (p: Placement) => delete (p.status!.clusters![0] as { namespace?: string }).namespace,
      'InvalidPlacementStatus',
    ],
    ['an unreadable record', (p: Placement) => (p.metadata.annotations![DELIVERED_ANNOTATION] = '{'), 'InvalidRecord'],
  ])('%s with every cluster dropped deletes nothing and is reported once', async (_name, spoil, reason) => {
    const t = setup(placementWith(REPO_SYNC, [cluster('east')]));
    await t.reconciler.reconcile('shop/web');
    const p = structuredClone(t.placements.get('shop/web')!);
    spoil(p);
    const keep = reason === 'InvalidPlacement' || reason === 'InvalidPlacementStatus';
    p.status = { ...p.status, clusters: keep ? p.status!.clusters! : [] };
    t.placements.set('shop/web', p);
    const east = t.members.get('fleet/east')!;
    const writes = east.writes;
    await t.reconciler.reconcile('shop/web');
    await t.reconciler.reconcile('shop/web');
    expect(east.writes).toBe(writes);
    expect(east.objects.size).toBe(1);
    expect(t.hub.events.filter((e) => e.startsWith(`Warning ${reason}`))).toHaveLength(1);
  });

  // No information about the placement (readPlacementStatus of @mco/kube-runtime): nothing changes anywhere.
  it.each([
    ['the status is gone (restored from a backup)', (p: Placement) => delete p.status],
    ['a status the controller never stamped', (p: Placement) => (p.status = { clusters: [] })],
    [
      'a listed cluster without a namespace',
      (p: Placement) =>
        (p.status = { observedGeneration: 1, clusters: [{ ...cluster('east'), namespace: undefined }] }),
    ],
  ])('%s: nothing is deleted or applied on any member', async (_name, spoil) => {
    const t = setup(placementWith(REPO_SYNC + ROLE_BINDING, [cluster('east'), cluster('west')]));
    await t.reconciler.reconcile('shop/web');
    const p = structuredClone(t.placements.get('shop/web')!);
    spoil(p);
    t.placements.set('shop/web', p);
    const writes = [...t.members.values()].map((m) => m.writes);
    const result = await t.reconciler.reconcile('shop/web');
    expect(result).toMatchObject({ retry: false, memberWrites: 0 });
    expect([...t.members.values()].map((m) => m.writes)).toEqual(writes);
    expect([...t.members.values()].map((m) => m.objects.size)).toEqual([2, 2]);
    expect(t.record()).toEqual(['fleet/east', 'fleet/west']);
  });

  it('a lagging observedGeneration (a spec edit not evaluated yet) keeps the last clusters', async () => {
    const t = setup(placementWith(REPO_SYNC, [cluster('east')]));
    await t.reconciler.reconcile('shop/web');
    const p = structuredClone(t.placements.get('shop/web')!);
    p.metadata.generation = 2;
    t.placements.set('shop/web', p);
    expect(await t.reconciler.reconcile('shop/web')).toMatchObject({ memberWrites: 0 });
    expect(t.members.get('fleet/east')!.objects.size).toBe(1);
  });

  it('a template turned hostile is refused in the condition and deletes nothing already delivered', async () => {
    const t = setup(placementWith(REPO_SYNC + ROLE_BINDING, [cluster('east')]));
    await t.reconciler.reconcile('shop/web');
    const p = structuredClone(t.placements.get('shop/web')!);
    p.metadata.annotations![TEMPLATE_ANNOTATION] = 'apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nspec: {}\n';
    t.placements.set('shop/web', p);
    const east = t.members.get('fleet/east')!;
    const writes = east.writes;
    await t.reconciler.reconcile('shop/web');
    expect(east.writes).toBe(writes);
    expect([...east.objects.keys()].sort()).toEqual(['RepoSync/shop/web', 'RoleBinding/shop/web-reconciler']);
    const condition = t.placements.get('shop/web')!.status?.conditions?.find((c) => c.type === 'ConfigSyncSynced');
    expect(condition).toMatchObject({
      status: 'False',
      reason: 'InvalidTemplate',
      message: expect.stringContaining('field kind: a RootSync is allowed only from the hub namespaces'),
    });
  });

  it('lets go of a placement whose template was removed once nothing is delivered', async () => {
    const t = setup(placementWith(REPO_SYNC, []));
    await t.reconciler.reconcile('shop/web');
    expect((t.placements.get('shop/web')!.metadata as { finalizers?: string[] }).finalizers).toEqual([
      CLEANUP_FINALIZER,
    ]);
    const p = structuredClone(t.placements.get('shop/web')!);
    delete p.metadata.annotations![TEMPLATE_ANNOTATION];
    t.placements.set('shop/web', p);
    await t.reconciler.reconcile('shop/web');
    expect((t.placements.get('shop/web')!.metadata as { finalizers?: string[] }).finalizers).toEqual([]);
    expect(t.hub.events).toEqual([]);
  });

  it('keeps an unreachable cluster that left in the record and deletes once it is back', async () => {
    const t = setup(placementWith(REPO_SYNC, [cluster('east'), cluster('west')]));
    await t.reconciler.reconcile('shop/web');
    const west = t.members.get('fleet/west')!;
    west.reachable = false;
    t.setStatus([cluster('east')]);
    expect(await t.reconciler.reconcile('shop/web')).toMatchObject({ retry: true });
    expect(t.record()).toEqual(['fleet/east', 'fleet/west']);
    west.reachable = true;
    await t.reconciler.reconcile('shop/web');
    expect(west.objects.size).toBe(0);
    // Forgotten on the next pass, which sees it gone.
    expect(t.record()).toEqual(['fleet/east', 'fleet/west']);
    await t.reconciler.reconcile('shop/web');
    expect(t.record()).toEqual(['fleet/east']);
  });

  it('logs one line per applied object, and nothing at info when a resync changes nothing', async () => {
    const t = setup(placementWith(REPO_SYNC + ROLE_BINDING, [cluster('east')]), ['east']);
    await t.reconciler.reconcile('shop/web');
    // In desiredObjects' order: the RoleBindings first.
    expect(t.logs).toEqual([
      {
        level: 'info',
        msg: 'applied',
        placement: 'shop/web',
        cluster: 'fleet/east',
        object: 'RoleBinding shop/web-reconciler',
      },
      { level: 'info', msg: 'applied', placement: 'shop/web', cluster: 'fleet/east', object: 'RepoSync shop/web' },
    ]);
    t.logs.length = 0;
    await t.reconciler.reconcile('shop/web');
    expect(t.logs).toEqual([]);
  });

  it('logs an unreachable member once per outage, its return, and each delete', async () => {
    const t = setup(placementWith(REPO_SYNC, [cluster('east'), cluster('west')]));
    await t.reconciler.reconcile('shop/web');
    const west = t.members.get('fleet/west')!;
    west.reachable = false;
    t.setStatus([cluster('east')]);
    t.logs.length = 0;
    await t.reconciler.reconcile('shop/web');
    await t.reconciler.reconcile('shop/web');
    expect(t.logs).toEqual([
      {
        level: 'warn',
        msg: 'member unreachable; its objects are kept and retried',
        placement: 'shop/web',
        cluster: 'fleet/west',
        reason: expect.stringContaining('ECONNREFUSED') as string,
      },
    ]);
    t.logs.length = 0;
    west.reachable = true;
    await t.reconciler.reconcile('shop/web');
    expect(t.logs).toEqual([
      { level: 'info', msg: 'deleted', placement: 'shop/web', cluster: 'fleet/west', object: 'RepoSync shop/web' },
      { level: 'info', msg: 'member reachable again', placement: 'shop/web', cluster: 'fleet/west' },
    ]);
  });

  it('deletes the RoleBinding only after Config Sync removed the sync object', async () => {
    const t = setup(placementWith(REPO_SYNC + ROLE_BINDING, [cluster('east')]));
    await t.reconciler.reconcile('shop/web');
    const east = t.members.get('fleet/east')!;
    east.objects.get('RepoSync/shop/web')!.metadata!.finalizers = ['reconciler-manager.configsync.gke.io'];
    t.setStatus([]);
    expect(await t.reconciler.reconcile('shop/web')).toMatchObject({ waiting: true });
    expect(await t.reconciler.reconcile('shop/web')).toMatchObject({ waiting: true, memberWrites: 0 });
    expect([...east.objects.keys()].sort()).toEqual(['RepoSync/shop/web', 'RoleBinding/shop/web-reconciler']);
    east.finishDeletion(SYNC_REF);
    await t.reconciler.reconcile('shop/web');
    await t.reconciler.reconcile('shop/web');
    expect(east.objects.size).toBe(0);
    expect(t.record()).toEqual([]);
  });
});

describe('the retry backoff of a placement with an unreachable member', () => {
  it.each([
    [0, 1000],
    [1, 2000],
    [2, 4000],
    [3, 8000],
    [4, 10_000],
    [6, 10_000],
    [20, 10_000],
  ])('after %i failures waits at most %i ms (capped: a member back is retried within 10 s)', (attempt, ms) => {
    expect(backoffDelay(attempt, RETRY_BACKOFF, () => 0)).toBe(ms);
    expect(backoffDelay(attempt, RETRY_BACKOFF, () => 1)).toBe(ms * 0.8);
  });
});

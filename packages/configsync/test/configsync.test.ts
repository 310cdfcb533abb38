import type { ClusterProfile, Placement, PlacementCluster } from '@mco/core';
import { aClusterProfile, aPlacement } from '@mco/core/testing';
import { describe, expect, it } from 'vitest';
import {
  CLEANUP_FINALIZER,
  DELIVERED_ANNOTATION,
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
metadata: {namespace: shop}
spec: {sourceType: helm, helm: {repo: https://charts.example.com, chart: web, values: {replicaCount: 2}}}
`;
const ROLE_BINDING = `---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web-reconciler}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: shop-deployer}
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
  const p = aPlacement('fleet/web', {}, { clusters });
  if (template !== undefined) p.metadata.annotations = { [TEMPLATE_ANNOTATION]: template };
  return p;
}

describe('parseTemplate', () => {
  it.each([
    ['no RepoSync or RootSync', ROLE_BINDING, 'annotation configsync.mco.x-k8s.io/template: no RepoSync or RootSync'],
    [
      'an object mco does not deliver',
      'apiVersion: apps/v1\nkind: Deployment\n',
      'annotation configsync.mco.x-k8s.io/template: document 0 field apiVersion: Invalid option: expected one of "configsync.gke.io/v1beta1"|"configsync.gke.io/v1alpha1"',
    ],
    [
      'a RepoSync without a namespace',
      'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {}\n',
      'annotation configsync.mco.x-k8s.io/template: document 0 field metadata.namespace: a RepoSync needs its target namespace',
    ],
    [
      'a RootSync outside config-management-system',
      'apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nmetadata: {namespace: shop}\nspec: {}\n',
      'annotation configsync.mco.x-k8s.io/template: document 0 field metadata.namespace: a RootSync must be in config-management-system',
    ],
    [
      'two sync objects',
      `${REPO_SYNC}---\n${REPO_SYNC}`,
      'annotation configsync.mco.x-k8s.io/template: document 1: only one RepoSync or RootSync per placement',
    ],
    [
      'a RoleBinding in another namespace',
      `${REPO_SYNC}${ROLE_BINDING.replace('{name: web-reconciler}', '{name: x, namespace: other}')}`,
      "annotation configsync.mco.x-k8s.io/template: RoleBinding x: must be in the RepoSync's namespace shop",
    ],
    [
      'YAML that does not parse',
      'kind: [',
      expect.stringMatching(/^annotation configsync.mco.x-k8s.io\/template: document 0: /),
    ],
  ])('rejects %s, naming the field', (_name, template, error) => {
    expect(parseTemplate(placementWith(template, []))).toEqual({ ok: false, error });
  });

  it('names the sync object after the placement and puts a RootSync in config-management-system', () => {
    const root = parseTemplate(placementWith('apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nspec: {}\n', []));
    expect(root).toMatchObject({
      ok: true,
      template: { sync: { kind: 'RootSync', metadata: { name: 'web', namespace: 'config-management-system' } } },
    });
    expect(parseTemplate(aPlacement('fleet/web'))).toBeUndefined();
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
      'configsync.mco.x-k8s.io/placement': 'fleet/web',
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
    const p = aPlacement('fleet/web');
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
    const placements = new Map([['fleet/web', placement]]);
    const members = new Map(profiles.map((n) => [`fleet/${n}`, new FakeMember()]));
    const profileMap = new Map<string, ClusterProfile>(
      profiles.map((n) => [`fleet/${n}`, aClusterProfile(`fleet/${n}`)]),
    );
    const hub = new FakeHub(placements);
    let synced = true;
    const reconciler = createReconciler({
      placements: { get: (k) => placements.get(k), hasSynced: () => synced },
      clusterProfiles: { get: (k) => profileMap.get(k), hasSynced: () => synced },
      member: async (profile) => members.get(`${profile.metadata.namespace}/${profile.metadata.name}`)!,
      hub,
      now: () => new Date(T),
    });
    const setStatus = (clusters: PlacementCluster[]) => {
      const p = structuredClone(placements.get('fleet/web')!);
      p.status = { ...p.status, clusters };
      placements.set('fleet/web', p);
    };
    const record = () =>
      Object.keys(
        JSON.parse(placements.get('fleet/web')!.metadata.annotations?.[DELIVERED_ANNOTATION] ?? '{}') as object,
      );
    return { placements, members, hub, reconciler, setStatus, record, unsync: () => (synced = false) };
  }

  it('applies on every listed cluster, then writes nothing on a resync', async () => {
    const t = setup(placementWith(REPO_SYNC + ROLE_BINDING, [cluster('east'), cluster('west')]));
    const first = await t.reconciler.reconcile('fleet/web');
    expect(first).toMatchObject({ retry: false, memberWrites: 4 });
    expect(t.record()).toEqual(['fleet/east', 'fleet/west']);
    expect((t.placements.get('fleet/web')!.metadata as { finalizers?: string[] }).finalizers).toEqual([
      CLEANUP_FINALIZER,
    ]);
    const hubWrites = t.hub.writes;
    expect(await t.reconciler.reconcile('fleet/web')).toMatchObject({ memberWrites: 0, hubWrites: 0 });
    expect(t.hub.writes).toBe(hubWrites);
  });

  it('does nothing at all while a cache is not synced', async () => {
    const t = setup(placementWith(REPO_SYNC, [cluster('east')]));
    t.unsync();
    expect(await t.reconciler.reconcile('fleet/web')).toEqual({
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
    ['an unreadable record', (p: Placement) => (p.metadata.annotations![DELIVERED_ANNOTATION] = '{'), 'InvalidRecord'],
  ])('%s with every cluster dropped deletes nothing and is reported once', async (_name, spoil, reason) => {
    const t = setup(placementWith(REPO_SYNC, [cluster('east')]));
    await t.reconciler.reconcile('fleet/web');
    const p = structuredClone(t.placements.get('fleet/web')!);
    spoil(p);
    p.status = { ...p.status, clusters: reason === 'InvalidPlacement' ? p.status!.clusters! : [] };
    t.placements.set('fleet/web', p);
    const east = t.members.get('fleet/east')!;
    const writes = east.writes;
    await t.reconciler.reconcile('fleet/web');
    await t.reconciler.reconcile('fleet/web');
    expect(east.writes).toBe(writes);
    expect(east.objects.size).toBe(1);
    expect(t.hub.events.filter((e) => e.startsWith(`Warning ${reason}`))).toHaveLength(1);
  });

  it('lets go of a placement whose template was removed once nothing is delivered', async () => {
    const t = setup(placementWith(REPO_SYNC, []));
    await t.reconciler.reconcile('fleet/web');
    expect((t.placements.get('fleet/web')!.metadata as { finalizers?: string[] }).finalizers).toEqual([
      CLEANUP_FINALIZER,
    ]);
    const p = structuredClone(t.placements.get('fleet/web')!);
    delete p.metadata.annotations![TEMPLATE_ANNOTATION];
    t.placements.set('fleet/web', p);
    await t.reconciler.reconcile('fleet/web');
    expect((t.placements.get('fleet/web')!.metadata as { finalizers?: string[] }).finalizers).toEqual([]);
    expect(t.hub.events).toEqual([]);
  });

  it('keeps an unreachable cluster that left in the record and deletes once it is back', async () => {
    const t = setup(placementWith(REPO_SYNC, [cluster('east'), cluster('west')]));
    await t.reconciler.reconcile('fleet/web');
    const west = t.members.get('fleet/west')!;
    west.reachable = false;
    t.setStatus([cluster('east')]);
    expect(await t.reconciler.reconcile('fleet/web')).toMatchObject({ retry: true });
    expect(t.record()).toEqual(['fleet/east', 'fleet/west']);
    west.reachable = true;
    await t.reconciler.reconcile('fleet/web');
    expect(west.objects.size).toBe(0);
    // Forgotten on the next pass, which sees it gone.
    expect(t.record()).toEqual(['fleet/east', 'fleet/west']);
    await t.reconciler.reconcile('fleet/web');
    expect(t.record()).toEqual(['fleet/east']);
  });

  it('deletes the RoleBinding only after Config Sync removed the sync object', async () => {
    const t = setup(placementWith(REPO_SYNC + ROLE_BINDING, [cluster('east')]));
    await t.reconciler.reconcile('fleet/web');
    const east = t.members.get('fleet/east')!;
    east.objects.get('RepoSync/shop/web')!.metadata!.finalizers = ['reconciler-manager.configsync.gke.io'];
    t.setStatus([]);
    expect(await t.reconciler.reconcile('fleet/web')).toMatchObject({ waiting: true });
    expect(await t.reconciler.reconcile('fleet/web')).toMatchObject({ waiting: true, memberWrites: 0 });
    expect([...east.objects.keys()].sort()).toEqual(['RepoSync/shop/web', 'RoleBinding/shop/web-reconciler']);
    east.finishDeletion(SYNC_REF);
    await t.reconciler.reconcile('fleet/web');
    await t.reconciler.reconcile('fleet/web');
    expect(east.objects.size).toBe(0);
    expect(t.record()).toEqual([]);
  });
});

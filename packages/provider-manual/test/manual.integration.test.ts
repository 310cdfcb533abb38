import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { silentLogger, type McoError } from '@mco/runtime';
import { describeWithControlPlane, startControlPlane, type ControlPlane } from '@mco/testkit';
import { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyClustersFile, manualProvider, type ClustersFile } from '../src/index.js';
import {
  clusterProfileCrd,
  createForeignProfile,
  createNamespaces,
  eventually,
  grantProviderRole,
  readProfiles,
  resourceVersions,
  written,
} from './hub.js';

const caData = readFileSync(fileURLToPath(new URL('./fixtures/ca.pem', import.meta.url))).toString('base64');
const now = () => new Date('2026-03-01T12:00:00Z');

describeWithControlPlane('manual provider against a real kube-apiserver', () => {
  let cp: ControlPlane;
  let provider: KubeConfig;
  let dir: string;

  beforeAll(async () => {
    cp = await startControlPlane({ users: { 'provider-ns': [] } });
    await cp.hub.installCrds([clusterProfileCrd()]);
    await createNamespaces(cp.hub, ['fleet', 'team-a', 'scoped', 'scoped-other']);
    provider = await grantProviderRole(cp.hub, 'provider');
    dir = mkdtempSync(join(tmpdir(), 'mco-manual-'));
  });
  afterAll(() => cp?.stop());

  function writeFile(name: string, content: ClustersFile): string {
    const path = join(dir, name);
    writeFileSync(path, stringify(content));
    return path;
  }
  const apply = (
    file: string,
    extra: { prune?: boolean; dryRun?: boolean; manager?: string; allowMassPrune?: boolean } = {},
  ) =>
    applyClustersFile({
      kubeConfig: provider,
      file,
      namespace: 'fleet',
      manager: extra.manager ?? 'mco-manual',
      prune: extra.prune ?? true,
      allowMassPrune: extra.allowMassPrune,
      dryRun: extra.dryRun,
      now,
    });

  const declared: ClustersFile = {
    clusters: [
      {
        name: 'eu-1',
        displayName: 'EU 1',
        labels: { region: 'eu', tier: 'gold' },
        annotations: { 'example.com/owner': 'team-a' },
        properties: { zone: 'eu-west1-b' },
        server: 'https://eu-1.example.test:6443',
        certificateAuthorityData: caData,
        controlPlaneHealthy: true,
        kubernetesVersion: 'v1.34.1',
      },
      { name: 'us-1', namespace: 'team-a', labels: { region: 'us' }, server: 'https://us-1.example.test' },
    ],
  };

  it('creates the declared ClusterProfiles with owner label, clusterManager and status written through /status', async () => {
    const report = await apply(writeFile('clusters.yaml', declared));
    const profiles = await readProfiles(cp.hub);
    expect({ report, eu: written(profiles.get('fleet/eu-1')), us: written(profiles.get('team-a/us-1')) }).toEqual({
      report: {
        created: ['fleet/eu-1', 'team-a/us-1'],
        updated: [],
        statusUpdated: ['fleet/eu-1', 'team-a/us-1'],
        deleted: [],
        unchanged: [],
        skipped: [],
        failed: [],
        writes: 6,
      },
      eu: {
        labels: { region: 'eu', tier: 'gold', 'x-k8s.io/cluster-manager': 'mco-manual' },
        annotations: { 'example.com/owner': 'team-a' },
        spec: { displayName: 'EU 1', clusterManager: { name: 'mco-manual' } },
        status: {
          accessProviders: [
            {
              name: 'kubeconfig',
              cluster: { server: 'https://eu-1.example.test:6443', 'certificate-authority-data': caData },
            },
          ],
          properties: [{ name: 'zone', value: 'eu-west1-b' }],
          conditions: [
            {
              type: 'ControlPlaneHealthy',
              status: 'True',
              reason: 'DeclaredHealthy',
              message: 'declared in the clusters file',
              lastTransitionTime: 'set',
            },
          ],
          version: { kubernetes: 'v1.34.1' },
        },
      },
      us: {
        labels: { region: 'us', 'x-k8s.io/cluster-manager': 'mco-manual' },
        annotations: undefined,
        spec: { clusterManager: { name: 'mco-manual' } },
        status: { accessProviders: [{ name: 'kubeconfig', cluster: { server: 'https://us-1.example.test' } }] },
      },
    });
  });

  it('a second run over the same file sends no write and leaves every resourceVersion as it was', async () => {
    const before = await resourceVersions(cp.hub);
    const report = await apply(join(dir, 'clusters.yaml'));
    expect({ writes: report.writes, unchanged: report.unchanged, after: await resourceVersions(cp.hub) }).toEqual({
      writes: 0,
      unchanged: ['fleet/eu-1', 'team-a/us-1'],
      after: before,
    });
  });

  it('a changed file updates only what changed; an owned label dropped from the file goes, one added by others stays', async () => {
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CustomObjectsApi)
      .patchNamespacedCustomObject(
        {
          group: 'multicluster.x-k8s.io',
          version: 'v1alpha1',
          plural: 'clusterprofiles',
          namespace: 'fleet',
          name: 'eu-1',
          body: { metadata: { labels: { 'added-by': 'someone-else' } } },
        },
        setHeaderOptions('Content-Type', 'application/merge-patch+json'),
      );
    const before = await resourceVersions(cp.hub);
    const changed = structuredClone(declared);
    const eu = changed.clusters![0]!;
    eu.labels = { region: 'eu' };
    eu.controlPlaneHealthy = false;
    const report = await apply(writeFile('clusters.yaml', changed));
    const profiles = await readProfiles(cp.hub);
    const after = await resourceVersions(cp.hub);
    expect({
      updated: report.updated,
      statusUpdated: report.statusUpdated,
      unchanged: report.unchanged,
      labels: profiles.get('fleet/eu-1')?.metadata.labels,
      health: profiles.get('fleet/eu-1')?.status?.conditions?.map((c) => [c.type, c.status, c.reason]),
      usUntouched: after['team-a/us-1'] === before['team-a/us-1'],
    }).toEqual({
      updated: ['fleet/eu-1'],
      statusUpdated: ['fleet/eu-1'],
      unchanged: ['team-a/us-1'],
      labels: {
        region: 'eu',
        'x-k8s.io/cluster-manager': 'mco-manual',
        'added-by': 'someone-else',
      },
      health: [['ControlPlaneHealthy', 'False', 'DeclaredUnhealthy']],
      usUntouched: true,
    });
  });

  it('prunes only its own profiles: a foreign profile of the same name is reported, never written or deleted', async () => {
    await createForeignProfile(cp.hub, 'fleet', 'taken', 'gke-fleet');
    await createForeignProfile(cp.hub, 'fleet', 'other-manager', 'gke-fleet');
    await createForeignProfile(cp.hub, 'fleet', 'same-label-other-spec', 'someone');
    await cp.hub.apply([
      {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: {
          name: 'same-label-other-spec',
          namespace: 'fleet',
          labels: { 'x-k8s.io/cluster-manager': 'mco-manual' },
        },
      } as never,
    ]);
    const before = await resourceVersions(cp.hub);
    // Both owned profiles go: a mass prune, allowed here to show that only owned ones are deleted.
    const report = await apply(writeFile('pruned.yaml', { clusters: [{ name: 'taken', server: 'https://taken' }] }), {
      allowMassPrune: true,
    });
    const after = await resourceVersions(cp.hub);
    expect({
      deleted: report.deleted,
      skipped: report.skipped.map((s) => [s.key, s.reason]),
      remaining: Object.keys(after),
      foreignUntouched: ['fleet/taken', 'fleet/other-manager', 'fleet/same-label-other-spec'].map(
        (k) => after[k] === before[k],
      ),
    }).toEqual({
      deleted: ['fleet/eu-1', 'team-a/us-1'],
      skipped: [['fleet/taken', 'NotOwned']],
      remaining: ['fleet/other-manager', 'fleet/same-label-other-spec', 'fleet/taken'],
      foreignUntouched: [true, true, true],
    });
  });

  it('a dry run validates against the server and stores nothing', async () => {
    const before = await resourceVersions(cp.hub);
    const report = await apply(writeFile('dry.yaml', declared), { dryRun: true, manager: 'dry' });
    expect({ created: report.created, after: await resourceVersions(cp.hub) }).toEqual({
      created: ['fleet/eu-1', 'team-a/us-1'],
      after: before,
    });
  });

  it('an invalid file fails before any write and prunes nothing', async () => {
    await apply(writeFile('keep.yaml', { clusters: [{ name: 'keep-me' }] }), { manager: 'careful' });
    const before = await resourceVersions(cp.hub);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'clusters:\n  - name: ok\n  - name: Not_Valid\n');
    await expect(apply(bad, { manager: 'careful' })).rejects.toThrow(
      'clusters[1].name: must be a lower-case DNS subdomain',
    );
    expect(await resourceVersions(cp.hub)).toEqual(before);
  });

  it('an empty, comments-only or {} file is an error naming the file, and prunes nothing', async () => {
    await apply(writeFile('empty-guard.yaml', { clusters: [{ name: 'e-1' }, { name: 'e-2' }, { name: 'e-3' }] }), {
      manager: 'empty-guard',
    });
    const before = await resourceVersions(cp.hub);
    const errors: string[] = [];
    for (const [name, content] of [
      ['empty.yaml', ''],
      ['comments.yaml', '# all clusters moved to another file\n'],
      ['braces.json', '{}'],
    ]) {
      const path = join(dir, name!);
      writeFileSync(path, content!);
      errors.push(
        await apply(path, { manager: 'empty-guard' }).then(
          () => 'applied',
          (e: McoError) => `${e.code}: ${e.message.replace(dir, '<dir>')}`,
        ),
      );
    }
    expect({ errors, unchanged: await resourceVersions(cp.hub) }).toEqual({
      errors: [
        'Invalid: invalid <dir>/empty.yaml: the file is empty (declare no cluster with "clusters: []")',
        'Invalid: invalid <dir>/comments.yaml: the file is empty (declare no cluster with "clusters: []")',
        'Invalid: invalid <dir>/braces.json: clusters: Invalid input: expected array, received undefined',
      ],
      unchanged: before,
    });
  });

  it('refuses to prune more than half of the owned profiles before any write; allowMassPrune is a real decommission', async () => {
    const five = { clusters: ['m-1', 'm-2', 'm-3', 'm-4', 'm-5'].map((name) => ({ name })) };
    await apply(writeFile('mass.yaml', five), { manager: 'mass' });
    const mass = () => readProfiles(cp.hub).then((m) => [...m.keys()].filter((k) => k.startsWith('fleet/m-')).sort());
    const before = await resourceVersions(cp.hub);
    const refused: string[] = [];
    // A near-empty file (one new cluster, one kept) and an explicit empty list.
    for (const content of [{ clusters: [{ name: 'm-1' }, { name: 'm-new' }] }, { clusters: [] }])
      refused.push(
        await apply(writeFile('mass.yaml', content), { manager: 'mass' }).then(
          () => 'applied',
          (e: McoError) => `${e.code}: ${e.message}`,
        ),
      );
    const afterRefusal = await resourceVersions(cp.hub);
    // Two of five may go without the override.
    const scaledIn = await apply(writeFile('mass.yaml', { clusters: five.clusters.slice(0, 3) }), { manager: 'mass' });
    const decommissioned = await apply(writeFile('mass.yaml', { clusters: [] }), {
      manager: 'mass',
      allowMassPrune: true,
    });
    expect({
      refused,
      unchanged: afterRefusal,
      scaledIn: scaledIn.deleted,
      decommissioned: decommissioned.deleted,
      left: await mass(),
    }).toEqual({
      refused: [
        'Invalid: refusing to prune 4 of the 5 ClusterProfiles of cluster manager "mass" (the source declares 2): ' +
          'an empty or near-empty source is more likely broken than a decommission, or another provider uses the same managerName "mass" (each provider needs its own); ' +
          "for a real decommission set the provider's allowMassPrune: true (mco clusters apply: --allow-mass-prune)",
        'Invalid: refusing to prune 5 of the 5 ClusterProfiles of cluster manager "mass" (the source declares 0): ' +
          'an empty or near-empty source is more likely broken than a decommission, or another provider uses the same managerName "mass" (each provider needs its own); ' +
          "for a real decommission set the provider's allowMassPrune: true (mco clusters apply: --allow-mass-prune)",
      ],
      unchanged: before,
      scaledIn: ['fleet/m-4', 'fleet/m-5'],
      decommissioned: ['fleet/m-1', 'fleet/m-2', 'fleet/m-3'],
      left: [],
    });
  });

  it('a namespaced Role suffices when the provider is restricted to its namespaces', async () => {
    const scoped = await grantProviderRole(cp.hub, 'provider-ns', ['scoped']);
    const file = writeFile('scoped.yaml', { clusters: [{ name: 'in-scope', server: 'https://in-scope' }] });
    const run = (namespaces: string[], namespace = 'scoped') =>
      applyClustersFile({ kubeConfig: scoped, file, namespace, manager: 'scoped', prune: true, namespaces, now });
    const ok = await run(['scoped']);
    const denied = await run(['scoped-other'], 'scoped-other').catch((e: McoError) => [
      e.code,
      e.message.split(':')[0],
    ]);
    expect({ created: ok.created, denied }).toEqual({
      created: ['scoped/in-scope'],
      denied: ['Unauthorized', 'list ClusterProfiles in scoped-other (manager scoped)'],
    });
  });

  it('a fleet of 100 declared clusters is created once and the next pass sends no write (timings printed)', async () => {
    const clusters = Array.from({ length: 100 }, (_, i) => ({
      name: `bulk-${String(i).padStart(3, '0')}`,
      labels: { shard: String(i % 7) },
      properties: { index: String(i) },
      server: `https://bulk-${i}.example.test`,
      controlPlaneHealthy: i % 5 !== 0,
    }));
    const file = writeFile('bulk.yaml', { clusters });
    const t0 = performance.now();
    const first = await apply(file, { manager: 'bulk' });
    const t1 = performance.now();
    const second = await apply(file, { manager: 'bulk' });
    const t2 = performance.now();
    console.log(
      `100 profiles: first apply ${Math.round(t1 - t0)} ms (${first.writes} writes, ${((t1 - t0) / 100).toFixed(1)} ms/profile); ` +
        `no-op pass ${Math.round(t2 - t1)} ms (${second.writes} writes)`,
    );
    expect({
      created: first.created.length,
      writes: first.writes,
      second: second.writes,
      unchanged: second.unchanged.length,
    }).toEqual({
      created: 100,
      writes: 300,
      second: 0,
      unchanged: 100,
    });
  }, 120_000);

  it('in controller mode follows the file as it changes and reports its health in metrics', async () => {
    const file = writeFile('live.yaml', { clusters: [{ name: 'live-1', server: 'https://live-1' }] });
    const metrics = new Registry();
    const config = manualProvider.configSchema.parse({ file, managerName: 'live', resyncSeconds: 600 });
    const abort = new AbortController();
    const running = manualProvider
      .create(config, { kubeConfig: provider, logger: silentLogger, metrics, now: () => new Date() })
      .run(abort.signal);
    const live = () => readProfiles(cp.hub).then((m) => [...m.keys()].filter((k) => k.includes('live')).sort());
    const first = await eventually(live, (keys) => keys.length === 1);
    writeFile('live.yaml', {
      clusters: [
        { name: 'live-2', server: 'https://live-2' },
        { name: 'live-3', server: 'https://live-3' },
      ],
    });
    const second = await eventually(live, (keys) => keys.length === 2 && keys[0] === 'fleet/live-2');
    abort.abort();
    await running;
    const text = await metrics.metrics();
    expect({
      first,
      second,
      profiles: /mco_manual_provider_cluster_profiles\{manager="live"\} (\d+)/.exec(text)?.[1],
      lastSuccess: /mco_manual_provider_last_success_timestamp_seconds\{manager="live"\} (\d+)/.test(text),
    }).toEqual({ first: ['fleet/live-1'], second: ['fleet/live-2', 'fleet/live-3'], profiles: '2', lastSuccess: true });
  });
});

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { ClusterProfile } from '@mco/core';
import { syncClusterProfiles } from '@mco/provider-manual';
import { describeWithControlPlane, startControlPlane, thirdPartyCrd, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { main } from '../src/main.js';

// Every write path that offers a dry run, with prune where it has one: nothing
// may change on the hub. The paths are `mco clusters apply --dry-run` (also
// with --prune), `mco clusters from-kubeconfig --dry-run` and
// `syncClusterProfiles({dryRun})`, the library call module providers write
// through. `mco inventory`, the manual provider and the GKE provider offer no
// dry run. A DELETE carries a body (its preconditions), and the apiserver then
// reads DeleteOptions from the body only: this is the test that a dry-run
// prune really is one.

const CP = { group: 'multicluster.x-k8s.io', version: 'v1alpha1', plural: 'clusterprofiles' };

describeWithControlPlane('every dry run on a real kube-apiserver stores nothing', () => {
  let cp: ControlPlane;
  let kubeconfig: string;
  const dir = mkdtempSync(join(tmpdir(), 'mco-dry-run-'));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  const clustersFile = (name: string, clusters: readonly string[], labels = 'region: eu') =>
    file(
      name,
      `clusters:\n${clusters.map((c) => `  - {name: ${c}, labels: {${labels}}, server: "https://${c}.example:6443"}`).join('\n')}\n`,
    );
  async function mco(...argv: string[]) {
    let stdout = '';
    let stderr = '';
    const code = await main([...argv, '--kubeconfig', kubeconfig], {
      stdout: (t) => void (stdout += t),
      stderr: (t) => void (stderr += t),
    });
    return { code, stdout: stdout.trim().split('\n'), stderr };
  }
  /** `namespace/name` → resourceVersion of every ClusterProfile in the hub. */
  async function resourceVersions(): Promise<Record<string, string>> {
    const list = (await cp.hub.adminKubeConfig().makeApiClient(CustomObjectsApi).listClusterCustomObject(CP)) as {
      items: ClusterProfile[];
    };
    return Object.fromEntries(
      list.items.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p.metadata.resourceVersion ?? '']).sort(),
    );
  }

  let before: Record<string, string>;
  beforeAll(async () => {
    cp = await startControlPlane();
    await cp.hub.installCrds([thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml')]);
    const core = cp.hub.adminKubeConfig().makeApiClient(CoreV1Api);
    for (const name of ['fleet', 'team-a']) await core.createNamespace({ body: { metadata: { name } } });
    kubeconfig = file('kubeconfig', cp.hub.adminKubeConfig().exportConfig());
    // The hub the dry runs face: three profiles of manager "lab" in fleet, two of
    // "team" in team-a, and one of another manager.
    expect(
      await mco('clusters', 'apply', '-f', clustersFile('lab.yaml', ['a', 'b', 'c']), '--manager', 'lab'),
    ).toMatchObject({ code: 0 });
    expect(
      await mco(
        'clusters',
        'apply',
        '-f',
        clustersFile('team.yaml', ['t1', 't2']),
        '--manager',
        'team',
        '-n',
        'team-a',
      ),
    ).toMatchObject({ code: 0 });
    expect(await mco('clusters', 'apply', '-f', clustersFile('other.yaml', ['o']), '--manager', 'other')).toMatchObject(
      { code: 0 },
    );
    before = await resourceVersions();
    expect(Object.keys(before)).toEqual(['fleet/a', 'fleet/b', 'fleet/c', 'fleet/o', 'team-a/t1', 'team-a/t2']);
  });
  afterAll(async () => cp?.stop());

  it.each([
    {
      name: 'mco clusters apply --prune --dry-run: one created, two updated, one pruned',
      argv: () => [
        'clusters',
        'apply',
        '-f',
        clustersFile('one-pruned.yaml', ['a', 'b', 'd'], 'region: us'),
        '--prune',
        '--manager',
        'lab',
        '--dry-run',
      ],
      stdout: [
        'created    fleet/d',
        'updated    fleet/a',
        'updated    fleet/b',
        'deleted    fleet/c',
        '1 created, 2 updated, 1 deleted, 0 unchanged, 0 skipped, 0 failed (4 writes, dry run: nothing stored)',
      ],
    },
    {
      name: 'mco clusters apply --prune --allow-mass-prune --dry-run of an empty list: every owned profile pruned',
      argv: () => [
        'clusters',
        'apply',
        '-f',
        file('none.yaml', 'clusters: []\n'),
        '--prune',
        '--allow-mass-prune',
        '--manager',
        'lab',
        '--dry-run',
      ],
      stdout: [
        'deleted    fleet/a',
        'deleted    fleet/b',
        'deleted    fleet/c',
        '0 created, 0 updated, 3 deleted, 0 unchanged, 0 skipped, 0 failed (3 writes, dry run: nothing stored)',
      ],
    },
    {
      name: 'mco clusters apply --dry-run without prune: an update and a create',
      argv: () => [
        'clusters',
        'apply',
        '-f',
        clustersFile('update.yaml', ['t1', 't3'], 'region: ap'),
        '--manager',
        'team',
        '-n',
        'team-a',
        '--dry-run',
      ],
      stdout: [
        'created    team-a/t3',
        'updated    team-a/t1',
        '1 created, 1 updated, 0 deleted, 0 unchanged, 0 skipped, 0 failed (2 writes, dry run: nothing stored)',
      ],
    },
    {
      name: 'mco clusters from-kubeconfig --dry-run over an existing profile (it has no prune)',
      argv: () => [
        'clusters',
        'from-kubeconfig',
        '--source',
        file(
          'source-kubeconfig',
          [
            'apiVersion: v1',
            'kind: Config',
            'clusters: [{name: x, cluster: {server: "https://a-moved.example:6443"}}]',
            'users: [{name: u, user: {}}]',
            'contexts: [{name: lab-a, context: {cluster: x, user: u}}]',
            'current-context: lab-a',
          ].join('\n'),
        ),
        '--context',
        'lab-a',
        '--name',
        'a',
        '--manager',
        'lab',
        '--dry-run',
      ],
      stdout: [
        'updated    fleet/a',
        '0 created, 1 updated, 0 deleted, 0 unchanged, 0 skipped, 0 failed (2 writes, dry run: nothing stored)',
      ],
    },
  ])('$name', async ({ argv, stdout }) => {
    expect(await mco(...argv())).toEqual({ code: 0, stdout, stderr: '' });
    expect(await resourceVersions()).toEqual(before);
  });

  it('syncClusterProfiles({dryRun, prune}), as module providers call it, in every namespace and in their own', async () => {
    const sync = (manager: string, namespaces?: string[]) =>
      syncClusterProfiles({
        kubeConfig: cp.hub.adminKubeConfig(),
        manager,
        desired: [],
        prune: true,
        allowMassPrune: true,
        namespaces,
        dryRun: true,
        now: () => new Date(),
      });
    const reports = [await sync('lab'), await sync('team', ['team-a'])];
    expect(reports.map((r) => ({ deleted: r.deleted, failed: r.failed, writes: r.writes }))).toEqual([
      { deleted: ['fleet/a', 'fleet/b', 'fleet/c'], failed: [], writes: 3 },
      { deleted: ['team-a/t1', 'team-a/t2'], failed: [], writes: 2 },
    ]);
    expect(await resourceVersions()).toEqual(before);
  });
});

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { describeWithControlPlane, sharedCrdsDir, startControlPlane, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';

// The deployed artefact is the tsup bundle (the @mco packages inlined), not the
// TypeScript sources the other tests import: run it as a user would, against a
// real kube-apiserver.
const APP = new URL('..', import.meta.url).pathname;
const BIN = join(APP, 'bin', 'mco.js');

describeWithControlPlane('the built mco bundle on a real kube-apiserver', { sharedCrds: true }, () => {
  let cp: ControlPlane;
  let kubeconfig: string;
  const dir = mkdtempSync(join(tmpdir(), 'mco-bundle-'));
  const mco = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });

  beforeAll(async () => {
    execFileSync('npx', ['tsup'], { cwd: APP, stdio: 'ignore' });
    cp = await startControlPlane();
    await cp.hub.installCrds([join(sharedCrdsDir()!, 'multicluster.x-k8s.io_clusterprofiles.yaml')]);
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: 'fleet' } } });
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, cp.hub.adminKubeConfig().exportConfig());
  });
  afterAll(async () => cp?.stop());

  it('declares clusters with `mco clusters apply` and lists them with `mco clusters list`', () => {
    const clusters = join(dir, 'clusters.yaml');
    writeFileSync(clusters, 'clusters:\n  - {name: eu-1, labels: {region: eu}, server: "https://eu-1.example:6443"}\n');
    const apply = mco('clusters', 'apply', '-f', clusters, '--kubeconfig', kubeconfig);
    expect(apply.stderr).not.toMatch(/Error|error:/);
    expect(apply.status).toBe(0);
    const list = mco('clusters', 'list', '--kubeconfig', kubeconfig, '-o', 'json');
    expect(list.status).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([
      {
        namespace: 'fleet',
        name: 'eu-1',
        manager: 'mco-manual',
        healthy: 'Unknown',
        server: 'https://eu-1.example:6443',
      },
    ]);
  });
});

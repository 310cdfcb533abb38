import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { silentLogger } from '@mco/runtime';
import { describeWithControlPlane, sharedCrdsDir, startControlPlane, type ControlPlane } from '@mco/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/main.js';
import { loadInventoryProviders, runInventoryProviders } from '../src/commands/inventory.js';

function file(name: string, content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'mco-inventory-')), name);
  writeFileSync(path, content);
  return path;
}

async function mco(...argv: string[]) {
  let stderr = '';
  const code = await main(argv, { stdout: () => {}, stderr: (t) => void (stderr += t) });
  return { code, stderr };
}

describe('mco inventory configuration errors', () => {
  const kubeconfig = file(
    'kubeconfig',
    'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
  );
  it.each([
    [
      'an unknown plugin',
      'providers: [{name: a, plugin: nope}]',
      /providers\[0\]\.plugin: unknown inventory plugin "nope" \(known: manual, gke-fleet, cmdb-http\)/,
    ],
    [
      'a bad plugin configuration',
      'providers: [{name: a, plugin: manual, config: {resyncSeconds: -1}}]',
      /providers\[0\]\.config\.file: /,
    ],
    [
      'a name used twice',
      'providers: [{name: a, plugin: manual, config: {file: x}}, {name: a, plugin: manual, config: {file: y}}]',
      /providers\[1\]\.name: "a" is used twice/,
    ],
    ['an empty list', 'providers: []', /providers: /],
    [
      'two providers with one cluster manager over all namespaces',
      'providers: [{name: a, plugin: manual, config: {file: x}}, {name: b, plugin: manual, config: {file: y}}]',
      /providers\[1\]: cluster manager "mco-manual" is already used by .*providers\[0\] \("a"\) in the same namespaces/,
    ],
    [
      'two providers with one cluster manager over overlapping namespaces',
      'providers: [{name: a, plugin: manual, config: {file: x, managerName: team, namespaces: [a, b]}}, {name: b, plugin: manual, config: {file: y, managerName: team, namespaces: [b]}}]',
      /providers\[1\]: cluster manager "team" is already used by/,
    ],
  ])('exits 2 for %s, naming the field', async (_name, content, message) => {
    const { code, stderr } = await mco(
      'inventory',
      '--config',
      file('providers.yaml', content),
      '--kubeconfig',
      kubeconfig,
    );
    expect(stderr).toMatch(message);
    expect(code).toBe(2);
  });

  it('accepts one cluster manager name in namespaces that do not overlap, and distinct names anywhere', async () => {
    const registry = new Registry();
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const providers = await loadInventoryProviders(
      file(
        'providers.yaml',
        'providers: [{name: a, plugin: manual, config: {file: x, managerName: team, namespaces: [a]}}, {name: b, plugin: manual, config: {file: y, managerName: team, namespaces: [b]}}, {name: c, plugin: manual, config: {file: z}}]',
      ),
      { kubeConfig: kc, logger: silentLogger, registry },
    );
    expect([...providers.keys()]).toEqual(['a', 'b', 'c']);
  });

  it('exits 2 without --config', async () => {
    expect(await mco('inventory')).toEqual({ code: 2, stderr: 'mco inventory: missing --config <providers.yaml>\n' });
  });
});

describeWithControlPlane('mco inventory on a real kube-apiserver', { sharedCrds: true }, () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane();
    await cp.hub.installCrds([join(sharedCrdsDir()!, 'multicluster.x-k8s.io_clusterprofiles.yaml')]);
    await cp.hub
      .adminKubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: 'fleet' } } });
  });
  afterAll(async () => cp?.stop());

  it('runs the configured manual provider until aborted: the declared clusters become ClusterProfiles', async () => {
    const clusters = file(
      'clusters.yaml',
      'clusters:\n  - {name: eu-1, labels: {region: eu}, server: "https://eu-1.example:6443"}\n',
    );
    const providers = file(
      'providers.yaml',
      `providers:\n  - {name: lab, plugin: manual, config: {file: ${clusters}}}\n`,
    );
    const kubeConfig: KubeConfig = cp.hub.adminKubeConfig();
    const registry = new Registry();
    const loaded = await loadInventoryProviders(providers, { kubeConfig, logger: silentLogger, registry });
    expect([...loaded.keys()]).toEqual(['lab']);

    const abort = new AbortController();
    const running = runInventoryProviders(loaded, silentLogger, abort.signal);
    const api = kubeConfig.makeApiClient(CustomObjectsApi);
    const read = () =>
      api.getNamespacedCustomObject({
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        namespace: 'fleet',
        plural: 'clusterprofiles',
        name: 'eu-1',
      });
    // The provider creates a bare profile, then applies its labels and spec: wait for the second write.
    let profile: { metadata: { labels: Record<string, string> } } | undefined;
    for (let i = 0; i < 100 && !profile?.metadata.labels.region; i++) {
      profile = await read().catch(() => undefined);
      if (!profile?.metadata.labels.region) await new Promise((r) => setTimeout(r, 100));
    }
    expect(profile?.metadata.labels).toMatchObject({ region: 'eu', 'x-k8s.io/cluster-manager': 'mco-manual' });
    expect(await registry.metrics()).toMatch(/mco_manual_provider/);
    abort.abort();
    await expect(running).resolves.toBeUndefined();
  });
});

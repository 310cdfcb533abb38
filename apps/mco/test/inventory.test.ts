import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { silentLogger } from '@mco/runtime';
import { describeWithControlPlane, thirdPartyCrd, startControlPlane, type ControlPlane } from '@mco/testkit';
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

// Never contacted: configuration errors are found before any request.
const kubeconfig = file(
  'kubeconfig',
  'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
);

describe('mco inventory configuration errors', () => {
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

  it('reports every error of a providers file at once, each naming its field', async () => {
    const content =
      'providers: [{name: a, plugin: nope}, {name: b, plugin: manual, config: {resyncSeconds: -1}}, {name: a, plugin: manual, config: {file: x}}]';
    const { code, stderr } = await mco(
      'inventory',
      '--config',
      file('providers.yaml', content),
      '--kubeconfig',
      kubeconfig,
    );
    const errors = stderr.trim().split('; ');
    expect({ code, lines: stderr.trim().split('\n').length }).toEqual({ code: 2, lines: 1 });
    expect(errors.map((e) => /providers\[\d\]\.[\w.]+/.exec(e)?.[0])).toEqual([
      'providers[0].plugin',
      'providers[1].config.file',
      'providers[1].config.resyncSeconds',
      'providers[2].name',
    ]);
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

describe('mco inventory provider modules (module: a package name or a path)', () => {
  // A provider outside the repository: no zod here, so a schema-shaped object.
  const provider = (name: string, kind = 'inventory') =>
    `export const kind = '${kind}';\nexport const name = '${name}';\n` +
    `export const configSchema = { safeParse: (v) => (v.managerName ? { success: true, data: v } : { success: false, error: { issues: [{ path: ['managerName'], message: 'required' }] } }) };\n` +
    `export function create(config) { return { run: async () => {}, config }; }\n`;
  const dir = mkdtempSync(join(tmpdir(), 'mco-inventory-modules-'));
  const pkg = (name: string, exports: unknown, source: string) => {
    const root = join(dir, 'node_modules', name);
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name, type: 'module', exports }));
    writeFileSync(join(root, 'index.js'), source);
  };
  pkg('mco-provider-alpha', { '.': { default: './index.js' } }, provider('alpha'));
  pkg('mco-provider-esm-only', { '.': { import: './index.js' } }, provider('esm-only'));
  pkg('mco-provider-signals', { '.': './index.js' }, provider('sig', 'signals'));
  pkg('mco-provider-manual-again', { '.': './index.js' }, provider('manual'));
  pkg('mco-provider-alpha-copy', { '.': './index.js' }, provider('alpha'));
  mkdirSync(join(dir, 'local'));
  writeFileSync(join(dir, 'local', 'beta.js'), provider('beta'));
  const providersFile = (content: string) => {
    const path = join(dir, `providers-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(path, content);
    return path;
  };
  const deps = { kubeConfig: {} as KubeConfig, logger: silentLogger, registry: new Registry() };

  it('loads a package from the providers file folder and a file by relative path, validating each config', async () => {
    const loaded = await loadInventoryProviders(
      providersFile(
        'providers:\n' +
          '  - {name: a, module: mco-provider-alpha, config: {managerName: team-a}}\n' +
          '  - {name: b, module: ./local/beta.js, config: {managerName: team-b}}\n' +
          '  - {name: a2, module: mco-provider-alpha, config: {managerName: team-a2}}\n',
      ),
      deps,
    );
    expect(
      Object.fromEntries([...loaded].map(([name, p]) => [name, (p as unknown as { config: unknown }).config])),
    ).toEqual({
      a: { managerName: 'team-a' },
      b: { managerName: 'team-b' },
      a2: { managerName: 'team-a2' },
    });
  });

  it.each([
    [
      'a missing package',
      '{name: a, module: mco-provider-nope}',
      /providers\[0\]\.module: cannot find module "mco-provider-nope"/,
    ],
    [
      'a missing file',
      '{name: a, module: ./local/nope.js}',
      /providers\[0\]\.module: cannot find module "\.\/local\/nope\.js"/,
    ],
    [
      'a package without a "default" export condition',
      '{name: a, module: mco-provider-esm-only}',
      /providers\[0\]\.module: package "mco-provider-esm-only" exports no entry for the "default" condition/,
    ],
    [
      'a module that is not an inventory provider',
      '{name: a, module: mco-provider-signals}',
      /providers\[0\]\.module: "mco-provider-signals" is not a plugin of kind "inventory": its kind export is "signals"/,
    ],
    [
      'a module that is not a plugin at all',
      '{name: a, module: yaml}',
      /providers\[0\]\.module: "yaml" is not a plugin of kind "inventory"/,
    ],
    [
      'a module named like a built-in provider',
      '{name: a, module: mco-provider-manual-again, config: {managerName: m}}',
      /providers\[0\]\.module: "mco-provider-manual-again" is named "manual", the name of another inventory provider/,
    ],
    [
      'two packages with one provider name',
      '{name: a, module: mco-provider-alpha, config: {managerName: a}}, {name: b, module: mco-provider-alpha-copy, config: {managerName: b}}',
      /providers\[1\]\.module: "mco-provider-alpha-copy" is named "alpha", the name of another inventory provider/,
    ],
    [
      'both plugin and module',
      '{name: a, plugin: manual, module: mco-provider-alpha}',
      /providers\[0\]\.plugin: set exactly one of plugin/,
    ],
    ['neither plugin nor module', '{name: a}', /providers\[0\]\.plugin: set exactly one of plugin/],
    [
      'a config its schema rejects',
      '{name: a, module: mco-provider-alpha}',
      /providers\[0\]\.config\.managerName: required/,
    ],
  ])('exits 2 for %s, naming the field', async (_name, entries, message) => {
    const { code, stderr } = await mco(
      'inventory',
      '--config',
      providersFile(`providers: [${entries}]`),
      '--kubeconfig',
      kubeconfig,
    );
    expect(stderr).toMatch(message);
    expect(code).toBe(2);
  });
});

describeWithControlPlane('mco inventory on a real kube-apiserver', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane();
    await cp.hub.installCrds([thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml')]);
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

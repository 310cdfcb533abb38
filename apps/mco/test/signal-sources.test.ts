import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { connectionFromKubeConfig } from '@mco/kube-runtime/client-node';
import { silentLogger } from '@mco/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createSignalSources } from '../src/commands/controller.js';

/** A hub nobody calls: creating sources reads nothing from it. */
function hubConfig(): KubeConfig {
  const hub = new KubeConfig();
  hub.loadFromOptions({
    clusters: [{ name: 'hub', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u', token: 'unused' }],
    contexts: [{ name: 'hub', cluster: 'hub', user: 'u' }],
    currentContext: 'hub',
  });
  return hub;
}

// The controller's map of who may use which source: a source missing from it
// serves every namespace, which only an explicit ['*'] may ask for (a source
// without placementNamespaces is refused: command.test.ts in @mco/controller).
it("placementNamespaces: ['*'] serves every namespace, a list only its namespaces", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mco-signal-sources-'));
  const file = join(dir, 'sources.yaml');
  writeFileSync(
    file,
    [
      'defaultSource: shared',
      'sources:',
      '  - {name: shared, plugin: prometheus, config: {url: "http://prometheus:9090"}, placementNamespaces: ["*"]}',
      '  - {name: teams, plugin: prometheus, config: {url: "http://prometheus:9090"}, placementNamespaces: [team-a, team-b]}',
    ].join('\n'),
  );
  const sources = await createSignalSources(file, connectionFromKubeConfig(hubConfig()), new Registry(), silentLogger);
  expect({
    names: [...sources.byName.keys()],
    defaultSource: sources.defaultSource,
    namespaces: Object.fromEntries(sources.namespaces),
  }).toEqual({ names: ['shared', 'teams'], defaultSource: 'shared', namespaces: { teams: ['team-a', 'team-b'] } });
});

describe('capacity sources in the signal sources file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mco-capacity-sources-'));
  const TEMPLATE = fileURLToPath(new URL('../../../templates/provider-template/src/capacity.ts', import.meta.url));
  // A capacity source published as a package, outside the repository (no zod: a schema-shaped object).
  const root = join(dir, 'node_modules', 'mco-capacity-fleet-api');
  mkdirSync(root, { recursive: true });
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({ name: 'mco-capacity-fleet-api', type: 'module', exports: { '.': './index.js' } }),
  );
  writeFileSync(
    join(root, 'index.js'),
    "export const kind = 'capacity';\nexport const name = 'fleet-api';\n" +
      'export const configSchema = { safeParse: (v) => ({ success: true, data: v }) };\n' +
      'export function create(config) { return { answer: async () => ({ answers: [], errors: [] }), config }; }\n',
  );
  const load = (name: string, content: string) => {
    const file = join(dir, name);
    writeFileSync(file, content);
    return createSignalSources(file, connectionFromKubeConfig(hubConfig()), new Registry(), silentLogger);
  };

  it('creates built-in and out-of-tree capacity sources (a package name, or the provider template by path)', async () => {
    const sources = await load(
      'capacity.yaml',
      [
        'capacitySources:',
        '  - {name: props, plugin: cluster-property, config: {property: capacity.example.com/spare}, placementNamespaces: ["*"]}',
        '  - {name: fleet, module: mco-capacity-fleet-api, config: {region: eu}, placementNamespaces: [team-a]}',
        `  - {name: mine, module: ${JSON.stringify(TEMPLATE)}, config: {spareReplicas: {fleet/eu-1: 2}}, placementNamespaces: ["*"]}`,
        'capacityCandidates: 2',
      ].join('\n'),
    );
    const answered = await sources.capacity.byName.get('mine')!.answer({
      placement: { namespace: 'app', name: 'web', spec: {} },
      clusters: [{ key: 'fleet/eu-1', profile: { metadata: { name: 'eu-1', namespace: 'fleet' } } }],
      placed: [],
    });
    expect({
      names: [...sources.capacity.byName.keys()],
      namespaces: Object.fromEntries(sources.capacity.namespaces),
      candidates: sources.capacity.candidates,
      fleetConfig: (sources.capacity.byName.get('fleet') as unknown as { config: unknown }).config,
      template: answered.answers.map((a) => [a.cluster, a.addableReplicas, a.source]),
    }).toEqual({
      names: ['props', 'fleet', 'mine'],
      namespaces: { fleet: ['team-a'] },
      candidates: 2,
      fleetConfig: { region: 'eu' },
      template: [['fleet/eu-1', 2, 'my-capacity']],
    });
  });

  it.each([
    [
      'an unknown built-in',
      '{name: a, plugin: nodepools, placementNamespaces: ["*"]}',
      'capacitySources[0].plugin: unknown capacity-source plugin "nodepools" (known: karpenter, prometheus, cluster-property)',
    ],
    [
      'both plugin and module',
      '{name: a, plugin: karpenter, module: mco-capacity-fleet-api, placementNamespaces: ["*"]}',
      'capacitySources[0].plugin: set exactly one of plugin (a built-in capacity source) and module (a package or file)',
    ],
    [
      'a module that is not a capacity source',
      '{name: a, module: yaml, placementNamespaces: ["*"]}',
      'capacitySources[0].module: "yaml" is not a plugin of kind "capacity"',
    ],
    [
      'a config the plugin refuses',
      '{name: a, plugin: prometheus, config: {url: "http://p"}, placementNamespaces: ["*"]}',
      'capacitySources[0].config.query: ',
    ],
    ['no placementNamespaces', '{name: a, plugin: karpenter}', 'capacitySources[0].placementNamespaces: required'],
  ])('refuses %s, naming the entry', async (_name, entry, message) => {
    const error = await load(`bad-${Math.random().toString(36).slice(2)}.yaml`, `capacitySources: [${entry}]`).then(
      () => 'accepted',
      (e: Error) => e.message,
    );
    expect(error).toContain(message);
  });
});

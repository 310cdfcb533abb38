import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { connectionFromKubeConfig } from '@mco/kube-runtime/client-node';
import { silentLogger } from '@mco/runtime';
import { Registry } from 'prom-client';
import { expect, it } from 'vitest';
import { createSignalSources } from '../src/commands/controller.js';

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
  const hub = new KubeConfig();
  hub.loadFromOptions({
    clusters: [{ name: 'hub', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u', token: 'unused' }],
    contexts: [{ name: 'hub', cluster: 'hub', user: 'u' }],
    currentContext: 'hub',
  });
  const sources = await createSignalSources(file, connectionFromKubeConfig(hub), new Registry(), silentLogger);
  expect({
    names: [...sources.byName.keys()],
    defaultSource: sources.defaultSource,
    namespaces: Object.fromEntries(sources.namespaces),
  }).toEqual({ names: ['shared', 'teams'], defaultSource: 'shared', namespaces: { teams: ['team-a', 'team-b'] } });
});

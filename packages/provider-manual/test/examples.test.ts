// The provider template, the example third-party provider and `mco clusters`
// live outside this package (templates/, examples/, apps/mco); they are built on
// this package's exports, so their tests run here. Importing the template's own
// test file runs it and type-checks the template with this package's tsc.
import '../../../templates/provider-template/test/provider.test.js';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { silentLogger } from '@mco/runtime';
import { describeWithControlPlane, startControlPlane, type ControlPlane } from '@mco/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clustersCommand } from '../../../apps/mco/src/commands/clusters.js';
import * as cmdb from '../../../examples/providers/cmdb-http/src/index.js';
import * as template from '../../../templates/provider-template/src/index.js';
import { clusterProfileCrd, createNamespaces, eventually, grantProviderRole, readProfiles } from './hub.js';

const caData = readFileSync(fileURLToPath(new URL('./fixtures/ca.pem', import.meta.url))).toString('base64');

describe('example cmdb-http provider, mapping', () => {
  it('maps the export to profiles, dropping labels Kubernetes would reject', () => {
    expect(
      cmdb.toClusterProfiles(
        {
          complete: true,
          clusters: [
            { name: 'eu-1', server: 'https://eu-1', caData, labels: { region: 'eu', bad: '-x' }, healthy: false },
          ],
        },
        { namespace: 'fleet' },
      ),
    ).toEqual([
      {
        namespace: 'fleet',
        name: 'eu-1',
        labels: { region: 'eu' },
        status: {
          accessProviders: [
            { name: 'kubeconfig', cluster: { server: 'https://eu-1', 'certificate-authority-data': caData } },
          ],
          conditions: [{ type: 'ControlPlaneHealthy', status: 'False', reason: 'CmdbUnhealthy' }],
        },
      },
    ]);
  });
});

describeWithControlPlane('template, example provider and mco clusters against a real kube-apiserver', () => {
  let cp: ControlPlane;
  let provider: KubeConfig;
  let dir: string;
  let cmdbServer: Server;
  let cmdbAnswer: { status: number; body: unknown };
  const names = (prefix: string) =>
    readProfiles(cp.hub).then((m) => [...m.keys()].filter((k) => k.startsWith(prefix)).sort());

  beforeAll(async () => {
    cp = await startControlPlane();
    await cp.hub.installCrds([clusterProfileCrd()]);
    await createNamespaces(cp.hub, ['fleet', 'cmdb', 'template']);
    provider = await grantProviderRole(cp.hub, 'provider');
    dir = mkdtempSync(join(tmpdir(), 'mco-examples-'));
    cmdbServer = createServer((_req, res) => {
      res.statusCode = cmdbAnswer.status;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(cmdbAnswer.body));
    });
    await new Promise<void>((resolve) => cmdbServer.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    cmdbServer?.closeAllConnections();
    cmdbServer?.close();
    await cp?.stop();
  });

  async function runUntil<T>(
    provider: { run(abort: AbortSignal): Promise<void> },
    read: () => Promise<T>,
    ok: (v: T) => boolean,
  ): Promise<T> {
    const abort = new AbortController();
    const running = provider.run(abort.signal);
    const value = await eventually(read, ok);
    abort.abort();
    await running;
    return value;
  }
  const deps = () => ({ kubeConfig: provider, logger: silentLogger, metrics: new Registry(), now: () => new Date() });

  it('the template provider, as shipped, writes its configured clusters', async () => {
    const config = template.configSchema.parse({
      namespace: 'template',
      managerName: 'template',
      clusters: [{ name: 'copied', server: 'https://copied:6443' }],
    });
    expect(
      await runUntil(
        template.create(config, deps()),
        () => names('template/'),
        (k) => k.length === 1,
      ),
    ).toEqual(['template/copied']);
  });

  it('the example provider mirrors a complete export, and never prunes from a partial one or an error', async () => {
    const { port } = cmdbServer.address() as AddressInfo;
    const config = cmdb.configSchema.parse({
      url: `http://127.0.0.1:${port}/clusters`,
      namespace: 'cmdb',
      pollSeconds: 0.05,
    });
    const cluster = (name: string) => ({ name, server: `https://${name}.example.test` });
    cmdbAnswer = { status: 200, body: { complete: true, clusters: [cluster('a'), cluster('b')] } };
    const first = await runUntil(
      cmdb.create(config, deps()),
      () => names('cmdb/'),
      (k) => k.length === 2,
    );
    cmdbAnswer = { status: 200, body: { complete: false, clusters: [cluster('a'), cluster('c')] } };
    const partial = await runUntil(
      cmdb.create(config, deps()),
      () => names('cmdb/'),
      (k) => k.length === 3,
    );
    cmdbAnswer = { status: 500, body: { error: 'down' } };
    const failing = new AbortController();
    const running = cmdb.create(config, deps()).run(failing.signal);
    await new Promise((resolve) => setTimeout(resolve, 300)); // several failed polls
    failing.abort();
    await running;
    const afterError = await names('cmdb/');
    expect({ first, partial, afterError }).toEqual({
      first: ['cmdb/a', 'cmdb/b'],
      partial: ['cmdb/a', 'cmdb/b', 'cmdb/c'],
      afterError: ['cmdb/a', 'cmdb/b', 'cmdb/c'],
    });
  }, 30_000);

  describe('mco clusters', () => {
    let kubeconfig: string;
    const run = async (...argv: string[]) => {
      let stdout = '';
      let stderr = '';
      const code = await clustersCommand
        .run([...argv, '--kubeconfig', kubeconfig], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) })
        .catch((error: Error) => `throws: ${error.message}`);
      return { code, stdout, stderr };
    };
    beforeAll(() => {
      kubeconfig = join(dir, 'hub.kubeconfig');
      writeFileSync(kubeconfig, provider.exportConfig());
      writeFileSync(
        join(dir, 'clusters.yaml'),
        `clusters:\n  - name: cli-1\n    server: https://cli-1.example.test\n    certificateAuthorityData: ${caData}\n    labels: {region: eu}\n`,
      );
      writeFileSync(
        join(dir, 'member.kubeconfig'),
        `apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster: {server: "https://member.example.test", certificate-authority-data: ${caData}}\nusers:\n- name: u\n  user: {token: member-secret-token}\ncontexts:\n- name: Member_Ctx\n  context: {cluster: m, user: u}\ncurrent-context: Member_Ctx\n`,
      );
    });

    it('apply creates, a second apply writes nothing, list shows the profile', async () => {
      const first = await run('apply', '-f', join(dir, 'clusters.yaml'), '--manager', 'cli');
      const second = await run('apply', '-f', join(dir, 'clusters.yaml'), '--manager', 'cli');
      const listed = await run('list', '--manager', 'cli');
      expect({ first, second, listed }).toEqual({
        first: {
          code: 0,
          stdout:
            'created    fleet/cli-1\n1 created, 0 updated, 0 deleted, 0 unchanged, 0 skipped, 0 failed (3 writes)\n',
          stderr: '',
        },
        second: {
          code: 0,
          stdout:
            'unchanged  fleet/cli-1\n0 created, 0 updated, 0 deleted, 1 unchanged, 0 skipped, 0 failed (0 writes)\n',
          stderr: '',
        },
        listed: {
          code: 0,
          stdout:
            'NAMESPACE  NAME   MANAGER  SERVER                      HEALTHY\nfleet      cli-1  cli      https://cli-1.example.test  Unknown\n',
          stderr: '',
        },
      });
    });

    it('from-kubeconfig prints a clusters-file entry without credentials, then applies it', async () => {
      const source = join(dir, 'member.kubeconfig');
      const printed = await run(
        'from-kubeconfig',
        '--context',
        'Member_Ctx',
        '--source',
        source,
        '--label',
        'env=dev',
        '--print',
      );
      const applied = await run('from-kubeconfig', '--context', 'Member_Ctx', '--source', source, '--manager', 'cli');
      expect({
        printed: printed.stdout.replace(caData, 'CA'),
        secretLeaked: printed.stdout.includes('member-secret-token'),
        applied: applied.stdout,
      }).toEqual({
        printed: [
          'clusters:',
          '  - name: member-ctx',
          '    labels:',
          '      env: dev',
          '    accessProvider: kubeconfig',
          '    server: https://member.example.test',
          '    certificateAuthorityData: CA',
          '',
        ].join('\n'),
        secretLeaked: false,
        applied:
          'created    fleet/member-ctx\n1 created, 0 updated, 0 deleted, 0 unchanged, 0 skipped, 0 failed (3 writes)\n',
      });
    });

    it('apply --prune needs --manager and --allow-mass-prune to empty a manager; it deletes only what the file no longer declares; a bad file is a usage error naming the field', async () => {
      writeFileSync(join(dir, 'empty.yaml'), 'clusters: []\n');
      writeFileSync(join(dir, 'bad.yaml'), 'clusters:\n  - name: ok\n    lables: {}\n');
      const empty = join(dir, 'empty.yaml');
      const noManager = await run('apply', '-f', empty, '--prune');
      const refused = await run('apply', '-f', empty, '--manager', 'cli', '--prune');
      const pruned = await run('apply', '-f', empty, '--manager', 'cli', '--prune', '--allow-mass-prune');
      const bad = await run('apply', '-f', join(dir, 'bad.yaml'), '--manager', 'cli');
      expect({ noManager: noManager.code, refused: refused.code, pruned: pruned.stdout, bad: bad.code }).toEqual({
        noManager: 'throws: apply --prune needs --manager <name>: the manager whose profiles may be deleted',
        refused:
          'throws: refusing to prune 2 of the 2 ClusterProfiles of cluster manager "cli" (the source declares 0): ' +
          'an empty or near-empty source is more likely broken than a decommission, or another provider uses the same managerName "cli" (each provider needs its own); ' +
          "for a real decommission set the provider's allowMassPrune: true (mco clusters apply: --allow-mass-prune)",
        pruned:
          'deleted    fleet/cli-1\ndeleted    fleet/member-ctx\n0 created, 0 updated, 2 deleted, 0 unchanged, 0 skipped, 0 failed (2 writes)\n',
        bad: `throws: invalid ${join(dir, 'bad.yaml')}: clusters[0]: Unrecognized key: "lables"`,
      });
    });
  });
});

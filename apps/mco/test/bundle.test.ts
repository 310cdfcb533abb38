import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { describeWithControlPlane, freePort, thirdPartyCrd, startControlPlane, type ControlPlane } from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtMco } from './built.js';

// The deployed artefact is the tsup bundle (the @mco packages inlined), not the
// TypeScript sources the other tests import: run it as a user would, against a
// real kube-apiserver.
const BIN = builtMco();
const REPO = new URL('../../..', import.meta.url).pathname;

describeWithControlPlane('the built mco bundle on a real kube-apiserver', () => {
  let cp: ControlPlane;
  let kubeconfig: string;
  const dir = mkdtempSync(join(tmpdir(), 'mco-bundle-'));
  const mco = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });

  beforeAll(async () => {
    cp = await startControlPlane();
    await cp.hub.installCrds([thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml')]);
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

/** The ```sh blocks of one `## heading` section of a Markdown file, in order. */
function shellBlocks(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no section "## ${heading}"`);
  const end = markdown.indexOf('\n## ', start + 1);
  return [...markdown.slice(start, end < 0 ? undefined : end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

const LAPTOP = 'Run mco against any cluster from your laptop';
const WALK_THROUGH_PLUGIN = '127.0.0.1:4355';
const SAMPLES = [
  'gemma-vllm-placement-autoscale',
  'hello-web-placement-autoscale',
  'cluster-list-placement',
  'cluster-regex-placement',
];

// The walk-through's own prerequisites, found on PATH as a user's would be.
const missing = ['kubectl', 'curl', 'openssl'].filter((tool) => spawnSync('which', [tool]).status !== 0);
// These are the reader's own tools (docs/install.md lists them), not prepared by `npm test`:
// without them the walk-through is skipped with one line, under CI too.
const skipLaptop = missing.length > 0;
if (skipLaptop) console.warn(`[install.md walk-through] skipped: ${missing.join(', ')} not on PATH`);

const describeLaptop = skipLaptop
  ? (name: string, _options: object, fn: () => void) => describe.skip(name, fn)
  : describeWithControlPlane;

describeLaptop(`docs/install.md "${LAPTOP}", run as written`, {}, () => {
  let cp: ControlPlane;
  let run: { code: number | null; stdout: string; stderr: string; stoppedAll: boolean };
  let home: string;
  let pluginAddress: string; // the plugin's address: the walk-through's 127.0.0.1:4355, on a free port here

  beforeAll(async () => {
    cp = await startControlPlane();
    // A user's machine: a kubeconfig in $KUBECONFIG, nothing else (no ~/.kube, no in-cluster account).
    home = mkdtempSync(join(tmpdir(), 'mco-laptop-'));
    const kubeconfig = join(home, 'hub.kubeconfig');
    writeFileSync(kubeconfig, cp.hub.adminKubeConfig().exportConfig());
    const blocks = shellBlocks(readFileSync(join(REPO, 'docs/install.md'), 'utf8'), LAPTOP).join('\n');
    // Another process (a user's own mco, say) may hold the walk-through's port: run it on a free one.
    if (!blocks.includes(WALK_THROUGH_PLUGIN))
      throw new Error(`the walk-through no longer uses ${WALK_THROUGH_PLUGIN}`);
    pluginAddress = `127.0.0.1:${await freePort()}`;
    const script = ['set -euo pipefail', blocks.replaceAll(WALK_THROUGH_PLUGIN, pluginAddress)];
    // Its own process group, so whatever the script leaves running can be found and stopped.
    const child = spawn('bash', ['-c', script.join('\n')], {
      cwd: REPO,
      detached: true,
      env: {
        ...process.env,
        HOME: home,
        KUBECONFIG: kubeconfig,
        KUBERNETES_SERVICE_HOST: '',
        TMPDIR: home, // where `mktemp -d` puts $MCO_DEMO, whose logs the walk-through keeps
        MCO_HTTP_ADDRESS: '127.0.0.1:0', // the controller's metrics port: any free one (other tests run alongside)
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => void (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => void (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    // The walk-through's last block stops what it started: nothing of its process group may be left.
    const groupAlive = () => {
      try {
        process.kill(-child.pid!, 0);
        return true;
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 60_000;
    while (groupAlive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const stoppedAll = !groupAlive();
    if (!stoppedAll) process.kill(-child.pid!, 'SIGKILL');
    run = { code, stdout, stderr, stoppedAll };
  }, 600_000);
  afterAll(async () => cp?.stop());

  it('every command succeeds, and `kill $(jobs -p)` stops the controller and the plugin', () => {
    expect({ code: run.code, stoppedAll: run.stoppedAll }, run.stderr).toEqual({ code: 0, stoppedAll: true });
    expect(run.stderr).not.toMatch(/\n\s+at |Error:/);
  });

  it('their logs are JSON lines, every one with a component, with secrets redacted', () => {
    const [demo] = readdirSync(home).filter((name) => name.startsWith('tmp.'));
    const logs = ['controller.log', 'plugin.log'].map((file) =>
      readFileSync(join(home, demo!, file), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    );
    const [controller = [], plugin = []] = logs.map((lines) => lines.map((l) => String(l.component)));
    expect({
      controller: [...new Set(controller)],
      plugin: [...new Set(plugin)],
      listening: logs[1]!.find((l) => l.msg === 'argocd plugin listening'),
    }).toEqual({
      controller: ['mco-controller'],
      plugin: ['mco-argocd-plugin'],
      listening: expect.objectContaining({ address: pluginAddress }),
    });
    expect(controller.length).toBeGreaterThan(1);
    expect(JSON.stringify(logs)).not.toContain(readFileSync(join(home, demo!, 'token'), 'utf8').trim());
  });

  it("Google's four sample placements, with no signal source, are each placed up to their minimum", async () => {
    const api = cp.hub.adminKubeConfig().makeApiClient(CustomObjectsApi);
    const placed = await Promise.all(
      SAMPLES.map(async (name) => {
        const mkcp = (await api.getNamespacedCustomObject({
          group: 'orchestra.multicluster.x-k8s.io',
          version: 'v1alpha1',
          plural: 'multikubernetesclusterplacements',
          namespace: 'mco-demo',
          name,
        })) as {
          status?: {
            clusters?: { name: string; state: string }[];
            conditions?: { type: string; reason: string; status: string }[];
          };
        };
        const satisfied = mkcp.status?.conditions?.find((c) => c.type === 'Satisfied');
        return {
          name,
          clusters: mkcp.status?.clusters?.map((c) => `${c.name}:${c.state}`),
          satisfied: `${satisfied?.status}/${satisfied?.reason}`,
        };
      }),
    );
    expect(placed).toEqual([
      { name: SAMPLES[0], clusters: ['mco-cluster-eu:ACTIVE'], satisfied: 'Unknown/NoSignalSource' },
      { name: SAMPLES[1], clusters: ['mco-cluster-asia:ACTIVE'], satisfied: 'Unknown/NoSignalSource' },
      {
        name: SAMPLES[2],
        clusters: ['mco-cluster-eu:ACTIVE', 'mco-cluster-us:ACTIVE'],
        satisfied: 'Unknown/NoSignalSource',
      },
      { name: SAMPLES[3], clusters: ['mco-cluster-asia:ACTIVE'], satisfied: 'Unknown/NoSignalSource' },
    ]);
    // What `kubectl get mkcp` showed the user.
    expect(run.stdout).toMatch(/cluster-list-placement\s+mco-cluster-eu,mco-cluster-us\s+NoSignalSource/);
  });

  it('the Argo CD plugin answers each of them with its clusters', () => {
    const answers = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('{"output"'))
      .map((line) => {
        const params = (JSON.parse(line) as { output: { parameters: { name: string; placementName: string }[] } })
          .output.parameters;
        return `${params[0]?.placementName}: ${params.map((p) => p.name).join(',')}`;
      });
    expect(answers).toEqual([
      'gemma-vllm-placement-autoscale: fleet-cluster-inventory.mco-cluster-eu',
      'hello-web-placement-autoscale: fleet-cluster-inventory.mco-cluster-asia',
      'cluster-list-placement: fleet-cluster-inventory.mco-cluster-eu,fleet-cluster-inventory.mco-cluster-us',
      'cluster-regex-placement: fleet-cluster-inventory.mco-cluster-asia',
    ]);
  });
});

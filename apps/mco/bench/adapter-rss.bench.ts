// Idle and peak RSS of `mco argocd-sync`, `mco flux` and `mco configsync` as
// processes, on one real hub with the same load for each: 100 ClusterProfiles
// (an exec access provider; the members do not listen) and 100 placements
// listing two clusters each, annotated with a Config Sync template. Each
// command runs until its work is visible on the hub (Argo CD: a cluster Secret
// per profile; Flux: a kubeconfig Secret per placed cluster and an input
// provider per placement and cluster; Config Sync: its condition on every
// placement), then 15 s more; "idle" is VmRSS then, "peak" VmHWM. Prints
// figures; asserts nothing.
//
//   node --conditions=@mco/source --import tsx bench/adapter-rss.bench.ts [<mco.js> ...]
//
// Each `mco.js` given (default: bin/mco.js, the bundle prepare-tools builds)
// runs every command once, alternately, BENCH_RUNS times (default 2).
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  freePort,
  placeOn,
  startControlPlane,
  tenantPlacement,
  thirdPartyCrd,
  toYaml,
  type ClusterHandle,
} from '@mco/testkit';

const PROFILES = 100;
const PLACEMENTS = 100;
const RUNS = Number(process.env.BENCH_RUNS ?? 2);
const REPO = resolve(import.meta.dirname, '../../..');
const bins = process.argv.slice(2).map((b) => resolve(b));
if (bins.length === 0) bins.push(resolve(import.meta.dirname, '../bin/mco.js'));

const cp = await startControlPlane();
const hub = cp.hub;
const dir = mkdtempSync(join(tmpdir(), 'mco-adapter-rss-'));
try {
  await hub.installCrds([
    thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
    join(REPO, 'apps/mco/chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml'),
    thirdPartyCrd('argoproj.io_applicationsets.yaml'),
    thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
    thirdPartyCrd('fluxcd.controlplane.io_resourcesetinputproviders.yaml'),
  ]);
  const namespaces = ['fleet', 'apps', 'argocd', 'flux-system'];
  await hub.apply(namespaces.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })));

  // A server per profile (a profile naming an older one's server is refused); nothing listens there.
  const server = (i: number) => `https://127.0.1.${i + 1}:1`;
  const plugin = join(dir, 'token.sh');
  writeFileSync(
    plugin,
    `#!/bin/sh\nprintf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}'\n`,
  );
  chmodSync(plugin, 0o755);
  const providerFile = join(dir, 'providers.yaml');
  writeFileSync(
    providerFile,
    toYaml({
      providers: [
        {
          name: 'exec',
          execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin },
          allowedServers: Array.from({ length: PROFILES }, (_, i) => server(i)),
        },
      ],
    }),
  );
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'hub',
      contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'admin' } }],
      clusters: [{ name: 'hub', cluster: { server: hub.server, 'certificate-authority-data': hub.caData } }],
      users: [{ name: 'admin', user: { token: hub.token('admin') } }],
    }),
  );

  const profile = (i: number) => `c${String(i).padStart(3, '0')}`;
  for (let i = 0; i < PROFILES; i += 25) {
    const names = Array.from({ length: Math.min(25, PROFILES - i) }, (_, j) => profile(i + j));
    await hub.apply(
      names.map((name) => ({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace: 'fleet' },
        spec: { displayName: name, clusterManager: { name: 'bench' } },
      })) as KubernetesObject[],
    );
    await Promise.all(
      names.map((name, j) =>
        patchStatus(hub, `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/fleet/clusterprofiles/${name}/status`, {
          accessProviders: [{ name: 'exec', cluster: { server: server(i + j) } }],
        }),
      ),
    );
  }
  const template = `apiVersion: configsync.gke.io/v1beta1
kind: RepoSync
metadata:
  namespace: apps
spec:
  sourceType: git
  sourceFormat: unstructured
  git: {repo: https://git.example.com/shop.git, branch: main, auth: none}
`;
  for (let i = 0; i < PLACEMENTS; i += 25) {
    const names = Array.from({ length: Math.min(25, PLACEMENTS - i) }, (_, j) => `p${String(i + j).padStart(3, '0')}`);
    await hub.apply(
      names.map((name) => {
        const p = tenantPlacement('apps', name);
        return { ...p, metadata: { ...p.metadata, annotations: { 'configsync.mco.x-k8s.io/template': template } } };
      }),
    );
    await Promise.all(
      names.map((name, j) =>
        placeOn(hub, 'apps', name, [
          `fleet/${profile((i + j) % PROFILES)}`,
          `fleet/${profile((i + j + 1) % PROFILES)}`,
        ]),
      ),
    );
  }

  const count = async (path: string, labelSelector?: string) => {
    const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : '';
    const response = await hub.request(`${path}${query}`);
    return (JSON.parse(response.body) as { items: unknown[] }).items.length;
  };
  const withCondition = async () => {
    const response = await hub.request(
      '/apis/orchestra.multicluster.x-k8s.io/v1alpha1/namespaces/apps/multikubernetesclusterplacements',
    );
    const items = (JSON.parse(response.body) as { items: { status?: { conditions?: { type: string }[] } }[] }).items;
    return items.filter((p) => p.status?.conditions?.some((c) => c.type === 'ConfigSyncSynced')).length;
  };
  const commands: { name: string; args: () => Promise<string[]>; done: () => Promise<boolean> }[] = [
    {
      name: 'argocd-sync --sync-cluster-secrets --refresh-applicationsets',
      args: async () => [
        'argocd-sync',
        '--sync-cluster-secrets',
        '--refresh-applicationsets',
        '--argocd-namespace=argocd',
        `--provider-file=${providerFile}`,
        `--listen=127.0.0.1:${await freePort()}`,
      ],
      done: async () =>
        (await count('/api/v1/namespaces/argocd/secrets', 'argocd.argoproj.io/secret-type=cluster')) >= PROFILES,
    },
    {
      name: 'flux --input-providers',
      args: async () => [
        'flux',
        '--input-providers',
        '--flux-namespace=flux-system',
        `--provider-file=${providerFile}`,
      ],
      done: async () =>
        (await count('/apis/fluxcd.controlplane.io/v1/namespaces/flux-system/resourcesetinputproviders')) >=
          2 * PLACEMENTS && (await count('/api/v1/namespaces/flux-system/secrets')) >= PROFILES,
    },
    {
      name: 'configsync',
      args: async () => ['configsync', `--provider-file=${providerFile}`],
      done: async () => (await withCondition()) >= PLACEMENTS,
    },
  ];

  console.log(
    `load average at the start: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')}`,
  );
  for (let run = 1; run <= RUNS; run++) {
    for (const command of commands) {
      for (const bin of bins) {
        const { idle, peak, seconds } = await measure(
          bin,
          [...(await command.args()), `--kubeconfig=${kubeconfig}`],
          command.done,
        );
        const row = `run ${run} | ${command.name} | ${bin} | idle ${idle} MiB | peak ${peak} MiB | work done in ${seconds} s | load ${loadavg()[0]!.toFixed(1)}`;
        console.log(row);
        // The next command (or binary) starts from the same hub: remove what this one wrote.
        await cleanUp(hub);
      }
    }
  }
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')}`,
  );
} finally {
  await cp.stop();
}

async function measure(
  bin: string,
  args: string[],
  done: () => Promise<boolean>,
): Promise<{ idle: number; peak: number; seconds: number }> {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const started = Date.now();
  try {
    while (!(await done())) {
      if (child.exitCode !== null) throw new Error(`mco ${args[0]} exited ${child.exitCode}: ${stderr}`);
      if (Date.now() - started > 300_000) throw new Error(`mco ${args[0]}: work not done in 300 s: ${stderr}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const seconds = Math.round((Date.now() - started) / 100) / 10;
    await new Promise((r) => setTimeout(r, 15_000));
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { idle: Math.round(kib('VmRSS') / 1024), peak: Math.round(kib('VmHWM') / 1024), seconds };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

async function patchStatus(cluster: ClusterHandle, path: string, status: unknown): Promise<void> {
  const response = await cluster.request(path, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ status }),
  });
  if (response.status !== 200) throw new Error(`PATCH ${path}: HTTP ${response.status} ${response.body}`);
}

/** Deletes what the adapters wrote: Secrets in argocd and flux-system, input providers, Leases, and the Config Sync marks. */
async function cleanUp(cluster: ClusterHandle): Promise<void> {
  for (const path of [
    '/api/v1/namespaces/argocd/secrets',
    '/api/v1/namespaces/flux-system/secrets',
    '/apis/fluxcd.controlplane.io/v1/namespaces/flux-system/resourcesetinputproviders',
    '/apis/coordination.k8s.io/v1/namespaces/argocd/leases',
  ]) {
    await cluster.request(path, { method: 'DELETE' });
  }
  // Config Sync's record, finalizer and condition: a fresh process does the same work again.
  const path = '/apis/orchestra.multicluster.x-k8s.io/v1alpha1/namespaces/apps/multikubernetesclusterplacements';
  const list = JSON.parse((await cluster.request(path)).body) as { items: { metadata: { name: string } }[] };
  for (const { metadata } of list.items) {
    await cluster.request(`${path}/${metadata.name}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({
        metadata: { finalizers: null, annotations: { 'configsync.mco.x-k8s.io/delivered': null } },
      }),
    });
    await cluster.request(`${path}/${metadata.name}/status`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ status: { conditions: null } }),
    });
  }
}

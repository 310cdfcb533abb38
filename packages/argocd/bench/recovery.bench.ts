// Benchmark of the refresher after a plugin outage: the plugin is down, a
// placement changes, the plugin comes back; measured is the time from the
// plugin's /readyz answering 200 to every ApplicationSet that uses it carrying
// the refresh annotation (Argo CD regenerates on it at once), with the default
// probe interval (2 s). The hub is a real kube-apiserver. ROUNDS rounds (5 by
// default, BENCH_ROUNDS). Prints figures; asserts nothing.
//
//   npm run bench:recovery -w @mco/argocd
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { PLACEMENTS } from '@mco/kube-runtime';
import { requestOptions } from '@mco/kube-runtime/client-node';
import { freePort, startControlPlane, summarize, thirdPartyCrd } from '@mco/testkit';
import { APPLICATION_SETS, REFRESH_ANNOTATION, startArgoCdDelivery } from '../src/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const APPLICATION_SETS_N = 20;
const T = '2026-01-01T00:00:00Z';
const MKCP_CRD = fileURLToPath(
  new URL('../../core/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url),
);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(what: string, done: () => Promise<boolean>, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(10);
  }
}

const cp = await startControlPlane();
const dir = mkdtempSync(join(tmpdir(), 'mco-argocd-recovery-'));
try {
  await cp.hub.installCrds([
    MKCP_CRD,
    thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
    thirdPartyCrd('argoproj.io_applicationsets.yaml'),
  ]);
  const admin = cp.hub.adminKubeConfig();
  const custom = admin.makeApiClient(CustomObjectsApi);
  await cp.hub.apply(
    ['apps', 'argocd', 'fleet'].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
  );
  await cp.hub.apply([
    {
      apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name: 'web', namespace: 'apps' },
      spec: {},
    } as KubernetesObject,
  ]);
  const setClusters = (n: number) =>
    custom.patchNamespacedCustomObjectStatus(
      {
        ...PLACEMENTS,
        namespace: 'apps',
        name: 'web',
        body: {
          status: {
            observedGeneration: 1,
            clusters: Array.from({ length: n }, (_, i) => ({
              name: `c${i}`,
              namespace: 'fleet',
              state: 'ACTIVE',
              lastTransitionTime: T,
            })),
          },
        },
      },
      requestOptions(admin, 30_000, PatchStrategy.MergePatch),
    );
  await setClusters(1);
  const names = Array.from({ length: APPLICATION_SETS_N }, (_, i) => `set-${i}`);
  await cp.hub.apply(
    names.map((name) => ({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name, namespace: 'argocd' },
      spec: {
        generators: [
          {
            plugin: {
              configMapRef: { name: 'argocd-mco-placement' },
              input: {
                parameters: {
                  multiClusterOrchestraPlacementName: 'web',
                  multiClusterOrchestraPlacementNamespace: 'apps',
                },
              },
            },
          },
        ],
        template: {
          metadata: { name: '{{name}}' },
          spec: {
            project: 'default',
            destination: { name: '{{name}}', namespace: 'apps' },
            source: { repoURL: 'https://example.invalid/x.git', path: '.' },
          },
        },
      },
    })) as KubernetesObject[],
  );
  const annotated = async () => {
    const list = (await custom.listNamespacedCustomObject({ ...APPLICATION_SETS, namespace: 'argocd' })) as {
      items: { metadata: { name: string; annotations?: Record<string, string> } }[];
    };
    return list.items.filter((a) => a.metadata.annotations?.[REFRESH_ANNOTATION] === 'true').length;
  };
  const clearAnnotations = async () => {
    for (const name of names) {
      await custom.patchNamespacedCustomObject(
        {
          ...APPLICATION_SETS,
          namespace: 'argocd',
          name,
          body: { metadata: { annotations: { [REFRESH_ANNOTATION]: null } } },
        },
        requestOptions(admin, 30_000, PatchStrategy.MergePatch),
      );
    }
  };

  writeFileSync(join(dir, 'token'), 'bench-token-0123456789abcdef\n');
  const port = await freePort();
  const refresher = await startArgoCdDelivery({
    kubeConfig: admin,
    refresh: { namespace: 'argocd', pluginUrl: `http://127.0.0.1:${port}` },
  });
  await until('the refresher caches', async () => refresher.ready());
  const readyz = async () => {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      await response.body?.cancel();
      return response.ok;
    } catch {
      return false;
    }
  };

  const latencies: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // The plugin is down (nothing listens; the refresher's probe fails) while the placement changes.
    await sleep(3_000);
    await setClusters(round + 2);
    await sleep(1_000);
    await clearAnnotations();
    const plugin = await startArgoCdDelivery({
      kubeConfig: admin,
      plugin: { host: '127.0.0.1', port, tokenFile: join(dir, 'token') },
    });
    await until('the plugin ready', readyz);
    const readyAt = performance.now();
    await until('every ApplicationSet annotated', async () => (await annotated()) === APPLICATION_SETS_N);
    latencies.push(performance.now() - readyAt);
    await plugin.stop();
    await clearAnnotations();
  }
  await refresher.stop();

  const figures = summarize('plugin ready → every ApplicationSet annotated', latencies);
  const rows: [string, string][] = [
    ['ApplicationSets using the plugin', String(APPLICATION_SETS_N)],
    ['rounds (plugin down 4 s, a placement change meanwhile)', String(ROUNDS)],
    ['plugin ready → every ApplicationSet annotated: median', `${(figures.p50 / 1000).toFixed(2)} s`],
    ['same, max', `${(figures.max / 1000).toFixed(2)} s`],
    ['load average (1 min) at the end', loadavg()[0]!.toFixed(1)],
  ];
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
  await cp.stop();
}

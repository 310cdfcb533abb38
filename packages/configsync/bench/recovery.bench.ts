// Benchmark of Config Sync recovery: a cluster is removed from a placement
// while its member is unreachable; the member answers again after an outage
// (50 s by default, BENCH_OUTAGE_S). Measures the time from the member
// answering again to its pending cleanup (the sync object deleted there), with
// the default retry backoff. The hub is a real kube-apiserver; the members are
// in-memory fakes. Prints figures; asserts nothing.
//
//   npm run bench:recovery -w @mco/configsync
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { createClusterAccess } from '@mco/cluster-access';
import type { ClusterProfile, PlacementCluster } from '@mco/core';
import { PLACEMENTS } from '@mco/kube-runtime';
import { requestOptions } from '@mco/kube-runtime/client-node';
import { TEMPLATE_ANNOTATION, startConfigSyncDelivery } from '../src/index.js';
import { FakeMember } from '../test/fakes.js';
import { startBenchHub, until } from './hub.js';

const OUTAGE_S = Number(process.env.BENCH_OUTAGE_S ?? 50);
const T = '2026-01-01T00:00:00Z';
const names = ['east', 'west'];
const { cp, admin, custom } = await startBenchHub(names);
try {
  const cluster = (name: string): PlacementCluster => ({
    name,
    namespace: 'fleet',
    state: 'ACTIVE',
    lastTransitionTime: T,
  });
  const setClusters = (clusters: string[]) =>
    custom.patchNamespacedCustomObjectStatus(
      {
        ...PLACEMENTS,
        namespace: 'fleet',
        name: 'web',
        body: { status: { observedGeneration: 1, clusters: clusters.map(cluster) } },
      },
      requestOptions(admin, 30_000, PatchStrategy.MergePatch),
    );
  await cp.hub.apply([
    {
      apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
      kind: 'MultiKubernetesClusterPlacement',
      metadata: {
        name: 'web',
        namespace: 'fleet',
        annotations: {
          [TEMPLATE_ANNOTATION]:
            'apiVersion: configsync.gke.io/v1beta1\nkind: RepoSync\nspec: {sourceType: git, git: {repo: https://example.com/x.git}}\n',
        },
      },
      spec: {},
    } as KubernetesObject,
  ]);
  await setClusters(names);

  const members = new Map(names.map((n) => [`fleet/${n}`, new FakeMember(2)]));
  const west = members.get('fleet/west')!;
  let retries = 0;
  const delivery = startConfigSyncDelivery({
    kubeConfig: admin,
    access: createClusterAccess({ providers: [] }),
    member: async (profile: ClusterProfile) => members.get(`fleet/${profile.metadata.name}`)!,
    statusIntervalMs: 3_600_000,
    onReconciled: (_key, result) => {
      if (!(result instanceof Error) && result.retry) retries++;
    },
  });
  await until(
    'delivered on both members',
    () => west.objects.size === 1 && members.get('fleet/east')!.objects.size === 1,
  );

  // The member goes away; meanwhile the placement drops it.
  west.reachable = false;
  await setClusters(['east']);
  const outageStarted = performance.now();
  await until('the outage', () => performance.now() - outageStarted >= OUTAGE_S * 1000, OUTAGE_S * 1000 + 60_000);
  const retriesDuringOutage = retries;

  west.reachable = true;
  const back = performance.now();
  await until('the cleanup on the returned member', () => west.objects.size === 0, 600_000);
  const cleanupMs = performance.now() - back;
  await delivery.stop();

  const rows: [string, string][] = [
    ['outage of the member (cluster removed meanwhile)', `${OUTAGE_S} s`],
    ['retries during the outage', String(retriesDuringOutage)],
    ['member answers again → its sync object deleted', `${(cleanupMs / 1000).toFixed(2)} s`],
    ['load average (1 min) at the end', loadavg()[0]!.toFixed(1)],
  ];
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
} finally {
  await cp.stop();
}

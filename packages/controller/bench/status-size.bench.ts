// What one placement status write costs the API server, by the number of
// clusters the status lists and with or without a message per cluster: as
// many loops as the controller has workers PUT statuses of 200 placements
// for a few seconds each, with no controller running. Then the same for
// PlacementDecision slices (100 decisions, a full slice; 34, a 333-cluster
// placement's last one), the controller's lower lane. Prints figures; asserts
// nothing.
//
//   npm run bench:status-size -w @mco/controller   (BENCH_WORKERS, BENCH_CEILING_SECONDS)
import { loadavg } from 'node:os';
import { objectPath, PLACEMENT_DECISIONS, PLACEMENTS, resourcePath, type KubeObject } from '@mco/kube-runtime';
import { kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import { startHub } from '../test/support.js';
import { controlPlaneCpu } from './control-plane-cpu.js';

const WORKERS = Number(process.env.BENCH_WORKERS ?? 8);
const SECONDS = Number(process.env.BENCH_CEILING_SECONDS ?? 10);
const PLACEMENTS_WRITTEN = 200;
/** 1 cluster, 1,000 × 1,000's region-and-tier placement (33), 5,000 × 5,000's (167), 10,000 × 10,000's (333). */
const CLUSTER_COUNTS = [1, 33, 167, 333];
/** The sentence an entry carried for every cluster of a placement without scaling. */
const MESSAGE = 'eligible, and no scaling is configured: every eligible cluster runs';

const clusters = (count: number, message: boolean) =>
  Array.from({ length: count }, (_, i) => ({
    name: `c-${String(i * 7).padStart(5, '0')}`,
    namespace: `fleet-${i % 10}`,
    state: 'ACTIVE',
    lastTransitionTime: '2026-11-27T16:00:00Z',
    reason: 'Added',
    ...(message ? { message: MESSAGE } : {}),
  }));

const hub = await startHub();
try {
  const client = kubeClientFromKubeConfig(hub.plane.hub.adminKubeConfig());
  const planeCpu = controlPlaneCpu(hub.plane.hub.server);
  await client.create('/api/v1/namespaces', { metadata: { name: 'apps' } });
  const latest: KubeObject[] = [];
  for (let i = 0; i < PLACEMENTS_WRITTEN; i++) {
    latest.push(
      await client.create<KubeObject>(resourcePath(PLACEMENTS, 'apps'), {
        apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
        kind: 'MultiKubernetesClusterPlacement',
        metadata: { name: `p-${i}`, namespace: 'apps' },
        spec: {},
      }),
    );
  }
  let sequence = 0;
  const write = async (i: number, listed: object[]) => {
    const p = latest[i]!;
    const status = {
      clusters: listed,
      // A condition message that changes on every write, so that each one reaches etcd.
      conditions: [{ type: 'Valid', status: 'True', reason: 'Valid', message: `write ${sequence++}` }],
      observedGeneration: 1,
    };
    const path = `${objectPath(PLACEMENTS, 'apps', p.metadata!.name!)}/status`;
    latest[i] = await client.replace<KubeObject>(path, { ...p, status });
  };
  console.log(
    `status write cost: ${WORKERS} concurrent status PUTs of ${PLACEMENTS_WRITTEN} placements, ${SECONDS} s per row; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log('| clusters listed | per-cluster message | status size | writes/s | kube-apiserver CPU per write |');
  console.log('| ---: | --- | ---: | ---: | ---: |');
  /** WORKERS loops of `write` over the 200 objects for SECONDS: writes/s and the API server's CPU per write. */
  const measure = async (write: (i: number) => Promise<void>) => {
    for (let i = 0; i < PLACEMENTS_WRITTEN; i++) await write(i); // every object at this size first
    let writes = 0;
    let next = 0;
    const cpuBefore = planeCpu().apiserver;
    const started = performance.now();
    const until = started + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        while (performance.now() < until) {
          await write(next++ % PLACEMENTS_WRITTEN);
          writes++;
        }
      }),
    );
    const perSecond = writes / ((performance.now() - started) / 1000);
    return `${perSecond.toFixed(0)} | ${((planeCpu().apiserver - cpuBefore) / writes).toFixed(1)} ms`;
  };
  for (const count of CLUSTER_COUNTS) {
    for (const message of [true, false]) {
      const listed = clusters(count, message);
      const size = JSON.stringify({ clusters: listed }).length;
      const figures = await measure((i) => write(i, listed));
      console.log(`| ${count} | ${message ? 'yes' : 'no'} | ${(size / 1024).toFixed(1)} KB | ${figures} |`);
    }
  }

  // PlacementDecision slices as the controller writes them, each write moving one cluster so that it reaches etcd.
  const decisions: KubeObject[] = [];
  for (let i = 0; i < PLACEMENTS_WRITTEN; i++) {
    decisions.push(
      await client.create<KubeObject>(resourcePath(PLACEMENT_DECISIONS, 'apps'), {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'PlacementDecision',
        metadata: { name: `p-${i}-0`, namespace: 'apps' },
        schedulerName: 'mco',
        decisions: [],
      }),
    );
  }
  console.log('');
  console.log('| PlacementDecision decisions | slice size | writes/s | kube-apiserver CPU per write |');
  console.log('| ---: | ---: | ---: | ---: |');
  for (const count of [100, 34]) {
    const slice = (shift: number) =>
      clusters(count, false).map((c, i) => ({
        clusterProfileRef: { name: i === 0 ? `c-moved-${shift}` : c.name, namespace: c.namespace },
        reason: c.state,
      }));
    const writeSlice = async (i: number) => {
      const d = decisions[i]!;
      decisions[i] = await client.replace<KubeObject>(objectPath(PLACEMENT_DECISIONS, 'apps', d.metadata!.name!), {
        ...d,
        decisions: slice(sequence++ % 2),
      });
    };
    const size = JSON.stringify({ decisions: slice(0) }).length;
    console.log(`| ${count} | ${(size / 1024).toFixed(1)} KB | ${await measure(writeSlice)} |`);
  }
} finally {
  await hub.stop();
}

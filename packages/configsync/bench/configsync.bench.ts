// Benchmark of Config Sync delivery at 100 placements × 10 member clusters:
// the first pass, a resync that should write nothing, and the latency from a
// placement status change on the hub to the sync object applied on the member
// (p50/p99). The hub is a real kube-apiserver (informers, server-side apply of
// the record and condition, Events); the members are in-memory fakes with a
// fixed per-request latency, so the figures are mco's own cost plus the hub's.
// Prints figures; asserts nothing.
//
//   npm run bench -w @mco/configsync     (tsx --conditions=@mco/source bench/configsync.bench.ts)
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { createClusterAccess } from '@mco/cluster-access';
import type { ClusterProfile, PlacementCluster } from '@mco/core';
import { PLACEMENTS } from '@mco/kube-runtime';
import { kubeClientFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import { percentile } from '@mco/testkit';
import {
  CONDITION_TYPE,
  TEMPLATE_ANNOTATION,
  createHubWriter,
  startConfigSyncDelivery,
  type HubWriter,
  type ReconcileResult,
} from '../src/index.js';
import { FakeMember } from '../test/fakes.js';
import { startBenchHub, until as waitUntil } from './hub.js';

const PLACEMENTS_N = Number(process.env.BENCH_PLACEMENTS ?? 100);
const MEMBERS_N = 10;
const MEMBER_LATENCY_MS = 2;
const CHANGES = 100;
const T = '2026-01-01T00:00:00Z';
const TEMPLATE = `apiVersion: configsync.gke.io/v1beta1
kind: RepoSync
metadata: {name: PLACEMENT}
spec: {sourceType: helm, helm: {repo: https://charts.example.com, chart: web, version: 1.0.0, values: {replicaCount: 2}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reconciler-PLACEMENT}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
`;

const quantile = (values: number[], q: number) => percentile('status change → applied', values, q * 100);
const ms = (v: number) => `${v.toFixed(1)} ms`;
let progress = () => '';
const until = (what: string, done: () => boolean, timeoutMs?: number) =>
  waitUntil(what, done, timeoutMs, () => progress());

const names = Array.from({ length: MEMBERS_N }, (_, i) => `member-${i}`);
const { cp, admin, custom } = await startBenchHub(names);
try {
  const cluster = (name: string, drain?: number): PlacementCluster => ({
    name,
    namespace: 'fleet',
    state: drain ? 'SCALING_IN' : 'ACTIVE',
    lastTransitionTime: T,
    ...(drain ? { draining: { desiredMaxReplicas: drain, lastReplicaCountDecrease: T } } : {}),
  });
  const setStatus = (i: number, clusters: PlacementCluster[]) =>
    custom.patchNamespacedCustomObjectStatus(
      { ...PLACEMENTS, namespace: 'fleet', name: `web-${i}`, body: { status: { observedGeneration: 1, clusters } } },
      requestOptions(admin, 30_000, PatchStrategy.MergePatch),
    );
  for (let i = 0; i < PLACEMENTS_N; i++) {
    await cp.hub.apply([
      {
        apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
        kind: 'MultiKubernetesClusterPlacement',
        metadata: {
          name: `web-${i}`,
          namespace: 'fleet',
          annotations: {
            [TEMPLATE_ANNOTATION]: TEMPLATE.replaceAll('PLACEMENT', `web-${i}`),
          },
        },
        spec: {},
      } as KubernetesObject,
    ]);
    await setStatus(
      i,
      names.map((n) => cluster(n)),
    );
  }

  const members = new Map(names.map((n) => [`fleet/${n}`, new FakeMember(MEMBER_LATENCY_MS)]));
  const memberWrites = () => [...members.values()].reduce((n, m) => n + m.writes, 0);
  const real = createHubWriter(kubeClientFromKubeConfig(admin));
  let hubWrites = 0;
  const hub: HubWriter = {
    applyPlacementMetadata: (...args) => (hubWrites++, real.applyPlacementMetadata(...args)),
    applyCondition: (...args) => (hubWrites++, real.applyCondition(...args)),
    createEvent: (...args) => (hubWrites++, real.createEvent(...args)),
  };
  const reconciled: ReconcileResult[] = [];
  const started = performance.now();
  const delivery = startConfigSyncDelivery({
    kubeConfig: admin,
    access: createClusterAccess({ providers: [] }),
    member: async (profile: ClusterProfile) => members.get(`fleet/${profile.metadata.name}`)!,
    hubWriter: hub,
    statusIntervalMs: 3_600_000,
    waitingIntervalMs: 3_600_000,
    onReconciled: (_key, result) => {
      if (result instanceof Error) errors.push(result.message);
      else reconciled.push(result);
    },
  });

  const objects = () => [...members.values()].reduce((n, m) => n + m.objects.size, 0);
  const errors: string[] = [];
  progress = () =>
    `${objects()} objects, ${reconciled.length} reconciles, ${memberWrites()} member writes, ${hubWrites} hub writes, ${errors.length} errors${errors.length ? ` (last: ${errors.at(-1)})` : ''}`;
  // 1. First pass: every placement applied on every member, record and condition written.
  await until('first pass', () => objects() === PLACEMENTS_N * MEMBERS_N * 2 && reconciled.length >= PLACEMENTS_N);
  const firstPassMs = performance.now() - started;
  const firstMemberWrites = memberWrites();
  // Settled: the passes that the record and condition writes trigger (watch events) are done.
  let last = '';
  let stableSince = performance.now();
  await until('settled', () => {
    const now = `${memberWrites()}/${hubWrites}/${reconciled.length}`;
    if (now !== last) [last, stableSince] = [now, performance.now()];
    return performance.now() - stableSince > 2_000;
  });
  const firstHubWrites = hubWrites;

  // 2. Resync: every placement reconciled again with nothing changed.
  const beforeWrites = { member: memberWrites(), hub: hubWrites, passes: reconciled.length };
  const resyncStarted = performance.now();
  for (let i = 0; i < PLACEMENTS_N; i++) delivery.enqueue(`fleet/web-${i}`);
  await until('resync', () => reconciled.length >= beforeWrites.passes + PLACEMENTS_N);
  const resyncMs = performance.now() - resyncStarted;
  const resync = { member: memberWrites() - beforeWrites.member, hub: hubWrites - beforeWrites.hub };

  // 3. Status change (one cluster starts draining) → the sync object applied on that member.
  const latencies: number[] = [];
  for (let k = 0; k < CHANGES; k++) {
    const i = k % PLACEMENTS_N;
    const target = names[k % MEMBERS_N]!;
    const drain = 100 + k;
    const member = members.get(`fleet/${target}`)!;
    let appliedAt = 0;
    member.onApply = (object) => {
      const values = (object.spec as { helm?: { values?: { mco?: { desiredMaxReplicas?: number } } } }).helm?.values;
      if (object.metadata.name === `web-${i}` && values?.mco?.desiredMaxReplicas === drain)
        appliedAt = performance.now();
    };
    const t0 = performance.now();
    await setStatus(
      i,
      names.map((n) => cluster(n, n === target ? drain : undefined)),
    );
    await until('applied', () => appliedAt > 0, 60_000);
    latencies.push(appliedAt - t0);
    member.onApply = undefined;
  }
  await delivery.stop();
  const condition = (await custom.getNamespacedCustomObject({ ...PLACEMENTS, namespace: 'fleet', name: 'web-0' })) as {
    status?: { conditions?: { type: string; reason?: string }[] };
  };

  const rows: [string, string][] = [
    ['placements × members', `${PLACEMENTS_N} × ${MEMBERS_N} (2 objects each: RepoSync + RoleBinding)`],
    ['member request latency (fake)', `${MEMBER_LATENCY_MS} ms`],
    ['first pass: all sync objects applied', `${(firstPassMs / 1000).toFixed(2)} s`],
    ['first pass: member writes / hub writes', `${firstMemberWrites} / ${firstHubWrites}`],
    [`no-op resync of ${PLACEMENTS_N} placements: duration`, `${(resyncMs / 1000).toFixed(2)} s`],
    ['no-op resync: member writes / hub writes', `${resync.member} / ${resync.hub}`],
    [`status change → applied on the member (${CHANGES} changes): p50`, ms(quantile(latencies, 0.5))],
    ['status change → applied: p99', ms(quantile(latencies, 0.99))],
    ['condition on web-0', String(condition.status?.conditions?.find((c) => c.type === CONDITION_TYPE)?.reason)],
    ['load average (1 min)', loadavg()[0]!.toFixed(1)],
  ];
  for (const [name, value] of rows) console.log(`${name.padEnd(64)} ${value}`);
} finally {
  await cp.stop();
}

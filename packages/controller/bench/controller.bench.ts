// The controller against a real kube-apiserver: N ClusterProfiles x M
// placements (default 1,000 x 1,000). Prints figures; asserts nothing.
//
//   npm run bench -w @mco/controller   (BENCH_PROFILES, BENCH_PLACEMENTS, BENCH_LABEL_CHANGES resize it)
//
// The controller runs in a child process (controller-process.ts, bundled with
// tsup and run by plain node, as in production) so that its RSS and event
// loop are its own; this process makes the fleet and observes the statuses
// through a watch of its own. BENCH_NODE_OPTIONS passes V8 flags to it.
//
// The API server runs with API Priority and Fairness and the chart's FlowSchema
// and PriorityLevelConfiguration, as a hub with the chart does, and without the
// watch cache's periodic consistency check (see startHub below). Its write
// ceiling (the floor's denominator) is measured with no controller running,
// after the cold start and again after the label changes: as many loops as the
// controller's workers x replicas, as the controller's account, PUT the statuses
// a label change writes (those of region-and-tier placements), in windows of
// BENCH_CEILING_SECONDS until the last three agree within 10%. The last line
// is the run's row: floor, p50/p99 and p99 / floor to the status write answered (and to the
// benchmark's watch showing it), start-up / its floor, restart (to every shard Lease
// held and the first changed status written, and to every placement reconciled),
// peak RSS per replica, cores.
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import https from 'node:https';
import { availableParallelism, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  CLUSTER_PROFILES,
  createListWatch,
  Informer,
  KubeClient,
  loadKubeConfig,
  objectKey,
  objectPath,
  PLACEMENTS,
  resourcePath,
  type KubeObject,
  type Lease,
} from '@mco/kube-runtime';
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import { summarize } from '@mco/testkit';
import type { DecisionTrace, ReconcileTrace } from '../src/index.js';
import { Fleet, renderChart, startHub } from '../test/support.js';
import { controlPlaneCpu, requestCounts, requestDelta, stealMs } from './control-plane-cpu.js';
import { REPLICAS, SHARD_LEASES, SHARDS, startReplicas } from './replicas.js';
import { shardLeaseName } from '../src/shards.js';

const PROFILES = Number(process.env.BENCH_PROFILES ?? 1000);
const PLACEMENT_COUNT = Number(process.env.BENCH_PLACEMENTS ?? 1000);
const LABEL_CHANGES = Number(process.env.BENCH_LABEL_CHANGES ?? 20);
/** The controller's workers (the chart's default); the write-ceiling loops are as many, times the replicas. */
const WORKERS = Number(process.env.BENCH_WORKERS ?? 4);
const CEILING_SECONDS = Number(process.env.BENCH_CEILING_SECONDS ?? 5);
/** A ceiling's windows: until the last three agree within CEILING_AGREEMENT, at most CEILING_WINDOWS. */
const CEILING_AGREEMENT = 0.1;
const CEILING_WINDOWS = 12;
/** Region-and-tier placements the ceiling writes (their statuses are restored after). */
const CEILING_PLACEMENTS = 200;
const NAMESPACES = 10;
const REGIONS = 10;
const TIERS = 3;

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const ms = (n: number) => `${n.toFixed(0)} ms`;
const s1 = (milliseconds: number) => `${(milliseconds / 1000).toFixed(1)} s`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function pool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

const placementName = (i: number) => `p-${String(i).padStart(4, '0')}`;
const placementKey = (i: number) => `apps-${i % NAMESPACES}/${placementName(i)}`;

/** 2/5 every cluster of a region and tier, 2/5 autoscaling (2 clusters) over a region, 1/5 a v0.1 regex rule. */
function spec(i: number): object {
  const label = (key: string, values: string[]) => ({ labelSelector: { key, operator: 'In', values } });
  const affinity = (exprs: object[]) => ({
    affinity: {
      clusterAffinity: {
        requiredDuringSchedulingRequiredDuringExecution: { clusterSelectorTerms: [{ matchExpressions: exprs }] },
      },
    },
  });
  switch (i % 5) {
    case 0:
    case 1:
      return affinity([label('region', [`r${i % REGIONS}`]), label('tier', [`t${i % TIERS}`])]);
    case 2:
    case 3:
      return {
        ...affinity([label('region', [`r${i % REGIONS}`])]),
        scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 2 } },
      };
    default:
      return {
        clusterSelectorRules: [
          { type: 'cluster-name-regex', arguments: { regex: `c-\\d\\d${i % 10}${(i >> 1) % 10}$` } },
        ],
      };
  }
}

interface Stats {
  cpuMs: number;
  idleRss: number;
  peakRss: number;
  atPeak: { heapTotal: number; external: number };
  rss: number;
  heapUsed: number;
  synced: boolean;
  queue: number;
  /** PlacementDecision writes and Events waiting in the lower-priority lane. */
  deferred: number;
  reconciles: number;
  errors: number;
  conflicts: number;
  statusWrites: number;
  decisionWrites: number;
  events: number;
  eventsDropped: number;
}

const OUT_DIR = fileURLToPath(new URL('../node_modules/.cache/mco-bench/', import.meta.url));

/** Bundles controller-process.ts (the @mco packages from source; node_modules stay external). */
async function buildControllerProcess(): Promise<string> {
  const { build } = await import('tsup');
  await build({
    entry: { 'controller-process': fileURLToPath(new URL('./controller-process.ts', import.meta.url)) },
    outDir: OUT_DIR,
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    noExternal: [/^@mco\//],
    // Every other package stays external, also those only the @mco packages depend on (yaml), as in the app.
    skipNodeModulesBundle: true,
    esbuildOptions: (options) => void (options.conditions = ['@mco/source']),
    silent: true,
    clean: true,
  });
  return `${OUT_DIR}controller-process.js`;
}

/** The controller process and a typed request/answer over IPC. */
function startControllerProcess(
  script: string,
  kubeconfig: string,
  env: Record<string, string> = {},
): Promise<{ call<T>(command: string): Promise<T>; child: ChildProcess }> {
  const child = fork(script, {
    execArgv: ['--expose-gc', ...(process.env.BENCH_NODE_OPTIONS ?? '').split(' ').filter(Boolean)],
    env: { ...process.env, ...env, BENCH_KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map<number, (value: unknown) => void>();
  let next = 1;
  let stopped = false;
  // A controller that dies (say, out of heap under BENCH_NODE_OPTIONS) ends the benchmark instead of hanging it.
  child.once('exit', (code, signal) => {
    if (stopped) return;
    console.error(`the controller process exited (${signal ?? `code ${code}`}) before the benchmark stopped it`);
    process.exit(1);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (m: { id: number; value: unknown }) => {
      if (m.id === 0) {
        resolve({
          child,
          call: <T>(command: string) =>
            new Promise<T>((done) => {
              if (command === 'stop') stopped = true;
              const id = next++;
              waiting.set(id, done as (value: unknown) => void);
              child.send({ id, command });
            }),
        });
      } else {
        waiting.get(m.id)?.(m.value);
        waiting.delete(m.id);
      }
    });
  });
}

const isDecided = (p: KubeObject | undefined) =>
  p !== undefined &&
  (p.status as { observedGeneration?: number } | undefined)?.observedGeneration === p.metadata?.generation;

/**
 * One window of the API server's write ceiling: `concurrency` loops that do
 * nothing but the controller's status write (PUT to /status with the
 * resourceVersion, the same objects), each changing one condition message so
 * that every write reaches etcd. `latest` holds each object as last written.
 */
async function writeCeiling(
  client: KubeClient,
  latest: Map<string, KubeObject>,
  concurrency: number,
  seconds: number,
): Promise<{ writes: number; errors: number; perSecond: number; latency: number[] }> {
  const keys = [...latest.keys()];
  const latency: number[] = [];
  let writes = 0;
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const key = keys[next++ % keys.length]!;
        const placement = latest.get(key)!;
        const status = placement.status as { conditions?: { message?: string }[] };
        const conditions = (status.conditions ?? []).map((c, i) => (i === 0 ? { ...c, message: `probe ${next}` } : c));
        const sent = performance.now();
        try {
          latest.set(
            key,
            await client.replace(statusPath(placement), { ...placement, status: { ...status, conditions } }),
          );
          latency.push(performance.now() - sent);
          writes++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { writes, errors, perSecond: writes / ((performance.now() - started) / 1000), latency };
}

/** BENCH_APISERVER_PROFILE=seconds: a Go CPU profile of the API server from the label changes' start, to `file`. */
async function profileApiserver(kc: KubeConfig, seconds: number, file: string): Promise<void> {
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const url = new URL(`${kc.getCurrentCluster()!.server}/debug/pprof/profile?seconds=${seconds}`);
  const body = await new Promise<Buffer>((resolve, reject) =>
    https
      .get(url, options, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`API server profile: HTTP ${res.statusCode}`));
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
        res.on('error', reject);
      })
      .on('error', reject),
  );
  writeFileSync(file, body);
  console.log(`  API server CPU profile (${seconds} s from the first change): ${file}, ${body.length} bytes`);
}

const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;

const statusPath = (p: KubeObject) => `${objectPath(PLACEMENTS, p.metadata!.namespace!, p.metadata!.name!)}/status`;

interface Ceiling {
  perSecond: number;
  windows: number[];
  steady: boolean;
}

/** When (performance.now()) every shard's Lease is held by a replica that took it after `sinceWall` (epoch ms). */
async function shardLeasesHeld(client: KubeClient, sinceWall: number): Promise<number> {
  const path = (i: number) =>
    `/apis/coordination.k8s.io/v1/namespaces/${SHARD_LEASES.namespace}/leases/${shardLeaseName(SHARD_LEASES.name, i)}`;
  for (;;) {
    const leases = await Promise.all(
      Array.from({ length: SHARDS }, (_, i) => client.get<Lease>(path(i)).catch(() => undefined)),
    );
    const held = leases.every(
      (l) => l?.spec?.holderIdentity && Date.parse(l.spec.acquireTime ?? '') >= sinceWall - 1_000,
    );
    if (held) return performance.now();
    await sleep(100);
  }
}

/**
 * The ceiling for the statuses of `placements`, in windows until the last three
 * agree within CEILING_AGREEMENT; then their statuses are put back as they were
 * (so that a controller started after finds nothing to change).
 */
async function steadyCeiling(client: KubeClient, placements: readonly KubeObject[], concurrency: number) {
  const latest = new Map(placements.map((p) => [objectKey(p), p]));
  const windows: number[] = [];
  const latency: number[] = [];
  let errors = 0;
  let steady = false;
  const stolen: number[] = [];
  while (!steady && windows.length < CEILING_WINDOWS) {
    const stealBefore = stealMs();
    const window = await writeCeiling(client, latest, concurrency, CEILING_SECONDS);
    stolen.push(stealMs() - stealBefore);
    windows.push(window.perSecond);
    latency.push(...window.latency);
    errors += window.errors;
    const last = windows.slice(-3);
    steady = last.length === 3 && Math.max(...last) <= Math.min(...last) * (1 + CEILING_AGREEMENT);
  }
  for (const original of placements) {
    const current = latest.get(objectKey(original))!;
    await client.replace(statusPath(current), { ...current, status: original.status });
  }
  const last = windows.slice(-3);
  const ceiling: Ceiling = { perSecond: last.reduce((a, b) => a + b, 0) / last.length, windows, steady };
  const at = summarize('ceiling write latency', latency);
  console.log(
    `  ${windows.map((w) => w.toFixed(0)).join(', ')} writes/s in ${CEILING_SECONDS} s windows: ${ceiling.perSecond.toFixed(0)}/s${steady ? '' : ` (NOT STEADY: the last three differ by more than ${CEILING_AGREEMENT * 100}%)`} (${errors} errors; latency p50 ${ms(at.p50)}, p99 ${ms(at.p99)}); CPU stolen by the host per window: ${stolen.map((m) => `${(m / 1000).toFixed(1)} s`).join(', ')}; load average ${load()}`,
  );
  return ceiling;
}

async function main() {
  console.log(
    `controller benchmark: ${PROFILES} ClusterProfiles x ${PLACEMENT_COUNT} placements, ${WORKERS} workers${REPLICAS > 1 ? `, ${REPLICAS} replicas (memory figures: the largest replica)` : ''}; load average ${load()}`,
  );
  const setupStart = performance.now();
  const hub = await startHub({
    extraApiserverFlags: [
      '--enable-priority-and-fairness=true',
      // The watch cache's consistency checker (on by default since Kubernetes 1.34) lists every object of a
      // resource from etcd every 5-7.5 minutes: at 10,000 x 10,000 the checks took 15 s of the API server's
      // CPU in one profiled minute. Whether one lands in a ceiling window or in a change is chance, and it made
      // runs differ more than anything the controller does; BENCH_CACHE_CHECKS=1 keeps it (docs/performance.md).
      ...(process.env.BENCH_CACHE_CHECKS ? [] : ['--feature-gates=DetectCacheInconsistency=false']),
      ...(process.env.BENCH_APISERVER_PROFILE ? ['--profiling=true'] : []),
    ],
  });
  await hub.plane.hub.apply(
    renderChart().filter((o) => o.kind === 'FlowSchema' || o.kind === 'PriorityLevelConfiguration'),
  );
  const fleet = new Fleet(hub);
  // mco's client (one keep-alive agent) makes the fleet: client-node opens a TLS connection per request.
  const admin = kubeClientFromKubeConfig(hub.admin);
  const watcher = new Informer<KubeObject>({ name: 'bench', listWatch: createListWatch(admin, PLACEMENTS) });
  const planeCpu = controlPlaneCpu(hub.admin.getCurrentCluster()!.server);
  try {
    for (let n = 0; n < NAMESPACES; n++) {
      await fleet.namespace(`fleet-${n}`);
      await fleet.namespace(`apps-${n}`);
    }
    const profiles = Array.from({ length: PROFILES }, (_, i) => ({
      namespace: `fleet-${i % NAMESPACES}`,
      name: `c-${String(i).padStart(4, '0')}`,
      labels: { region: `r${i % REGIONS}`, tier: `t${i % TIERS}` },
    }));
    await pool(profiles, 16, (p) =>
      admin.create(resourcePath(CLUSTER_PROFILES, p.namespace), {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name: p.name, namespace: p.namespace, labels: p.labels },
        spec: { displayName: p.name, clusterManager: { name: 'bench' } },
      }),
    );
    await pool(
      Array.from({ length: PLACEMENT_COUNT }, (_, i) => i),
      16,
      (i) =>
        admin.create(resourcePath(PLACEMENTS, `apps-${i % NAMESPACES}`), {
          apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
          kind: 'MultiKubernetesClusterPlacement',
          metadata: { name: placementName(i), namespace: `apps-${i % NAMESPACES}` },
          spec: spec(i),
        }),
    );
    watcher.start();
    await watcher.waitForSync();
    console.log(`setup (control plane, ${PROFILES + PLACEMENT_COUNT} objects): ${ms(performance.now() - setupStart)}`);
    const script = await buildControllerProcess();
    const kubeconfig = `${OUT_DIR}kubeconfig.json`;
    writeFileSync(kubeconfig, hub.controllerKubeConfig().exportConfig(), { mode: 0o600 });

    // 1. Cold start to every placement decided (status and PlacementDecisions written).
    const started = performance.now();
    const planeAtStart = planeCpu();
    let first = await startReplicas((env) => startControllerProcess(script, kubeconfig, env));
    let stats = await first.call<Stats>('stats');
    while (!stats.synced) stats = await first.call<Stats>('stats');
    const syncedMs = performance.now() - started;
    const decided = () =>
      Array.from({ length: PLACEMENT_COUNT }, (_, i) => i).filter((i) => isDecided(watcher.get(placementKey(i))))
        .length;
    while (decided() < PLACEMENT_COUNT) await sleep(200);
    const decidedMs = performance.now() - started;
    stats = await first.call<Stats>('stats');
    while (stats.decisionWrites < PLACEMENT_COUNT || stats.queue > 0 || stats.deferred > 0) {
      await sleep(100);
      stats = await first.call<Stats>('stats');
    }
    const allWrittenMs = performance.now() - started;
    const planeAtDecided = planeCpu();
    const coldWrites = stats.statusWrites + stats.decisionWrites + stats.events;
    const coldRate = coldWrites / ((allWrittenMs - syncedMs) / 1000);
    console.log(
      `start -> caches synced ${ms(syncedMs)}; every status written ${ms(decidedMs)}; every PlacementDecision too ${ms(allWrittenMs)}`,
    );
    console.log(
      `  ${stats.statusWrites} status and ${stats.decisionWrites} PlacementDecision writes, ${stats.events} Events (${stats.eventsDropped} dropped), ${stats.errors} errors, ${stats.conflicts} conflicts`,
    );
    console.log(
      `  ${coldRate.toFixed(0)} writes/s after the sync; CPU: controller ${s1(stats.cpuMs)}, kube-apiserver ${s1(planeAtDecided.apiserver - planeAtStart.apiserver)}, etcd ${s1(planeAtDecided.etcd - planeAtStart.etcd)} (wall ${s1(allWrittenMs)})`,
    );

    const coldPeakRss = stats.peakRss;
    await first.call('stop');
    first.child.kill();

    // 2. The API server's write ceiling, with no controller running: the statuses a label change writes.
    const client = new KubeClient(loadKubeConfig({ path: kubeconfig }));
    const concurrency = WORKERS * REPLICAS;
    const moving = Array.from({ length: PLACEMENT_COUNT }, (_, i) => i)
      .filter((i) => i % 5 <= 1)
      .slice(0, CEILING_PLACEMENTS)
      .map((i) => watcher.get(placementKey(i))!);
    console.log(
      `API server write ceiling before the label changes (${concurrency} concurrent status PUTs as the controller's account, ${moving.length} region-and-tier statuses of ${(JSON.stringify(moving[0]?.status).length / 1024).toFixed(1)} KB):`,
    );
    const ceilingBefore = await steadyCeiling(client, moving, concurrency);

    let onPlacement: ((key: string) => void) | undefined;
    watcher.addHandler((_event, object) => onPlacement?.(objectKey(object)));
    /** Moves a profile to the next tier: the placements that must follow, and whether each then lists it. */
    const nextTier = (p: (typeof profiles)[number]) => {
      const next = `t${(Number(p.labels.tier.slice(1)) + 1) % TIERS}`;
      const expected = new Map<string, boolean>();
      for (let i = 0; i < PLACEMENT_COUNT; i++) {
        if (i % 5 > 1 || `r${i % REGIONS}` !== p.labels.region) continue;
        const tier = `t${i % TIERS}`;
        if (tier === p.labels.tier || tier === next) expected.set(placementKey(i), tier === next);
      }
      return { next, expected };
    };
    /** Whether a placement's status lists the profile as `expected` says (undefined: not one that moves). */
    const follows = (placement: string, profile: string, expected: Map<string, boolean>) => {
      const listed = expected.get(placement);
      if (listed === undefined) return false;
      const clusters =
        (watcher.get(placement)?.status as { clusters?: { namespace?: string; name: string }[] })?.clusters ?? [];
      return clusters.some((c) => `${c.namespace}/${c.name}` === profile) === listed;
    };

    // 3. Restart (the ceiling put every status back as it was), with one ClusterProfile moved to the next
    //    tier while no controller ran: from start to every shard Lease held and the first changed status
    //    written (the restart the scale issue measures), and on to every placement reconciled; no
    //    unchanged status may be written.
    const downChange = profiles.find((p) => nextTier(p).expected.size > 0)!;
    const downKey = `${downChange.namespace}/${downChange.name}`;
    const { next: downTier, expected: downMoves } = nextTier(downChange);
    await admin.patch(objectPath(CLUSTER_PROFILES, downChange.namespace, downChange.name), 'merge', {
      metadata: { labels: { tier: downTier } },
    });
    downChange.labels.tier = downTier;
    const restartAt = performance.now();
    const restartWall = Date.now();
    let firstChangedMs: number | undefined;
    let allChangedMs: number | undefined;
    const downPending = new Set(downMoves.keys());
    onPlacement = (key) => {
      if (!downPending.has(key) || !follows(key, downKey, downMoves)) return;
      downPending.delete(key);
      firstChangedMs ??= performance.now() - restartAt;
      if (downPending.size === 0) allChangedMs = performance.now() - restartAt;
    };
    first = await startReplicas((env) => startControllerProcess(script, kubeconfig, env));
    const leasesMs = REPLICAS > 1 ? (await shardLeasesHeld(admin, restartWall)) - restartAt : undefined;
    stats = await first.call<Stats>('stats');
    while (!stats.synced || stats.reconciles < PLACEMENT_COUNT || stats.queue > 0 || stats.deferred > 0) {
      await sleep(100);
      stats = await first.call<Stats>('stats');
    }
    const restartMs = performance.now() - restartAt;
    await sleep(1000);
    stats = await first.call<Stats>('stats');
    onPlacement = undefined;
    const operationalMs = Math.max(leasesMs ?? 0, firstChangedMs ?? Infinity);
    console.log(
      `restart, ${downKey} moved to ${downTier} while down (${downMoves.size} placements to change): ${leasesMs === undefined ? '' : `every shard Lease held after ${ms(leasesMs)}, `}first changed status after ${firstChangedMs === undefined ? 'never' : ms(firstChangedMs)}, all ${downMoves.size} after ${allChangedMs === undefined ? 'never' : ms(allChangedMs)}; every placement reconciled after ${ms(restartMs)}; writes ${stats.statusWrites} status (${stats.statusWrites - downMoves.size} unchanged), ${stats.decisionWrites} PlacementDecision, ${stats.events} Events; ${stats.reconciles} reconciles (${stats.conflicts} conflicts); peak RSS ${mib(stats.peakRss)}`,
    );

    // 4. Event-to-status latency: one ClusterProfile changes tier; each
    //    placement selecting its region and old or new tier must follow.
    const latencies: number[] = [];
    // How many placements each change must move (the profile's region decides: not every region has
    // region-and-tier placements), so that the latency percentiles can be read against it.
    const touched: number[] = [];
    /** When each change was sent (epoch ms, the clock the controller's traces use). */
    const sentAt: number[] = [];
    /** Each placement that followed a change: which change, and when the watch saw it (epoch ms). */
    const followedAt: { change: number; key: string; seen: number }[] = [];
    const labelStart = performance.now();
    const metricsText = async (path: string) => (await hub.plane.hub.request(path)).body;
    const before = {
      stats,
      plane: planeCpu(),
      requests: await requestCounts(metricsText),
      own: process.cpuUsage(),
      steal: stealMs(),
    };
    await first.call('trace');
    const apiserverProfile = process.env.BENCH_APISERVER_PROFILE
      ? profileApiserver(hub.admin, Number(process.env.BENCH_APISERVER_PROFILE), '/tmp/apiserver-label.pprof').catch(
          (error: Error) => console.log(`  API server CPU profile failed: ${error.message}`),
        )
      : undefined;
    for (let k = 0; k < LABEL_CHANGES; k++) {
      const p = profiles[(k * 37) % PROFILES]!;
      const key = `${p.namespace}/${p.name}`;
      const { next, expected } = nextTier(p);
      touched.push(expected.size);
      const sent = performance.now();
      sentAt.push(Date.now());
      await admin.patch(objectPath(CLUSTER_PROFILES, p.namespace, p.name), 'merge', {
        metadata: { labels: { tier: next } },
      });
      p.labels.tier = next;
      // Checked as each update arrives (no polling: the benchmark's CPU is the controller's and the API server's too).
      const pending = new Map(expected);
      const followed = (placement: string) => {
        if (!follows(placement, key, pending)) return;
        latencies.push(performance.now() - sent);
        followedAt.push({ change: k, key: placement, seen: Date.now() });
        pending.delete(placement);
        if (pending.size === 0) allFollowed();
      };
      let allFollowed = () => {};
      const done = new Promise<void>((resolve) => (allFollowed = resolve));
      onPlacement = followed;
      for (const placement of expected.keys()) followed(placement);
      if (expected.size === 0) allFollowed();
      await done;
      onPlacement = undefined;
      await sleep(200);
    }
    // The PlacementDecisions of the last change follow its statuses: wait for them before counting.
    for (stats = await first.call<Stats>('stats'); stats.queue > 0 || stats.deferred > 0;) {
      await sleep(100);
      stats = await first.call<Stats>('stats');
    }
    const traces = await first.call<(ReconcileTrace & { doneAt: number })[]>('traces');
    const lags = await first.call<DecisionTrace[]>('lags');
    const labelMs = performance.now() - labelStart;
    stats = await first.call<Stats>('stats');
    const planeAfter = planeCpu();
    const requestsAfter = await requestCounts(metricsText);
    await apiserverProfile;
    const labelWrites =
      stats.statusWrites +
      stats.decisionWrites +
      stats.events -
      (before.stats.statusWrites + before.stats.decisionWrites + before.stats.events);
    const statusDelta = stats.statusWrites - before.stats.statusWrites;
    console.log(
      `  requests the API server answered over the label changes: ${requestDelta(before.requests, requestsAfter)}`,
    );
    const change = summarize('label change -> status', latencies);
    console.log(
      `ClusterProfile label change -> placement status (${latencies.length} updates, ${LABEL_CHANGES} changes): p50 ${ms(change.p50)}, p99 ${ms(change.p99)}, max ${ms(change.max)}`,
    );
    const bySize = new Map<number, number>();
    for (const n of touched) bySize.set(n, (bySize.get(n) ?? 0) + 1);
    const sizes = [...bySize].sort(([a], [b]) => a - b).map(([n, count]) => `${count} x ${n}`);
    const share = (latencies.length / LABEL_CHANGES / PLACEMENT_COUNT) * 100;
    console.log(
      `  placements each change moves: ${sizes.join(', ')} (${share.toFixed(1)}% of the placements on average)`,
    );
    console.log(
      `  over those ${s1(labelMs)}: ${labelWrites} writes (${(labelWrites / (labelMs / 1000)).toFixed(0)}/s); CPU: controller ${s1(stats.cpuMs - before.stats.cpuMs)}, kube-apiserver ${s1(planeAfter.apiserver - before.plane.apiserver)}, etcd ${s1(planeAfter.etcd - before.plane.etcd)}, this benchmark ${s1(cpuMs(process.cpuUsage(before.own)))}; stolen by the host ${s1(stealMs() - before.steal)}`,
    );
    console.log(
      `  per status written (${statusDelta}): ${((stats.decisionWrites - before.stats.decisionWrites) / statusDelta).toFixed(2)} PlacementDecision writes, ${((stats.events - before.stats.events) / statusDelta).toFixed(2)} Events`,
    );
    if (lags.length > 0) {
      const lag = summarize(
        'status -> PlacementDecision',
        lags.map((l) => l.lagMs),
      );
      console.log(
        `  status -> PlacementDecision lag (${lags.length} placements): p50 ${ms(lag.p50)}, p99 ${ms(lag.p99)}, max ${ms(lag.max)}`,
      );
    }
    if (traces.length > 0) {
      const part = (name: string, pick: (t: ReconcileTrace) => number) => {
        const f = summarize(name, traces.map(pick));
        return `${name} p50 ${ms(f.p50)} / p99 ${ms(f.p99)}`;
      };
      const high = traces.filter((t) => t.priority === 0).length;
      console.log(
        `  per status written (${traces.length}, ${high} at high priority): ${part('queue wait', (t) => t.queueWaitMs)}; ${part('evaluate', (t) => t.evaluateMs)}; ${part('write', (t) => t.writeMs)}`,
      );
      // The part of a change's latency before its placements were queued: the change's own write and
      // watch event, and finding the placements it affects.
      const queuedAfter = sentAt.flatMap((at, k) => {
        const queued = traces
          .map((t) => t.doneAt - t.writeMs - t.evaluateMs - t.queueWaitMs)
          .filter((q) => q >= at && q < (sentAt[k + 1] ?? Infinity));
        return queued.length > 0 ? [Math.min(...queued) - at] : [];
      });
      if (queuedAfter.length > 0) {
        const f = summarize('change -> queued', queuedAfter);
        console.log(
          `  label change -> its first placement queued (${queuedAfter.length} changes): p50 ${ms(f.p50)}, max ${ms(f.max)}`,
        );
      }
      // And after: from the controller's write answered to the benchmark's watch showing it.
      const seenAt = new Map<string, number[]>();
      for (const f of followedAt) seenAt.set(f.key, [...(seenAt.get(f.key) ?? []), f.seen]);
      const shown = traces.flatMap((t) => {
        const at = seenAt.get(t.key)?.find((seen) => seen >= t.doneAt - 50);
        return at === undefined ? [] : [Math.max(0, at - t.doneAt)];
      });
      if (shown.length > 0) {
        const f = summarize('written -> seen', shown);
        console.log(
          `  status written -> seen by the benchmark's watch (${shown.length}): p50 ${ms(f.p50)}, p99 ${ms(f.p99)}, max ${ms(f.max)}`,
        );
      }
    }

    // The floor counts status writes the API server answered, so a change's latency is also taken to
    // the answer to the write that its placement's watched status came from (the controller's trace);
    // the watch shows it later (the line above), by how far the API server's watch cache lags.
    const doneAt = new Map<string, number[]>();
    for (const t of [...traces].sort((a, b) => a.doneAt - b.doneAt))
      doneAt.set(t.key, [...(doneAt.get(t.key) ?? []), t.doneAt]);
    const writtenLatencies: number[] = [];
    const lastWritten = new Map<number, number>();
    let untraced = 0;
    for (const f of followedAt) {
      const from = sentAt[f.change]!;
      const answered = doneAt
        .get(f.key)
        ?.filter((at) => at >= from && at <= f.seen + 50)
        .pop();
      if (answered === undefined) untraced++;
      const latency = Math.min(answered ?? f.seen, f.seen) - from;
      writtenLatencies.push(latency);
      lastWritten.set(f.change, Math.max(lastWritten.get(f.change) ?? 0, latency));
    }
    const written = summarize('label change -> status written', writtenLatencies);
    console.log(
      `ClusterProfile label change -> status write answered (${writtenLatencies.length} updates${untraced > 0 ? `, ${untraced} without a trace: counted when seen` : ''}): p50 ${ms(written.p50)}, p99 ${ms(written.p99)}, max ${ms(written.max)}`,
    );

    // 5. Full resync with nothing to change.
    const resync = await first.call<{
      ms: number;
      placements: number;
      writes: number;
      p50: number;
      p99: number;
      max: number;
    }>('resync');
    console.log(
      `full resync of ${resync.placements} placements: ${ms(resync.ms)}, ${resync.writes} writes; event-loop delay p50 ${resync.p50.toFixed(1)} ms, p99 ${resync.p99.toFixed(1)} ms, max ${resync.max.toFixed(1)} ms (1 ms sampling)`,
    );
    stats = await first.call<Stats>('stats');
    const memory = await first.call<{ liveHeap?: number; rss: number }>('memory');
    console.log(
      `controller RSS: ${mib(stats.idleRss)} before start (modules loaded), peak ${mib(stats.peakRss)} (V8 heap committed ${mib(stats.atPeak.heapTotal)}, external ${mib(stats.atPeak.external)}), now ${mib(stats.rss)} (heap used ${mib(stats.heapUsed)})`,
    );
    if (memory.liveHeap !== undefined)
      console.log(`  after a full GC: heap used ${mib(memory.liveHeap)} (the live set), RSS ${mib(memory.rss)}`);
    const peakRss = Math.max(coldPeakRss, stats.peakRss);
    await first.call('stop');
    first.child.kill();

    // 6. The ceiling again, after the label changes; the run's ceiling is the mean of the two.
    console.log('API server write ceiling after the label changes:');
    const ceilingAfter = await steadyCeiling(
      client,
      moving.map((p) => watcher.get(objectKey(p))!),
      concurrency,
    );
    client.close();
    const ceiling = (ceilingBefore.perSecond + ceilingAfter.perSecond) / 2;
    const moved = Math.max(...touched);
    const floorMs = (moved / ceiling) * 1000;
    const startupFloorMs = (PLACEMENT_COUNT / ceiling) * 1000;
    // A change whose last status came sooner than its own floor was written faster than the ceiling: the ceiling is wrong.
    const faster = [...lastWritten].filter(
      ([k, last]) => touched[k]! > 0 && last < (touched[k]! / ceiling) * 1000,
    ).length;
    const flags = [
      ...(ceilingBefore.steady && ceilingAfter.steady ? [] : ['ceiling not steady']),
      ...(Math.abs(ceilingBefore.perSecond - ceilingAfter.perSecond) > CEILING_AGREEMENT * ceiling
        ? [`ceiling moved ${ceilingBefore.perSecond.toFixed(0)} -> ${ceilingAfter.perSecond.toFixed(0)}/s`]
        : []),
      ...(faster > 0
        ? [`${faster} of ${touched.filter((n) => n > 0).length} changes written faster than the ceiling: NOT COUNTED`]
        : []),
    ];
    console.log(
      `  ceiling ${ceiling.toFixed(0)} writes/s (before ${ceilingBefore.perSecond.toFixed(0)}, after ${ceilingAfter.perSecond.toFixed(0)}); mco's write rate as a share of it: cold start ${((coldRate / ceiling) * 100).toFixed(0)}%, label changes ${((labelWrites / (labelMs / 1000) / ceiling) * 100).toFixed(0)}%`,
    );
    console.log(
      '| fleet | replicas x workers | ceiling (before / after) | floor | p50 / p99 written (seen) | p99 / floor written (seen) | start-up / (placements / ceiling) | restart: Leases held and first change / all reconciled | peak RSS per replica | cores (load average) | flags |',
    );
    console.log(
      `| ${PROFILES} x ${PLACEMENT_COUNT} | ${REPLICAS} x ${WORKERS} | ${ceiling.toFixed(0)}/s (${ceilingBefore.perSecond.toFixed(0)} / ${ceilingAfter.perSecond.toFixed(0)}) | ${s1(floorMs)} (${moved} / ${ceiling.toFixed(0)}) | ${s1(written.p50)} / ${s1(written.p99)} (${s1(change.p50)} / ${s1(change.p99)}) | ${(written.p99 / floorMs).toFixed(2)} (${(change.p99 / floorMs).toFixed(2)}) | ${s1(decidedMs)} / ${s1(startupFloorMs)} = ${(decidedMs / startupFloorMs).toFixed(2)} | ${s1(operationalMs)} / ${s1(restartMs)} | ${mib(peakRss)} | ${availableParallelism()} (${load()}) | ${flags.join('; ') || 'none'} |`,
    );
    console.log(`load average at the end: ${load()}`);
  } finally {
    await watcher.stop();
    admin.close();
    await hub.stop();
  }
}

await main();

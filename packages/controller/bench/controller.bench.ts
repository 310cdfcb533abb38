// The controller against a real kube-apiserver: N ClusterProfiles x M
// placements (default 1,000 x 1,000). Prints figures; asserts nothing.
//
//   npm run bench -w @mco/controller   (BENCH_PROFILES, BENCH_PLACEMENTS, BENCH_LABEL_CHANGES resize it)
//
// The controller runs in a child process (controller-process.ts, bundled with
// tsup and run by plain node, as in production) so that its RSS and event
// loop are its own; this process makes the fleet and observes the statuses
// through a watch of its own. BENCH_NODE_OPTIONS passes V8 flags to it.
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createListWatch, Informer, PLACEMENTS, type KubeObject } from '@mco/kube-runtime';
import { kubeClientFromKubeConfig } from '@mco/kube-runtime/client-node';
import { Fleet, startHub } from '../test/support.js';
import { REPLICAS, startReplicas } from './replicas.js';

const PROFILES = Number(process.env.BENCH_PROFILES ?? 1000);
const PLACEMENT_COUNT = Number(process.env.BENCH_PLACEMENTS ?? 1000);
const LABEL_CHANGES = Number(process.env.BENCH_LABEL_CHANGES ?? 20);
const NAMESPACES = 10;
const REGIONS = 10;
const TIERS = 3;

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const ms = (n: number) => `${n.toFixed(0)} ms`;
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * values.length) - 1)] ?? NaN;

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
  idleRss: number;
  peakRss: number;
  atPeak: { heapTotal: number; external: number };
  rss: number;
  heapUsed: number;
  synced: boolean;
  queue: number;
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

async function main() {
  console.log(
    `controller benchmark: ${PROFILES} ClusterProfiles x ${PLACEMENT_COUNT} placements${REPLICAS > 1 ? `, ${REPLICAS} replicas (memory figures: the largest replica)` : ''}`,
  );
  const setupStart = performance.now();
  const hub = await startHub();
  const fleet = new Fleet(hub);
  const watcher = new Informer<KubeObject>({
    name: 'bench',
    listWatch: createListWatch(kubeClientFromKubeConfig(hub.admin), PLACEMENTS),
  });
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
    await pool(profiles, 16, (p) => fleet.createProfile(p.namespace, p.name, p.labels));
    await pool(
      Array.from({ length: PLACEMENT_COUNT }, (_, i) => i),
      16,
      (i) => fleet.createPlacement(`apps-${i % NAMESPACES}`, placementName(i), spec(i)),
    );
    watcher.start();
    await watcher.waitForSync();
    console.log(`setup (control plane, ${PROFILES + PLACEMENT_COUNT} objects): ${ms(performance.now() - setupStart)}`);
    const script = await buildControllerProcess();
    const kubeconfig = `${OUT_DIR}kubeconfig.json`;
    writeFileSync(kubeconfig, hub.controllerKubeConfig().exportConfig(), { mode: 0o600 });

    // 1. Cold start to every placement decided (status and PlacementDecisions written).
    const started = performance.now();
    const first = await startReplicas((env) => startControllerProcess(script, kubeconfig, env));
    let stats = await first.call<Stats>('stats');
    while (!stats.synced) stats = await first.call<Stats>('stats');
    const syncedMs = performance.now() - started;
    const decided = () =>
      Array.from({ length: PLACEMENT_COUNT }, (_, i) => i).filter((i) => isDecided(watcher.get(placementKey(i))))
        .length;
    while (decided() < PLACEMENT_COUNT) await sleep(50);
    const decidedMs = performance.now() - started;
    stats = await first.call<Stats>('stats');
    while (stats.decisionWrites < PLACEMENT_COUNT || stats.queue > 0) {
      await sleep(100);
      stats = await first.call<Stats>('stats');
    }
    const allWrittenMs = performance.now() - started;
    console.log(
      `start -> caches synced ${ms(syncedMs)}; every status written ${ms(decidedMs)}; every PlacementDecision too ${ms(allWrittenMs)}`,
    );
    console.log(
      `  ${stats.statusWrites} status and ${stats.decisionWrites} PlacementDecision writes, ${stats.events} Events (${stats.eventsDropped} dropped), ${stats.errors} errors, ${stats.conflicts} conflicts`,
    );

    // 2. Event-to-status latency: one ClusterProfile changes tier; each
    //    placement selecting its region and old or new tier must follow.
    const latencies: number[] = [];
    for (let k = 0; k < LABEL_CHANGES; k++) {
      const p = profiles[(k * 37) % PROFILES]!;
      const key = `${p.namespace}/${p.name}`;
      const next = `t${(Number(p.labels.tier.slice(1)) + 1) % TIERS}`;
      const expected = new Map<string, boolean>();
      for (let i = 0; i < PLACEMENT_COUNT; i++) {
        if (i % 5 > 1 || `r${i % REGIONS}` !== p.labels.region) continue;
        const tier = `t${i % TIERS}`;
        if (tier === p.labels.tier || tier === next) expected.set(placementKey(i), tier === next);
      }
      const sent = performance.now();
      await fleet.labelProfile(p.namespace, p.name, { tier: next });
      p.labels.tier = next;
      const pending = new Map(expected);
      while (pending.size > 0) {
        for (const [placement, listed] of pending) {
          const clusters =
            (watcher.get(placement)?.status as { clusters?: { namespace?: string; name: string }[] })?.clusters ?? [];
          if (clusters.some((c) => `${c.namespace}/${c.name}` === key) === listed) {
            latencies.push(performance.now() - sent);
            pending.delete(placement);
          }
        }
        await sleep(2);
      }
      await sleep(200);
    }
    console.log(
      `ClusterProfile label change -> placement status (${latencies.length} updates, ${LABEL_CHANGES} changes): p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}`,
    );

    // 3. Full resync with nothing to change.
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
    await first.call('stop');
    first.child.kill();

    // 4. Restart with nothing changed.
    const restartAt = performance.now();
    const second = await startReplicas((env) => startControllerProcess(script, kubeconfig, env));
    stats = await second.call<Stats>('stats');
    while (!stats.synced || stats.reconciles < PLACEMENT_COUNT || stats.queue > 0) {
      await sleep(100);
      stats = await second.call<Stats>('stats');
    }
    await sleep(1000);
    stats = await second.call<Stats>('stats');
    console.log(
      `restart with nothing changed: all reconciled after ${ms(performance.now() - restartAt)}; writes ${stats.statusWrites} status, ${stats.decisionWrites} PlacementDecision, ${stats.events} Events; peak RSS ${mib(stats.peakRss)}`,
    );
    await second.call('stop');
    second.child.kill();
  } finally {
    await watcher.stop();
    await hub.stop();
  }
}

await main();

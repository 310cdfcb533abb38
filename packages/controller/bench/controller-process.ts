// The controller under benchmark, in a process of its own so that its memory
// and event loop are measured alone. Driven by controller.bench.ts over IPC.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Signal } from '@mco/core';
import { loadKubeConfig } from '@mco/kube-runtime';
import {
  createLogger,
  silentLogger,
  type Logger,
  type CapacitySignalSource,
  type SignalObservation,
  type SignalRequest,
} from '@mco/runtime';
import { createController, type DecisionTrace, type ReconcileTrace } from '../src/index.js';
import { shardOf } from '../src/shards.js';

/** Answers at once: every cluster has room (hpa 3 of 10 replicas), so figures are the controller's own. */
class InstantSource implements CapacitySignalSource {
  async observe(request: SignalRequest): Promise<SignalObservation> {
    const observedAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const signals: Signal[] = request.clusters.map(({ key }) => ({
      cluster: key,
      observedAt,
      hpa: { currentReplicas: 3, maxReplicas: 10 },
    }));
    return { signals, errors: [] };
  }
}

// Loaded as `mco controller` loads it: with mco's own client, never @kubernetes/client-node.
const hub = loadKubeConfig({ path: process.env.BENCH_KUBECONFIG! });
const idleRss = process.memoryUsage().rss;
let peakRss = idleRss;
// Where the peak is: V8's committed heap, and memory outside it (Buffers; the rest is code, stacks and malloc).
let atPeak = { heapTotal: 0, external: 0 };
setInterval(() => {
  const m = process.memoryUsage();
  if (m.rss > peakRss) {
    peakRss = m.rss;
    atPeak = { heapTotal: m.heapTotal, external: m.external };
  }
}, 50).unref();

// Where the time of each reconcile that wrote a status went, and how far each PlacementDecision write
// trailed its status, while the benchmark asks for it.
let traces: (ReconcileTrace & { doneAt: number })[] | undefined;
let lags: DecisionTrace[] | undefined;

const controller = createController({
  hub,
  workers: Number(process.env.BENCH_WORKERS ?? 4),
  onReconcile: (trace) => {
    if (trace.statusWritten) traces?.push({ ...trace, doneAt: Date.now() });
  },
  onDecisions: (trace) => lags?.push(trace),
  // BENCH_LOG=1: the controller's own log on stderr, but for its per-placement lines (where a start-up
  // or restart spends its time).
  logger: process.env.BENCH_LOG ? startUpLog() : silentLogger,
  // BENCH_REPLICAS > 1 (replicas.ts): a replica sharing the shards.
  ...(process.env.BENCH_LEADER_ELECTION
    ? { identity: process.env.BENCH_IDENTITY, leaderElection: JSON.parse(process.env.BENCH_LEADER_ELECTION) }
    : {}),
  signalSources: new Map([['instant', new InstantSource()]]),
  defaultSignalSource: 'instant',
  signalPollIntervalMs: 3_600_000, // label changes drive the measurements, not polling
  resyncPeriodMs: 3_600_000,
  // BENCH_DECISIONS_MAX_DEFER_MS: how long PlacementDecisions may trail their status before they are overdue.
  ...(process.env.BENCH_DECISIONS_MAX_DEFER_MS
    ? { decisionsMaxDeferMs: Number(process.env.BENCH_DECISIONS_MAX_DEFER_MS) }
    : {}),
});

function startUpLog(): Logger {
  const quiet = (logger: Logger): Logger => ({
    ...logger,
    info: (message, fields) => (fields && 'placement' in fields ? undefined : logger.info(message, fields)),
    child: (fields) => quiet(logger.child(fields)),
  });
  return quiet(createLogger({ level: 'info' }, { replica: process.env.BENCH_IDENTITY ?? 'bench' }));
}

async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await controller.metrics.registry.getSingleMetric(name)!.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, w]) => String((v.labels as Record<string, unknown>)[k]) === w))
    .reduce((sum, v) => sum + v.value, 0);
}

/** Heap still in use after a full GC (with --expose-gc): the live set, not garbage V8 has not collected yet. */
function liveHeap(): number | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return undefined;
  gc();
  return process.memoryUsage().heapUsed;
}

async function stats() {
  return {
    idleRss,
    peakRss,
    atPeak,
    rss: process.memoryUsage().rss,
    cpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
    heapUsed: process.memoryUsage().heapUsed,
    synced: controller.isReady(),
    queue: controller.queue.length,
    deferred: controller.deferred().placementDecisions + controller.deferred().events,
    reconciles: await counter('mco_controller_reconcile_total'),
    errors: await counter('mco_controller_reconcile_total', { result: 'error' }),
    conflicts: await counter('mco_controller_reconcile_total', { result: 'conflict' }),
    statusWrites: await counter('mco_controller_status_writes_total'),
    decisionWrites: await counter('mco_controller_placement_decision_writes_total'),
    events: await counter('mco_controller_events_total', { result: 'created' }),
    eventsDropped: await counter('mco_controller_events_total', { result: 'dropped' }),
  };
}

/** Every placement reconciled once with nothing to change, while the event loop is watched. */
async function resync() {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  const before = await stats();
  // A replica reconciles the placements of its shards only.
  const shards = controller.ownedShards();
  const total = (JSON.parse(process.env.BENCH_LEADER_ELECTION ?? '{}') as { shards?: number }).shards;
  const keys = controller.informers.placements
    .keys()
    .filter((key) => total === undefined || shards.includes(shardOf(key, total)));
  loop.enable();
  const started = performance.now();
  for (const key of keys) controller.queue.add(key);
  while ((await counter('mco_controller_reconcile_total')) - before.reconciles < keys.length) await sleep(20);
  const ms = performance.now() - started;
  loop.disable();
  const after = await stats();
  return {
    ms,
    placements: keys.length,
    writes: after.statusWrites + after.decisionWrites - before.statusWrites - before.decisionWrites,
    p50: loop.percentile(50) / 1e6,
    p99: loop.percentile(99) / 1e6,
    max: loop.max / 1e6,
  };
}

process.on('message', (message: { id: number; command: string }) => {
  const reply = (value: unknown) => process.send!({ id: message.id, value });
  if (message.command === 'stats') void stats().then(reply);
  else if (message.command === 'memory') reply({ liveHeap: liveHeap(), rss: process.memoryUsage().rss, peakRss });
  else if (message.command === 'resync') void resync().then(reply);
  else if (message.command === 'trace') {
    traces = [];
    lags = [];
    reply(null);
  } else if (message.command === 'traces') {
    reply(traces ?? []);
    traces = undefined;
  } else if (message.command === 'lags') {
    reply(lags ?? []);
    lags = undefined;
  } else if (message.command === 'stop') void controller.stop().then(() => reply(null));
});
controller.start();
process.send!({ id: 0, value: 'started' });
// Exit on the benchmark's SIGTERM rather than be killed by it, so that `--cpu-prof` in
// BENCH_NODE_OPTIONS writes its profile.
process.once('SIGTERM', () => process.exit(0));

// BENCH_REPLICAS > 1: that many controller processes sharing BENCH_SHARDS shards (default 8) over Leases,
// driven by controller.bench.ts as if they were one: counters are summed, memory figures are the largest
// replica's (the figure per replica), times the slowest's.
import type { ChildProcess } from 'node:child_process';

export const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 1);
export const SHARDS = Number(process.env.BENCH_SHARDS ?? 8);
/** The replicas' shard Leases: kube-system/mco-controller, mco-controller-1, ... */
export const SHARD_LEASES = { namespace: 'kube-system', name: 'mco-controller' };

interface ControllerProcess {
  call<T>(command: string): Promise<T>;
  child: ChildProcess;
}

/** The chart's Lease timings; each replica gets its identity and these settings through the environment. */
export async function startReplicas(
  start: (env: Record<string, string>) => Promise<ControllerProcess>,
): Promise<ControllerProcess> {
  if (REPLICAS <= 1) return start({});
  const election = { ...SHARD_LEASES, shards: SHARDS };
  const all = await Promise.all(
    Array.from({ length: REPLICAS }, (_, i) =>
      start({
        BENCH_IDENTITY: `bench/mco/replica-${i}`,
        BENCH_LEADER_ELECTION: JSON.stringify({
          ...election,
          leaseDurationMs: 15_000,
          renewDeadlineMs: 10_000,
          retryPeriodMs: 2_000,
        }),
      }),
    ),
  );
  return {
    child: { kill: () => all.every((p) => p.child.kill()) } as unknown as ChildProcess,
    call: async <T>(command: string) =>
      combine(command, await Promise.all(all.map((p) => p.call<unknown>(command)))) as T,
  };
}

type Figures = Record<string, unknown>;
const LARGEST = new Set(['idleRss', 'peakRss', 'rss', 'heapUsed', 'liveHeap', 'ms', 'p50', 'p99', 'max']);

function combine(command: string, values: unknown[]): unknown {
  if (values.every((v) => v === null || v === undefined)) return values[0];
  // Per-reconcile traces: every replica's.
  if (values.every(Array.isArray)) return values.flat();
  const figures = values as Figures[];
  const combined: Figures = {};
  for (const key of Object.keys(figures[0] ?? {})) {
    const all = figures.map((f) => f[key]);
    if (typeof all[0] === 'boolean') combined[key] = all.every(Boolean);
    else if (typeof all[0] !== 'number') combined[key] = all[0];
    else
      combined[key] = LARGEST.has(key) ? Math.max(...(all as number[])) : (all as number[]).reduce((a, b) => a + b, 0);
  }
  // Where the largest replica's peak is.
  if ('atPeak' in combined)
    combined.atPeak = figures.reduce((a, b) => ((b.peakRss as number) > (a.peakRss as number) ? b : a)).atPeak;
  return combined;
}

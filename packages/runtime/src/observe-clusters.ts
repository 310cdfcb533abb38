import type { Signal, WorkloadDetails } from '@mco/core';
import { McoError, toMcoError, type McoErrorCode } from './errors.js';
import type { SignalError, SignalObservation, SignalRequest } from './plugin.js';
import type { SignalMetrics } from './signal-metrics.js';

/** What a source found on one cluster: a signal (possibly partial), and what went wrong. */
export interface ClusterObservation {
  readonly signal?: Signal;
  readonly errors: readonly { readonly code: McoErrorCode; readonly message: string }[];
}

export interface ObserveEachClusterOptions {
  /** The source's name, for metrics. */
  readonly source: string;
  /** Clusters observed at the same time (at least 1). */
  readonly concurrency: number;
  /** Each cluster's budget; past it the cluster's signal is missing (code Timeout). */
  readonly timeoutMs: number;
  readonly metrics: SignalMetrics;
  readonly abort?: AbortSignal;
}

type RequestedCluster = SignalRequest['clusters'][number];

/**
 * Runs `observe` for every requested cluster with bounded concurrency and a
 * per-cluster timeout, so that a slow or unreachable member leaves only its own
 * signal missing. A throw becomes that cluster's error; results are counted in
 * the signal metrics and returned in request order. Rejects only when `abort`
 * fires.
 */
export async function observeEachCluster(
  request: SignalRequest,
  options: ObserveEachClusterOptions,
  observe: (cluster: RequestedCluster, signal: AbortSignal) => Promise<ClusterObservation>,
): Promise<SignalObservation> {
  const results: ClusterObservation[] = new Array(request.clusters.length);
  let next = 0;
  const worker = async () => {
    while (next < request.clusters.length) {
      const index = next++;
      const cluster = request.clusters[index]!;
      const started = performance.now();
      const result = await observeOne(cluster, options, observe);
      options.abort?.throwIfAborted();
      results[index] = result;
      const outcome = !result.signal ? 'failed' : result.errors.length ? 'partial' : 'ok';
      options.metrics.record(
        options.source,
        cluster.key,
        outcome,
        (performance.now() - started) / 1000,
        result.errors.map((e) => e.code),
      );
    }
  };
  const workers = Math.max(1, Math.min(options.concurrency, request.clusters.length));
  await Promise.all(Array.from({ length: workers }, worker));
  options.abort?.throwIfAborted();
  const signals: Signal[] = [];
  const errors: SignalError[] = [];
  request.clusters.forEach((cluster, i) => {
    const result = results[i]!;
    if (result.signal) signals.push({ ...result.signal, cluster: cluster.key });
    for (const e of result.errors) errors.push({ cluster: cluster.key, code: e.code, message: e.message });
  });
  return { signals, errors };
}

/**
 * `observeEachCluster` for the workload a placement autoscales: nothing to
 * observe when it does not autoscale for capacity, and an `Invalid` error per
 * cluster (its signal missing) when it names no workload.
 */
export async function observeWorkloadOnEachCluster(
  request: SignalRequest,
  options: ObserveEachClusterOptions,
  observe: (cluster: RequestedCluster, workload: WorkloadDetails, signal: AbortSignal) => Promise<ClusterObservation>,
): Promise<SignalObservation> {
  const scaling = request.placement.spec.scaling?.autoscaleForCapacity;
  if (!scaling) return { signals: [], errors: [] };
  const workload = scaling.workloadDetails;
  return observeEachCluster(request, options, async (cluster, signal) =>
    workload
      ? observe(cluster, workload, signal)
      : {
          errors: [
            {
              code: 'Invalid',
              message: 'spec.scaling.autoscaleForCapacity.workloadDetails is not set: nothing to observe',
            },
          ],
        },
  );
}

async function observeOne(
  cluster: RequestedCluster,
  options: ObserveEachClusterOptions,
  observe: (cluster: RequestedCluster, signal: AbortSignal) => Promise<ClusterObservation>,
): Promise<ClusterObservation> {
  const timeout = new AbortController();
  const timer = setTimeout(
    () =>
      timeout.abort(
        new McoError('Timeout', `no complete answer within ${options.timeoutMs / 1000} s; signal left missing`, true),
      ),
    options.timeoutMs,
  );
  const signal = options.abort ? AbortSignal.any([options.abort, timeout.signal]) : timeout.signal;
  try {
    // The race makes the budget hold even for work that ignores `signal`.
    return await new Promise<ClusterObservation>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      observe(cluster, signal).then(resolve, reject);
    });
  } catch (error) {
    const e = timeout.signal.aborted ? (timeout.signal.reason as McoError) : toMcoError(error);
    return { errors: [{ code: e.code, message: e.message }] };
  } finally {
    clearTimeout(timer);
  }
}

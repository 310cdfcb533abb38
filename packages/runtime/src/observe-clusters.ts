import type { CapacityAnswer, Signal, WorkloadDetails } from '@mco/core';
import { McoError, toMcoError, type McoErrorCode } from './errors.js';
import type { CapacityObservation, CapacityRequest, SignalError, SignalObservation, SignalRequest } from './plugin.js';
import type { CapacityMetrics, SignalMetrics } from './signal-metrics.js';

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
  /**
   * Clusters that ran out of time lately, owned by the source across calls and
   * kept up to date here: they are observed after the others, so a few
   * blackholed members cannot use up the overall deadline before the reachable
   * ones are asked.
   */
  readonly outOfTime?: Set<string>;
  /** Shutdown, or the caller's overall deadline when it fires with a `TimeoutError` (see isDeadline). */
  readonly abort?: AbortSignal;
  /**
   * For sources that reach each member cluster directly: polls in a row that
   * ended in a transport error (nothing read, code Unavailable or Timeout), per
   * cluster, owned by the source across calls and kept up to date here. Such a
   * cluster gets a signal with `transportError` (2 polls in a row: unreachable,
   * docs/placement-rules.md §4 rule O1). Leave it out for sources that read a
   * central store (Prometheus): its failures say nothing about a member.
   */
  readonly transportErrors?: Map<string, number>;
  /** The clock of `transportError` signals (default: the system clock). */
  readonly now?: () => Date;
}

/** An observation that read nothing because the cluster could not be reached (refused, timeout, TLS, 5xx). */
function transportFailure(result: ClusterObservation): McoErrorCode | undefined {
  if (result.signal) return undefined;
  return result.errors.find((e) => e.code === 'Unavailable' || e.code === 'Timeout')?.code;
}

/**
 * True when an abort is the caller's overall deadline (`AbortSignal.timeout`
 * aborts with a `TimeoutError`), not a shutdown: then a source answers with what
 * it has rather than rejecting (CapacitySignalSource.observe).
 */
export function isDeadline(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && (signal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError';
}

type RequestedCluster = SignalRequest['clusters'][number];

const NOT_OBSERVED_IN_TIME: ClusterObservation = {
  errors: [{ code: 'Timeout', message: 'not observed before the overall signal deadline; signal left missing' }],
};

/**
 * Runs `observe` for every requested cluster with bounded concurrency and a
 * per-cluster timeout, so that a slow or unreachable member leaves only its own
 * signal missing. A throw becomes that cluster's error; results are counted in
 * the signal metrics and returned in request order. When `abort` is the overall
 * deadline, resolves at once with what was observed and a `Timeout` error for
 * every other cluster; rejects only on any other abort.
 */
export async function observeEachCluster(
  request: SignalRequest,
  options: ObserveEachClusterOptions,
  observe: (cluster: RequestedCluster, signal: AbortSignal) => Promise<ClusterObservation>,
): Promise<SignalObservation> {
  const results = await eachCluster(request.clusters, options, observe, (result) => result.signal !== undefined, {
    record: (cluster, result, seconds) =>
      options.metrics.record(
        options.source,
        cluster.key,
        !result.signal ? 'failed' : result.errors.length ? 'partial' : 'ok',
        seconds,
        result.errors.map((e) => e.code),
      ),
    cutOff: NOT_OBSERVED_IN_TIME,
    missing: 'signal',
  });
  const signals: Signal[] = [];
  const errors: SignalError[] = [];
  const counts = options.transportErrors;
  const observedAt = (options.now ?? (() => new Date()))().toISOString();
  request.clusters.forEach((cluster, i) => {
    const result = results[i]!;
    if (result.signal) signals.push({ ...result.signal, cluster: cluster.key });
    // The overall deadline cutting a cluster off says nothing about that cluster: its count stays.
    if (counts && result !== NOT_OBSERVED_IN_TIME) {
      const failure = transportFailure(result);
      if (failure) {
        const consecutivePolls = (counts.get(cluster.key) ?? 0) + 1;
        counts.set(cluster.key, consecutivePolls);
        signals.push({
          cluster: cluster.key,
          observedAt,
          transportError: { reason: failure === 'Timeout' ? 'timeout' : 'unavailable', consecutivePolls },
        });
      } else counts.delete(cluster.key);
    }
    for (const e of result.errors) errors.push({ cluster: cluster.key, code: e.code, message: e.message });
  });
  return { signals, errors };
}

type Problems = { readonly errors: readonly { readonly code: McoErrorCode; readonly message: string }[] };

/** What `eachCluster` needs besides the clusters: budgets, order, abort. */
type EachClusterOptions = Pick<ObserveEachClusterOptions, 'concurrency' | 'timeoutMs' | 'outOfTime' | 'abort'>;

/**
 * The loop of `observeEachCluster` and `answerEachCluster`: runs `observe` for
 * every cluster with bounded concurrency and a per-cluster timeout (a throw
 * becomes that cluster's error), calls `record` for each result as it comes,
 * and returns the results in request order, `cutOff` for clusters the overall
 * deadline left unasked (recorded as failed Timeouts). `answered` tells a
 * result that read something from one that read nothing.
 */
async function eachCluster<R extends Problems>(
  clusters: readonly RequestedCluster[],
  options: EachClusterOptions,
  observe: (cluster: RequestedCluster, signal: AbortSignal) => Promise<R>,
  answered: (result: R) => boolean,
  output: {
    record(cluster: RequestedCluster, result: R, seconds: number): void;
    cutOff: R;
    /** What a timeout leaves missing, for its message. */
    missing: 'signal' | 'answer';
  },
): Promise<R[]> {
  const results: (R | undefined)[] = new Array(clusters.length);
  const begun = performance.now();
  const late = options.outOfTime;
  // Request order, except that clusters which ran out of time lately go last (a stable sort).
  const order = clusters
    .map((_, i) => i)
    .sort((a, b) => Number(late?.has(clusters[a]!.key)) - Number(late?.has(clusters[b]!.key)));
  let next = 0;
  const worker = async () => {
    while (next < order.length && !options.abort?.aborted) {
      const index = order[next++]!;
      const cluster = clusters[index]!;
      const started = performance.now();
      const result = await observeOne(cluster, options, observe, output.missing);
      if (options.abort?.aborted) {
        if (!isDeadline(options.abort)) throw options.abort.reason;
        late?.add(cluster.key); // cut off by the deadline: it counts as not observed in time
        return;
      }
      if (!answered(result) && result.errors.some((e) => e.code === 'Timeout')) late?.add(cluster.key);
      else late?.delete(cluster.key);
      results[index] = result;
      output.record(cluster, result, (performance.now() - started) / 1000);
    }
  };
  const workers = Math.max(1, Math.min(options.concurrency, order.length));
  await Promise.all(Array.from({ length: workers }, worker));
  if (options.abort?.aborted && !isDeadline(options.abort)) throw options.abort.reason;
  return clusters.map((cluster, i) => {
    const result = results[i];
    if (result) return result;
    output.record(cluster, output.cutOff, (performance.now() - begun) / 1000);
    return output.cutOff;
  });
}

/** One cluster's capacity: an answer (its `addableReplicas` undefined when unknown), or none and why. */
export interface ClusterCapacity {
  readonly answer?: {
    readonly addableReplicas?: number;
    readonly reason: string;
    /** When the answer was true; default: when this cluster's answer began. */
    readonly observedAt?: Date;
  };
  readonly errors: readonly { readonly code: McoErrorCode; readonly message: string }[];
}

export interface AnswerEachClusterOptions extends EachClusterOptions {
  /** The source's name, for metrics and each answer's `source`. */
  readonly source: string;
  readonly metrics: CapacityMetrics;
  /** The clock of `observedAt` (default: the system clock). */
  readonly now?: () => Date;
}

const NOT_ANSWERED_IN_TIME: ClusterCapacity = {
  errors: [{ code: 'Timeout', message: 'not answered before the overall capacity deadline; answer left missing' }],
};

/**
 * `observeEachCluster` for capacity sources: runs `answer` for every
 * requested cluster with bounded concurrency and a per-cluster timeout, so a
 * slow member leaves only its own answer missing; counts each result in the
 * capacity metrics; stamps every answer with its cluster, source and time.
 * At the overall deadline resolves with what it has; rejects only on another abort.
 */
export async function answerEachCluster(
  request: CapacityRequest,
  options: AnswerEachClusterOptions,
  answer: (cluster: RequestedCluster, signal: AbortSignal) => Promise<ClusterCapacity>,
): Promise<CapacityObservation> {
  const now = options.now ?? (() => new Date());
  const startedAt = new Map<string, Date>();
  const results = await eachCluster(
    request.clusters,
    options,
    (cluster, signal) => {
      startedAt.set(cluster.key, now());
      return answer(cluster, signal);
    },
    (result) => result.answer !== undefined,
    {
      record: (cluster, result, seconds) =>
        options.metrics.record(
          options.source,
          cluster.key,
          !result.answer ? 'failed' : result.answer.addableReplicas === undefined ? 'unknown' : 'known',
          seconds,
          result.errors.map((e) => e.code),
        ),
      cutOff: NOT_ANSWERED_IN_TIME,
      missing: 'answer',
    },
  );
  const answers: CapacityAnswer[] = [];
  const errors: SignalError[] = [];
  request.clusters.forEach((cluster, i) => {
    const { answer: found, errors: problems } = results[i]!;
    if (found) {
      const addable = found.addableReplicas;
      answers.push({
        cluster: cluster.key,
        ...(addable !== undefined ? { addableReplicas: Math.max(0, Math.floor(addable)) } : {}),
        observedAt: (found.observedAt ?? startedAt.get(cluster.key) ?? now()).toISOString(),
        reason: found.reason,
        source: options.source,
      });
    }
    for (const e of problems) errors.push({ cluster: cluster.key, code: e.code, message: e.message });
  });
  return { answers, errors };
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

async function observeOne<R extends Problems>(
  cluster: RequestedCluster,
  options: EachClusterOptions,
  observe: (cluster: RequestedCluster, signal: AbortSignal) => Promise<R>,
  missing: 'signal' | 'answer',
): Promise<R> {
  const timeout = new AbortController();
  const timer = setTimeout(
    () =>
      timeout.abort(
        new McoError(
          'Timeout',
          `no complete answer within ${options.timeoutMs / 1000} s; ${missing} left missing`,
          true,
        ),
      ),
    options.timeoutMs,
  );
  const signal = options.abort ? AbortSignal.any([options.abort, timeout.signal]) : timeout.signal;
  try {
    // The race makes the budget hold even for work that ignores `signal`.
    return await new Promise<R>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      observe(cluster, signal).then(resolve, reject);
    });
  } catch (error) {
    const e = timeout.signal.aborted ? (timeout.signal.reason as McoError) : toMcoError(error);
    // Every R leaves its other fields optional: errors alone is a result with nothing read.
    return { errors: [{ code: e.code, message: e.message }] } as Problems as R;
  } finally {
    clearTimeout(timer);
  }
}

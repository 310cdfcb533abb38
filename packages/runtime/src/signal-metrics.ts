import { Counter, Histogram, type Registry } from 'prom-client';
import type { McoErrorCode } from './errors.js';

/** How one cluster's observation ended: every field read, some, or none (no signal). */
export type SignalResult = 'ok' | 'partial' | 'failed';

/** The metrics every capacity-signal source records, shared so that names and labels agree. */
export interface SignalMetrics {
  /** `mco_signal_observations_total{source, cluster, result}`. */
  readonly observations: Counter<'source' | 'cluster' | 'result'>;
  /** `mco_signal_errors_total{source, cluster, code}`: one per SignalError reported. */
  readonly errors: Counter<'source' | 'cluster' | 'code'>;
  /** `mco_signal_observation_duration_seconds{source}`: one cluster's observation, end to end. */
  readonly duration: Histogram<'source'>;
  record(source: string, cluster: string, result: SignalResult, seconds: number, codes: readonly McoErrorCode[]): void;
}

/**
 * Returns the signal metrics registered in `registry`, registering them on first
 * use: several sources share one registry, and prom-client refuses a name twice.
 */
export function signalMetrics(registry: Registry): SignalMetrics {
  return sourceMetrics<SignalResult>(registry, {
    observations: [
      'mco_signal_observations_total',
      'Observations of one cluster by a capacity-signal source, by result (ok, partial, failed).',
    ],
    errors: ['mco_signal_errors_total', 'Errors that left a capacity signal missing or incomplete, by error code.'],
    duration: ['mco_signal_observation_duration_seconds', 'Time to observe one cluster, credentials included.'],
  });
}

/** How one cluster's capacity answer ended: a number of replicas, unknown, or no answer. */
export type CapacityResult = 'known' | 'unknown' | 'failed';

/** The metrics every capacity source records (`answerEachCluster` records them). */
export interface CapacityMetrics {
  /** `mco_capacity_answers_total{source, cluster, result}`. */
  readonly observations: Counter<'source' | 'cluster' | 'result'>;
  /** `mco_capacity_errors_total{source, cluster, code}`: one per error reported. */
  readonly errors: Counter<'source' | 'cluster' | 'code'>;
  /** `mco_capacity_answer_duration_seconds{source}`: one cluster's answer, end to end. */
  readonly duration: Histogram<'source'>;
  record(
    source: string,
    cluster: string,
    result: CapacityResult,
    seconds: number,
    codes: readonly McoErrorCode[],
  ): void;
}

/** Returns the capacity-source metrics registered in `registry`, registering them on first use. */
export function capacityMetrics(registry: Registry): CapacityMetrics {
  return sourceMetrics<CapacityResult>(registry, {
    observations: [
      'mco_capacity_answers_total',
      'Answers about one cluster by a capacity source, by result (known, unknown, failed).',
    ],
    errors: ['mco_capacity_errors_total', 'Errors that left a capacity answer missing, by error code.'],
    duration: ['mco_capacity_answer_duration_seconds', 'Time to answer for one cluster, credentials included.'],
  });
}

type Named = readonly [name: string, help: string];

function sourceMetrics<Result extends string>(
  registry: Registry,
  names: { observations: Named; errors: Named; duration: Named },
) {
  const counter = ([name, help]: Named, label: 'result' | 'code') =>
    getOrCreate(
      registry,
      name,
      () => new Counter({ name, help, labelNames: ['source', 'cluster', label] as const, registers: [registry] }),
    );
  const observations = counter(names.observations, 'result') as Counter<'source' | 'cluster' | 'result'>;
  const errors = counter(names.errors, 'code') as Counter<'source' | 'cluster' | 'code'>;
  const [name, help] = names.duration;
  const duration = getOrCreate(
    registry,
    name,
    () =>
      new Histogram({
        name,
        help,
        labelNames: ['source'] as const,
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: [registry],
      }),
  );
  return {
    observations,
    errors,
    duration,
    record(source: string, cluster: string, result: Result, seconds: number, codes: readonly McoErrorCode[]) {
      observations.inc({ source, cluster, result });
      for (const code of codes) errors.inc({ source, cluster, code });
      duration.observe({ source }, seconds);
    },
  };
}

/** A metric registered under `name` in `registry`, or `create()`'s (prom-client refuses a name twice). */
export function getOrCreate<T>(registry: Registry, name: string, create: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}

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
  const observations = getOrCreate(
    registry,
    'mco_signal_observations_total',
    () =>
      new Counter({
        name: 'mco_signal_observations_total',
        help: 'Observations of one cluster by a capacity-signal source, by result (ok, partial, failed).',
        labelNames: ['source', 'cluster', 'result'] as const,
        registers: [registry],
      }),
  );
  const errors = getOrCreate(
    registry,
    'mco_signal_errors_total',
    () =>
      new Counter({
        name: 'mco_signal_errors_total',
        help: 'Errors that left a capacity signal missing or incomplete, by error code.',
        labelNames: ['source', 'cluster', 'code'] as const,
        registers: [registry],
      }),
  );
  const duration = getOrCreate(
    registry,
    'mco_signal_observation_duration_seconds',
    () =>
      new Histogram({
        name: 'mco_signal_observation_duration_seconds',
        help: 'Time to observe one cluster, credentials included.',
        labelNames: ['source'] as const,
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: [registry],
      }),
  );
  return {
    observations,
    errors,
    duration,
    record(source, cluster, result, seconds, codes) {
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

import { Counter, Gauge, type Registry } from 'prom-client';
import { getOrCreate } from './signal-metrics.js';

/** How one unit of a long-running command's work ended (a pass, a key, a request). */
export type ReconcileResult = 'ok' | 'error';

/** What an adapter records after each unit of work; `reconcileMetrics` implements it for Prometheus. */
export interface ReconcileRecorder {
  record(result: ReconcileResult): void;
}

/**
 * The metrics every long-running mco command exports, so that names and labels
 * agree (docs/operations.md#metrics): `mco_reconciles_total{component, result}`,
 * `mco_reconcile_errors_total{component}` and
 * `mco_reconcile_last_success_timestamp_seconds{component}`. Registered in
 * `registry` on first use; several components may share one registry.
 */
export function reconcileMetrics(
  registry: Registry,
  component: string,
  now: () => number = Date.now,
): ReconcileRecorder {
  const total = getOrCreate(
    registry,
    'mco_reconciles_total',
    () =>
      new Counter({
        name: 'mco_reconciles_total',
        help: 'Units of work (passes, keys, requests) a component finished, by result (ok, error).',
        labelNames: ['component', 'result'] as const,
        registers: [registry],
      }),
  );
  const errors = getOrCreate(
    registry,
    'mco_reconcile_errors_total',
    () =>
      new Counter({
        name: 'mco_reconcile_errors_total',
        help: 'Units of work that failed (they are retried).',
        labelNames: ['component'] as const,
        registers: [registry],
      }),
  );
  const lastSuccess = getOrCreate(
    registry,
    'mco_reconcile_last_success_timestamp_seconds',
    () =>
      new Gauge({
        name: 'mco_reconcile_last_success_timestamp_seconds',
        help: 'Unix time of the last unit of work that succeeded; alert when it stops moving.',
        labelNames: ['component'] as const,
        registers: [registry],
      }),
  );
  // Present from the start, at 0: a rate() and an absent-series alert work before the first reconcile.
  for (const result of ['ok', 'error'] as const) total.inc({ component, result }, 0);
  errors.inc({ component }, 0);
  return {
    record(result) {
      total.inc({ component, result });
      if (result === 'error') errors.inc({ component });
      else lastSuccess.set({ component }, now() / 1000);
    },
  };
}

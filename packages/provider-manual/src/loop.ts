import { toMcoError, type Logger } from '@mco/runtime';
import { Counter, Gauge, type Registry } from 'prom-client';

/** Exponential backoff: `initial * 2^(failures-1)`, capped, with ±20% jitter so replicas spread out. */
export function backoffDelayMs(
  failures: number,
  options: { readonly initialMs: number; readonly maxMs: number },
  random: () => number = Math.random,
): number {
  const base = Math.min(options.maxMs, options.initialMs * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** One pass of a provider: `ok` when the hub now mirrors a complete view of the source. */
export type SyncOutcome =
  { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly error: Error };

export interface SyncLoopOptions {
  /** One pass; a throw counts as a failure with reason `Internal`. */
  readonly sync: (abort: AbortSignal) => Promise<SyncOutcome>;
  readonly intervalMs: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  readonly abort: AbortSignal;
  readonly logger: Logger;
  /** Resolves early when the source changed (e.g. a watched file); called once per wait. */
  readonly changed?: (abort: AbortSignal) => Promise<void>;
  readonly random?: () => number;
}

/**
 * Runs `sync` until `abort`: every `intervalMs` after a success (or sooner
 * when `changed` fires), after an exponential backoff after a failure.
 * Resolves once aborted.
 */
export async function runSyncLoop(options: SyncLoopOptions): Promise<void> {
  const { abort, logger } = options;
  let failures = 0;
  while (!abort.aborted) {
    let outcome: SyncOutcome;
    try {
      outcome = await options.sync(abort);
    } catch (error) {
      if (abort.aborted) break;
      outcome = { ok: false, reason: 'Internal', error: toMcoError(error) };
    }
    let delay = options.intervalMs;
    if (outcome.ok) failures = 0;
    else {
      failures++;
      delay = backoffDelayMs(failures, options.backoff, options.random);
      logger.warn('inventory sync failed; retrying', {
        reason: outcome.reason,
        error: outcome.error,
        retryInMs: delay,
      });
    }
    await waitFor(delay, abort, options.changed);
  }
}

/** Waits `ms`, until `abort`, or until `changed` resolves, whichever is first. */
async function waitFor(ms: number, abort: AbortSignal, changed?: (abort: AbortSignal) => Promise<void>) {
  if (abort.aborted) return;
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  abort.addEventListener('abort', onAbort, { once: true });
  try {
    await Promise.race([
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        stop.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      }),
      ...(changed ? [changed(stop.signal).catch(() => undefined)] : []),
    ]);
  } finally {
    abort.removeEventListener('abort', onAbort);
    stop.abort();
  }
}

/** The health metrics every inventory provider exposes, labelled with its manager name. */
export interface SyncMetrics {
  /** Call after a successful pass, with the number of ClusterProfiles the manager now owns. */
  recordSuccess(at: Date, profiles: number): void;
  recordError(reason: string): void;
}

/**
 * `<prefix>_last_success_timestamp_seconds`, `<prefix>_sync_errors_total{reason}`
 * and `<prefix>_cluster_profiles`, each labelled `manager`. Several providers
 * may share one registry: metrics are created once and reused.
 */
export function createSyncMetrics(registry: Registry, prefix: string, manager: string): SyncMetrics {
  const lastSuccess = gauge(registry, `${prefix}_last_success_timestamp_seconds`, 'Time of the last complete sync.');
  const profiles = gauge(registry, `${prefix}_cluster_profiles`, 'ClusterProfiles owned after the last complete sync.');
  const errors =
    (registry.getSingleMetric(`${prefix}_sync_errors_total`) as Counter<'manager' | 'reason'> | undefined) ??
    new Counter({
      name: `${prefix}_sync_errors_total`,
      help: 'Failed syncs, by reason.',
      labelNames: ['manager', 'reason'],
      registers: [registry],
    });
  return {
    recordSuccess(at, count) {
      lastSuccess.set({ manager }, at.getTime() / 1000);
      profiles.set({ manager }, count);
    },
    recordError(reason) {
      errors.inc({ manager, reason });
    },
  };
}

function gauge(registry: Registry, name: string, help: string): Gauge<'manager'> {
  return (
    (registry.getSingleMetric(name) as Gauge<'manager'> | undefined) ??
    new Gauge({ name, help, labelNames: ['manager'], registers: [registry] })
  );
}

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { InformerHealth } from '@mco/kube-runtime';
import { reconcileMetrics, type ReconcileRecorder } from '@mco/runtime';

/** The controller's Prometheus metrics (docs/operations.md lists them). */
export interface ControllerMetrics {
  readonly registry: Registry;
  readonly reconciles: Counter<'result'>;
  /** The metrics every long-running command shares (`reconcileMetrics` of @mco/runtime). */
  readonly shared: ReconcileRecorder;
  readonly reconcileDuration: Histogram<'result'>;
  readonly queueWait: Histogram<'priority'>;
  readonly transitions: Counter<'transition'>;
  readonly statusWrites: Counter<'result'>;
  readonly decisionWrites: Counter<'operation' | 'result'>;
  readonly events: Counter<'type' | 'result'>;
  readonly signalErrors: Counter<'source'>;
  /** Failed `answer` calls and clusters answered with an error, per capacity source. */
  readonly capacityErrors: Counter<'source'>;
}

export interface MetricsSources {
  queueDepth(): number;
  queueDelayed(): number;
  isLeader(): boolean;
  /** Another install holds the leader Lease; this one stands by. */
  standingBy(): boolean;
  informers(): readonly InformerHealth[];
  /** Whether the inventory-loss guard holds removals caused by missing ClusterProfiles. */
  inventoryLossGuardEngaged(): boolean;
}

/**
 * Creates the metrics on `registry` (a fresh one by default). Gauges read the
 * live state at scrape time, so nothing has to keep them up to date.
 */
export function createMetrics(
  sources: MetricsSources,
  options: { registry?: Registry; defaultMetrics?: boolean } = {},
): ControllerMetrics {
  const registry = options.registry ?? new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  new Gauge({
    name: 'mco_controller_queue_depth',
    help: 'Placement keys waiting to be reconciled.',
    registers,
    collect() {
      this.set(sources.queueDepth());
    },
  });
  new Gauge({
    name: 'mco_controller_queue_delayed',
    help: 'Placement keys scheduled for later (RequeueAfter or retry backoff).',
    registers,
    collect() {
      this.set(sources.queueDelayed());
    },
  });
  new Gauge({
    name: 'mco_controller_is_leader',
    help: '1 while this replica holds the leader Lease and reconciles.',
    registers,
    collect() {
      this.set(sources.isLeader() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'mco_controller_standby_for_other_install',
    help: '1 while another mco install holds the shared leader Lease, so this one does not reconcile (and is not ready).',
    registers,
    collect() {
      this.set(sources.standingBy() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'mco_controller_inventory_loss_guard_engaged',
    help: '1 while a sudden loss of ClusterProfiles holds removals caused by missing profiles (InventoryShrunk).',
    registers,
    collect() {
      this.set(sources.inventoryLossGuardEngaged() ? 1 : 0);
    },
  });
  const informerGauge = (name: string, help: string, value: (h: InformerHealth) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ['informer'],
      registers,
      collect() {
        this.reset();
        for (const h of sources.informers()) {
          const v = value(h);
          if (v !== undefined) this.set({ informer: h.name }, v);
        }
      },
    });
  informerGauge('mco_controller_informer_synced', '1 once the informer listed everything.', (h) => (h.synced ? 1 : 0));
  informerGauge('mco_controller_informer_watching', '1 while the informer has a watch open.', (h) =>
    h.watching ? 1 : 0,
  );
  informerGauge(
    'mco_controller_informer_last_activity_timestamp_seconds',
    'When the informer last received a list, event or bookmark.',
    (h) => (h.lastActivityAt === undefined ? undefined : h.lastActivityAt / 1000),
  );
  informerGauge(
    'mco_controller_informer_restarts',
    'Watch restarts (errors, 410 Gone, idle timeouts).',
    (h) => h.restarts,
  );
  informerGauge('mco_controller_informer_watches', 'Watches opened by the informer.', (h) => h.watches);
  informerGauge('mco_controller_informer_lists', 'Full lists made by the informer.', (h) => h.lists);
  informerGauge('mco_controller_informer_objects', 'Objects in the informer cache.', (h) => h.objects);
  informerGauge(
    'mco_controller_informer_bytes',
    'JSON bytes of the objects in the informer cache (measured with --cache-max-bytes).',
    (h) => h.bytes,
  );
  informerGauge(
    'mco_controller_informer_over_limit',
    '1 while the informer cache holds more than --cache-max-objects or --cache-max-bytes allow (it keeps every object).',
    (h) => (h.overLimit ? 1 : 0),
  );

  return {
    registry,
    shared: reconcileMetrics(registry, 'mco-controller'),
    reconciles: new Counter({
      name: 'mco_controller_reconcile_total',
      help: 'Reconciles by result: success, error, conflict, not_leader.',
      labelNames: ['result'],
      registers,
    }),
    reconcileDuration: new Histogram({
      name: 'mco_controller_reconcile_duration_seconds',
      help: 'Time to reconcile one placement, signals and writes included.',
      labelNames: ['result'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    queueWait: new Histogram({
      name: 'mco_controller_queue_wait_seconds',
      help: 'Time a placement waited in the work queue, by priority: high (its own change, or an inventory change that affects it), normal, low (periodic resync).',
      labelNames: ['priority'],
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    transitions: new Counter({
      name: 'mco_controller_transitions_total',
      help: 'Cluster state transitions written, by transition id (docs/placement-rules.md §3).',
      labelNames: ['transition'],
      registers,
    }),
    statusWrites: new Counter({
      name: 'mco_controller_status_writes_total',
      help: 'Placement status writes by result: written, conflict, error.',
      labelNames: ['result'],
      registers,
    }),
    decisionWrites: new Counter({
      name: 'mco_controller_placement_decision_writes_total',
      help: 'PlacementDecision writes by operation (create, update, delete) and result.',
      labelNames: ['operation', 'result'],
      registers,
    }),
    events: new Counter({
      name: 'mco_controller_events_total',
      help: 'Kubernetes Events by type and result: created, aggregated, dropped, error.',
      labelNames: ['type', 'result'],
      registers,
    }),
    signalErrors: new Counter({
      name: 'mco_controller_signal_source_errors_total',
      help: 'Failed observe() calls of capacity-signal sources.',
      labelNames: ['source'],
      registers,
    }),
    capacityErrors: new Counter({
      name: 'mco_controller_capacity_source_errors_total',
      help: 'Failed answer() calls of capacity sources, and clusters they answered with an error.',
      labelNames: ['source'],
      registers,
    }),
  };
}

import type { KubeConfig } from '@kubernetes/client-node';
import { connectionFromKubeConfig } from '@mco/kube-runtime/client-node';
import { createLogger, silentLogger, type CapacitySignalSource } from '@mco/runtime';
import type { ControlPlaneOptions } from '@mco/testkit';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createController, type Controller, type ControllerOptions } from '../src/index.js';
import { Fleet, LEASE_NAME, LEASE_NAMESPACE, startHub, type Hub } from './support.js';

/** Sum of a counter's samples whose labels include `labels`. */
export async function counterValue(
  controller: Controller,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = controller.metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  return values
    .filter((v) =>
      Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want),
    )
    .reduce((sum, v) => sum + v.value, 0);
}

/** Leader election over the shared Lease with test-friendly timings (failover within about 2 s). */
export const FAST_LEADER_ELECTION = {
  namespace: LEASE_NAMESPACE,
  name: LEASE_NAME,
  leaseDurationMs: 2_000,
  renewDeadlineMs: 1_500,
  retryPeriodMs: 300,
};

/** A controller with test-friendly timings; logs go to stderr with MCO_TEST_LOGS=1. */
export function testController(
  kubeConfig: KubeConfig,
  options: Partial<ControllerOptions> & { sources?: Record<string, CapacitySignalSource> } = {},
): Controller {
  const { sources, ...rest } = options;
  return createController({
    hub: connectionFromKubeConfig(kubeConfig),
    logger: process.env.MCO_TEST_LOGS ? createLogger({ level: 'debug' }) : silentLogger,
    workers: 2,
    signalPollIntervalMs: 300,
    signalTimeoutMs: 5_000,
    requestTimeoutMs: 10_000,
    shutdownTimeoutMs: 5_000,
    ...(sources ? { signalSources: new Map(Object.entries(sources)) } : {}),
    ...rest,
  });
}

/** Resolves when the queue is empty and no status or PlacementDecision was written for `quietMs`. */
export async function settled(controller: Controller, quietMs = 400, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  for (;;) {
    const total =
      (await counterValue(controller, 'mco_controller_status_writes_total')) +
      (await counterValue(controller, 'mco_controller_placement_decision_writes_total')) +
      (await counterValue(controller, 'mco_controller_reconcile_total', { result: 'error' })) +
      (await counterValue(controller, 'mco_controller_reconcile_total', { result: 'conflict' }));
    if (total !== last || controller.queue.length > 0) {
      last = total;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return;
    }
    if (Date.now() > deadline) throw new Error('controller did not settle');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A describe block's hub; `hub` and `fleet` exist once its beforeAll ran. */
export interface ControllerHub {
  readonly hub: Hub;
  readonly fleet: Fleet;
  /** Starts a controller that is stopped after the current test. */
  start(controller: Controller): Controller;
}

/**
 * The setup every controller integration test file shares: a hub started before
 * the describe block's tests and stopped after them, a Fleet on it, and the
 * controllers a test started stopped after that test.
 */
export function useControllerHub(options: ControlPlaneOptions = {}): ControllerHub {
  let hub: Hub | undefined;
  let fleet: Fleet | undefined;
  const running: Controller[] = [];
  beforeAll(async () => {
    hub = await startHub(options);
    fleet = new Fleet(hub);
  });
  afterAll(async () => {
    await hub?.stop();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the hub is not started yet: use it inside a test or hook');
    return value;
  };
  return {
    get hub() {
      return started(hub);
    },
    get fleet() {
      return started(fleet);
    },
    start(controller) {
      running.push(controller);
      controller.start();
      return controller;
    },
  };
}

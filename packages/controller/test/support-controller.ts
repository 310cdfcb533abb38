import type { KubeConfig } from '@kubernetes/client-node';
import { createLogger, silentLogger, type CapacitySignalSource } from '@mco/runtime';
import { createController, type Controller, type ControllerOptions } from '../src/index.js';

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

/** A controller with test-friendly timings; logs go to stderr with MCO_TEST_LOGS=1. */
export function testController(
  kubeConfig: KubeConfig,
  options: Partial<ControllerOptions> & { sources?: Record<string, CapacitySignalSource> } = {},
): Controller {
  const { sources, ...rest } = options;
  return createController({
    kubeConfig,
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

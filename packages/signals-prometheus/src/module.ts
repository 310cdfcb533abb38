import type { CapacitySourceModule, SignalSourceModule } from '@mco/runtime';
import { createAuth } from './auth.js';
import { createPrometheusCapacitySource } from './capacity.js';
import {
  PrometheusCapacityConfigSchema,
  PrometheusSignalsConfigSchema,
  type PrometheusCapacityConfig,
  type PrometheusSignalsConfig,
} from './config.js';
import { SOURCE_NAME, createPrometheusSignalSource } from './source.js';

/** The `prometheus` capacity-signal source, as registered in the mco app. */
export const prometheusSignalsModule: SignalSourceModule<PrometheusSignalsConfig> = {
  kind: 'signals',
  name: SOURCE_NAME,
  configSchema: PrometheusSignalsConfigSchema,
  create(config, deps) {
    return createPrometheusSignalSource({
      config,
      auth: createAuth(config.auth, { now: deps.now }),
      metrics: deps.metrics,
      now: deps.now,
      logger: deps.logger.child({ source: SOURCE_NAME }),
    });
  },
};

/** The `prometheus` capacity source, as registered in the mco app. */
export const prometheusCapacityModule: CapacitySourceModule<PrometheusCapacityConfig> = {
  kind: 'capacity',
  name: SOURCE_NAME,
  configSchema: PrometheusCapacityConfigSchema,
  create(config, deps) {
    return createPrometheusCapacitySource({
      config,
      auth: createAuth(config.auth, { now: deps.now }),
      metrics: deps.metrics,
      now: deps.now,
      logger: deps.logger.child({ source: SOURCE_NAME }),
    });
  },
};

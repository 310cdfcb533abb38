import { parseQuantity } from '@mco/core';
import {
  McoError,
  answerEachCluster,
  capacityMetrics,
  replicasThatFit,
  silentLogger,
  toMcoError,
  type CapacitySource,
  type ClusterCapacity,
  type Logger,
  type PluginDeps,
} from '@mco/runtime';
import type { Auth } from './auth.js';
import type { PrometheusCapacityConfig } from './config.js';
import { queryInstant, redactUrl } from './prometheus-client.js';
import { SOURCE_NAME, clusterMatchers, endpointFor, escapeLabelValue, render } from './source.js';

export interface PrometheusCapacitySourceOptions {
  readonly config: PrometheusCapacityConfig;
  readonly auth: Auth;
  readonly metrics: PluginDeps['metrics'];
  readonly now: () => Date;
  readonly logger?: Logger;
}

/**
 * Answers each candidate's capacity with one instant query: the replicas the
 * cluster can add now, or a spare amount of a resource that `perReplica`
 * divides. No series is an unknown answer; a failed query is an error.
 */
export function createPrometheusCapacitySource(options: PrometheusCapacitySourceOptions): CapacitySource {
  const { config, auth, now } = options;
  const logger = options.logger ?? silentLogger;
  const metrics = capacityMetrics(options.metrics);
  const outOfTime = new Set<string>();
  const perReplica = config.perReplica === undefined ? undefined : parseQuantity(config.perReplica)!;
  const usesWorkload = /\$\{(deployment|hpa)\}/.test(config.query);

  return {
    async answer(request, abort) {
      const workload = request.placement.spec.scaling?.autoscaleForCapacity?.workloadDetails;
      const result = await answerEachCluster(
        request,
        {
          source: SOURCE_NAME,
          concurrency: config.concurrency,
          timeoutMs: config.timeoutSeconds * 1000,
          outOfTime,
          metrics,
          now,
          ...(abort ? { abort } : {}),
        },
        async ({ key, profile }, signal): Promise<ClusterCapacity> => {
          if (usesWorkload && !workload)
            throw new McoError('Invalid', 'the query names the workload, and workloadDetails is not set', false);
          const endpoint = endpointFor(config, profile, key);
          const query = render(config.query, {
            cluster: clusterMatchers(profile, config.clusterLabels),
            namespace: escapeLabelValue(workload?.namespace ?? request.placement.namespace),
            deployment: escapeLabelValue(workload?.deploymentName ?? ''),
            hpa: escapeLabelValue(workload?.hpaName ?? ''),
          });
          const headers = { ...config.headers, ...(await auth.headers(signal)) };
          const time = now();
          let value: number | undefined;
          try {
            value = await queryInstant(endpoint, query, {
              time,
              headers,
              maxResponseBytes: config.maxResponseBytes,
              signal,
            });
          } catch (error) {
            if (signal.aborted) throw signal.reason;
            const e = toMcoError(error);
            if (e.code === 'Unauthorized') auth.invalidate();
            throw new McoError(e.code, `capacity query at ${redactUrl(endpoint)}: ${e.message}`, e.retryable);
          }
          if (value === undefined) return { answer: { reason: 'the capacity query selected no series' }, errors: [] };
          const spare = perReplica && parseQuantity(String(value));
          const addableReplicas = perReplica ? (spare ? replicasThatFit(spare, perReplica) : 0) : value;
          const reason = perReplica
            ? `the capacity query answered ${value} spare (${config.perReplica} per replica)`
            : `the capacity query answered ${value} replicas`;
          return { answer: { addableReplicas, reason, observedAt: time }, errors: [] };
        },
      );
      for (const e of result.errors) logger.debug('capacity unknown', { ...e, placement: request.placement.name });
      return result;
    },
  };
}

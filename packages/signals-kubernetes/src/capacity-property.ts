import { parseQuantity } from '@mco/core';
import {
  McoError,
  answerEachCluster,
  capacityMetrics,
  replicasThatFit,
  type CapacitySource,
  type PluginDeps,
} from '@mco/runtime';
import { z } from 'zod';

export const PROPERTY_SOURCE_NAME = 'cluster-property';

/** Configuration of the `cluster-property` capacity source (docs/signals.md#capacity-sources). */
export const ClusterPropertyCapacityConfigSchema = z
  .strictObject({
    property: z
      .string()
      .min(1)
      .max(316)
      .describe("The ClusterProfile status.properties entry holding the cluster's spare capacity."),
    perReplica: z
      .string()
      .refine((q) => (parseQuantity(q)?.numerator ?? 0n) > 0n, 'must be a positive Kubernetes quantity, e.g. 500m')
      .optional()
      .describe(
        'The value is a spare amount of a resource: one replica takes this much of it. Absent: the value is spare replicas.',
      ),
  })
  .describe('Capacity from a property of each ClusterProfile, set by a provider.');
export type ClusterPropertyCapacityConfig = z.infer<typeof ClusterPropertyCapacityConfigSchema>;

export interface ClusterPropertyCapacitySourceOptions {
  readonly config: ClusterPropertyCapacityConfig;
  readonly metrics: PluginDeps['metrics'];
  readonly now: () => Date;
}

/**
 * Reads each candidate's capacity from its ClusterProfile, as the controller's
 * cache holds it: the named property's value in replicas (or in a resource,
 * divided by `perReplica`), observed at the property's `lastObservedTime`. No
 * property is an unknown answer; a value that is not a number is an error.
 */
export function createClusterPropertyCapacitySource(options: ClusterPropertyCapacitySourceOptions): CapacitySource {
  const { config, now } = options;
  const metrics = capacityMetrics(options.metrics);
  const perReplica = config.perReplica === undefined ? undefined : parseQuantity(config.perReplica)!;
  return {
    answer: (request, abort) =>
      answerEachCluster(
        request,
        // Nothing to wait for: the profiles are in the request.
        { source: PROPERTY_SOURCE_NAME, concurrency: 1, timeoutMs: 1_000, metrics, now, ...(abort ? { abort } : {}) },
        async ({ profile }) => {
          const entry = profile.status?.properties?.find((p) => p.name === config.property);
          if (!entry) return { answer: { reason: `no property ${config.property} on the ClusterProfile` }, errors: [] };
          const value = parseQuantity(entry.value);
          if (!value || (perReplica === undefined && value.denominator !== 1n && value.numerator % value.denominator))
            throw new McoError(
              'Invalid',
              `property ${config.property} is "${entry.value}", not ${perReplica ? 'a quantity' : 'a whole number of replicas'}`,
              false,
            );
          const addableReplicas = perReplica ? replicasThatFit(value, perReplica) : Math.max(0, value.approximate);
          const observedAt = entry.lastObservedTime ? new Date(entry.lastObservedTime) : undefined;
          return {
            answer: {
              addableReplicas,
              reason: `property ${config.property} is ${entry.value}${perReplica ? ` (${config.perReplica} per replica)` : ''}`,
              ...(observedAt ? { observedAt } : {}),
            },
            errors: [],
          };
        },
      ),
  };
}

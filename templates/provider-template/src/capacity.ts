// A minimal mco capacity source, in the same package as the inventory
// provider (its own entry point, `<package>/capacity`). Rename `name` and
// replace `readSpareReplicas` with a call to your capacity API
// (docs/writing-a-provider.md#capacity-sources).
//
// The contract: export `kind`, `name`, `configSchema` and `create`; `create`
// returns a CapacitySource whose `answer` says, for each scale-out candidate,
// how many replicas of the placement's workload it can add now, or that it
// does not know. `answerEachCluster` runs your per-cluster function with the
// timeouts, deadline and metrics every source shares.
import {
  answerEachCluster,
  capacityMetrics,
  type CapacityRequest,
  type CapacitySource,
  type SignalSourceDeps,
} from '@mco/runtime';
import { z } from 'zod';

export const kind = 'capacity';
/** Unique among capacity sources: lower-case words and dashes. */
export const name = 'my-capacity';

export const configSchema = z.strictObject({
  /** Replace with your API's settings. Here: spare replicas per ClusterProfile (namespace/name). */
  spareReplicas: z.record(z.string(), z.number().int().min(0)).default({}),
  timeoutSeconds: z.number().positive().max(60).default(5),
  concurrency: z.number().int().min(1).max(64).default(4),
});
export type Config = z.output<typeof configSchema>;

type Cluster = CapacityRequest['clusters'][number];

/**
 * Replace with a call to your capacity API. Undefined means unknown (the
 * engine then keeps its order); throw when the API fails.
 */
export async function readSpareReplicas(
  config: Config,
  cluster: Cluster,
  _request: CapacityRequest,
  _abort: AbortSignal,
): Promise<number | undefined> {
  return config.spareReplicas[cluster.key];
}

export function create(config: Config, deps: SignalSourceDeps): CapacitySource {
  const metrics = capacityMetrics(deps.metrics);
  return {
    answer: (request, abort) =>
      answerEachCluster(
        request,
        {
          source: name,
          concurrency: config.concurrency,
          timeoutMs: config.timeoutSeconds * 1000,
          metrics,
          now: deps.now,
          ...(abort ? { abort } : {}),
        },
        async (cluster, signal) => {
          const spare = await readSpareReplicas(config, cluster, request, signal);
          return {
            answer:
              spare === undefined
                ? { reason: `${name} knows nothing about ${cluster.key}` }
                : { addableReplicas: spare, reason: `${name} reports ${spare} spare replicas` },
            errors: [],
          };
        },
      ),
  };
}

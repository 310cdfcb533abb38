import { z } from 'zod';
import { TimestampSchema } from './common.js';

/**
 * What a capacity source (docs/writing-a-provider.md) answers for one cluster:
 * how many replicas of the workload's pod shape the cluster can add now. The
 * engine uses an answer only to pass over a scale-out candidate that cannot add
 * the replicas it would need (docs/placement-rules.md §10.11, reason NoCapacity).
 */
export interface CapacityAnswer {
  /** The ClusterProfile `namespace/name`, as in a Signal. */
  readonly cluster: string;
  /** Replicas the cluster can add now; undefined when the source does not know. */
  readonly addableReplicas?: number;
  /** When the source answered (RFC 3339); older than `behavior.signalStaleAfterSeconds` is ignored. */
  readonly observedAt: string;
  /** Why, in a few words (e.g. `NodePool gpu: 3 GPUs left under spec.limits`). */
  readonly reason: string;
  /** The capacity source that answered (its name). */
  readonly source: string;
}

/** A CapacityAnswer in a decision input document (`mco decide -f`, `mco explain -f`). */
export const CapacityAnswerSchema = z.object({
  cluster: z.string().min(3).max(512).describe('ClusterProfile `namespace/name`.'),
  addableReplicas: z.number().int().min(0).optional().describe('Replicas the cluster can add now; absent: unknown.'),
  observedAt: TimestampSchema,
  reason: z.string().max(1024),
  source: z.string().max(253),
}) satisfies z.ZodType<CapacityAnswer>;

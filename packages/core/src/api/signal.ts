import { z } from 'zod';
import { TimestampSchema } from './common.js';

/**
 * One observation of the placed workload on one cluster (docs/placement-rules.md §5).
 * Every field but `cluster` and `observedAt` is optional: absent means unknown.
 */
export const SignalSchema = z.object({
  cluster: z.string().min(3).describe('ClusterProfile `namespace/name`.'),
  observedAt: TimestampSchema,
  hpa: z
    .object({
      currentReplicas: z.number().int().min(0).optional(),
      desiredReplicas: z.number().int().min(0).optional(),
      minReplicas: z.number().int().min(0).optional(),
      maxReplicas: z.number().int().min(0).optional(),
      scalingLimited: z
        .object({ status: z.enum(['True', 'False', 'Unknown']), reason: z.string().optional() })
        .optional(),
    })
    .optional(),
  pendingPods: z.number().int().min(0).optional(),
  failedScaleUp: z.boolean().optional(),
  nodeLimitReached: z
    .boolean()
    .optional()
    .describe(
      "true: the node autoscaler's report behind failedScaleUp is a size limit (a node group or NodePool at its maximum, a cluster-wide node or resource limit), which stays until someone raises it, not a failed or backed-off scale-up (a stockout), which passes. Fail-back reads it (rule F2). Absent: unknown.",
    ),
  workloadHealthy: z.boolean().optional(),
  atCapacityCeiling: z.boolean().optional(),
  wantsScaleIn: z.boolean().optional(),
  readyReplicas: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("The workload's ready replicas on this cluster (Deployment status.readyReplicas)."),
  reportsReadyReplicas: z
    .boolean()
    .optional()
    .describe(
      'false: the source of this signal never reports readyReplicas (a property of the source, not of this observation), so a drain steps on the clock without the ready-replica check of rule D1. true: it does, and a missing readyReplicas is doubt (the drain waits). Absent: a drain learns it: receivers that have sent no readyReplicas since the drain began count as a source that does not report them; once counted, a missing value is doubt.',
    ),
  transportError: z
    .object({
      reason: z.string().min(1).describe('What failed: refused, timeout, tls, dns, ...'),
      consecutivePolls: z.number().int().min(1).describe('Polls in a row that ended in a transport error.'),
    })
    .optional()
    .describe(
      'The source could not reach the cluster at all (connection refused, timeout, TLS): distinct from missing data.',
    ),
});
export type Signal = z.infer<typeof SignalSchema>;

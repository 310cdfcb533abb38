import { z } from 'zod';
import { ObjectMetaSchema } from './common.js';

export const PLACEMENT_DECISION_API_VERSION = 'multicluster.x-k8s.io/v1alpha1';
export const PLACEMENT_KEY_LABEL = 'multicluster.x-k8s.io/placement-key';
export const DECISION_KEY_LABEL = 'multicluster.x-k8s.io/decision-key';
export const DECISION_INDEX_LABEL = 'multicluster.x-k8s.io/decision-index';
export const MAX_DECISIONS_PER_SLICE = 100;

export const PlacementDecisionSchema = z.object({
  apiVersion: z.literal(PLACEMENT_DECISION_API_VERSION),
  kind: z.literal('PlacementDecision'),
  metadata: ObjectMetaSchema,
  schedulerName: z.string().optional(),
  decisions: z
    .array(
      z.object({
        clusterProfileRef: z.object({ name: z.string(), namespace: z.string().optional() }),
        reason: z.string().optional(),
      }),
    )
    .max(MAX_DECISIONS_PER_SLICE),
});
export type PlacementDecision = z.infer<typeof PlacementDecisionSchema>;

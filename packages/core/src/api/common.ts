import { z } from 'zod';

// RFC 3339 as the apiserver's date-time format admits it: `T`/`Z` in either
// case, optional fraction, `Z` or an offset.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** RFC 3339 timestamp as Kubernetes writes it, e.g. `2026-01-01T00:00:00Z`. */
export const TimestampSchema = z
  .string()
  .regex(RFC3339, 'expected an RFC 3339 timestamp such as 2026-01-01T00:00:00Z')
  .refine((value) => !Number.isNaN(Date.parse(value)), 'not a valid date')
  .meta({ format: 'date-time' });
export type Timestamp = z.infer<typeof TimestampSchema>;

export const ConditionStatusSchema = z.enum(['True', 'False', 'Unknown']);
export type ConditionStatus = z.infer<typeof ConditionStatusSchema>;

/** metav1.Condition. */
export const ConditionSchema = z.object({
  type: z.string().min(1).max(316),
  status: ConditionStatusSchema,
  reason: z.string().max(1024).optional(),
  message: z.string().max(32768).optional(),
  lastTransitionTime: TimestampSchema.optional(),
  observedGeneration: z.number().int().min(0).optional(),
});
export type Condition = z.infer<typeof ConditionSchema>;

/** The part of ObjectMeta the engine and its adapters read. Unknown fields are kept. */
export const ObjectMetaSchema = z.looseObject({
  name: z.string().min(1).max(253),
  namespace: z.string().max(63).optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().min(0).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  deletionTimestamp: TimestampSchema.optional(),
  creationTimestamp: TimestampSchema.optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;

/** `namespace/name`, the identity of a ClusterProfile everywhere in mco. */
export type ClusterKey = string;

export function clusterKey(namespace: string | undefined, name: string): ClusterKey {
  return `${namespace ?? ''}/${name}`;
}

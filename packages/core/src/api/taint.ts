import { z } from 'zod';
import { TimestampSchema } from './common.js';

/** The ClusterProfile annotation holding an operator's taints (docs/placement-rules.md §10.1): a JSON list of taints. */
export const TAINTS_ANNOTATION = 'mco.x-k8s.io/taints';

/** OCM's effects: not eligible; never added but a listed cluster stays; eligible but ordered last. */
export const TAINT_EFFECTS = ['NoSelect', 'NoSelectIfNew', 'PreferNoSelect'] as const;
export type TaintEffect = (typeof TAINT_EFFECTS)[number];

export const TaintSchema = z.object({
  key: z.string().min(1).max(316),
  value: z.string().max(256).optional(),
  effect: z.enum(TAINT_EFFECTS),
  /** Since when the taint applies; absent means since ever. Starts the clock of `tolerationSeconds`. */
  timeAdded: TimestampSchema.optional(),
});
export type Taint = z.infer<typeof TaintSchema>;
export const TaintListSchema = z.array(TaintSchema).max(64);

export const TOLERATION_OPERATORS = ['Equal', 'Exists'] as const;

// Operators and effects are plain strings, checked by the engine, so that a
// typo is reported as Valid=False naming the field, like selector operators.
export const TolerationSchema = z
  .object({
    key: z.string().max(316).optional().describe('The taint key; empty with operator Exists tolerates every taint.'),
    operator: z.string().max(8).optional().describe('Equal (default) or Exists.'),
    value: z.string().max(256).optional().describe('The taint value for operator Equal.'),
    effect: z
      .string()
      .max(16)
      .optional()
      .describe('NoSelect, NoSelectIfNew or PreferNoSelect; empty tolerates every effect.'),
    tolerationSeconds: z
      .number()
      .int()
      .min(0)
      .max(31_536_000)
      .optional()
      .describe('NoSelect only: tolerates the taint until its timeAdded plus this many seconds.'),
  })
  .describe('mco extension: tolerates ClusterProfile taints (annotation mco.x-k8s.io/taints).');
export type Toleration = z.infer<typeof TolerationSchema>;

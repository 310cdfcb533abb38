import { z } from 'zod';
import type { DecideInput } from '../decide.js';
import { CapacityAnswerSchema } from './capacity.js';
import { ClusterProfileSchema } from './cluster-profile.js';
import { ObjectMetaSchema, TimestampSchema } from './common.js';
import { PLACEMENT_API_VERSION, PLACEMENT_KIND, PlacementStatusSchema } from './placement.js';
import type { ClusterState, PlacementStatus } from './placement.js';
import { SignalSchema } from './signal.js';

/**
 * The input of `mco decide` (docs/placement-rules.md §9). The placement's spec is
 * checked by the engine itself: an invalid spec is reported in the status
 * conditions, not rejected here.
 */
export const DecisionInputSchema = z.object({
  now: TimestampSchema,
  placement: z.object({
    apiVersion: z.literal(PLACEMENT_API_VERSION).optional(),
    kind: z.literal(PLACEMENT_KIND).optional(),
    metadata: ObjectMetaSchema,
    spec: z.unknown().optional(),
    status: PlacementStatusSchema.optional(),
  }),
  clusterProfiles: z.array(ClusterProfileSchema).default([]),
  signals: z.array(SignalSchema).default([]),
  capacity: z.array(CapacityAnswerSchema).max(10_000).optional(),
});
export type DecisionInputDocument = z.infer<typeof DecisionInputSchema>;

/**
 * Checks a decision input document (YAML or JSON, as `mco decide -f` reads it)
 * and returns what `decide` and `explain` take: `now` becomes a Date (the
 * schema keeps it the RFC 3339 string of the document). Throws a ZodError
 * naming the field when the document is invalid.
 */
export function parseDecideInput(document: unknown): DecideInput {
  const { now, ...rest } = DecisionInputSchema.parse(document);
  return { ...rest, now: new Date(now) };
}

export const TRANSITION_IDS = ['P1', 'P2', 'P3', 'E1', 'E2', 'E3', 'H1', 'H2', 'H3', 'R1', 'R2', 'R3'] as const;
export type TransitionId = (typeof TRANSITION_IDS)[number];

/** One state change of one cluster, with the rule that made it and why. */
export interface Transition {
  /** ClusterProfile `namespace/name`. */
  readonly cluster: string;
  readonly id: TransitionId;
  /** null: the cluster was not listed. */
  readonly from: ClusterState | null;
  /** null: the cluster left the list. */
  readonly to: ClusterState | null;
  /** Human-readable reason. */
  readonly reason: string;
}

export interface Decision {
  readonly status: PlacementStatus;
  readonly transitions: readonly Transition[];
  /** Seconds until a timer could change the result, or null when only new input can. */
  readonly requeueAfterSeconds: number | null;
}

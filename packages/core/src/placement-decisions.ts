import {
  DECISION_INDEX_LABEL,
  DECISION_KEY_LABEL,
  MAX_DECISIONS_PER_SLICE,
  PLACEMENT_DECISION_API_VERSION,
  PLACEMENT_KEY_LABEL,
  type PlacementDecision,
} from './api/placement-decision.js';
import type { PlacementStatus } from './api/placement.js';

export const SCHEDULER_NAME = 'mco';

/**
 * The PlacementDecision slices of a placement (semantics.md section 8): every
 * listed cluster, at most 100 per slice, in status order so that an unchanged
 * status gives identical objects. `reason` carries the cluster's state.
 * Slices are named `<placement>-<index>`.
 */
export function buildPlacementDecisions(
  placement: { readonly metadata: { readonly name: string; readonly namespace?: string | undefined } },
  status: PlacementStatus | undefined,
): PlacementDecision[] {
  const { name, namespace } = placement.metadata;
  const clusters = status?.clusters ?? [];
  const sliceCount = Math.max(1, Math.ceil(clusters.length / MAX_DECISIONS_PER_SLICE));
  const slices: PlacementDecision[] = [];
  for (let index = 0; index < sliceCount; index++) {
    const labels: Record<string, string> = { [PLACEMENT_KEY_LABEL]: name };
    if (sliceCount > 1) {
      labels[DECISION_KEY_LABEL] = name;
      labels[DECISION_INDEX_LABEL] = String(index);
    }
    slices.push({
      apiVersion: PLACEMENT_DECISION_API_VERSION,
      kind: 'PlacementDecision',
      metadata: { name: placementDecisionName(name, index), ...(namespace ? { namespace } : {}), labels },
      schedulerName: SCHEDULER_NAME,
      decisions: clusters.slice(index * MAX_DECISIONS_PER_SLICE, (index + 1) * MAX_DECISIONS_PER_SLICE).map((c) => ({
        clusterProfileRef: { name: c.name, ...(c.namespace !== undefined ? { namespace: c.namespace } : {}) },
        reason: c.state,
      })),
    });
  }
  return slices;
}

/** `<placement>-<index>`, shortened with a stable suffix when the placement name is long. */
export function placementDecisionName(placementName: string, index: number): string {
  const suffix = `-${index}`;
  if (placementName.length + suffix.length <= 253) return placementName + suffix;
  return placementName.slice(0, 253 - suffix.length) + suffix;
}

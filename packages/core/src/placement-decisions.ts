import {
  DECISION_INDEX_LABEL,
  DECISION_KEY_LABEL,
  MAX_DECISIONS_PER_SLICE,
  PLACEMENT_DECISION_API_VERSION,
  PLACEMENT_KEY_LABEL,
  type PlacementDecision,
} from './api/placement-decision.js';
import type { PlacementCluster, PlacementStatus } from './api/placement.js';

export const SCHEDULER_NAME = 'mco';

/** What `buildPlacementDecisions` reads of the slices written before: their names and decisions. */
export interface PreviousSlice {
  readonly metadata: { readonly name: string };
  readonly decisions: readonly { readonly clusterProfileRef: { readonly name: string; readonly namespace?: string } }[];
}

/**
 * The PlacementDecision slices of a placement (docs/placement-rules.md §8): every
 * listed cluster, at most 100 per slice, `reason` carrying the cluster's state.
 * Slices are named `<placement>-<index>`. Without `previous`, the clusters are
 * sliced in status order; given the slices written before, a cluster stays in
 * the slice that holds it and a new one goes to the first slice with room, so
 * that one cluster in or out changes one slice, not every slice after it.
 * Either way an unchanged status gives identical objects.
 */
export function buildPlacementDecisions(
  placement: { readonly metadata: { readonly name: string; readonly namespace?: string | undefined } },
  status: PlacementStatus | undefined,
  previous: readonly PreviousSlice[] = [],
): PlacementDecision[] {
  const { name, namespace } = placement.metadata;
  const clusters = status?.clusters ?? [];
  const sliceCount = Math.max(1, Math.ceil(clusters.length / MAX_DECISIONS_PER_SLICE));
  const groups = sliceClusters(name, clusters, sliceCount, previous);
  const labelValue = placementLabelValue(name);
  return groups.map((group, index) => {
    const labels: Record<string, string> = { [PLACEMENT_KEY_LABEL]: labelValue };
    if (sliceCount > 1) {
      labels[DECISION_KEY_LABEL] = labelValue;
      labels[DECISION_INDEX_LABEL] = String(index);
    }
    return {
      apiVersion: PLACEMENT_DECISION_API_VERSION,
      kind: 'PlacementDecision',
      metadata: { name: placementDecisionName(name, index), ...(namespace ? { namespace } : {}), labels },
      schedulerName: SCHEDULER_NAME,
      decisions: group.map((c) => ({
        clusterProfileRef: { name: c.name, ...(c.namespace !== undefined ? { namespace: c.namespace } : {}) },
        reason: c.state,
      })),
    };
  });
}

/** `clusters` in `count` groups of at most 100: each where `previous` holds it if it fits, the rest in order. */
function sliceClusters(
  placementName: string,
  clusters: readonly PlacementCluster[],
  count: number,
  previous: readonly PreviousSlice[],
): PlacementCluster[][] {
  const keyOf = (c: { readonly name: string; readonly namespace?: string | undefined }) =>
    `${c.namespace ?? ''}/${c.name}`;
  const listed = new Map(clusters.map((c) => [keyOf(c), c]));
  const before = new Map(previous.map((slice) => [slice.metadata.name, slice.decisions]));
  const placed = new Set<string>();
  const groups: PlacementCluster[][] = [];
  for (let index = 0; index < count; index++) {
    const group: PlacementCluster[] = [];
    for (const { clusterProfileRef } of before.get(placementDecisionName(placementName, index)) ?? []) {
      const key = keyOf(clusterProfileRef);
      const cluster = listed.get(key);
      if (!cluster || placed.has(key) || group.length === MAX_DECISIONS_PER_SLICE) continue;
      group.push(cluster);
      placed.add(key);
    }
    groups.push(group);
  }
  // New clusters, and those of slices past the count, fill the first slices with room: the count leaves room for all.
  let index = 0;
  for (const cluster of clusters) {
    if (placed.has(keyOf(cluster))) continue;
    while (groups[index]!.length === MAX_DECISIONS_PER_SLICE) index++;
    groups[index]!.push(cluster);
  }
  return groups;
}

/** `<placement>-<index>`; a name too long for that is cut and made unique with a hash of the whole. */
export function placementDecisionName(placementName: string, index: number): string {
  const suffix = `-${index}`;
  if (placementName.length + suffix.length <= 253) return placementName + suffix;
  const hash = `-${shortHash(placementName)}`;
  return placementName.slice(0, 253 - hash.length - suffix.length) + hash + suffix;
}

/**
 * The placement-key label value: the placement's name, or, past a label's 63
 * characters, its first 52 and a hash of the whole (the API server would refuse
 * the longer value with 422 on every write). A name (DNS-1123 subdomain) is a
 * valid label value otherwise.
 */
export function placementLabelValue(placementName: string): string {
  if (placementName.length <= 63) return placementName;
  return `${placementName.slice(0, 52)}-${shortHash(placementName)}`;
}

/** 10 hex digits of two FNV-1a hashes: stable across versions and processes (no crypto in @mco/core). */
function shortHash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x01000193) >>> 0;
  }
  return (a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0')).slice(0, 10);
}

import {
  compilePlacementSpec,
  createInventory,
  selectClusters,
  type ClusterProfile,
  type Inventory,
  type PlacementStatus,
} from '@mco/core';
import { objectKey, type KubeObject } from '@mco/kube-runtime';

/** One ClusterProfile change: the object before and after (undefined when it was added or deleted). */
export interface ProfileChange {
  readonly before: KubeObject | undefined;
  readonly after: KubeObject | undefined;
}

/**
 * The placements a batch of ClusterProfile changes can change: those that
 * list a changed cluster, and those for which it was or becomes eligible
 * (its labels, taints and rules judged by the placement's own selection). A
 * cluster that is none of these for a placement takes no part in its decision
 * (docs/placement-rules.md §2), so only these are queued, at the front; the
 * periodic resync looks at the others. Cheap: each changed profile is a
 * one-cluster inventory, and each placement's selection is compiled once per
 * spec object.
 */
export function placementsAffectedBy(
  changes: readonly ProfileChange[],
  placements: Iterable<KubeObject>,
  nowMs: number,
): string[] {
  // Namespaces of each changed name: a placement's listed clusters are matched without building keys.
  const changed = new Map<string, Set<string>>();
  const inventories: Inventory[] = [];
  for (const { before, after } of changes) {
    const object = (after ?? before)!;
    const name = object.metadata?.name ?? '';
    const namespaces = changed.get(name) ?? new Set<string>();
    changed.set(name, namespaces.add(object.metadata?.namespace ?? ''));
    for (const profile of [before, after]) {
      if (!profile) continue;
      const inventory = createInventory([profile as unknown as ClusterProfile]);
      if (inventory.clusters.length > 0) inventories.push(inventory); // not one being deleted
    }
  }
  const affected: string[] = [];
  for (const placement of placements) {
    if (placement.metadata?.deletionTimestamp) continue;
    const compiled = compilePlacementSpec(placement.spec);
    // An invalid spec is decided without the inventory.
    if (!compiled.ok) continue;
    const clusters = (placement.status as PlacementStatus | undefined)?.clusters ?? [];
    if (
      clusters.some((c) => changed.get(c.name)?.has(c.namespace ?? '')) ||
      inventories.some(
        (inventory) => selectClusters(compiled.value.selection, inventory, undefined, nowMs).eligible.length > 0,
      )
    )
      affected.push(objectKey(placement));
  }
  return affected;
}

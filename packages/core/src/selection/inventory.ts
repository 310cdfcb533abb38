import type { ClusterProfile } from '../api/cluster-profile.js';
import { CONTROL_PLANE_HEALTHY } from '../api/cluster-profile.js';
import { clusterKey, type ClusterKey } from '../api/common.js';
import { parseQuantity, type Quantity } from './quantity.js';
import { parseTaints, type TaintsAnnotation } from './taints.js';

/** A ClusterProfile as the engine sees it, with what every evaluation reads precomputed. */
export interface InventoryCluster {
  readonly key: ClusterKey;
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The `ControlPlaneHealthy` condition: false only when it is `False`; unknown is undefined. */
  readonly controlPlaneHealthy: boolean | undefined;
  /** `status.properties` by name (the first of duplicates wins). */
  readonly properties: ReadonlyMap<string, ClusterProperty>;
  /** The `mco.x-k8s.io/taints` annotation, parsed once per snapshot. */
  readonly taints: TaintsAnnotation;
  readonly profile: ClusterProfile;
}

/** A property value; its quantity is parsed on first use and remembered for the snapshot. */
export class ClusterProperty {
  private parsed: Quantity | null | undefined;
  constructor(readonly value: string) {}
  /** The value as a Kubernetes quantity, or undefined when it is not one. */
  get quantity(): Quantity | undefined {
    if (this.parsed === undefined) this.parsed = parseQuantity(this.value) ?? null;
    return this.parsed ?? undefined;
  }
}

/**
 * The candidates of docs/placement-rules.md §2.1: ClusterProfiles not being deleted,
 * in `namespace/name` byte order. Build it once per snapshot and share it across
 * placements; it is immutable.
 */
export interface Inventory {
  readonly clusters: readonly InventoryCluster[];
  readonly byKey: ReadonlyMap<ClusterKey, InventoryCluster>;
  /**
   * ClusterProfiles with a deletionTimestamp: an intent to remove the cluster,
   * unlike a profile that is simply absent (docs/placement-rules.md §10.5).
   */
  readonly deleting: ReadonlySet<ClusterKey>;
}

const EMPTY_LABELS: Readonly<Record<string, string>> = Object.freeze({});
const NO_PROPERTIES: ReadonlyMap<string, ClusterProperty> = new Map();

function propertiesOf(profile: ClusterProfile): ReadonlyMap<string, ClusterProperty> {
  const list = profile.status?.properties;
  if (!list || list.length === 0) return NO_PROPERTIES;
  const map = new Map<string, ClusterProperty>();
  for (const { name, value } of list) if (!map.has(name)) map.set(name, new ClusterProperty(value));
  return map;
}

export function createInventory(profiles: readonly ClusterProfile[]): Inventory {
  const byKey = new Map<ClusterKey, InventoryCluster>();
  const deleting = new Set<ClusterKey>();
  for (const profile of profiles) {
    const { name, namespace = '', deletionTimestamp } = profile.metadata;
    const key = clusterKey(namespace, name);
    if (deletionTimestamp) {
      deleting.add(key);
      continue;
    }
    if (byKey.has(key)) continue; // a snapshot never holds two objects with one identity; keep the first
    const condition = profile.status?.conditions?.find((c) => c.type === CONTROL_PLANE_HEALTHY);
    byKey.set(key, {
      key,
      name,
      namespace,
      labels: profile.metadata.labels ?? EMPTY_LABELS,
      controlPlaneHealthy: condition?.status === 'False' ? false : condition?.status === 'True' ? true : undefined,
      properties: propertiesOf(profile),
      taints: parseTaints(profile.metadata.annotations),
      profile,
    });
  }
  const clusters = [...byKey.values()].sort(inventoryOrder);
  return { clusters, byKey, deleting };
}

/** An inventory's order: byte order of namespace/name (Kubernetes names are ASCII, where UTF-16 order is byte order). */
export function inventoryOrder(a: InventoryCluster, b: InventoryCluster): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

import type { ClusterProfile, Placement } from '@mco/core';

/**
 * What the plugin answers from: a cache of placements and ClusterProfiles.
 * `synced()` is false until every underlying informer has listed once, and
 * whenever the cache may be partial (a relist in progress, a stalled watch);
 * the plugin answers 503 then, never a list it is not sure of. `placement`
 * may throw an McoError (`Invalid`) for an object it cannot read (answered 500).
 */
export interface PlacementView {
  synced(): boolean;
  placement(namespace: string, name: string): Placement | undefined;
  clusterProfile(namespace: string, name: string): ClusterProfile | undefined;
}

/** A view over plain maps keyed `namespace/name`, for tests, benchmarks and `mco argocd-plugin --dry-run` style use. */
export interface StaticPlacementView extends PlacementView {
  setSynced(synced: boolean): void;
  setPlacement(placement: Placement): void;
  deletePlacement(namespace: string, name: string): void;
  setClusterProfile(profile: ClusterProfile): void;
  deleteClusterProfile(namespace: string, name: string): void;
}

export function createStaticPlacementView(
  init: { placements?: readonly Placement[]; clusterProfiles?: readonly ClusterProfile[]; synced?: boolean } = {},
): StaticPlacementView {
  const placements = new Map<string, Placement>();
  const profiles = new Map<string, ClusterProfile>();
  let isSynced = init.synced ?? true;
  const view: StaticPlacementView = {
    synced: () => isSynced,
    placement: (namespace, name) => placements.get(`${namespace}/${name}`),
    clusterProfile: (namespace, name) => profiles.get(`${namespace}/${name}`),
    setSynced: (synced) => void (isSynced = synced),
    setPlacement: (p) => void placements.set(`${p.metadata.namespace ?? ''}/${p.metadata.name}`, p),
    deletePlacement: (namespace, name) => void placements.delete(`${namespace}/${name}`),
    setClusterProfile: (p) => void profiles.set(`${p.metadata.namespace}/${p.metadata.name}`, p),
    deleteClusterProfile: (namespace, name) => void profiles.delete(`${namespace}/${name}`),
  };
  for (const p of init.placements ?? []) view.setPlacement(p);
  for (const p of init.clusterProfiles ?? []) view.setClusterProfile(p);
  return view;
}

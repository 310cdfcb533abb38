import type { ClusterProfile, Placement } from '@mco/core';
import type { PlacementView } from './view.js';

export type CacheEvent = 'add' | 'update' | 'delete';

/**
 * The part of an informer this package uses (`Informer` of @mco/controller
 * fits it): a synced cache keyed `namespace/name` with change handlers.
 */
export interface ObjectCache<T> {
  get(key: string): T | undefined;
  list(): T[];
  hasSynced(): boolean;
  addHandler(handler: (event: CacheEvent, object: T, previous: T | undefined) => void): void;
  /** When present, `lastActivityAt` (ms since the epoch of the last list, event or bookmark) bounds staleness. */
  health?(): { readonly lastActivityAt: number | undefined };
}

export interface CachedViewOptions {
  readonly placements: ObjectCache<Placement>;
  readonly clusterProfiles: ObjectCache<ClusterProfile>;
  /**
   * A cache whose watch has been silent for longer than this is treated as
   * partial (503) until it hears from the API server again. Set it above the
   * informer's own idle timeout, which relists first (default: unbounded).
   */
  readonly maxSilenceMs?: number;
  readonly now?: () => number;
}

/** A PlacementView over two informer caches: synced only when both are synced (and not silent for too long). */
export function createCachedPlacementView(options: CachedViewOptions): PlacementView {
  const now = options.now ?? Date.now;
  const fresh = (cache: ObjectCache<unknown>): boolean => {
    if (!cache.hasSynced()) return false;
    if (options.maxSilenceMs === undefined || !cache.health) return true;
    const last = cache.health().lastActivityAt;
    return last !== undefined && now() - last <= options.maxSilenceMs;
  };
  return {
    synced: () => fresh(options.placements) && fresh(options.clusterProfiles),
    placement: (namespace, name) => options.placements.get(`${namespace}/${name}`),
    clusterProfile: (namespace, name) => options.clusterProfiles.get(`${namespace}/${name}`),
  };
}

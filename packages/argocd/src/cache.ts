import { PlacementSchema, type ClusterProfile, type Placement } from '@mco/core';
import { McoError } from '@mco/runtime';
import type { PlacementView } from './view.js';

export type CacheEvent = 'add' | 'update' | 'delete';

/**
 * The part of an informer this package uses (`Informer` of @mco/kube-runtime
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

/** Synced, and (with `maxSilenceMs`) heard from the API server within that time. */
export function isFresh(
  cache: ObjectCache<unknown>,
  maxSilenceMs: number | undefined,
  now: () => number = Date.now,
): boolean {
  if (!cache.hasSynced()) return false;
  if (maxSilenceMs === undefined || !cache.health) return true;
  const last = cache.health().lastActivityAt;
  return last !== undefined && now() - last <= maxSilenceMs;
}

/** A PlacementView over two informer caches: synced only when both are synced (and not silent for too long). */
export function createCachedPlacementView(options: CachedViewOptions): PlacementView {
  const now = options.now ?? Date.now;
  const fresh = (cache: ObjectCache<unknown>) => isFresh(cache, options.maxSilenceMs, now);
  const check = createPlacementCheck();
  const validated = (raw: Placement): Placement => {
    const result = check(raw);
    if (result instanceof McoError) throw result;
    return result;
  };
  return {
    synced: () => fresh(options.placements) && fresh(options.clusterProfiles),
    placement: (namespace, name) => {
      const raw = options.placements.get(`${namespace}/${name}`);
      return raw && validated(raw);
    },
    clusterProfile: (namespace, name) => options.clusterProfiles.get(`${namespace}/${name}`),
  };
}

/**
 * Validates cached placements: informer caches hold objects as the API server
 * sent them, and a status written by someone else may not have the expected
 * shape. Each object is validated once (informers replace objects on change,
 * so identity is a good key); an invalid one yields McoError(Invalid).
 */
export function createPlacementCheck(): (raw: Placement) => Placement | McoError {
  const checked = new WeakMap<Placement, Placement | McoError>();
  return (raw) => {
    let result = checked.get(raw);
    if (!result) {
      const parsed = PlacementSchema.safeParse(raw);
      result = parsed.success ? raw : invalid(raw, parsed.error.issues[0]);
      checked.set(raw, result);
    }
    return result;
  };
}

function invalid(raw: Placement, issue: { path: readonly PropertyKey[]; message: string } | undefined): McoError {
  const path = (issue?.path ?? []).map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  return new McoError(
    'Invalid',
    `placement ${raw.metadata?.namespace}/${raw.metadata?.name} cannot be read: ${path.replace(/^\./, '') || '(root)'}: ${issue?.message ?? 'invalid'}`,
    false,
  );
}

import { DEFAULT_SPREAD_TOPOLOGY_KEY, type PlacementSpec, type Spread } from '../api/placement.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import type { InventoryCluster } from '../selection/inventory.js';
import type { Entry, Evaluation } from './evaluation.js';

/*
 * `spread` (rule O2, docs/placement-rules.md §10.7): clusters are grouped by
 * the label `spread.topologyKey`. Replacements and warm standbys are taken
 * outside the failing or active groups first (evaluation.ts `outside`), and
 * the clusters counted toward minClustersBelowCapacityCeiling span at least
 * `spread.minGroups` groups where the fleet allows it.
 */

/** Sets the run's grouping from the spec; without `spread`, today's: the region, one group. */
export function applySpread(run: Evaluation, spread: Spread | undefined): void {
  run.topologyKey = spread?.topologyKey ?? DEFAULT_SPREAD_TOPOLOGY_KEY;
  run.spreadMinGroups = spread?.minGroups ?? 1;
}

/** `spread.minGroups` above the minimum could never be met: each group needs a cluster counted toward it. */
export function checkSpread(spec: PlacementSpec): Result<void, SpecError> {
  const autoscale = spec.scaling?.autoscaleForCapacity;
  const groups = autoscale?.spread?.minGroups;
  if (!autoscale || groups === undefined || groups <= autoscale.minClustersBelowCapacityCeiling) return ok(undefined);
  return err({
    reason: 'InvalidSpread',
    field: 'spec.scaling.autoscaleForCapacity.spread.minGroups',
    message: `${groups} exceeds minClustersBelowCapacityCeiling (${autoscale.minClustersBelowCapacityCeiling}): each group needs a cluster counted toward the minimum`,
  });
}

function groupsOf(run: Evaluation, entries: readonly Entry[]): Set<string> {
  const groups = new Set<string>();
  for (const e of entries) {
    const group = run.regionOf(e.key);
    if (group !== undefined) groups.add(group);
  }
  return groups;
}

/** The groups the headroom clusters span, when fewer than `spread.minGroups`; else undefined. */
export function spreadShort(run: Evaluation, isHeadroom: (e: Entry) => boolean): Set<string> | undefined {
  if (run.spreadMinGroups <= 1) return undefined;
  const groups = groupsOf(run, run.live().filter(isHeadroom));
  return groups.size < run.spreadMinGroups ? groups : undefined;
}

/**
 * How a candidate adds a group not yet `covered`, for its P1 message; or
 * undefined, after noting why it is skipped for the spread.
 */
export function newGroupBecause(
  run: Evaluation,
  cluster: InventoryCluster,
  covered: ReadonlySet<string>,
): string | undefined {
  const group = run.regionOf(cluster.key);
  const wanted = `spread.minGroups ${run.spreadMinGroups}, ${covered.size} ${run.topologyKey} group(s) counted`;
  if (group !== undefined && !covered.has(group)) return ` in another ${run.topologyKey} group, ${group} (${wanted})`;
  run.note(
    cluster.key,
    `skipped for spread: ${group === undefined ? `no ${run.topologyKey} label` : `its group ${group} already counts`} (${wanted})`,
  );
  return undefined;
}

/** Why scale-in keeps `entry`: without it the headroom clusters would span fewer groups than `spread.minGroups`. */
export function keptForSpreadBecause(
  run: Evaluation,
  entry: Entry,
  isHeadroom: (e: Entry) => boolean,
): string | undefined {
  if (run.spreadMinGroups <= 1) return undefined;
  const headroom = run.live().filter(isHeadroom);
  const without = groupsOf(
    run,
    headroom.filter((e) => e !== entry),
  );
  if (without.size >= run.spreadMinGroups || without.size >= groupsOf(run, headroom).size) return undefined;
  return `without it the clusters counted toward the minimum would span ${without.size} ${run.topologyKey} group(s) < spread.minGroups ${run.spreadMinGroups}`;
}

import type { PropertySelectorRequirement, PropertySorter } from '../api/placement.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import type { InventoryCluster } from './inventory.js';
import type { ClusterMatcher } from './selectors.js';
import { compareQuantities, parseQuantity, type Quantity } from './quantity.js';

export const PROPERTY_OPERATORS = ['Eq', 'Ne', 'Gt', 'Ge', 'Lt', 'Le'] as const;
export const SORT_ORDERS = ['Ascending', 'Descending'] as const;

const selectorError = (field: string, message: string): SpecError => ({ reason: 'InvalidSelector', field, message });

/**
 * A `propertySelector` on ClusterProfile `status.properties` (docs/placement-rules.md §10.2).
 * Gt/Ge/Lt/Le compare Kubernetes quantities; a value that is not a quantity
 * matches none of them. Eq/Ne compare quantities when both sides are
 * quantities ("1Gi" Eq "1024Mi"), else the exact strings, so a non-numeric
 * property such as a GPU model can be selected too. A cluster without the
 * property matches only Ne.
 */
export function compilePropertySelector(
  requirement: PropertySelectorRequirement,
  path: string,
): Result<ClusterMatcher, SpecError> {
  const { name, operator } = requirement;
  if (!(PROPERTY_OPERATORS as readonly string[]).includes(operator)) {
    return err(
      selectorError(`${path}.operator`, `unknown operator "${operator}"; use ${PROPERTY_OPERATORS.join(', ')}`),
    );
  }
  if (requirement.values?.length !== 1) {
    return err(selectorError(`${path}.values`, `operator ${operator} needs exactly one value`));
  }
  const value = requirement.values[0]!;
  const wanted = parseQuantity(value);
  if (operator === 'Eq' || operator === 'Ne') {
    const equal = (c: InventoryCluster): boolean => {
      const property = c.properties.get(name);
      if (!property) return false;
      const q = wanted && property.quantity;
      return q ? compareQuantities(q, wanted!) === 0 : property.value === value;
    };
    return ok(operator === 'Eq' ? equal : (c) => !equal(c));
  }
  if (!wanted) {
    return err(selectorError(`${path}.values`, `operator ${operator} needs a Kubernetes quantity, not "${value}"`));
  }
  const accepts: (order: number) => boolean =
    operator === 'Gt'
      ? (o) => o > 0
      : operator === 'Ge'
        ? (o) => o >= 0
        : operator === 'Lt'
          ? (o) => o < 0
          : (o) => o <= 0;
  return ok((c) => {
    const q = c.properties.get(name)?.quantity;
    return q !== undefined && accepts(compareQuantities(q, wanted));
  });
}

export interface CompiledSorter {
  readonly weight: number;
  readonly name: string;
  readonly ascending: boolean;
}

export function compilePropertySorter(
  sorter: PropertySorter,
  weight: number,
  path: string,
): Result<CompiledSorter, SpecError> {
  if (!(SORT_ORDERS as readonly string[]).includes(sorter.sortOrder)) {
    return err(
      selectorError(`${path}.sortOrder`, `unknown sortOrder "${sorter.sortOrder}"; use Ascending or Descending`),
    );
  }
  return ok({ weight, name: sorter.name, ascending: sorter.sortOrder === 'Ascending' });
}

/**
 * Each cluster's share of a sorter's weight, in `clusters` order: the best
 * value gets `weight`, the worst 0, the others linearly in between; a cluster
 * without the property, or whose value is not a quantity, gets 0. When every
 * valued cluster has the same value, each of them is the best and gets `weight`.
 */
export function scoreBySorter(sorter: CompiledSorter, clusters: readonly InventoryCluster[]): Float64Array {
  const n = clusters.length;
  const scores = new Float64Array(n);
  const values = new Array<Quantity | undefined>(n);
  let best: Quantity | undefined;
  let worst: Quantity | undefined;
  const better = sorter.ascending ? -1 : 1;
  for (let i = 0; i < n; i++) {
    const q = clusters[i]!.properties.get(sorter.name)?.quantity;
    values[i] = q;
    if (!q) continue;
    if (!best || compareQuantities(q, best) === better) best = q;
    if (!worst || compareQuantities(q, worst) === -better) worst = q;
  }
  if (!best || !worst) return scores;
  const span = best.approximate - worst.approximate;
  for (let i = 0; i < n; i++) {
    const q = values[i];
    if (!q) continue;
    if (compareQuantities(q, best) === 0) scores[i] = sorter.weight;
    else if (compareQuantities(q, worst) !== 0) {
      // Exact ends above; in between a float ratio, kept inside (0, weight) even where floats round.
      const share = (q.approximate - worst.approximate) / span;
      scores[i] = Number.isFinite(share) ? Math.min(sorter.weight, Math.max(0, sorter.weight * share)) : 0;
    }
  }
  return scores;
}

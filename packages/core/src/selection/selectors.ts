import type { ClusterSelector, ClusterSelectorTerm } from '../api/placement.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import type { InventoryCluster } from './inventory.js';
import { compilePropertySelector } from './properties.js';

/** A label requirement `key In values`: a cluster without one of these values does not match. */
export interface LabelIn {
  readonly key: string;
  readonly values: readonly string[];
}

export type ClusterMatcher = ((cluster: InventoryCluster) => boolean) & {
  /**
   * For a selector whose every term has a `labelSelector` `In` requirement: per term (ORed), those
   * requirements (any one of them bounds the term). selectClusters looks the candidates up by label
   * instead of testing the whole fleet.
   */
  readonly labelIn?: readonly (readonly LabelIn[])[];
};

const OPERATORS = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);
const FIELDS: Record<string, (c: InventoryCluster) => string> = {
  'metadata.name': (c) => c.name,
  'metadata.namespace': (c) => c.namespace,
};

const selectorError = (field: string, message: string): SpecError => ({ reason: 'InvalidSelector', field, message });

/**
 * One requirement with Kubernetes label-selector meaning: `NotIn` and
 * `DoesNotExist` match a missing key.
 */
function compileRequirement(
  read: (c: InventoryCluster) => string | undefined,
  operator: string,
  values: readonly string[] | undefined,
  path: string,
): Result<ClusterMatcher, SpecError> {
  if (!OPERATORS.has(operator)) {
    return err(
      selectorError(`${path}.operator`, `unknown operator "${operator}"; use In, NotIn, Exists or DoesNotExist`),
    );
  }
  const count = values?.length ?? 0;
  if ((operator === 'In' || operator === 'NotIn') && count === 0) {
    return err(selectorError(`${path}.values`, `operator ${operator} needs at least one value`));
  }
  if ((operator === 'Exists' || operator === 'DoesNotExist') && count > 0) {
    return err(selectorError(`${path}.values`, `operator ${operator} takes no values`));
  }
  const set = new Set(values);
  const only = values?.length === 1 ? values[0] : undefined;
  switch (operator) {
    case 'In':
      if (only !== undefined) return ok((c) => read(c) === only);
      return ok((c) => {
        const v = read(c);
        return v !== undefined && set.has(v);
      });
    case 'NotIn':
      return ok((c) => {
        const v = read(c);
        return v === undefined || !set.has(v);
      });
    case 'Exists':
      return ok((c) => read(c) !== undefined);
    default:
      return ok((c) => read(c) === undefined);
  }
}

/** A term: its expressions ANDed; a term without expressions matches every cluster. */
export function compileTerm(term: ClusterSelectorTerm, path: string): Result<ClusterMatcher, SpecError> {
  const parts: ClusterMatcher[] = [];
  const labelIn: LabelIn[] = [];
  const expressions = term.matchExpressions ?? [];
  for (let i = 0; i < expressions.length; i++) {
    const expression = expressions[i]!;
    const at = `${path}.matchExpressions[${i}]`;
    if (!expression.labelSelector && !expression.fieldSelector && !expression.propertySelector) {
      return err(selectorError(at, 'an expression needs a labelSelector, a fieldSelector or a propertySelector'));
    }
    if (expression.labelSelector) {
      const { key, operator, values } = expression.labelSelector;
      // Own properties only: a key such as "constructor" or "toString" must not match through the prototype.
      const matcher = compileRequirement(
        (c) => (Object.hasOwn(c.labels, key) ? c.labels[key] : undefined),
        operator,
        values,
        `${at}.labelSelector`,
      );
      if (!matcher.ok) return matcher;
      parts.push(matcher.value);
      if (operator === 'In') labelIn.push({ key, values: values! });
    }
    if (expression.fieldSelector) {
      const { field, operator, values } = expression.fieldSelector;
      const read = Object.hasOwn(FIELDS, field) ? FIELDS[field] : undefined;
      if (!read) {
        return err(
          selectorError(
            `${at}.fieldSelector.field`,
            `unsupported field "${field}"; use metadata.name or metadata.namespace`,
          ),
        );
      }
      const matcher = compileRequirement(read, operator, values, `${at}.fieldSelector`);
      if (!matcher.ok) return matcher;
      parts.push(matcher.value);
    }
    if (expression.propertySelector) {
      const matcher = compilePropertySelector(expression.propertySelector, `${at}.propertySelector`);
      if (!matcher.ok) return matcher;
      parts.push(matcher.value);
    }
  }
  // With an In requirement, `all` returns a closure of this term's own: the hint may go on it.
  return ok(labelIn.length > 0 ? Object.assign(all(parts), { labelIn: [labelIn] }) : all(parts));
}

// Matchers run once per (placement, cluster): small arities avoid the loop.
function all(parts: ClusterMatcher[]): ClusterMatcher {
  if (parts.length === 0) return () => true;
  if (parts.length === 1) return parts[0]!;
  if (parts.length === 2) {
    const [a, b] = parts as [ClusterMatcher, ClusterMatcher];
    return (c) => a(c) && b(c);
  }
  return (c) => {
    for (const part of parts) if (!part(c)) return false;
    return true;
  };
}

/** A selector: its terms ORed; no terms match no cluster. */
export function compileClusterSelector(selector: ClusterSelector, path: string): Result<ClusterMatcher, SpecError> {
  const terms: ClusterMatcher[] = [];
  for (let i = 0; i < selector.clusterSelectorTerms.length; i++) {
    const term = compileTerm(selector.clusterSelectorTerms[i]!, `${path}.clusterSelectorTerms[${i}]`);
    if (!term.ok) return term;
    terms.push(term.value);
  }
  if (terms.length === 1) return ok(terms[0]!);
  const any = (c: InventoryCluster) => {
    for (const term of terms) if (term(c)) return true;
    return false;
  };
  const bounded = terms.length > 0 && terms.every((t) => t.labelIn);
  return ok(bounded ? Object.assign(any, { labelIn: terms.flatMap((t) => t.labelIn!) }) : any);
}

import type { ClusterSelectorRule } from '../api/placement.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import type { Inventory, InventoryCluster } from './inventory.js';
import { compileRe2 } from './regex.js';

/** A compiled v0.1 rule: consumes an ordered list, returns an ordered list. */
export type CompiledRule = (
  input: readonly InventoryCluster[],
  inventory: Inventory,
  report: RuleReport,
) => InventoryCluster[];

export interface RuleReport {
  /** `cluster-list` entries that name no candidate. */
  readonly unknownClusters: string[];
}

export const RULE_TYPES = ['all-clusters', 'cluster-list', 'cluster-name-regex'] as const;

function argument(rule: ClusterSelectorRule, name: string, path: string): Result<string, SpecError> {
  const value = rule.arguments?.[name];
  if (value === undefined || value.trim() === '') {
    return err({
      reason: 'InvalidRuleArgument',
      field: `${path}.arguments.${name}`,
      message: `rule ${rule.type} needs the argument "${name}"`,
    });
  }
  return ok(value);
}

export function compileRule(rule: ClusterSelectorRule, path: string): Result<CompiledRule, SpecError> {
  switch (rule.type) {
    case 'all-clusters':
      return ok((_input, inventory) => [...inventory.clusters]);
    case 'cluster-list': {
      const arg = argument(rule, 'clusters', path);
      if (!arg.ok) return arg;
      const names: string[] = [];
      for (const raw of arg.value.split(',')) {
        const name = raw.trim();
        if (name === '') continue;
        const slash = name.indexOf('/');
        if (slash <= 0 || slash === name.length - 1 || name.indexOf('/', slash + 1) !== -1) {
          return err({
            reason: 'InvalidRuleArgument',
            field: `${path}.arguments.clusters`,
            message: `"${name}" is not of the form namespace/name`,
          });
        }
        if (!names.includes(name)) names.push(name);
      }
      return ok((input, inventory, report) => {
        const present = new Map(input.map((c) => [c.key, c]));
        const out: InventoryCluster[] = [];
        for (const name of names) {
          const cluster = present.get(name);
          if (cluster) out.push(cluster);
          // Dropped by an earlier rule is not unknown: only names without a ClusterProfile are reported.
          else if (!inventory.byKey.has(name) && !report.unknownClusters.includes(name))
            report.unknownClusters.push(name);
        }
        return out;
      });
    }
    case 'cluster-name-regex': {
      const arg = argument(rule, 'regex', path);
      if (!arg.ok) return arg;
      const pattern = compileRe2(arg.value);
      if (!pattern.ok) {
        return err({ reason: 'InvalidRegex', field: `${path}.arguments.regex`, message: pattern.error });
      }
      const re = pattern.value;
      return ok((input) => input.filter((c) => re.test(c.key)));
    }
    default:
      return err({
        reason: 'UnknownRuleType',
        field: `${path}.type`,
        message: `unknown rule type "${rule.type}"; use ${RULE_TYPES.join(', ')}`,
      });
  }
}

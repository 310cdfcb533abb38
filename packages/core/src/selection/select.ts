import type { ClusterKey } from '../api/common.js';
import type { PlacementSpec } from '../api/placement.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import { inventoryOrder, type Inventory, type InventoryCluster } from './inventory.js';
import { compileRule, type CompiledRule } from './rules.js';
import { compilePropertySorter, scoreBySorter, type CompiledSorter } from './properties.js';
import { compileClusterSelector, compileTerm, type ClusterMatcher, type LabelIn } from './selectors.js';
import { compileTolerations, formatTaint, type TaintVerdict, type Tolerations } from './taints.js';

/** A placement's selection policy, compiled once per spec. */
export interface Selection {
  readonly rules: readonly CompiledRule[] | undefined;
  readonly required: ClusterMatcher | undefined;
  /** true with requiredDuringSchedulingRequiredDuringExecution: listed clusters that stop matching are evicted. */
  readonly requiredDuringExecution: boolean;
  readonly preferences: readonly { readonly weight: number; readonly match: ClusterMatcher }[];
  readonly sorters: readonly CompiledSorter[];
  readonly tolerations: Tolerations;
}

export function compileSelection(spec: PlacementSpec): Result<Selection, SpecError> {
  if (spec.clusterSelectorRules && spec.rules) {
    return err({
      reason: 'InvalidSpec',
      field: 'spec.rules',
      message: 'set either clusterSelectorRules or its alias rules, not both',
    });
  }
  const ruleSpecs = spec.clusterSelectorRules ?? spec.rules;
  const rulesField = spec.clusterSelectorRules ? 'spec.clusterSelectorRules' : 'spec.rules';
  let rules: CompiledRule[] | undefined;
  if (ruleSpecs && ruleSpecs.length > 0) {
    rules = [];
    for (let i = 0; i < ruleSpecs.length; i++) {
      const rule = compileRule(ruleSpecs[i]!, `${rulesField}[${i}]`);
      if (!rule.ok) return rule;
      rules.push(rule.value);
    }
  }

  const affinity = spec.affinity?.clusterAffinity;
  const base = 'spec.affinity.clusterAffinity';
  const rde = affinity?.requiredDuringSchedulingRequiredDuringExecution;
  const ide = affinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (rde && ide) {
    return err({
      reason: 'InvalidAffinity',
      field: base,
      message:
        'set only one of requiredDuringSchedulingRequiredDuringExecution and requiredDuringSchedulingIgnoredDuringExecution',
    });
  }
  let required: ClusterMatcher | undefined;
  if (rde || ide) {
    const path = `${base}.${rde ? 'requiredDuringSchedulingRequiredDuringExecution' : 'requiredDuringSchedulingIgnoredDuringExecution'}`;
    const matcher = compileClusterSelector((rde ?? ide)!, path);
    if (!matcher.ok) return matcher;
    required = matcher.value;
  }
  const preferences: { weight: number; match: ClusterMatcher }[] = [];
  const sorters: CompiledSorter[] = [];
  const preferred = affinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  for (let i = 0; i < preferred.length; i++) {
    const { weight, preference, propertySorter } = preferred[i]!;
    const at = `${base}.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
    if ((preference === undefined) === (propertySorter === undefined)) {
      return err({ reason: 'InvalidSelector', field: at, message: 'set exactly one of preference and propertySorter' });
    }
    if (propertySorter) {
      const sorter = compilePropertySorter(propertySorter, weight, `${at}.propertySorter`);
      if (!sorter.ok) return sorter;
      sorters.push(sorter.value);
      continue;
    }
    const term = compileTerm(preference!, `${at}.preference`);
    if (!term.ok) return term;
    preferences.push({ weight, match: term.value });
  }
  const tolerations = compileTolerations(spec.tolerations, 'spec.tolerations');
  if (!tolerations.ok) return tolerations;
  return ok({
    rules,
    required,
    requiredDuringExecution: rde !== undefined,
    preferences,
    sorters,
    tolerations: tolerations.value,
  });
}

export interface SelectionResult {
  /** The ordered eligible list: position is priority (earlier is preferred). */
  readonly eligible: readonly InventoryCluster[];
  /** Position of a cluster in `eligible`, or undefined when it is not eligible. */
  rankOf(key: ClusterKey): number | undefined;
  /** Whether a listed cluster may stay (docs/placement-rules.md §3, "no longer eligible"). */
  isStillEligible(key: ClusterKey): boolean;
  /** Why `isStillEligible` is false, for the transition's reason. */
  ineligibleBecause(key: ClusterKey): string;
  /** What the cluster's taints mean for this placement (docs/placement-rules.md §10.1). */
  taintsOf(key: ClusterKey): TaintVerdict;
  /** The earliest moment (ms) a time-limited toleration runs out, if any does. */
  readonly tolerationExpiresAt: number | undefined;
  readonly unknownClusters: readonly string[];
}

const NONE: readonly InventoryCluster[] = [];
/** Per inventory (immutable), per label key, the clusters of each value, in inventory order; built when first asked. */
const labelIndexes = new WeakMap<Inventory, Map<string, Map<string, InventoryCluster[]>>>();

function withLabel(inventory: Inventory, key: string, value: string): readonly InventoryCluster[] {
  let index = labelIndexes.get(inventory);
  if (!index) labelIndexes.set(inventory, (index = new Map()));
  let byValue = index.get(key);
  if (!byValue) {
    byValue = new Map();
    for (const c of inventory.clusters) {
      if (!Object.hasOwn(c.labels, key)) continue;
      const v = c.labels[key]!;
      const list = byValue.get(v);
      if (list) list.push(c);
      else byValue.set(v, [c]);
    }
    index.set(key, byValue);
  }
  return byValue.get(value) ?? NONE;
}

/**
 * The clusters a selector bounded by `In` requirements can match (a superset: the selector still
 * judges each), in inventory order: per term, those of its requirement with the fewest.
 */
function candidatesOf(inventory: Inventory, terms: readonly (readonly LabelIn[])[]): readonly InventoryCluster[] {
  const lists: (readonly InventoryCluster[])[] = [];
  for (const requirements of terms) {
    let best: (readonly InventoryCluster[])[] = [];
    let fewest = Infinity;
    for (const { key, values } of requirements) {
      const parts = values.map((v) => withLabel(inventory, key, v));
      const count = parts.reduce((n, p) => n + p.length, 0);
      if (count < fewest) [best, fewest] = [parts, count];
    }
    lists.push(...best);
  }
  const nonEmpty = lists.filter((l) => l.length > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? NONE;
  const union = [...new Set(nonEmpty.flat())];
  return union.sort(inventoryOrder);
}

/** Up to this many tracked clusters, each is looked up in the eligible list when its rank is asked. */
const FEW_TRACKED = 16;

const NO_TAINTS: TaintVerdict = Object.freeze({
  noSelect: undefined,
  noSelectIfNew: undefined,
  preferNoSelect: undefined,
  expiresAt: undefined,
});

/**
 * Applies a compiled selection to an inventory at `nowMs` (taints with
 * `tolerationSeconds` depend on it; without it such tolerations tolerate).
 * `tracked` names the clusters whose rank the caller will ask for (the listed
 * ones); without it every eligible cluster is ranked, which costs a map of the
 * whole list.
 */
export function selectClusters(
  selection: Selection,
  inventory: Inventory,
  tracked?: ReadonlySet<ClusterKey>,
  nowMs?: number,
): SelectionResult {
  // Most clusters carry no taints: only tainted ones are judged (memoised by
  // the tolerations unless a time limit makes the verdict depend on nowMs).
  let tolerationExpiresAt: number | undefined;
  const verdictOf = (cluster: InventoryCluster | undefined): TaintVerdict => {
    const taints = cluster?.taints.taints;
    if (!taints || taints.length === 0) return NO_TAINTS;
    const verdict = selection.tolerations.judge(taints, nowMs);
    const at = verdict.expiresAt;
    if (at !== undefined && (tolerationExpiresAt === undefined || at < tolerationExpiresAt)) tolerationExpiresAt = at;
    return verdict;
  };
  const report = { unknownClusters: [] as string[] };
  const required = selection.required;
  // Without v0.1 rules (which see the whole inventory), a selector bounded by label values looks its
  // candidates up instead of testing every cluster.
  let list: readonly InventoryCluster[] =
    !selection.rules && required?.labelIn ? candidatesOf(inventory, required.labelIn) : inventory.clusters;
  let ruleKeys: Set<ClusterKey> | undefined;
  if (selection.rules) {
    for (const rule of selection.rules) list = rule(list, inventory, report);
    ruleKeys = new Set(list.map((c) => c.key));
  }
  let eligible: readonly InventoryCluster[] = list.filter((c) => (!required || required(c)) && !verdictOf(c).noSelect);
  if (selection.preferences.length > 0 || selection.sorters.length > 0)
    eligible = sortByPreference(eligible, selection);
  // PreferNoSelect: after every cluster without such an untolerated taint, after preferences and sorters.
  if (eligible.some((c) => verdictOf(c).preferNoSelect)) {
    const first: InventoryCluster[] = [];
    const last: InventoryCluster[] = [];
    for (const c of eligible) (verdictOf(c).preferNoSelect ? last : first).push(c);
    eligible = first.concat(last);
  }

  // Ranks of many clusters (every eligible one, or a placement listing most of
  // the fleet) come from one map of the list. An autoscaling placement lists a
  // handful: finding each in the list when asked (a native scan) is cheaper
  // than a hash lookup per eligible cluster. Untracked keys (clusters added in
  // this evaluation) are found the same way. Either way a rank is remembered.
  const rank = new Map<ClusterKey, number>();
  const mapped = !tracked || tracked.size > FEW_TRACKED;
  if (mapped) {
    for (let i = 0; i < eligible.length; i++) {
      const key = eligible[i]!.key;
      if (!tracked || tracked.has(key)) rank.set(key, i);
    }
  }
  const rankOf = (key: ClusterKey): number | undefined => {
    if (mapped && (!tracked || tracked.has(key))) return rank.get(key);
    let r = rank.get(key);
    if (r === undefined) {
      const cluster = inventory.byKey.get(key);
      r = cluster ? eligible.indexOf(cluster) : -1;
      rank.set(key, r);
    }
    return r < 0 ? undefined : r;
  };
  const ineligibleBecause = (key: ClusterKey): string => {
    if (inventory.deleting.has(key)) return 'its ClusterProfile is being deleted';
    const cluster = inventory.byKey.get(key);
    if (!cluster) return 'its ClusterProfile is missing';
    // A NoSelect taint is an operator's explicit request to move away: it evicts
    // under IDE too, and it is named first so the reason says what to undo.
    const taint = verdictOf(cluster).noSelect;
    if (taint) return `the taint ${formatTaint(taint)} is not tolerated`;
    if (ruleKeys && !ruleKeys.has(key)) return 'it dropped out of the cluster selector rules';
    if (selection.requiredDuringExecution && required && !required(cluster)) {
      return 'it no longer matches requiredDuringSchedulingRequiredDuringExecution';
    }
    return '';
  };
  return {
    eligible,
    rankOf,
    isStillEligible: (key) => ineligibleBecause(key) === '',
    ineligibleBecause,
    taintsOf: (key) => verdictOf(inventory.byKey.get(key)),
    get tolerationExpiresAt() {
      return tolerationExpiresAt;
    },
    unknownClusters: report.unknownClusters,
  };
}

/**
 * The preference score of each cluster, in `clusters` order: the weights of
 * the matching preferences plus each sorter's share (docs/placement-rules.md §2.4, 10.2).
 */
export function preferenceScores(clusters: readonly InventoryCluster[], selection: Selection): Float64Array {
  const scores = new Float64Array(clusters.length);
  for (let i = 0; i < clusters.length; i++) {
    for (const p of selection.preferences) if (p.match(clusters[i]!)) scores[i]! += p.weight;
  }
  for (const sorter of selection.sorters) {
    const shares = scoreBySorter(sorter, clusters);
    for (let i = 0; i < clusters.length; i++) scores[i]! += shares[i]!;
  }
  return scores;
}

/**
 * Stable re-sort by preference score, highest first, as a counting sort: the
 * distinct scores are sorted natively (no comparator calls), each cluster
 * finds its score's bucket by binary search, and the buckets are laid out in
 * one array. With a property sorter nearly every score is distinct, where a
 * comparator sort or a Map of float keys cost several times more.
 */
function sortByPreference(clusters: readonly InventoryCluster[], selection: Selection): readonly InventoryCluster[] {
  const n = clusters.length;
  const scores = preferenceScores(clusters, selection);
  const distinct = new Float64Array(scores).sort();
  let d = 0;
  for (let i = 0; i < n; i++) if (i === 0 || distinct[i] !== distinct[d - 1]) distinct[d++] = distinct[i]!;
  if (d <= 1) return clusters;
  // bucket[i]: how many distinct scores are higher than cluster i's; start[b + 1] counts bucket b first.
  const bucket = new Uint32Array(n);
  const start = new Uint32Array(d + 1);
  for (let i = 0; i < n; i++) {
    const score = scores[i]!;
    let lo = 0;
    let hi = d - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (distinct[mid]! < score) lo = mid + 1;
      else hi = mid;
    }
    const b = d - 1 - lo;
    bucket[i] = b;
    start[b + 1]!++;
  }
  for (let b = 1; b < d; b++) start[b]! += start[b - 1]!;
  const sorted = new Array<InventoryCluster>(n);
  for (let i = 0; i < n; i++) sorted[start[bucket[i]!]!++] = clusters[i]!;
  return sorted;
}

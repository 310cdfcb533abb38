import type { ClusterProfile } from './api/cluster-profile.js';
import { clusterKey, type Condition } from './api/common.js';
import type { Decision, TransitionId } from './api/decision.js';
import type { ClusterSelector, ClusterState, PlacementSpec } from './api/placement.js';
import {
  CONDITION_SATISFIED,
  CONDITION_VALID,
  evaluatePlacement,
  type DecideInput,
  type EvaluationContext,
} from './decide.js';
import { capacityCeilingBecause, indexSignals, scaleInBecause, UNREACHABLE_AFTER_POLLS } from './scaling/signals.js';
import type { Inventory, InventoryCluster } from './selection/inventory.js';
import { preferenceScores } from './selection/select.js';
import { compileTerm } from './selection/selectors.js';
import { formatTaint } from './selection/taints.js';
import { formatTime, parseTime, SECOND } from './time.js';

/** One ClusterProfile (or listed cluster) seen through one evaluation (docs/placement-rules.md §10.4). */
export interface ClusterExplanation {
  /** `namespace/name`. */
  readonly cluster: string;
  readonly eligible: boolean;
  /** The first thing that excluded it: deletion, a rule, the required affinity, a taint. */
  readonly excludedBy?: string;
  /** 1-based position in the eligible list (the priority order). */
  readonly priority?: number;
  /** Sum of matching preference weights and sorter shares. */
  readonly score?: number;
  /** Its taints (`key=value:Effect`), each marked tolerated or not; or why the annotation is ignored. */
  readonly taints?: readonly string[];
  readonly signal: {
    /** `unreachable`: the source reports transport errors on 2 or more consecutive polls. */
    readonly status: 'fresh' | 'stale' | 'missing' | 'unreachable';
    readonly atCapacityCeiling: boolean;
    readonly wantsScaleIn: boolean;
    /** Why it is at its ceiling or wants scale-in, or why the signal is ignored. */
    readonly why?: string;
  };
  /** State before and after the evaluation; null when not listed. */
  readonly stateBefore: ClusterState | null;
  readonly state: ClusterState | null;
  /** The transitions the evaluation made for it, with their reasons. */
  readonly transitions: readonly { readonly id: TransitionId; readonly reason: string }[];
  /** Why the evaluation did not do more for it, and what waits for a timer. */
  readonly notes: readonly string[];
}

export interface Explanation {
  /** `namespace/name` of the placement. */
  readonly placement: string;
  readonly now: string;
  readonly valid: Pick<Condition, 'status' | 'reason' | 'message'> | undefined;
  readonly satisfied: Pick<Condition, 'status' | 'reason' | 'message'> | undefined;
  /** Placement-wide notes (e.g. scale-out waiting for its window). */
  readonly notes: readonly string[];
  /** Eligible clusters in priority order, then the others by `namespace/name`. */
  readonly clusters: readonly ClusterExplanation[];
  /** Exactly what `decide` returns for the same input. */
  readonly decision: Decision;
}

/**
 * Explains one evaluation: it runs the evaluation `decide` runs, listening to
 * why it did not do more, and describes every ClusterProfile of the input
 * (deleting ones included) and every listed cluster.
 */
export function explain(input: DecideInput): Explanation {
  const notes = new Map<string | undefined, string[]>();
  const { decision, context } = evaluatePlacement(input, (cluster, note) => {
    const list = notes.get(cluster);
    if (list) list.push(note);
    else notes.set(cluster, [note]);
  });
  const nowMs = Math.floor(input.now.getTime() / SECOND) * SECOND;
  const profiles: readonly ClusterProfile[] = Array.isArray(input.clusterProfiles)
    ? (input.clusterProfiles as readonly ClusterProfile[])
    : (input.clusterProfiles as Inventory).clusters.map((c) => c.profile);
  const before = new Map(
    (input.placement.status?.clusters ?? []).map((c) => [clusterKey(c.namespace, c.name), c.state] as const),
  );
  const after = new Map((decision.status.clusters ?? []).map((c) => [clusterKey(c.namespace, c.name), c.state]));
  const keys = new Set([
    ...profiles.map((p) => clusterKey(p.metadata.namespace, p.metadata.name)),
    ...before.keys(),
    ...after.keys(),
  ]);
  const deleting = new Set(
    profiles.filter((p) => p.metadata.deletionTimestamp).map((p) => clusterKey(p.metadata.namespace, p.metadata.name)),
  );
  const signals = indexSignals(input.signals ?? []);
  const staleAfter = context?.behavior.signalStaleAfterSeconds;
  const scores = context ? scoresByKey(context) : new Map<string, number>();
  const ranks = new Map(context?.selected.eligible.map((c, i) => [c.key, i]));

  const clusters: ClusterExplanation[] = [...keys].map((key) => {
    const cluster = context?.inventory.byKey.get(key);
    const rank = ranks.get(key) ?? -1;
    const eligible = rank >= 0;
    const signal = signals.get(key);
    const assessment = context?.assess(key);
    const observed = parseTime(signal?.observedAt) ?? nowMs;
    const transportError = assessment?.transportError;
    const status = !signal
      ? 'missing'
      : assessment?.fresh
        ? 'fresh'
        : assessment?.unreachable
          ? 'unreachable'
          : transportError
            ? 'missing'
            : 'stale';
    const why =
      status === 'fresh'
        ? [capacityCeilingBecause(signal!), scaleInBecause(signal!)].filter(Boolean).join('; ') || undefined
        : transportError
          ? `transport error (${transportError.reason}) on ${transportError.consecutivePolls} consecutive poll(s)${assessment?.unreachable ? ': unreachable' : `: unreachable after ${UNREACHABLE_AFTER_POLLS}`}`
          : status === 'stale'
            ? `observed ${Math.round((nowMs - observed) / SECOND)}s ago, stale after ${staleAfter ?? '?'}s: ignored`
            : undefined;
    const excludedBy = eligible
      ? undefined
      : deleting.has(key)
        ? 'its ClusterProfile is being deleted'
        : !context
          ? 'the spec is invalid'
          : !cluster
            ? 'no ClusterProfile'
            : exclusionOf(context, cluster);
    return {
      cluster: key,
      eligible,
      ...(excludedBy !== undefined ? { excludedBy } : {}),
      ...(eligible ? { priority: rank + 1, score: scores.get(key) ?? 0 } : {}),
      ...(cluster && context ? taintsOf(context, cluster) : {}),
      signal: {
        status,
        atCapacityCeiling: assessment?.atCapacityCeiling ?? false,
        wantsScaleIn: assessment?.wantsScaleIn ?? false,
        ...(why ? { why } : {}),
      },
      stateBefore: before.get(key) ?? null,
      state: after.get(key) ?? null,
      transitions: decision.transitions.filter((t) => t.cluster === key).map((t) => ({ id: t.id, reason: t.reason })),
      notes: [
        ...(!eligible && cluster && context?.selected.isStillEligible(key) && after.has(key)
          ? [
              'stays listed: requiredDuringSchedulingIgnoredDuringExecution does not evict a cluster that stops matching',
            ]
          : []),
        ...(notes.get(key) ?? []),
      ],
    };
  });
  const order = (c: ClusterExplanation) => c.priority ?? Infinity;
  clusters.sort((a, b) => order(a) - order(b) || (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
  const condition = (type: string) => {
    const c = decision.status.conditions?.find((x) => x.type === type);
    return c && { status: c.status, reason: c.reason, message: c.message };
  };
  return {
    placement: clusterKey(input.placement.metadata.namespace, input.placement.metadata.name),
    now: formatTime(nowMs),
    valid: condition(CONDITION_VALID),
    satisfied: condition(CONDITION_SATISFIED),
    notes: notes.get(undefined) ?? [],
    clusters,
    decision,
  };
}

function scoresByKey(context: EvaluationContext): Map<string, number> {
  const eligible = context.selected.eligible;
  const scores = preferenceScores(eligible, context.selection);
  return new Map(eligible.map((c, i) => [c.key, scores[i]!]));
}

function taintsOf(context: EvaluationContext, cluster: InventoryCluster): { taints?: string[] } {
  const { taints, error } = cluster.taints;
  if (error) return { taints: [`annotation ignored: ${error}`] };
  if (taints.length === 0) return {};
  const verdict = context.selected.taintsOf(cluster.key);
  const untolerated = new Set([verdict.noSelect, verdict.noSelectIfNew, verdict.preferNoSelect]);
  return { taints: taints.map((t) => `${formatTaint(t)} (${untolerated.has(t) ? 'not tolerated' : 'tolerated'})`) };
}

/**
 * The first step of the engine's selection that excluded a candidate, replayed
 * with the engine's own compiled rules and matchers: a rule, the required
 * affinity (naming the first failing expression of each term), a taint.
 */
function exclusionOf(context: EvaluationContext, cluster: InventoryCluster): string {
  const { selection, spec, inventory, selected } = context;
  if (selection.rules) {
    const ruleSpecs = spec.clusterSelectorRules ?? spec.rules ?? [];
    const field = spec.clusterSelectorRules ? 'spec.clusterSelectorRules' : 'spec.rules';
    let list: readonly InventoryCluster[] = inventory.clusters;
    for (let i = 0; i < selection.rules.length; i++) {
      list = selection.rules[i]!(list, inventory, { unknownClusters: [] });
      if (!list.includes(cluster)) return `${field}[${i}] (${ruleSpecs[i]?.type}) dropped it`;
    }
  }
  if (selection.required && !selection.required(cluster)) return requiredMismatch(spec, cluster);
  const taint = selected.taintsOf(cluster.key).noSelect;
  if (taint) return `the taint ${formatTaint(taint)} is not tolerated`;
  return 'not eligible';
}

function requiredMismatch(spec: PlacementSpec, cluster: InventoryCluster): string {
  const affinity = spec.affinity?.clusterAffinity;
  const rde = affinity?.requiredDuringSchedulingRequiredDuringExecution;
  const field = `spec.affinity.clusterAffinity.${rde ? 'requiredDuringSchedulingRequiredDuringExecution' : 'requiredDuringSchedulingIgnoredDuringExecution'}`;
  const selector: ClusterSelector = (rde ?? affinity?.requiredDuringSchedulingIgnoredDuringExecution)!;
  const terms = selector.clusterSelectorTerms;
  if (terms.length === 0) return `${field} has no terms: it matches no cluster`;
  const failures = terms.map((term, t) => {
    const expressions = term.matchExpressions ?? [];
    for (let e = 0; e < expressions.length; e++) {
      const at = `${field}.clusterSelectorTerms[${t}].matchExpressions[${e}]`;
      const matcher = compileTerm({ matchExpressions: [expressions[e]!] }, at);
      if (matcher.ok && !matcher.value(cluster)) return `${at} (${describeExpression(expressions[e]!, cluster)})`;
    }
    return `${field}.clusterSelectorTerms[${t}]`;
  });
  return `matches no term: ${failures.join('; ')}`;
}

type Expression = NonNullable<ClusterSelector['clusterSelectorTerms'][number]['matchExpressions']>[number];

/** The expression and what the cluster has, e.g. `gpu-count Ge 4; has 2`. */
function describeExpression(expression: Expression, cluster: InventoryCluster): string {
  const parts: string[] = [];
  const { labelSelector: l, fieldSelector: f, propertySelector: p } = expression;
  if (l)
    parts.push(
      `label ${l.key} ${l.operator} ${(l.values ?? []).join(',')}; has ${(Object.hasOwn(cluster.labels, l.key) ? cluster.labels[l.key] : undefined) ?? 'none'}`,
    );
  if (f) parts.push(`field ${f.field} ${f.operator} ${(f.values ?? []).join(',')}`);
  if (p)
    parts.push(
      `property ${p.name} ${p.operator} ${(p.values ?? []).join(',')}; has ${cluster.properties.get(p.name)?.value ?? 'none'}`,
    );
  return parts.join(', ').replace(/ ;/g, ';');
}

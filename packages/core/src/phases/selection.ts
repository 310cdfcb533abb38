import { PlacementSpecSchema, type PlacementSpec } from '../api/placement.js';
import { TAINTS_ANNOTATION } from '../api/taint.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import { checkFailBack } from '../scaling/fail-back.js';
import type { Inventory } from '../selection/inventory.js';
import { checkSpread } from './spread.js';
import { compileSelection, type Selection, type SelectionResult } from '../selection/select.js';

/*
 * The selection phase: the spec is parsed and its selection compiled (once
 * per spec object); `selectClusters` (selection/select.ts) then filters and
 * orders the fleet. Everything that makes a spec invalid is decided here.
 */

/** A spec that parsed and whose selection compiled, or why it is invalid. */
export type CompiledSpec = Result<{ readonly spec: PlacementSpec; readonly selection: Selection }, SpecError>;

// Informer caches hand the same spec object to every evaluation until it
// changes, so parsing and compiling are memoised per object (a pure function).
const compiledSpecs = new WeakMap<object, CompiledSpec>();

/**
 * Parses a placement's spec and compiles its selection, remembered per spec
 * object. `decide` reports an error as condition Valid=False; a controller can
 * call this to skip work (asking for signals) for an invalid spec.
 */
export function compilePlacementSpec(raw: unknown): CompiledSpec {
  const cacheable = typeof raw === 'object' && raw !== null;
  const hit = cacheable ? compiledSpecs.get(raw) : undefined;
  if (hit) return hit;
  const result = compileSpecUncached(raw);
  if (cacheable) compiledSpecs.set(raw, result);
  return result;
}

function compileSpecUncached(raw: unknown): CompiledSpec {
  const parsed = PlacementSpecSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = ['spec', ...issue.path.map(String)].join('.').replace(/\.(\d+)(?=\.|$)/g, '[$1]');
    return err({ reason: 'InvalidSpec', field, message: issue.message });
  }
  const workload = checkWorkloadNames(parsed.data);
  if (!workload.ok) return workload;
  const behavior = checkFailBack(parsed.data);
  if (!behavior.ok) return behavior;
  const spread = checkSpread(parsed.data);
  if (!spread.ok) return spread;
  const selection = compileSelection(parsed.data);
  return selection.ok ? ok({ spec: parsed.data, selection: selection.value }) : selection;
}

/**
 * What the engine ignored in its input, for the Valid condition: cluster-list
 * names without a ClusterProfile, and taints annotations of listed clusters
 * that do not parse (treated as no taints, so they never evict).
 */
export function inputWarnings(selected: SelectionResult, inventory: Inventory, listed: ReadonlySet<string>): string[] {
  const warnings: string[] = [];
  const unknown = selected.unknownClusters;
  if (unknown.length > 0)
    warnings.push(`cluster-list names clusters that are not ClusterProfiles: ${unknown.join(', ')}`);
  for (const key of [...listed].sort()) {
    const error = inventory.byKey.get(key)?.taints.error;
    if (error) warnings.push(`the ${TAINTS_ANNOTATION} annotation of ${key} is ignored: ${error}`);
  }
  return warnings;
}

// Kubernetes object names. They go into member-cluster API paths, so free text
// (e.g. "..", which a URL parser folds into a cluster-wide list) is refused. A
// semantic check, not a schema bound: the CRD stays as permissive as MCO's.
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `workloadDetails` names must be Kubernetes names: a DNS-1123 label (namespace) or subdomain (the others). */
function checkWorkloadNames(spec: PlacementSpec): Result<void, SpecError> {
  const details = spec.scaling?.autoscaleForCapacity?.workloadDetails;
  if (!details) return ok(undefined);
  const fields: [string, string | undefined, RegExp, number, string][] = [
    ['namespace', details.namespace, DNS1123_LABEL, 63, 'a DNS-1123 label (lowercase letters, digits and "-")'],
    [
      'deploymentName',
      details.deploymentName,
      DNS1123_SUBDOMAIN,
      253,
      'a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")',
    ],
    [
      'hpaName',
      details.hpaName,
      DNS1123_SUBDOMAIN,
      253,
      'a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")',
    ],
  ];
  for (const [field, value, pattern, max, what] of fields) {
    if (value === undefined || (value.length <= max && pattern.test(value))) continue;
    return err({
      reason: 'InvalidWorkloadName',
      field: `spec.scaling.autoscaleForCapacity.workloadDetails.${field}`,
      // The value is the tenant's own input; cut so a long one cannot flood the status.
      message: `${JSON.stringify(value.slice(0, 80))}${value.length > 80 ? '…' : ''} must be ${what}, at most ${max} characters`,
    });
  }
  return ok(undefined);
}

/**
 * The error when a placement names a workload outside its own namespace: on a
 * shared hub that would let a tenant observe (and, through signals, steer)
 * another team's workload with mco's member identity.
 */
export function crossNamespaceWorkload(
  spec: PlacementSpec,
  placementNamespace: string | undefined,
): SpecError | undefined {
  const workload = spec.scaling?.autoscaleForCapacity?.workloadDetails?.namespace;
  if (workload === undefined || workload === placementNamespace) return undefined;
  return {
    reason: 'CrossNamespaceWorkload',
    field: 'spec.scaling.autoscaleForCapacity.workloadDetails.namespace',
    message: `"${workload}" is not the placement's namespace "${placementNamespace ?? ''}"; a placement may only name a workload in its own namespace`,
  };
}

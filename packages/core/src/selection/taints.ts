import {
  TAINT_EFFECTS,
  TAINTS_ANNOTATION,
  TaintListSchema,
  TOLERATION_OPERATORS,
  type Taint,
  type Toleration,
} from '../api/taint.js';
import { err, ok, type Result, type SpecError } from '../result.js';
import { parseTime, SECOND } from '../time.js';

/** A ClusterProfile's taints, or why its annotation was ignored. */
export interface TaintsAnnotation {
  readonly taints: readonly ParsedTaint[];
  /** Set when the annotation does not parse: it is then treated as no taints (it never evicts). */
  readonly error: string | undefined;
}

export interface ParsedTaint extends Taint {
  /** `timeAdded` in ms; -Infinity when absent ("since ever"). */
  readonly addedMs: number;
}

const NONE: TaintsAnnotation = Object.freeze({ taints: [], error: undefined });

export function parseTaints(annotations: Readonly<Record<string, string>> | undefined): TaintsAnnotation {
  const text = annotations?.[TAINTS_ANNOTATION];
  if (text === undefined || text.trim() === '') return NONE;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { taints: [], error: `not JSON (${(error as Error).message})` };
  }
  const parsed = TaintListSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
    return { taints: [], error: `${at || 'the list'}: ${issue.message}` };
  }
  return { taints: parsed.data.map((t) => ({ ...t, addedMs: parseTime(t.timeAdded) ?? -Infinity })), error: undefined };
}

/** `key=value:Effect`, the way kubectl prints a taint. */
export function formatTaint(taint: Pick<Taint, 'key' | 'value' | 'effect'>): string {
  return `${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect}`;
}

interface CompiledToleration {
  readonly key: string;
  readonly exists: boolean;
  readonly value: string;
  readonly effect: string;
  readonly seconds: number | undefined;
}

/** What a cluster's taints mean for one placement at one moment. */
export interface TaintVerdict {
  /** The first untolerated NoSelect taint: the cluster is not eligible, and a listed one is evicted. */
  readonly noSelect: ParsedTaint | undefined;
  /** The first untolerated NoSelectIfNew taint: the cluster is never added. */
  readonly noSelectIfNew: ParsedTaint | undefined;
  /** The first untolerated PreferNoSelect taint: the cluster is ordered last. */
  readonly preferNoSelect: ParsedTaint | undefined;
  /** When a time-limited toleration in force now runs out (ms), if one does. */
  readonly expiresAt: number | undefined;
}

const CLEAN: TaintVerdict = Object.freeze({
  noSelect: undefined,
  noSelectIfNew: undefined,
  preferNoSelect: undefined,
  expiresAt: undefined,
});

export interface Tolerations {
  /**
   * Judges a cluster's taints at `nowMs`. Without a time, a time-limited
   * toleration counts as tolerating (there is no clock to run it out).
   */
  judge(taints: readonly ParsedTaint[], nowMs: number | undefined): TaintVerdict;
}

const spec = (field: string, message: string): SpecError => ({ reason: 'InvalidToleration', field, message });

/** Compiles `spec.tolerations` with Kubernetes toleration matching. */
export function compileTolerations(
  list: readonly Toleration[] | undefined,
  path: string,
): Result<Tolerations, SpecError> {
  if (!list || list.length === 0) return ok(NO_TOLERATIONS);
  const compiled: CompiledToleration[] = [];
  for (let i = 0; i < list.length; i++) {
    const t = list[i]!;
    const at = `${path}[${i}]`;
    const operator = t.operator || 'Equal';
    if (!(TOLERATION_OPERATORS as readonly string[]).includes(operator)) {
      return err(spec(`${at}.operator`, `unknown operator "${operator}"; use Equal or Exists`));
    }
    const effect = t.effect ?? '';
    if (effect !== '' && !(TAINT_EFFECTS as readonly string[]).includes(effect)) {
      return err(spec(`${at}.effect`, `unknown effect "${effect}"; use ${TAINT_EFFECTS.join(', ')} or leave it empty`));
    }
    if (operator === 'Exists' && t.value) {
      return err(spec(`${at}.value`, 'operator Exists takes no value'));
    }
    if (operator === 'Equal' && !t.key) {
      return err(spec(`${at}.key`, 'an empty key needs operator Exists'));
    }
    compiled.push({
      key: t.key ?? '',
      exists: operator === 'Exists',
      value: t.value ?? '',
      effect,
      seconds: t.tolerationSeconds,
    });
  }
  return ok(tolerationsOf(compiled));
}

/**
 * Judging is memoised per taint list (one per ClusterProfile and snapshot:
 * the inventory parses the annotation once) unless a toleration is
 * time-limited, when the verdict depends on the time. Every evaluation asks
 * again for the same tainted clusters, so this saves a verdict per cluster
 * per evaluation.
 */
function tolerationsOf(compiled: readonly CompiledToleration[]): Tolerations {
  if (compiled.some((t) => t.seconds !== undefined)) {
    return { judge: (taints, nowMs) => (taints.length === 0 ? CLEAN : judge(compiled, taints, nowMs)) };
  }
  const verdicts = new WeakMap<readonly ParsedTaint[], TaintVerdict>();
  return {
    judge: (taints) => {
      if (taints.length === 0) return CLEAN;
      let verdict = verdicts.get(taints);
      if (!verdict) verdicts.set(taints, (verdict = judge(compiled, taints, undefined)));
      return verdict;
    },
  };
}

// Most placements tolerate nothing: they share one memo of verdicts.
const NO_TOLERATIONS = tolerationsOf([]);

function matches(t: CompiledToleration, taint: ParsedTaint): boolean {
  if (t.effect !== '' && t.effect !== taint.effect) return false;
  if (t.key === '') return t.exists; // an empty key with Exists tolerates everything
  if (t.key !== taint.key) return false;
  return t.exists || t.value === (taint.value ?? '');
}

/**
 * Until when the tolerations tolerate a taint: Infinity, or (NoSelect with
 * tolerationSeconds) timeAdded + the smallest tolerationSeconds among the
 * matching tolerations, as Kubernetes' taint manager does; undefined when none matches.
 */
function toleratedUntil(tolerations: readonly CompiledToleration[], taint: ParsedTaint): number | undefined {
  let until: number | undefined;
  let seconds = Infinity;
  for (const t of tolerations) {
    if (!matches(t, taint)) continue;
    until = Infinity;
    if (t.seconds !== undefined) seconds = Math.min(seconds, t.seconds);
  }
  if (until === undefined || taint.effect !== 'NoSelect' || seconds === Infinity) return until;
  return taint.addedMs + seconds * SECOND;
}

function judge(
  tolerations: readonly CompiledToleration[],
  taints: readonly ParsedTaint[],
  nowMs: number | undefined,
): TaintVerdict {
  let noSelect: ParsedTaint | undefined;
  let noSelectIfNew: ParsedTaint | undefined;
  let preferNoSelect: ParsedTaint | undefined;
  let expiresAt: number | undefined;
  for (const taint of taints) {
    const until = toleratedUntil(tolerations, taint);
    const tolerated = until !== undefined && (nowMs === undefined || nowMs < until);
    if (tolerated) {
      if (until !== Infinity && (expiresAt === undefined || until < expiresAt)) expiresAt = until;
    } else if (taint.effect === 'NoSelect') noSelect ??= taint;
    else if (taint.effect === 'NoSelectIfNew') noSelectIfNew ??= taint;
    else if (taint.effect === 'PreferNoSelect') preferNoSelect ??= taint;
  }
  return { noSelect, noSelectIfNew, preferNoSelect, expiresAt };
}

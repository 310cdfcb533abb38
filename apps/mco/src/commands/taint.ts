import {
  CLUSTER_PROFILE_API_VERSION,
  formatTaint,
  parseTaints,
  TAINT_EFFECTS,
  TAINTS_ANNOTATION,
  type ClusterProfile,
  type Taint,
  type TaintEffect,
} from '@mco/core';
import { CLUSTER_PROFILES, objectPath, type KubeClient } from '@mco/kube-runtime';
import { UsageError } from '../cli.js';

/**
 * The field manager of `mco clusters taint|cordon|uncordon|drain`: it owns only
 * the taints annotation, so a provider's server-side apply of the profile never
 * removes it, and it never touches what providers own.
 */
export const TAINT_FIELD_MANAGER = 'mco-clusters-taint';
/** The taints `cordon` and `drain` set, and `uncordon` removes. */
export const CORDON_TAINT: Taint = { key: 'mco.x-k8s.io/cordoned', effect: 'NoSelectIfNew' };
export const DRAIN_TAINT: Taint = { key: 'mco.x-k8s.io/drained', effect: 'NoSelect' };

/** One kubectl-like taint argument: `KEY[=VALUE]:EFFECT` adds, `KEY[:EFFECT]-` removes. */
export type TaintChange =
  { readonly add: Taint } | { readonly remove: { readonly key: string; readonly effect: TaintEffect | undefined } };

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

export function parseTaintChange(text: string): TaintChange {
  const effectOf = (effect: string): TaintEffect => {
    if (!(TAINT_EFFECTS as readonly string[]).includes(effect)) {
      throw new UsageError(`taint "${text}": unknown effect "${effect}"; use ${TAINT_EFFECTS.join(', ')}`);
    }
    return effect as TaintEffect;
  };
  const checkKey = (key: string) => {
    if (!KEY.test(key) || key.length > 316) throw new UsageError(`taint "${text}": "${key}" is not a valid key`);
  };
  if (text.endsWith('-')) {
    const [key, effect, extra] = text.slice(0, -1).split(':');
    if (extra !== undefined || key === undefined) throw new UsageError(`taint "${text}": expected KEY[:EFFECT]-`);
    checkKey(key);
    return { remove: { key, effect: effect === undefined ? undefined : effectOf(effect) } };
  }
  const colon = text.lastIndexOf(':');
  if (colon < 0) throw new UsageError(`taint "${text}": expected KEY[=VALUE]:EFFECT or KEY[:EFFECT]-`);
  const [key, value] = text.slice(0, colon).split(/=(.*)/s) as [string, string | undefined];
  checkKey(key);
  if (value !== undefined && value.length > 256) throw new UsageError(`taint "${text}": the value is too long`);
  return { add: { key, ...(value ? { value } : {}), effect: effectOf(text.slice(colon + 1)) } };
}

/**
 * Applies changes to a taint list like kubectl: a taint is identified by key
 * and effect; adding one that exists with another value needs `overwrite`;
 * new taints get `timeAdded` (the start of `tolerationSeconds`); removing one
 * that is not there is an error.
 */
export function changeTaints(
  current: readonly Taint[],
  changes: readonly TaintChange[],
  now: Date,
  overwrite: boolean,
): Taint[] {
  let taints = [...current];
  const timeAdded = new Date(Math.floor(now.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  for (const change of changes) {
    if ('add' in change) {
      const { add } = change;
      const i = taints.findIndex((t) => t.key === add.key && t.effect === add.effect);
      if (i < 0) taints.push({ ...add, timeAdded });
      else if ((taints[i]!.value ?? '') !== (add.value ?? '')) {
        if (!overwrite) {
          throw new UsageError(`taint ${formatTaint(taints[i]!)} exists with another value; use --overwrite`);
        }
        taints[i] = { ...add, timeAdded };
      }
    } else {
      const { key, effect } = change.remove;
      const kept = taints.filter((t) => t.key !== key || (effect !== undefined && t.effect !== effect));
      if (kept.length === taints.length) throw new UsageError(`taint ${key}${effect ? `:${effect}` : ''} not found`);
      taints = kept;
    }
  }
  return taints;
}

export interface TaintResult {
  readonly key: string;
  readonly before: readonly Taint[];
  readonly after: readonly Taint[];
}

/**
 * Reads the profile, changes its taints and writes back only the annotation,
 * by server-side apply with its own field manager. The apply carries the
 * resourceVersion it read, so a concurrent change is a conflict, not lost.
 */
export async function updateTaints(
  hub: KubeClient,
  namespace: string,
  name: string,
  change: (current: readonly Taint[]) => Taint[],
): Promise<TaintResult> {
  const path = objectPath(CLUSTER_PROFILES, namespace, name);
  const profile = await hub.get<ClusterProfile>(path);
  const parsed = parseTaints(profile.metadata.annotations);
  if (parsed.error) {
    throw new UsageError(
      `the ${TAINTS_ANNOTATION} annotation of ${namespace}/${name} does not parse (${parsed.error}); fix or remove it with kubectl annotate`,
    );
  }
  const before = parsed.taints.map(({ addedMs: _addedMs, ...t }) => t);
  const after = change(before);
  const unchanged = JSON.stringify(before) === JSON.stringify(after);
  if (after.length === 0) {
    // Removing the annotation whoever wrote it (an apply only drops fields its own manager owned).
    if (profile.metadata.annotations?.[TAINTS_ANNOTATION] !== undefined) {
      await hub.patch(
        path,
        'merge',
        { metadata: { resourceVersion: profile.metadata.resourceVersion, annotations: { [TAINTS_ANNOTATION]: null } } },
        { query: { fieldManager: TAINT_FIELD_MANAGER } },
      );
    }
  } else if (!unchanged) {
    const body = {
      apiVersion: CLUSTER_PROFILE_API_VERSION,
      kind: 'ClusterProfile',
      metadata: {
        name,
        namespace,
        resourceVersion: profile.metadata.resourceVersion,
        annotations: { [TAINTS_ANNOTATION]: JSON.stringify(after) },
      },
    };
    await hub.patch(path, 'apply', body, { query: { fieldManager: TAINT_FIELD_MANAGER, force: true } });
  }
  return { key: `${namespace}/${name}`, before, after };
}

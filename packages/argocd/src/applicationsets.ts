import { PLACEMENT_NAME_PARAMETER, PLACEMENT_NAMESPACE_PARAMETER } from './parameters.js';

/** Argo CD re-runs an ApplicationSet's generators at once when this annotation is "true" (and then removes it). */
export const REFRESH_ANNOTATION = 'argocd.argoproj.io/application-set-refresh';

export const APPLICATION_SETS = { group: 'argoproj.io', version: 'v1alpha1', plural: 'applicationsets' } as const;

/** The part of an ApplicationSet this package reads. */
export interface ApplicationSetLike {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec?: { readonly generators?: readonly unknown[] };
}

/** Deepest generator nesting Argo CD allows is two levels; a little more costs nothing. */
const MAX_DEPTH = 4;

/**
 * The placements (`namespace/name`) an ApplicationSet's plugin generators ask
 * mco about, including plugin generators nested in matrix and merge
 * generators. A plugin generator is recognised by its input parameters
 * (MCO's names), whatever its ConfigMap is called.
 */
export function placementsOf(appSet: ApplicationSetLike): string[] {
  const found = new Set<string>();
  const visit = (generators: unknown, depth: number) => {
    if (!Array.isArray(generators) || depth > MAX_DEPTH) return;
    for (const generator of generators) {
      if (!isObject(generator)) continue;
      const parameters = field(field(generator.plugin, 'input'), 'parameters');
      const name = field(parameters, PLACEMENT_NAME_PARAMETER);
      const namespace = field(parameters, PLACEMENT_NAMESPACE_PARAMETER);
      if (typeof name === 'string' && typeof namespace === 'string') found.add(`${namespace}/${name}`);
      for (const combinator of ['matrix', 'merge']) visit(field(generator[combinator], 'generators'), depth + 1);
    }
  };
  visit(appSet.spec?.generators, 0);
  return [...found].sort();
}

function field(value: unknown, key: string): unknown {
  return isObject(value) ? value[key] : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

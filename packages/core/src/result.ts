/** An expected outcome as a value (like zod's safeParse): no exceptions for bad input. */
export type Result<T, E> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: E };

export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });
export const err = <E>(error: E): Result<never, E> => ({ ok: false, error });

/** Why a spec cannot be evaluated: a PascalCase reason, the field at fault and a message. */
export interface SpecError {
  readonly reason:
    | 'InvalidSpec'
    | 'InvalidRegex'
    | 'UnknownRuleType'
    | 'InvalidRuleArgument'
    | 'InvalidSelector'
    | 'InvalidAffinity'
    | 'InvalidToleration'
    | 'InvalidBehavior'
    | 'InvalidWorkloadName'
    | 'InvalidSpread'
    | 'CrossNamespaceWorkload';
  /** Path of the offending field, e.g. `spec.clusterSelectorRules[1].arguments.regex`. */
  readonly field: string;
  readonly message: string;
}

import type { Condition } from './api/common.js';

/**
 * Sets a condition the Kubernetes way: `lastTransitionTime` changes only when
 * the status does. Other conditions are kept, in order.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: Omit<Condition, 'lastTransitionTime' | 'observedGeneration'> & { observedGeneration?: number | undefined },
  now: string,
): Condition[] {
  const list = conditions ? [...conditions] : [];
  const index = list.findIndex((c) => c.type === next.type);
  const previous = index >= 0 ? list[index] : undefined;
  const condition: Condition = {
    type: next.type,
    status: next.status,
    ...(next.reason !== undefined ? { reason: next.reason } : {}),
    ...(next.message !== undefined ? { message: next.message } : {}),
    lastTransitionTime:
      previous && previous.status === next.status && previous.lastTransitionTime ? previous.lastTransitionTime : now,
    ...(next.observedGeneration !== undefined ? { observedGeneration: next.observedGeneration } : {}),
  };
  if (index >= 0) list[index] = condition;
  else list.push(condition);
  return list;
}

export const CONDITION_VALID = 'Valid';
export const CONDITION_SATISFIED = 'Satisfied';

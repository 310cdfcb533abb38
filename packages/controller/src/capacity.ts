import {
  CapacityAnswerSchema,
  clusterKey,
  selectClusters,
  type CapacityAnswer,
  type CompiledSpec,
  type Inventory,
  type PlacementStatus,
} from '@mco/core';
import type { CapacityRequest, CapacitySource, SignalError } from '@mco/runtime';

/** What asking the capacity sources about one placement needs; the controller and `mco explain` share it. */
export interface CapacityQuestion {
  /** The configured capacity sources by instance name. */
  readonly sources: ReadonlyMap<string, CapacitySource>;
  /** Per source, the placement namespaces that may use it; absent from the map: every namespace. */
  readonly sourceNamespaces?: ReadonlyMap<string, readonly string[]>;
  /** How many scale-out candidates, in the engine's order, are asked about (default 3). */
  readonly candidates?: number;
  readonly placement: { readonly namespace: string; readonly name: string };
  readonly status: PlacementStatus;
  readonly compiled: Extract<CompiledSpec, { ok: true }>['value'];
  readonly inventory: Inventory;
  readonly now: Date;
  readonly timeoutMs: number;
  readonly abort?: AbortSignal;
  /** Told what each source could not answer; the answers it did give still count. */
  readonly report?: CapacityReport;
}

/** Hooks for logging and metrics: a failed source, per-cluster errors (also when there are none), a dropped answer. */
export interface CapacityReport {
  failed(source: string, error: unknown): void;
  errors(source: string, errors: readonly SignalError[]): void;
  invalid(source: string, answer: CapacityAnswer): void;
}

/**
 * Asks every capacity source serving the placement's namespace about its next
 * scale-out candidates (eligible, not listed, in the engine's order), with
 * the listed clusters where its workload runs. A source that fails or misses
 * the deadline costs only its own answers: the engine then keeps today's order.
 * Undefined when no source serves the placement or there is no candidate.
 */
export async function askCapacity(q: CapacityQuestion): Promise<readonly CapacityAnswer[] | undefined> {
  const { namespace, name } = q.placement;
  const sources = [...q.sources].filter(([source]) => serves(q.sourceNamespaces, source, namespace));
  if (sources.length === 0) return undefined;
  const listed = new Set((q.status.clusters ?? []).map((c) => clusterKey(c.namespace, c.name)));
  const wanted = q.candidates ?? 3;
  const clusters: CapacityRequest['clusters'][number][] = [];
  for (const c of selectClusters(q.compiled.selection, q.inventory, listed, q.now.getTime()).eligible) {
    if (clusters.length >= wanted) break;
    if (!listed.has(c.key)) clusters.push({ key: c.key, profile: c.profile });
  }
  if (clusters.length === 0) return undefined;
  const placed = [...listed].flatMap((key) => {
    const c = q.inventory.byKey.get(key);
    return c ? [{ key, profile: c.profile }] : [];
  });
  const request: CapacityRequest = { placement: { namespace, name, spec: q.compiled.spec }, clusters, placed };
  const asked = new Set(clusters.map((c) => c.key));
  const timeout = AbortSignal.timeout(q.timeoutMs);
  const signal = q.abort ? AbortSignal.any([q.abort, timeout]) : timeout;
  const answered = await Promise.all(
    sources.map(async ([source, capacity]) => {
      let observation: Awaited<ReturnType<CapacitySource['answer']>>;
      try {
        observation = await answerByDeadline(capacity.answer(request, signal), timeout, DEADLINE_GRACE_MS);
      } catch (error) {
        if (q.abort?.aborted) throw error;
        q.report?.failed(source, error);
        return [];
      }
      q.report?.errors(source, observation.errors);
      // The instance name, as configured, tells the operator which source answered.
      return observation.answers.flatMap((a) => {
        const tagged = { ...a, source };
        if (asked.has(a.cluster) && CapacityAnswerSchema.safeParse(tagged).success) return [tagged];
        q.report?.invalid(source, a);
        return [];
      });
    }),
  );
  return answered.flat();
}

/** Whether the source `name` serves a placement in `namespace` (its `placementNamespaces`). */
export function serves(
  map: ReadonlyMap<string, readonly string[]> | undefined,
  name: string,
  namespace: string | undefined,
): boolean {
  const allowed = map?.get(name);
  return allowed === undefined || (namespace !== undefined && allowed.includes(namespace));
}

/** How long past the signal deadline a source may take to hand back what it has. */
export const DEADLINE_GRACE_MS = 1000;

/** `answer`, or a rejection when it has not settled `graceMs` after `deadline` fired. */
export function answerByDeadline<T>(answer: Promise<T>, deadline: AbortSignal, graceMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let arm: (() => void) | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    arm = () => {
      timer = setTimeout(() => reject(new Error('no answer after the deadline')), graceMs);
    };
    if (deadline.aborted) arm();
    else deadline.addEventListener('abort', arm, { once: true });
  });
  return Promise.race([answer, late]).finally(() => {
    if (arm) deadline.removeEventListener('abort', arm);
    clearTimeout(timer);
  });
}

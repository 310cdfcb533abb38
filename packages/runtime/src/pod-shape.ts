import { parseQuantity, type Quantity } from '@mco/core';
import { McoError } from './errors.js';

/** A pod toleration, as in a pod spec. */
export interface Toleration {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
}

/**
 * One replica of a placement's workload as a node must take it: what it
 * requests, and where it may run. Capacity sources read it from the pod
 * template of the workload's Deployment on a cluster it runs on.
 */
export interface PodShape {
  /** Requests of one replica by resource name (cpu, memory, nvidia.com/gpu, ...). */
  readonly requests: ReadonlyMap<string, Quantity>;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Toleration[];
}

/** The fields of a pod spec that make its shape, as the API serves them. */
export interface PodSpecFields {
  containers?: { resources?: { requests?: Record<string, string> } }[];
  initContainers?: { restartPolicy?: string; resources?: { requests?: Record<string, string> } }[];
  overhead?: Record<string, string>;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
}

const ZERO: Quantity = { numerator: 0n, denominator: 1n, approximate: 0 };

function add(a: Quantity, b: Quantity): Quantity {
  const numerator = a.numerator * b.denominator + b.numerator * a.denominator;
  const denominator = a.denominator * b.denominator;
  return { numerator, denominator, approximate: a.approximate + b.approximate };
}

function sumInto(total: Map<string, Quantity>, requests: Record<string, string> | undefined, where: string): void {
  for (const [name, text] of Object.entries(requests ?? {})) {
    const q = parseQuantity(text);
    if (!q) throw new McoError('Invalid', `${where}: request ${name} "${text}" is not a quantity`, false);
    total.set(name, add(total.get(name) ?? ZERO, q));
  }
}

/**
 * The shape of one pod of `spec`, as the scheduler counts its requests: the
 * containers and sidecars (restartable init containers) together, or the
 * largest plain init container when that is more, plus the pod overhead.
 */
export function podShapeOf(spec: PodSpecFields, where = 'pod template'): PodShape {
  const running = new Map<string, Quantity>();
  for (const c of spec.containers ?? []) sumInto(running, c.resources?.requests, where);
  const init = new Map<string, Quantity>();
  for (const c of spec.initContainers ?? []) {
    if (c.restartPolicy === 'Always') sumInto(running, c.resources?.requests, where);
    else {
      const one = new Map<string, Quantity>();
      sumInto(one, c.resources?.requests, where);
      for (const [name, q] of one) if (q.approximate > (init.get(name)?.approximate ?? 0)) init.set(name, q);
    }
  }
  for (const [name, q] of init) if (q.approximate > (running.get(name)?.approximate ?? 0)) running.set(name, q);
  sumInto(running, spec.overhead, where);
  for (const [name, q] of running) if (q.numerator === 0n) running.delete(name);
  return { requests: running, nodeSelector: { ...spec.nodeSelector }, tolerations: [...(spec.tolerations ?? [])] };
}

/** How many whole `perReplica` fit in `room` (0 when room is not positive). */
export function replicasThatFit(room: Quantity, perReplica: Quantity): number {
  if (perReplica.numerator <= 0n) throw new RangeError('perReplica must be positive');
  if (room.numerator <= 0n) return 0;
  const fit = (room.numerator * perReplica.denominator) / (perReplica.numerator * room.denominator);
  return fit > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(fit);
}

/** `a - b`. */
export function subtractQuantities(a: Quantity, b: Quantity): Quantity {
  return add(a, { numerator: -b.numerator, denominator: b.denominator, approximate: -b.approximate });
}

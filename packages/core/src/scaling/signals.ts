import type { Signal } from '../api/signal.js';
import { parseTime, SECOND } from '../time.js';

/** What the engine reads from one cluster's signal. Missing or stale data reads as "unknown". */
export interface SignalAssessment {
  /** The signal exists and is younger than `signalStaleAfterSeconds`. */
  readonly fresh: boolean;
  readonly atCapacityCeiling: boolean;
  readonly wantsScaleIn: boolean;
  /** false only when a fresh signal says so. */
  readonly workloadUnhealthy: boolean;
  /** true only when a fresh signal says so. */
  readonly workloadHealthy: boolean;
  readonly currentReplicas: number | undefined;
  readonly maxReplicas: number | undefined;
  readonly minReplicas: number | undefined;
  readonly desiredReplicas: number | undefined;
  /** The workload's ready replicas (Deployment status.readyReplicas). */
  readonly readyReplicas: number | undefined;
  /**
   * false only when a fresh signal declares that its source never reports
   * readyReplicas; read it with `sourceReportsReadyReplicas`.
   */
  readonly reportsReadyReplicas: boolean;
  /**
   * true only when a fresh signal declares `reportsReadyReplicas: true`: its
   * source promises the value, so a missing one is doubt. Undeclared, a drain
   * learns it from the signals (rule D1).
   */
  readonly declaresReadyReplicas: boolean;
  readonly pendingPods: number | undefined;
  readonly failedScaleUp: boolean | undefined;
  /** true only when a fresh signal says its pending pods wait on a node size limit (rule F2). */
  readonly nodeLimitReached: boolean;
  /**
   * The source could not reach the cluster on 2 or more consecutive polls
   * (refused, timeout, TLS): it leaves the headroom count. A single failed
   * poll is only missing data.
   */
  readonly unreachable: boolean;
  /** The transport error a not-fresh signal carries, for explanations. */
  readonly transportError: { readonly reason: string; readonly consecutivePolls: number } | undefined;
  /** When the signal turns stale (ms), for fresh signals and transport errors. */
  readonly staleAt: number | undefined;
}

/** Polls in a row that must fail in transport before a cluster counts as unreachable. */
export const UNREACHABLE_AFTER_POLLS = 2;

export const UNKNOWN_SIGNAL: SignalAssessment = Object.freeze({
  fresh: false,
  atCapacityCeiling: false,
  wantsScaleIn: false,
  workloadUnhealthy: false,
  workloadHealthy: false,
  currentReplicas: undefined,
  maxReplicas: undefined,
  minReplicas: undefined,
  desiredReplicas: undefined,
  readyReplicas: undefined,
  reportsReadyReplicas: true,
  declaresReadyReplicas: false,
  pendingPods: undefined,
  failedScaleUp: undefined,
  nodeLimitReached: false,
  unreachable: false,
  transportError: undefined,
  staleAt: undefined,
});

/**
 * The workload's replicas observed on a cluster (rules R1, R3, and the start
 * of a drain): the HPA's currentReplicas, or, from a source that reports no
 * HPA, the Deployment's ready replicas, so a missing HPA never holds a removal.
 */
export function observedReplicas(
  signal: Pick<SignalAssessment, 'currentReplicas' | 'readyReplicas'>,
): number | undefined {
  return signal.currentReplicas ?? signal.readyReplicas;
}

/**
 * Whether a cluster's signal source reports readyReplicas (docs/signals.md):
 * true unless its signal declares `reportsReadyReplicas: false`. A missing,
 * stale or failed signal says nothing about its source, so it counts as one
 * that reports it: its readyReplicas are then unknown, not unreported.
 */
export function sourceReportsReadyReplicas(
  signal: Pick<Signal, 'reportsReadyReplicas'> | Pick<SignalAssessment, 'reportsReadyReplicas'> | undefined,
): boolean {
  return signal?.reportsReadyReplicas !== false;
}

/**
 * A cluster is at its capacity ceiling when pods are pending and the
 * cluster-autoscaler failed to scale up, when the HPA is at its maximum and
 * reports ScalingLimited, or when the source says so directly.
 */
export function isAtCapacityCeiling(signal: Signal): boolean {
  return capacityCeilingBecause(signal) !== undefined;
}

/** Why a signal shows the capacity ceiling (for explanations), or undefined. */
export function capacityCeilingBecause(signal: Signal): string | undefined {
  if (signal.atCapacityCeiling === true) return 'the signal source says atCapacityCeiling';
  if ((signal.pendingPods ?? 0) > 0 && signal.failedScaleUp === true) {
    return `${signal.pendingPods} pending pod(s) and a FailedScaleUp`;
  }
  const hpa = signal.hpa;
  const atMax =
    hpa?.currentReplicas !== undefined &&
    hpa.maxReplicas !== undefined &&
    hpa.currentReplicas >= hpa.maxReplicas &&
    hpa.scalingLimited?.status === 'True';
  return atMax ? `HPA at maxReplicas (${hpa.currentReplicas}/${hpa.maxReplicas}) with ScalingLimited` : undefined;
}

/** A cluster wants scale-in when its HPA is at its minimum and limited by TooFewReplicas, or the source says so. */
export function wantsScaleIn(signal: Signal): boolean {
  return scaleInBecause(signal) !== undefined;
}

/** Why a signal wants scale-in (for explanations), or undefined. */
export function scaleInBecause(signal: Signal): string | undefined {
  if (signal.wantsScaleIn === true) return 'the signal source says wantsScaleIn';
  const hpa = signal.hpa;
  const atMin =
    hpa?.currentReplicas !== undefined &&
    hpa.minReplicas !== undefined &&
    hpa.currentReplicas <= hpa.minReplicas &&
    hpa.scalingLimited?.status === 'True' &&
    hpa.scalingLimited.reason === 'TooFewReplicas';
  return atMin ? `HPA at minReplicas (${hpa.currentReplicas}/${hpa.minReplicas}) with TooFewReplicas` : undefined;
}

/**
 * Rule T1 (docs/placement-rules.md §10.9): why a cluster below its ceiling
 * will reach it before a newly added cluster could serve, or undefined. Its
 * HPA already asks for its maximum while replicas are still coming (fewer
 * ready than desired, or pods pending): once they are up it is at its
 * ceiling, and a new cluster needs a deployment, nodes and pods, never less
 * time than the pods alone. Missing fields mean no prediction (fail static).
 */
export function ceilingInSightBecause(s: SignalAssessment): string | undefined {
  if (!s.fresh || s.atCapacityCeiling) return undefined;
  const { desiredReplicas: desired, maxReplicas: max, readyReplicas: ready, pendingPods: pending } = s;
  if (desired === undefined || max === undefined || desired < max) return undefined;
  const coming = (ready !== undefined && ready < desired) || (pending ?? 0) > 0;
  return coming
    ? `ceiling in sight: the HPA asks for its maximum (${desired}/${max}) with ${ready ?? 'unknown'} ready${pending ? ` and ${pending} pending pod(s)` : ''}`
    : undefined;
}

export function assessSignal(signal: Signal | undefined, nowMs: number, staleAfterSeconds: number): SignalAssessment {
  const observedAt = parseTime(signal?.observedAt);
  if (!signal || observedAt === undefined) return UNKNOWN_SIGNAL;
  const staleAt = observedAt + staleAfterSeconds * SECOND;
  if (nowMs >= staleAt) return UNKNOWN_SIGNAL;
  const transportError = signal.transportError;
  if (transportError) {
    // No data came back: nothing in the signal is known, but the failure itself is.
    return {
      ...UNKNOWN_SIGNAL,
      unreachable: transportError.consecutivePolls >= UNREACHABLE_AFTER_POLLS,
      transportError,
      staleAt,
    };
  }
  return {
    fresh: true,
    atCapacityCeiling: isAtCapacityCeiling(signal),
    wantsScaleIn: wantsScaleIn(signal),
    workloadUnhealthy: signal.workloadHealthy === false,
    workloadHealthy: signal.workloadHealthy === true,
    currentReplicas: signal.hpa?.currentReplicas,
    maxReplicas: signal.hpa?.maxReplicas,
    minReplicas: signal.hpa?.minReplicas,
    desiredReplicas: signal.hpa?.desiredReplicas,
    readyReplicas: signal.readyReplicas,
    reportsReadyReplicas: sourceReportsReadyReplicas(signal),
    declaresReadyReplicas: signal.reportsReadyReplicas === true,
    pendingPods: signal.pendingPods,
    failedScaleUp: signal.failedScaleUp,
    nodeLimitReached: signal.nodeLimitReached === true && (signal.pendingPods ?? 0) > 0,
    unreachable: false,
    transportError: undefined,
    staleAt,
  };
}

/** The newest signal per cluster; ties keep the first given. */
export function indexSignals(signals: readonly Signal[]): Map<string, Signal> {
  const byCluster = new Map<string, Signal>();
  for (const signal of signals) {
    const previous = byCluster.get(signal.cluster);
    if (!previous || (parseTime(signal.observedAt) ?? -Infinity) > (parseTime(previous.observedAt) ?? -Infinity)) {
      byCluster.set(signal.cluster, signal);
    }
  }
  return byCluster;
}

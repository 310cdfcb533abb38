import type { Hpa, NodePool } from './scenario.js';

/** The cluster autoscaler's reason for a node group at its max size (skippedreasons.go MaxLimitReachedReason). */
const MAX_SIZE_REACHED = 'max node group size reached';

/*
 * The parts of one member cluster, each as close to the real controller as a
 * tick-based model allows: the HorizontalPodAutoscaler (autoscaling/v2
 * algorithm and conditions), the Deployment's pods, and a node pool with its
 * cluster-autoscaler. Times are seconds since the start of the simulation.
 */

export interface ScalingLimited {
  readonly status: 'True' | 'False';
  readonly reason: string;
}

/** What `kubectl get hpa -o yaml` would show in status (plus the spec bounds in force). */
export interface HpaStatus {
  readonly currentReplicas: number;
  readonly desiredReplicas: number;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly scalingLimited: ScalingLimited | undefined;
}

export interface HpaSyncInput {
  /** The Deployment's replicas (pods of any phase), as the scale subresource reports them. */
  readonly currentReplicas: number;
  /** Ready pods: the only ones with metrics. */
  readonly readyReplicas: number;
  /** Load offered to the cluster's pods, in the unit of `capacityPerReplica`. */
  readonly load: number;
  readonly capacityPerReplica: number;
  /** Bounds in force (a drainer may have lowered them below the spec). */
  readonly minReplicas: number;
  readonly maxReplicas: number;
}

/** The default scale-up policy of autoscaling/v2: the larger of +4 pods and +100% per period. */
function scaleUpLimit(current: number): number {
  return Math.max(current * 2, current + 4);
}

/**
 * A HorizontalPodAutoscaler with one pods metric (load per pod against a
 * target utilisation), following the Kubernetes controller: tolerance, pods
 * without metrics treated conservatively, scale-down stabilization as the
 * highest recommendation within the window, the default scale-up rate limit,
 * and the ScalingLimited condition with its real reasons.
 */
export class HorizontalPodAutoscaler {
  private readonly recommendations: { t: number; replicas: number }[] = [];
  status: HpaStatus | undefined;

  constructor(readonly spec: Hpa) {}

  /** One sync at time `t`; returns the replicas the Deployment is scaled to. */
  sync(t: number, input: HpaSyncInput): number {
    const { currentReplicas: current, minReplicas: min, maxReplicas: max } = input;
    let desired: number;
    let limited = this.status?.scalingLimited;
    if (this.recommendations.length === 0) {
      // Like the controller, a new HPA starts its scale-down window at the current size.
      this.recommendations.push({ t, replicas: current });
    }
    if (current > max) {
      desired = max; // "Current number of replicas above Spec.MaxReplicas": conditions unchanged
    } else if (current < min) {
      desired = min;
    } else if (input.readyReplicas === 0) {
      desired = current; // no pod has metrics yet: the controller cannot compute, it keeps the size
    } else {
      const recommended = this.recommend(input);
      const stabilized = this.stabilize(t, current, recommended);
      const [normalized, reason] = normalize(stabilized, current, min, max);
      desired = normalized;
      limited = { status: normalized === stabilized ? 'False' : 'True', reason };
    }
    this.status = {
      currentReplicas: current,
      desiredReplicas: desired,
      minReplicas: min,
      maxReplicas: max,
      scalingLimited: limited,
    };
    return desired;
  }

  /** The replica count the metric asks for (calcPlainMetricReplicas of the HPA controller). */
  private recommend(input: HpaSyncInput): number {
    const current = input.currentReplicas;
    const ready = input.readyReplicas;
    const perPodAtTarget = (input.capacityPerReplica * this.spec.targetUtilization) / 100;
    const ratio = input.load / (ready * perPodAtTarget);
    const missing = current - ready;
    const tolerance = this.spec.tolerance;
    if (missing <= 0) {
      return Math.abs(1 - ratio) <= tolerance ? current : Math.ceil(ratio * ready);
    }
    // Pods without metrics (pending or starting) count at the target on a
    // scale-down and at zero on a scale-up, so they never cause an overshoot.
    const newRatio = ratio < 1 ? (ratio * ready + missing) / current : (ratio * ready) / current;
    if (Math.abs(1 - newRatio) <= tolerance || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1)) {
      return current;
    }
    const replicas = Math.ceil(newRatio * current);
    if ((newRatio < 1 && replicas > current) || (newRatio > 1 && replicas < current)) return current;
    return replicas;
  }

  /** Scale-down stabilization: the highest recommendation within the window (scale-up has none). */
  private stabilize(t: number, current: number, recommended: number): number {
    const window = this.spec.scaleDownStabilization;
    let down = recommended;
    for (const r of this.recommendations) if (r.t > t - window) down = Math.max(down, r.replicas);
    this.recommendations.push({ t, replicas: recommended });
    while (this.recommendations.length > 0 && this.recommendations[0]!.t <= t - window) this.recommendations.shift();
    let stabilized = current;
    if (stabilized < recommended) stabilized = recommended;
    if (stabilized > down) stabilized = down;
    return stabilized;
  }
}

/** convertDesiredReplicasWithBehaviorRate of the HPA controller: rate limit and bounds, with the limiting reason. */
function normalize(desired: number, current: number, min: number, max: number): [number, string] {
  if (desired > current) {
    let allowed = max;
    let reason = 'TooManyReplicas';
    const limit = scaleUpLimit(current);
    if (allowed > limit) {
      allowed = limit;
      reason = 'ScaleUpLimit';
    }
    if (desired > allowed) return [allowed, reason];
  } else if (desired < current) {
    if (desired < min) return [min, 'TooFewReplicas'];
  }
  return [desired, 'DesiredWithinRange'];
}

/** The Deployment's pods: pending (unschedulable), starting (scheduled, not Ready yet) and ready. */
export class Pods {
  pending = 0;
  ready = 0;
  /** Ready times of the starting pods, oldest first. */
  starting: number[] = [];

  get total(): number {
    return this.pending + this.starting.length + this.ready;
  }

  /** Pods holding a node slot. */
  get scheduled(): number {
    return this.starting.length + this.ready;
  }

  /** Scales the Deployment: new pods are pending; on scale-down the least advanced pods go first. */
  scaleTo(replicas: number): void {
    let extra = this.total - replicas;
    if (extra < 0) {
      this.pending -= extra;
      return;
    }
    const fromPending = Math.min(extra, this.pending);
    this.pending -= fromPending;
    extra -= fromPending;
    const fromStarting = Math.min(extra, this.starting.length);
    this.starting.length -= fromStarting; // newest last
    extra -= fromStarting;
    this.ready -= extra;
  }

  /** Schedules pending pods onto free slots; they turn Ready `startup` seconds later. */
  schedule(t: number, slots: number, startup: number): void {
    const n = Math.max(0, Math.min(this.pending, slots - this.scheduled));
    this.pending -= n;
    for (let i = 0; i < n; i++) this.starting.push(t + startup);
  }

  /** Pods whose startup finished by `t` turn Ready. */
  advance(t: number): void {
    let n = 0;
    while (n < this.starting.length && this.starting[n]! <= t) n++;
    this.ready += n;
    this.starting.splice(0, n);
  }
}

export type AutoscalerEventReason = 'FailedScaleUp' | 'NotTriggerScaleUp' | 'TriggeredScaleUp' | 'ScaleDown';

export interface AutoscalerEvent {
  readonly t: number;
  readonly reason: AutoscalerEventReason;
  readonly message: string;
}

/**
 * A node pool and the cluster-autoscaler's work on it: pending pods trigger a
 * scale-up within maxNodes; nodes are Ready after `scaleUpDelay`; while the
 * pool is stocked out the request fails after `stockoutErrorAfter` with
 * FailedScaleUp and the pool is backed off; at maxNodes or in backoff the
 * autoscaler reports NotTriggerScaleUp; unneeded nodes go after `scaleDownDelay`.
 */
export class NodePoolModel {
  nodes: number;
  provisioning: { requestedAt: number; readyAt: number }[] = [];
  readonly events: AutoscalerEvent[] = [];
  private backoffUntil = -Infinity;
  private unneededSince: number | undefined;

  constructor(
    readonly spec: NodePool,
    nodes = spec.minNodes,
  ) {
    this.nodes = nodes;
  }

  get slots(): number {
    return this.nodes * this.spec.podsPerNode;
  }

  /** Provisioning nodes turn Ready, or fail when the pool is stocked out. */
  advance(t: number, stockedOut: boolean): void {
    const remaining: typeof this.provisioning = [];
    let failed = 0;
    for (const p of this.provisioning) {
      if (stockedOut && t >= p.requestedAt + this.spec.stockoutErrorAfter) failed++;
      else if (!stockedOut && t >= p.readyAt) this.nodes++;
      else remaining.push(p);
    }
    this.provisioning = remaining;
    if (failed > 0) {
      this.backoffUntil = t + this.spec.backoff;
      this.emit(t, 'FailedScaleUp', `failed to increase node pool size by ${failed}: out of resources (stockout)`);
    }
  }

  /** One cluster-autoscaler loop: scale up for unschedulable pods, or scale down unneeded nodes. */
  autoscale(t: number, pendingPods: number, scheduledPods: number): void {
    const perNode = this.spec.podsPerNode;
    if (pendingPods > 0) {
      this.unneededSince = undefined;
      const wanted = Math.ceil(pendingPods / perNode) - this.provisioning.length;
      if (wanted <= 0) return;
      if (t < this.backoffUntil) {
        this.emit(t, 'NotTriggerScaleUp', `pod didn't trigger scale-up: node pool in backoff after failed scale-up`);
        return;
      }
      const room = this.spec.maxNodes - this.nodes - this.provisioning.length;
      if (room <= 0) {
        this.emit(t, 'NotTriggerScaleUp', `pod didn't trigger scale-up: ${MAX_SIZE_REACHED}`);
        return;
      }
      const add = Math.min(wanted, room);
      for (let i = 0; i < add; i++) this.provisioning.push({ requestedAt: t, readyAt: t + this.spec.scaleUpDelay });
      this.emit(t, 'TriggeredScaleUp', `pod triggered scale-up: +${add} node(s)`);
      return;
    }
    const needed = Math.max(this.spec.minNodes, Math.ceil(scheduledPods / perNode));
    if (this.nodes <= needed) {
      this.unneededSince = undefined;
      return;
    }
    this.unneededSince ??= t;
    if (t - this.unneededSince >= this.spec.scaleDownDelay) {
      this.emit(t, 'ScaleDown', `removed ${this.nodes - needed} unneeded node(s)`);
      this.nodes = needed;
      this.unneededSince = undefined;
    }
  }

  /**
   * The cluster is unreachable: the autoscaler's scale-down clock stops with it (a node is not
   * "unneeded" for a time nobody observed), so the nodes do not vanish the instant it is back.
   */
  holdScaleDown(): void {
    this.unneededSince = undefined;
  }

  /** A NotTriggerScaleUp for the pool at its maximum size within `window` seconds before `t`: a size limit, not a stockout. */
  nodeLimitWithin(t: number, window: number): boolean {
    return this.eventWithin(t, window, (e) => e.reason === 'NotTriggerScaleUp' && e.message.endsWith(MAX_SIZE_REACHED));
  }

  /** An event of one of `reasons` (FailedScaleUp, NotTriggerScaleUp) within `window` seconds before `t`. */
  failedScaleUpWithin(
    t: number,
    window: number,
    reasons: readonly AutoscalerEventReason[] = ['FailedScaleUp', 'NotTriggerScaleUp'],
  ): boolean {
    return this.eventWithin(t, window, (e) => reasons.includes(e.reason));
  }

  /** Whether an event matching `match` was emitted within `window` seconds before `t` (newest first). */
  private eventWithin(t: number, window: number, match: (e: (typeof this.events)[number]) => boolean): boolean {
    for (let i = this.events.length - 1; i >= 0; i--) {
      const e = this.events[i]!;
      if (e.t <= t - window) return false;
      if (match(e)) return true;
    }
    return false;
  }

  private emit(t: number, reason: AutoscalerEventReason, message: string): void {
    this.events.push({ t, reason, message });
  }
}

export interface LoadShare {
  /** Load sent to the cluster. */
  readonly load: number;
  /** Load its ready pods serve (at most 100% utilisation). */
  readonly served: number;
}

/**
 * A global load balancer: demand is spread over the clusters' ready
 * endpoints in proportion to their number (as with round-robin over all
 * endpoints); a draining cluster counts at most `desiredMaxReplicas` of them.
 * Load above a cluster's capacity (100% utilisation) is not served.
 */
export function spreadLoad(
  demand: number,
  endpoints: readonly number[],
  capacityPerReplica: number,
): readonly LoadShare[] {
  const total = endpoints.reduce((a, b) => a + b, 0);
  return endpoints.map((n) => {
    const load = total === 0 ? 0 : (demand * n) / total;
    return { load, served: Math.min(load, n * capacityPerReplica) };
  });
}

/**
 * The placement annotation `mco clusters confirm-removal` writes: an RFC 3339
 * time; a loss of profiles the guard saw before it is confirmed (fleet-wide).
 */
export const INVENTORY_LOSS_CONFIRMED_ANNOTATION = 'orchestra.multicluster.x-k8s.io/inventory-loss-confirmed-at';

export interface InventoryLossGuardOptions {
  /** Share of the fleet (0-1) whose loss within the window engages the guard (default 0.3). */
  readonly threshold?: number;
  /** Fewest lost profiles that engage it (default 3), so a small fleet can lose one. */
  readonly minLost?: number;
  readonly windowMs?: number;
}

/**
 * The fleet-wide inventory-loss guard (docs/placement-rules.md §10.5): engages when
 * the ClusterProfile count drops by more than `threshold` (and at least
 * `minLost`) from its peak within `windowMs`; while engaged, removals caused by
 * missing profiles are held. It releases when the count recovers to within the
 * threshold of the count before the loss, or when an operator confirms it
 * (INVENTORY_LOSS_CONFIRMED_ANNOTATION on a placement, later than the loss).
 */
export class InventoryLossGuard {
  private readonly threshold: number;
  private readonly minLost: number;
  private readonly windowMs: number;
  private samples: { readonly at: number; readonly count: number }[] = [];
  /** The count before the loss, when the latest loss was seen, and the count then. */
  private loss: { baseline: number; since: number; low: number } | undefined;

  constructor(options: InventoryLossGuardOptions = {}) {
    this.threshold = options.threshold ?? 0.3;
    this.minLost = options.minLost ?? 3;
    this.windowMs = options.windowMs ?? 5 * 60_000;
  }

  /** Records the current count; returns what changed. */
  observe(count: number, at: number): 'engaged' | 'released' | undefined {
    // The count holds from one sample to the next: the newest sample older than the window is
    // the count at the window's start, so a drop after a long quiet spell is still seen.
    const start = this.samples.findLastIndex((s) => at - s.at > this.windowMs);
    if (start > 0) this.samples = this.samples.slice(start);
    this.samples.push({ at, count });
    const peak = Math.max(...this.samples.map((s) => s.count));
    if (this.loss) {
      if (!this.isLoss(this.loss.baseline, count)) {
        this.loss = undefined;
        return 'released';
      }
      // A further sudden loss while engaged: confirmations given before it do not cover it.
      if (count < this.loss.low && this.isLoss(peak, count)) this.loss.since = at;
      this.loss.low = Math.min(this.loss.low, count);
      return undefined;
    }
    if (!this.isLoss(peak, count)) return undefined;
    this.loss = { baseline: peak, since: at, low: count };
    return 'engaged';
  }

  /**
   * An operator's confirmation (a placement's annotation): when given after the
   * latest loss, the loss is accepted fleet-wide and `count` (the current one)
   * becomes the new baseline. Returns true when that released the guard.
   */
  confirm(confirmedAt: number | undefined, count: number, at: number): boolean {
    if (!this.loss || confirmedAt === undefined || confirmedAt < this.loss.since) return false;
    this.loss = undefined;
    this.samples = [{ at, count }];
    return true;
  }

  get engaged(): boolean {
    return this.loss !== undefined;
  }

  /** For logs and Events: the count before the loss. */
  get baseline(): number | undefined {
    return this.loss?.baseline;
  }

  private isLoss(from: number, to: number): boolean {
    const lost = from - to;
    return lost >= this.minLost && lost > from * this.threshold;
  }
}

/** The confirmation time on a placement, or undefined when absent or not a time. */
export function confirmedAt(annotations: Readonly<Record<string, string>> | undefined): number | undefined {
  const value = annotations?.[INVENTORY_LOSS_CONFIRMED_ANNOTATION];
  const at = value === undefined ? NaN : Date.parse(value);
  return Number.isNaN(at) ? undefined : at;
}

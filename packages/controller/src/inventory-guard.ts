import type { KubeObject, Resource } from '@mco/kube-runtime';

/**
 * The operator's confirmation of an inventory loss: a ConfigMap of this name
 * in the controller's namespace, `data.confirmedAt` an RFC 3339 time, written
 * by `mco clusters confirm-removal`. A ConfigMap rather than a Lease: no mco
 * component may write ConfigMaps, while several may create Leases (RBAC cannot
 * limit `create` by name), so only someone with write access to the
 * controller's namespace can confirm; the controller only reads this one object.
 * It replaces the placement annotation `inventory-loss-confirmed-at`, which any
 * tenant could write and which is now ignored.
 */
export const INVENTORY_LOSS_CONFIRMATION = 'mco-inventory-loss-confirmation';
export const CONFIRMED_AT_KEY = 'confirmedAt';
/** The controller's namespace when none is configured (the chart passes its release namespace). */
export const DEFAULT_CONTROLLER_NAMESPACE = 'mco-system';
export const CONFIG_MAPS: Resource = { group: '', version: 'v1', plural: 'configmaps' };
/** Picks that one ConfigMap: a Role limited to its name may list and watch it with this selector. */
export const CONFIRMATION_FIELD_SELECTOR = `metadata.name=${INVENTORY_LOSS_CONFIRMATION}`;

/** A confirmation time further ahead of the controller's clock than this is refused (clock skew allowance). */
export const MAX_CONFIRMATION_AHEAD_MS = 60_000;

/** The confirmation as read from its ConfigMap. */
export interface InventoryLossConfirmation {
  /** `data.confirmedAt`, in ms since the epoch. */
  readonly at: number;
  /** The object's resourceVersion: which write this is. */
  readonly version: string;
}

export interface InventoryLossGuardOptions {
  /** Share of the fleet (0-1) whose loss within the window engages the guard (default 0.3). */
  readonly threshold?: number;
  /** Fewest lost profiles that engage it (default 3), so a small fleet can lose one. */
  readonly minLost?: number;
  readonly windowMs?: number;
}

/**
 * A loss as the guard records it, and as replicas share it (docs/placement-rules.md §10.5): the count before
 * it, when it was seen (ms since the epoch), the lowest count since, and the confirmation's version then.
 */
export interface InventoryLoss {
  readonly baseline: number;
  readonly since: number;
  readonly low: number;
  readonly confirmationVersion: string | undefined;
}

/**
 * What a confirmation did: released the guard; or was refused, its time too far ahead ('ahead') or, though
 * written after the loss was seen, earlier than the loss ('before': a clock behind); undefined: nothing.
 */
export type ConfirmOutcome = 'released' | 'ahead' | 'before' | undefined;

/**
 * The fleet-wide inventory-loss guard (docs/placement-rules.md §10.5): engages when
 * the ClusterProfile count drops by more than `threshold` (and at least
 * `minLost`) from its peak within `windowMs`; while engaged, removals caused by
 * missing profiles are held. It releases when the count recovers to within the
 * threshold of the count before the loss, or when an operator confirms the loss
 * (the INVENTORY_LOSS_CONFIRMATION object; see `confirm`).
 */
export class InventoryLossGuard {
  private readonly threshold: number;
  private readonly minLost: number;
  private readonly windowMs: number;
  private samples: { readonly at: number; readonly count: number }[] = [];
  /**
   * The count before the loss, when the latest loss was seen, the count then,
   * and the confirmation's version at that moment (a confirmation must be newer).
   */
  private loss: { -readonly [K in keyof InventoryLoss]: InventoryLoss[K] } | undefined;
  /** When the last released loss was seen: an older loss shared by another replica is not adopted again. */
  private releasedSince = -Infinity;
  private readonly listeners: ((loss: InventoryLoss | undefined, previous: InventoryLoss | undefined) => void)[] = [];

  constructor(options: InventoryLossGuardOptions = {}) {
    this.threshold = options.threshold ?? 0.3;
    this.minLost = options.minLost ?? 3;
    this.windowMs = options.windowMs ?? 5 * 60_000;
  }

  /**
   * Records the current count; returns what changed. `confirmationVersion` is the
   * confirmation's version now: a loss seen now is confirmed only by a later write.
   */
  observe(count: number, at: number, confirmationVersion?: string): 'engaged' | 'released' | undefined {
    // The count holds from one sample to the next: the newest sample older than the window is
    // the count at the window's start, so a drop after a long quiet spell is still seen.
    const start = this.samples.findLastIndex((s) => at - s.at > this.windowMs);
    if (start > 0) this.samples = this.samples.slice(start);
    this.samples.push({ at, count });
    const peak = Math.max(...this.samples.map((s) => s.count));
    if (this.loss) {
      if (!this.isLoss(this.loss.baseline, count)) {
        this.release();
        return 'released';
      }
      if (count >= this.loss.low) return undefined;
      const before = { ...this.loss };
      // A further sudden loss while engaged: confirmations given before it do not cover it.
      if (this.isLoss(peak, count)) {
        this.loss.since = at;
        this.loss.confirmationVersion = confirmationVersion;
      }
      this.loss.low = count;
      this.emit(before);
      return undefined;
    }
    if (!this.isLoss(peak, count)) return undefined;
    this.loss = { baseline: peak, since: at, low: count, confirmationVersion };
    this.emit(undefined);
    return 'engaged';
  }

  /** Calls `listener` with the new and the previous loss whenever this guard's own observation or a confirmation changes it. */
  onChange(listener: (loss: InventoryLoss | undefined, previous: InventoryLoss | undefined) => void): void {
    this.listeners.push(listener);
  }

  /** The loss recorded now (a copy), or undefined when not engaged. */
  snapshot(): InventoryLoss | undefined {
    return this.loss && { ...this.loss };
  }

  /**
   * A loss another replica recorded (or one recorded before this replica started): taken when this guard
   * holds none or a lesser one (a higher low), unless it is no newer than a loss this guard released.
   * So every replica holds the same loss, with the same confirmation version. A record that is not a loss
   * by this guard's rules, or seen after `now` (plus the clock-skew allowance), is refused. Returns whether it was taken.
   */
  adopt(loss: InventoryLoss, now: number): boolean {
    if (loss.since <= this.releasedSince) return false;
    // Not a loss by this guard's rules (it would release at once), or seen in the future (every
    // confirmation would be 'before' it): a record no replica writes.
    if (!this.isLoss(loss.baseline, loss.low) || loss.since > now + MAX_CONFIRMATION_AHEAD_MS) return false;
    if (this.loss && (loss.low > this.loss.low || (loss.low === this.loss.low && sameLoss(loss, this.loss))))
      return false;
    this.loss = { ...loss };
    return true;
  }

  private release(): void {
    const previous = this.loss;
    this.loss = undefined;
    if (previous) this.releasedSince = Math.max(this.releasedSince, previous.since);
    this.emit(previous);
  }

  private emit(previous: InventoryLoss | undefined): void {
    const loss = this.snapshot();
    for (const listener of this.listeners) listener(loss, previous);
  }

  /**
   * An operator's confirmation. It confirms exactly the losses seen before it
   * was written: its version must differ from the one recorded when the latest
   * loss was seen, and its time must not be earlier than that loss. So it never
   * covers a later loss, whatever time it names. A time more than
   * MAX_CONFIRMATION_AHEAD_MS ahead of `now` is refused ('ahead'), and so is a
   * new write naming a time before the loss ('before'). On release,
   * the loss is accepted fleet-wide and `count` (the current one) becomes the
   * new baseline.
   */
  confirm(confirmation: InventoryLossConfirmation | undefined, count: number, now: number): ConfirmOutcome {
    if (!this.loss || !confirmation) return undefined;
    if (confirmation.at > now + MAX_CONFIRMATION_AHEAD_MS) return 'ahead';
    if (confirmation.version === this.loss.confirmationVersion) return undefined;
    if (confirmation.at < this.loss.since) return 'before';
    this.samples = [{ at: now, count }];
    this.release();
    return 'released';
  }

  get engaged(): boolean {
    return this.loss !== undefined;
  }

  /** For logs and Events: the count before the loss. */
  get baseline(): number | undefined {
    return this.loss?.baseline;
  }

  /** For logs and Events: when the latest loss was seen. */
  get lossSeenAt(): number | undefined {
    return this.loss?.since;
  }

  private isLoss(from: number, to: number): boolean {
    const lost = from - to;
    return lost >= this.minLost && lost > from * this.threshold;
  }
}

function sameLoss(a: InventoryLoss, b: InventoryLoss): boolean {
  return (
    a.baseline === b.baseline &&
    a.since === b.since &&
    a.low === b.low &&
    a.confirmationVersion === b.confirmationVersion
  );
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * The confirmation a ConfigMap holds: undefined when there is none, an error
 * naming the field when `data.confirmedAt` is missing or not an RFC 3339 time.
 */
export function readConfirmation(
  object: KubeObject | undefined,
): InventoryLossConfirmation | { readonly error: string } | undefined {
  if (!object) return undefined;
  const value = (object.data as Record<string, unknown> | undefined)?.[CONFIRMED_AT_KEY];
  const at = typeof value === 'string' && RFC3339.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(at)) {
    return {
      error: `data.${CONFIRMED_AT_KEY}: expected an RFC 3339 time such as 2026-03-01T12:00:00Z, got ${JSON.stringify(value ?? null)}`,
    };
  }
  return { at, version: String(object.metadata?.resourceVersion ?? '') };
}

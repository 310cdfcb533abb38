import { httpStatusOf, silentLogger, type Logger } from '@mco/runtime';
import {
  createListWatch,
  Informer,
  objectPath,
  resourcePath,
  type KubeClient,
  type KubeObject,
  type Lease,
  type ListWatch,
  type Resource,
} from '@mco/kube-runtime';
import type { InventoryLoss, InventoryLossGuard } from './inventory-guard.js';

export const LEASES: Resource = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
/** The loss every replica holds, as JSON (an InventoryLoss); absent when the guard is not engaged. */
export const INVENTORY_LOSS_ANNOTATION = 'mco.x-k8s.io/inventory-loss';

export function inventoryLossLeaseName(name: string): string {
  return `${name}-inventory-loss`;
}

export interface SharedInventoryLossOptions {
  readonly client: KubeClient;
  /** Where the controller's Leases are (the shard Leases' namespace). */
  readonly namespace: string;
  /** The shard Leases' base name; the loss is kept in Lease `<name>-inventory-loss`. */
  readonly name: string;
  readonly guard: InventoryLossGuard;
  readonly logger?: Logger;
  readonly requestTimeoutMs?: number;
  readonly informerOptions?: { idleTimeoutMs?: number; watchTimeoutSeconds?: number };
  readonly listWatch?: ListWatch<KubeObject>;
  /** The clock a recorded loss is checked against (default Date.now). */
  readonly now?: () => number;
}

/**
 * The inventory-loss guard's state in the API (docs/placement-rules.md §10.5), so that replicas agree: a
 * replica that sees a loss (or a further one) records it on a Lease the replicas share; every replica
 * adopts the recorded loss (with its baseline and confirmation version), including one that started after
 * the loss or takes over a shard, and then releases exactly as the others do: when its count recovers to
 * the shared baseline, or on the operator's confirmation. A release clears the record. The confirmation
 * itself stays the operator's ConfigMap, which no mco component may write.
 */
export class SharedInventoryLoss {
  readonly informer: Informer<KubeObject>;
  private readonly leaseName: string;
  private readonly logger: Logger;
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly options: SharedInventoryLossOptions) {
    this.leaseName = inventoryLossLeaseName(options.name);
    this.logger = options.logger ?? silentLogger;
    this.informer = new Informer<KubeObject>({
      name: 'inventory-loss-state',
      listWatch:
        options.listWatch ??
        createListWatch(options.client, LEASES, {
          namespace: options.namespace,
          fieldSelector: `metadata.name=${this.leaseName}`,
          ...(options.requestTimeoutMs ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
        }),
      logger: this.logger,
      ...options.informerOptions,
    });
    this.informer.addHandler((event, object) => {
      if (event === 'delete') return;
      const loss = readLoss(object);
      if (!loss && (object.metadata?.annotations as Record<string, string> | undefined)?.[INVENTORY_LOSS_ANNOTATION]) {
        this.logger.warn('ignoring an inventory-loss record that is not valid', { lease: this.leaseName });
      }
      if (loss && options.guard.adopt(loss, (options.now ?? Date.now)()))
        this.logger.warn('holding removals for an inventory loss another replica recorded', {
          before: loss.baseline,
          low: loss.low,
          seenAt: new Date(loss.since).toISOString(),
        });
    });
    options.guard.onChange((loss, previous) => {
      this.pending = this.pending.then(() => this.publish(loss, previous));
    });
  }

  /** Resolves when the writes of the changes so far are done (tests). */
  settled(): Promise<void> {
    return this.pending;
  }

  private async publish(loss: InventoryLoss | undefined, previous: InventoryLoss | undefined): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      let lease: Lease | undefined;
      try {
        lease = await this.options.client.get<Lease>(this.path());
      } catch (error) {
        if (httpStatusOf(error) !== 404) return this.warn(error);
      }
      const shared = lease ? readLoss(lease as KubeObject) : undefined;
      const write = loss
        ? // A further loss (lower count) than the recorded one, or none recorded.
          !shared || loss.low < shared.low
        : // The recorded loss is the released one, or older.
          shared !== undefined && previous !== undefined && shared.since <= previous.since;
      if (!write) return;
      const annotations = { ...lease?.metadata?.annotations };
      if (loss) annotations[INVENTORY_LOSS_ANNOTATION] = JSON.stringify(loss);
      else delete annotations[INVENTORY_LOSS_ANNOTATION];
      const body: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { ...(lease?.metadata ?? { name: this.leaseName, namespace: this.options.namespace }), annotations },
        spec: lease?.spec ?? {},
      };
      try {
        if (lease) await this.options.client.replace(this.path(), body);
        else await this.options.client.create(resourcePath(LEASES, this.options.namespace), body);
        return;
      } catch (error) {
        // Another replica wrote first: read again and decide again.
        if (httpStatusOf(error) !== 409) return this.warn(error);
      }
    }
  }

  private path(): string {
    return objectPath(LEASES, this.options.namespace, this.leaseName);
  }

  private warn(error: unknown): void {
    this.logger.warn('cannot record the inventory-loss state for the other replicas', {
      lease: `${this.options.namespace}/${this.leaseName}`,
      error,
    });
  }
}

/** The longest inventory-loss record read (a real one is about 100 bytes). */
export const MAX_LOSS_RECORD_BYTES = 1024;
/** The most ClusterProfiles a recorded loss may count (far above any fleet mco is sized for). */
export const MAX_LOSS_COUNT = 1_000_000;
const CONFIRMATION_VERSION = /^[0-9A-Za-z._-]{0,64}$/;

/**
 * The loss a Lease records, or undefined (none, or not valid: then nothing is
 * adopted). The Lease is shared state, not a source of truth: what is read is
 * bounded (at most MAX_LOSS_RECORD_BYTES; whole counts with 0 <= low <
 * baseline <= MAX_LOSS_COUNT; a short confirmation version), and
 * `InventoryLossGuard.adopt` refuses a record its own rules would not call a
 * loss or one seen in the future, which would refuse every confirmation.
 */
export function readLoss(object: KubeObject): InventoryLoss | undefined {
  const text = (object.metadata?.annotations as Record<string, string> | undefined)?.[INVENTORY_LOSS_ANNOTATION];
  if (!text || text.length > MAX_LOSS_RECORD_BYTES) return undefined;
  try {
    const value = JSON.parse(text) as Partial<InventoryLoss>;
    const { baseline, since, low, confirmationVersion } = value;
    if (![baseline, since, low].every((n) => Number.isSafeInteger(n))) return undefined;
    if (!(low! >= 0 && low! < baseline! && baseline! <= MAX_LOSS_COUNT && since! >= 0)) return undefined;
    if (
      confirmationVersion !== undefined &&
      !(typeof confirmationVersion === 'string' && CONFIRMATION_VERSION.test(confirmationVersion))
    ) {
      return undefined;
    }
    return { baseline: baseline!, since: since!, low: low!, confirmationVersion };
  } catch {
    return undefined;
  }
}

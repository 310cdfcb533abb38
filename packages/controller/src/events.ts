import { silentLogger, type Logger } from '@mco/runtime';
import type { KubeObject } from '@mco/kube-runtime';
import type { CoreEvent, HubClient } from './kube.js';
import type { ControllerMetrics } from './metrics.js';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  readonly client: HubClient;
  readonly component: string;
  readonly instance: string;
  readonly metrics?: ControllerMetrics;
  readonly logger?: Logger;
  /** Events waiting to be sent beyond this are dropped: events are best effort, reconciling is not. */
  readonly maxPending?: number;
  /** A repeat of the same event within this window bumps `count` instead of creating an object. */
  readonly aggregateWindowMs?: number;
  /**
   * Events wait for whoever runs `sendNext` (the controller's workers, when no
   * status work waits) and this is called when one is recorded; without it
   * they are sent in the background, one at a time.
   */
  readonly onPending?: () => void;
}

interface Pending {
  readonly object: KubeObject;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
}

const MAX_AGGREGATES = 4096;

/**
 * Records Kubernetes Events (core/v1) so that reconciles never wait for them:
 * in the background, one at a time, or, with `onPending`, whenever the owner
 * runs `sendNext`. Repeats are aggregated like client-go's recorder (count
 * and lastTimestamp); a full backlog drops events.
 */
export class EventRecorder {
  private readonly pending: Pending[] = [];
  private readonly recent = new Map<string, { name: string; count: number; at: number }>();
  private readonly client: HubClient;
  private readonly logger: Logger;
  private readonly maxPending: number;
  private readonly windowMs: number;
  private pumping: Promise<void> | undefined;
  private sequence = 0;

  constructor(private readonly options: EventRecorderOptions) {
    this.client = options.client;
    this.logger = options.logger ?? silentLogger;
    this.maxPending = options.maxPending ?? 1000;
    this.windowMs = options.aggregateWindowMs ?? 600_000;
  }

  record(object: KubeObject, type: EventType, reason: string, message: string): void {
    if (this.pending.length >= this.maxPending) {
      this.options.metrics?.events.inc({ type, result: 'dropped' });
      this.logger.debug('event backlog full; dropping an event', { reason });
      return;
    }
    this.pending.push({ object, type, reason, message: message.slice(0, 1024) });
    if (this.options.onPending) this.options.onPending();
    else this.pumping ??= this.pump().finally(() => (this.pumping = undefined));
  }

  /** Events recorded and not yet sent. */
  get pendingCount(): number {
    return this.pending.length;
  }

  /** Sends the oldest pending event (a failure is logged and counted); undefined when none is pending. */
  sendNext(): Promise<void> | undefined {
    const next = this.pending.shift();
    if (!next) return undefined;
    return this.send(next).catch((error: unknown) => {
      this.options.metrics?.events.inc({ type: next.type, result: 'error' });
      this.logger.warn('cannot record an event', { error, reason: next.reason });
    });
  }

  /** Resolves when every recorded event was sent (or failed); with `onPending`, sends those still pending. */
  async flush(): Promise<void> {
    while (this.pumping) await this.pumping;
    if (this.options.onPending) await this.pump();
  }

  private async pump(): Promise<void> {
    for (let sent = this.sendNext(); sent; sent = this.sendNext()) await sent;
  }

  private async send({ object, type, reason, message }: Pending): Promise<void> {
    const meta = object.metadata ?? {};
    const namespace = String(meta.namespace ?? 'default');
    const key = `${String(meta.uid)}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = Date.now();
    const seen = this.recent.get(key);
    if (seen && now - seen.at < this.windowMs) {
      seen.count++;
      seen.at = now;
      await this.client.patchEvent(namespace, seen.name, {
        count: seen.count,
        lastTimestamp: new Date(now).toISOString(),
      });
      this.options.metrics?.events.inc({ type, result: 'aggregated' });
      return;
    }
    const name = `${String(meta.name)}.${now.toString(16)}${(this.sequence++ % 4096).toString(16).padStart(3, '0')}`;
    const event: CoreEvent = {
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: String(meta.name),
        namespace,
        uid: meta.uid as string | undefined,
        resourceVersion: meta.resourceVersion,
      },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: new Date(now).toISOString(),
      lastTimestamp: new Date(now).toISOString(),
      source: { component: this.options.component },
      reportingComponent: this.options.component,
      reportingInstance: this.options.instance,
    };
    await this.client.createEvent(namespace, event);
    this.options.metrics?.events.inc({ type, result: 'created' });
    this.recent.delete(key);
    this.recent.set(key, { name, count: 1, at: now });
    if (this.recent.size > MAX_AGGREGATES) this.recent.delete(this.recent.keys().next().value!);
  }
}

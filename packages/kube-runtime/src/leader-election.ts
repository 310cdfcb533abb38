import { performance } from 'node:perf_hooks';
import { httpStatusOf, silentLogger, type Logger } from '@mco/runtime';
import type { KubeClient } from './client.js';
import { WakeableSleep } from './sleep.js';

/** The fields of a coordination.k8s.io/v1 Lease the elector (and the controller's shards) read and write. */
export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    /** MicroTime: RFC 3339 with 6 fractional digits (3 are rejected). */
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface LeaderElectionOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly name: string;
  /** Unique per replica, e.g. the pod name plus a random suffix. */
  readonly identity: string;
  /** How long others wait after the last observed renewal before taking over. */
  readonly leaseDurationMs?: number;
  /** The leader steps down when it could not renew for this long (< leaseDuration). */
  readonly renewDeadlineMs?: number;
  /** Time between two acquire or renew attempts. */
  readonly retryPeriodMs?: number;
  readonly logger?: Logger;
  readonly onStartedLeading?: () => void;
  readonly onStoppedLeading?: () => void;
  /** Called when the Lease is seen with a different holder ('' when nobody holds it). */
  readonly onHolderChanged?: (holder: string) => void;
}

/**
 * Lease-based leader election (coordination.k8s.io/v1) with client-go's
 * rules: a candidate takes the Lease when its holder has not renewed within
 * `leaseDuration` as observed on the candidate's own clock (no clock sync
 * needed); every write carries the Lease's resourceVersion, so two
 * candidates never both win. The leader steps down when it could not renew
 * within `renewDeadline`, and releases the Lease on shutdown so a successor
 * takes over at once.
 */
export class LeaderElector {
  private readonly client: KubeClient;
  private readonly path: string;
  private readonly namespace: string;
  private readonly name: string;
  readonly identity: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly logger: Logger;
  private readonly onStarted: () => void;
  private readonly onStopped: () => void;
  private readonly onHolder: (holder: string) => void;
  private seenHolder: string | undefined;
  private leading = false;
  /** Monotonic time (performance.now()) the last successful renewal was sent: wall-clock steps cannot stretch a term. */
  private lastRenewAt = 0;
  private observed: { resourceVersion: string | undefined; at: number } | undefined;
  private lease: Lease | undefined;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private readonly sleeper = new WakeableSleep();
  private transitions = 0;

  constructor(options: LeaderElectionOptions) {
    this.client = options.client;
    this.path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(options.namespace)}/leases`;
    this.namespace = options.namespace;
    this.name = options.name;
    this.identity = options.identity;
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (!(this.renewDeadlineMs < this.leaseDurationMs && this.retryPeriodMs < this.renewDeadlineMs))
      throw new Error('leader election needs retryPeriod < renewDeadline < leaseDuration');
    this.logger = (options.logger ?? silentLogger).child({ lease: `${options.namespace}/${options.name}` });
    this.onStarted = options.onStartedLeading ?? (() => {});
    this.onStopped = options.onStoppedLeading ?? (() => {});
    this.onHolder = options.onHolderChanged ?? (() => {});
  }

  /** The holder of the Lease as last read or written ('' when free; undefined before the first read). */
  get holder(): string | undefined {
    return this.seenHolder;
  }

  /** True while this replica holds the Lease and renewed it within the renew deadline. */
  isLeader(): boolean {
    return this.leading && performance.now() - this.lastRenewAt < this.renewDeadlineMs;
  }

  /** How many times this replica became leader. */
  get leadershipCount(): number {
    return this.transitions;
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Stops campaigning; releases the Lease if held (unless `release` is false: a crash). */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    this.sleeper.wake();
    await this.loop;
    this.loop = undefined;
    if (this.leading && options.release !== false) await this.release();
    this.setLeading(false);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      // The term counts from when the renewal was sent, not from when its answer came.
      const sentAt = performance.now();
      const ok = await this.tryAcquireOrRenew();
      const now = performance.now();
      if (ok) {
        this.lastRenewAt = sentAt;
        if (!this.leading) this.setLeading(true);
      } else if (this.leading && now - this.lastRenewAt >= this.renewDeadlineMs) {
        this.logger.warn('could not renew the lease within the renew deadline; stepping down', {
          renewDeadlineMs: this.renewDeadlineMs,
        });
        this.setLeading(false);
      }
      // A candidate retries with jitter so that replicas do not move in lockstep.
      await this.sleeper.sleep(this.leading ? this.retryPeriodMs : this.retryPeriodMs * (1 + Math.random() * 0.2));
    }
  }

  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    if (leading) {
      this.transitions++;
      this.logger.info('became leader', { identity: this.identity });
      this.onStarted();
    } else {
      this.logger.info('stopped leading', { identity: this.identity });
      this.onStopped();
    }
  }

  private noteHolder(holder: string): void {
    if (holder === this.seenHolder) return;
    this.seenHolder = holder;
    // Once per change of holder, not per retry: who a standby waits for.
    if (holder !== '' && holder !== this.identity)
      this.logger.info('the lease is held by another candidate', { holder });
    this.onHolder(holder);
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    // Wall-clock time only for what is written (renewTime, acquireTime); expiry
    // is judged on the monotonic clock from when this replica saw the Lease change.
    const now = Date.now();
    const seen = performance.now();
    const options = { timeoutMs: Math.max(1_000, this.retryPeriodMs) };
    let lease: Lease;
    try {
      lease = await this.client.get<Lease>(`${this.path}/${encodeURIComponent(this.name)}`, options);
    } catch (error) {
      if (httpStatusOf(error) !== 404) {
        this.logger.warn('cannot read the lease', { error });
        return false;
      }
      try {
        this.lease = await this.client.create<Lease>(
          this.path,
          {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: this.name, namespace: this.namespace },
            spec: this.spec(now, 0, microTime(now)),
          },
          options,
        );
        this.observed = { resourceVersion: this.lease.metadata?.resourceVersion, at: seen };
        this.noteHolder(this.identity);
        return true;
      } catch (createError) {
        if (httpStatusOf(createError) !== 409) this.logger.warn('cannot create the lease', { error: createError });
        return false;
      }
    }
    const rv = lease.metadata?.resourceVersion;
    if (this.observed?.resourceVersion !== rv) this.observed = { resourceVersion: rv, at: seen };
    const observedAt = this.observed?.at ?? seen;
    const holder = lease.spec?.holderIdentity ?? '';
    const duration = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    const held = holder !== '' && holder !== this.identity;
    if (held && observedAt + duration > seen) {
      this.noteHolder(holder);
      return false;
    }
    const transitions = lease.spec?.leaseTransitions ?? 0;
    const acquiring = holder !== this.identity;
    lease.spec = this.spec(
      now,
      acquiring ? transitions + 1 : transitions,
      acquiring ? microTime(now) : (lease.spec?.acquireTime ?? microTime(now)),
    );
    try {
      this.lease = await this.client.replace<Lease>(`${this.path}/${encodeURIComponent(this.name)}`, lease, options);
      this.observed = { resourceVersion: this.lease.metadata?.resourceVersion, at: seen };
      this.noteHolder(this.identity);
      return true;
    } catch (error) {
      if (httpStatusOf(error) !== 409) this.logger.warn('cannot update the lease', { error });
      return false;
    }
  }

  private spec(now: number, leaseTransitions: number, acquireTime: string): Lease['spec'] {
    return {
      holderIdentity: this.identity,
      // Rounded up: a written term shorter than the renew deadline would let a
      // standby take over while this replica still acts as leader.
      leaseDurationSeconds: Math.max(1, Math.ceil(this.leaseDurationMs / 1000)),
      acquireTime,
      renewTime: microTime(now),
      leaseTransitions,
    };
  }

  /** Gives the Lease up: empty holder, 1 s duration, so a successor need not wait for expiry. */
  private async release(): Promise<void> {
    if (!this.lease) return;
    const now = Date.now();
    const lease: Lease = {
      ...this.lease,
      spec: {
        ...this.lease.spec,
        holderIdentity: '',
        leaseDurationSeconds: 1,
        renewTime: microTime(now),
        acquireTime: this.lease.spec?.acquireTime ?? microTime(now),
      },
    };
    try {
      await this.client.replace(`${this.path}/${encodeURIComponent(this.name)}`, lease, {
        timeoutMs: Math.max(1_000, this.retryPeriodMs),
      });
      this.logger.info('released the lease');
      this.noteHolder('');
    } catch (error) {
      this.logger.warn('cannot release the lease; a successor waits for it to expire', { error });
    }
  }
}

/** A MicroTime: the API server rejects a Lease time with fewer than 6 fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

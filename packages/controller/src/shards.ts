import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { httpStatusOf, silentLogger, type Logger } from '@mco/runtime';
import { microTime, WakeableSleep, type KubeClient, type Lease } from '@mco/kube-runtime';
import { Gauge, type Registry } from 'prom-client';

/** The shard count a Lease was taken with: replicas configured with another count never share shards. */
export const SHARDS_ANNOTATION = 'mco.x-k8s.io/shards';
/**
 * The members Lease's map of replica identity -> its last heartbeat: RFC 3339 once its caches synced,
 * `starting <RFC 3339>` before (written only in a cold start, when no member had synced).
 */
export const MEMBERS_ANNOTATION = 'mco.x-k8s.io/members';
const STARTING = 'starting ';

/** A replica's first round only announces it; it takes shards from this round on (0-based). */
const FIRST_TAKING_ROUND = 1;

export interface ShardSettings {
  /** Namespace of the Leases, shared by every install on the hub. */
  readonly namespace: string;
  /** Shard 0's Lease (a single shard is exactly the former leader Lease); shard i > 0 is `<name>-<i>`. */
  readonly name: string;
  /** Fixed number of shards, independent of the replica count (default 1). */
  readonly shards?: number;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export interface ShardCoordinatorOptions extends ShardSettings {
  readonly client: KubeClient;
  /** Unique per replica; also the field manager of its writes (`fieldManagerOf`). */
  readonly identity: string;
  readonly logger?: Logger;
  readonly onAcquired?: (shard: number) => void;
  readonly onLost?: (shard: number) => void;
  /** Shard 0's holder as last read ('' when free): the install holding it is the one that reconciles. */
  readonly onHolderChanged?: (holder: string) => void;
  /** Whether `holder` belongs to another install of mco (then this replica stands by). */
  readonly otherInstall?: (holder: string) => boolean;
}

/** A placement's shard: FNV-1a of `namespace/name`, the same on every replica and across restarts. */
export function shardOf(key: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

export function shardLeaseName(name: string, shard: number): string {
  return shard === 0 ? name : `${name}-${shard}`;
}

export function membersLeaseName(name: string): string {
  return `${name}-members`;
}

/**
 * The `fieldManager` a replica writes with, so its writes name it in
 * `metadata.managedFields` (the API server allows 128 characters: a longer
 * identity keeps its start and a hash of the whole).
 */
export function fieldManagerOf(identity: string): string {
  if (identity.length <= 128) return identity;
  return `${identity.slice(0, 119)}-${createHash('sha256').update(identity).digest('hex').slice(0, 8)}`;
}

interface Shard {
  /** The Lease as last read or written. */
  lease: Lease | undefined;
  /** When (monotonic) its resourceVersion was first seen: expiry is judged on this replica's clock. */
  observedAt: number;
  held: boolean;
  /** Monotonic time the last successful acquire or renew was sent. */
  renewedAt: number;
  releasing: boolean;
  inFlight: number;
  idle: (() => void)[];
}

/**
 * Shards over coordination.k8s.io Leases, with client-go's leader-election
 * rules per shard: a Lease is taken when free or not renewed within its
 * duration as seen on this replica's clock, every write carries the Lease's
 * resourceVersion, and a holder stops acting on a shard when it could not
 * renew it within `renewDeadline` (before anyone else may take it, at
 * `leaseDuration`). Replicas announce themselves in a members Lease; each aims
 * at ceil(shards / live members) shards, takes free ones up to that and
 * releases any beyond it (after its in-flight work on them ended), so shards
 * rebalance when a replica joins or leaves. One shard is the former leader
 * election: the same Lease, no members Lease.
 *
 * A replica starts before its caches synced (`setSynced` says when they have), so that in a cold start
 * it holds its shards before it lists, and need not list their objects again after taking them. Its first
 * round only reads and announces it; it takes shards from the second, so replicas that start together
 * share them from the start. A starting replica announces itself only when no live member has synced
 * (a cold start, or every synced one gone): where one has (a rolling update, a replica added), it
 * stays out of the count until synced, so no synced replica gives it shards it cannot work on yet.
 */
export class ShardCoordinator {
  readonly shards: number;
  readonly identity: string;
  private readonly client: KubeClient;
  private readonly path: string;
  private readonly settings: ShardSettings;
  private readonly logger: Logger;
  private readonly state: Shard[];
  /** Members as last read: identity -> heartbeat value and when (monotonic) it last changed. */
  private readonly members = new Map<string, { value: string; at: number }>();
  private readonly sleeper = new WakeableSleep();
  private loop: Promise<void> | undefined;
  private stopped = false;
  private holder: string | undefined;
  private blockedBy: string | undefined;
  private synced = false;
  /** Counted as a member: synced, or starting in a cold start (once announced, it stays). */
  private announced = false;
  /** Its last read of the members found a live synced one: it stays out until its own caches synced. */
  private besideSynced = false;
  /** Whether a take of the last round failed in its request (a deadline, the network), not to another replica. */
  private takeFailed = false;
  private rounds = 0;
  private resolveFirstTake: () => void = () => {};
  private readonly firstTake = new Promise<void>((resolve) => (this.resolveFirstTake = resolve));

  constructor(private readonly options: ShardCoordinatorOptions) {
    this.shards = options.shards ?? 1;
    if (!Number.isInteger(this.shards) || this.shards < 1) throw new Error('shards must be a positive integer');
    if (!(options.renewDeadlineMs < options.leaseDurationMs && options.retryPeriodMs < options.renewDeadlineMs))
      throw new Error('leader election needs retryPeriod < renewDeadline < leaseDuration');
    this.identity = options.identity;
    this.client = options.client;
    this.settings = options;
    this.path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(options.namespace)}/leases`;
    this.logger = (options.logger ?? silentLogger).child({ leases: `${options.namespace}/${options.name}` });
    this.state = Array.from({ length: this.shards }, () => ({
      lease: undefined,
      observedAt: 0,
      held: false,
      renewedAt: 0,
      releasing: false,
      inFlight: 0,
      idle: [],
    }));
  }

  /** Resolves once the first round that could take shards ended (taken or not), or on stop. */
  tookFirst(): Promise<void> {
    return this.firstTake;
  }

  /** This replica's caches synced: it may now be given shards by its peers (the next round says so). */
  setSynced(): void {
    if (this.synced) return;
    this.synced = true;
    this.sleeper.wake();
  }

  /** True while this replica holds the shard's Lease, renewed it within the renew deadline, and is not releasing it. */
  owns(shard: number): boolean {
    const s = this.state[shard];
    return s !== undefined && s.held && !s.releasing && performance.now() - s.renewedAt < this.settings.renewDeadlineMs;
  }

  ownsKey(key: string): boolean {
    return this.owns(shardOf(key, this.shards));
  }

  /** The shards this replica owns now. */
  owned(): number[] {
    return this.state.flatMap((_, i) => (this.owns(i) ? [i] : []));
  }

  /** Runs work on a placement; a shard is released only after the work on it ended. */
  async track<T>(key: string, work: () => Promise<T>): Promise<T> {
    const s = this.state[shardOf(key, this.shards)]!;
    s.inFlight++;
    try {
      return await work();
    } finally {
      if (--s.inFlight === 0) for (const wake of s.idle.splice(0)) wake();
    }
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Stops; releases the held Leases and leaves the members Lease unless `release` is false (a crash). */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    this.sleeper.wake();
    await this.loop;
    this.resolveFirstTake();
    this.loop = undefined;
    if (options.release === false) {
      for (let i = 0; i < this.shards; i++) this.lose(i);
      return;
    }
    await Promise.all(this.state.map((s, i) => (s.held ? this.release(i) : undefined)));
    if (this.shards > 1) await this.heartbeat(false);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const started = performance.now();
      try {
        await this.round();
      } catch (error) {
        this.logger.warn('shard coordination round failed', { error });
      }
      // Its caches may list once it took what it takes now: at once beside synced members, which give
      // it nothing before it synced. A failed read of the members says nothing: it lists on schedule.
      this.rounds++;
      // A take whose request failed (not lost to another replica) is tried once more first.
      const took = this.rounds > FIRST_TAKING_ROUND + (this.takeFailed ? 1 : 0);
      if (this.shards === 1 || took || this.besideSynced) this.resolveFirstTake();
      // Rounds start every retry period (with jitter, so replicas do not move in lockstep), however
      // long one took: a slow API server must not stretch the time to notice an expired Lease.
      const period = this.settings.retryPeriodMs * (1 + Math.random() * 0.2);
      await this.sleeper.sleep(Math.max(0, period - (performance.now() - started)));
    }
  }

  private async round(): Promise<void> {
    const now = performance.now();
    // Held shards are renewed first, beside the reads of the others: on a loaded API server, reads and
    // the members heartbeat must not use up the time a renewal has before the renew deadline.
    const [renewed] = await Promise.all([
      Promise.all(this.state.map((s, i) => (s.held ? this.renew(i) : true))),
      Promise.all(this.state.map((s, i) => (s.held ? undefined : this.read(i, now)))),
    ]);
    this.noteHolder(this.holderOf(0, now));

    // Another install holds shard 0: it reconciles; this one gives everything up and waits.
    const standBy = this.options.otherInstall?.(this.holder ?? '') === true;
    const members = this.shards > 1 ? await this.heartbeat(!standBy) : [this.identity];
    const live = members.length || 1;
    const counted = this.shards === 1 || this.announced;
    renewed.forEach((ok, i) => {
      const s = this.state[i]!;
      if (!ok && s.held && performance.now() - s.renewedAt >= this.settings.renewDeadlineMs) {
        this.logger.warn('could not renew the shard lease within the renew deadline; letting it go', { shard: i });
        this.lose(i);
      }
    });

    const target = standBy || !counted ? 0 : Math.ceil(this.shards / live);
    const held = this.state.flatMap((s, i) => (s.held && !s.releasing ? [i] : []));
    // The highest shards go first, so shard 0 (the install's claim) stays put.
    await Promise.all(held.slice(target).map((i) => this.release(i)));
    // Not counted by its peers (starting while a synced member is live), or in its first round (it
    // announced itself only now): it takes nothing yet.
    if (standBy || !counted || (this.shards > 1 && this.rounds < FIRST_TAKING_ROUND)) return;

    const blocker = this.blocker(performance.now());
    if (blocker !== this.blockedBy) {
      this.blockedBy = blocker;
      if (blocker)
        this.logger.warn('a live shard lease was taken with another shard count; taking no shard until it is gone', {
          lease: blocker,
          shards: this.shards,
        });
    }
    if (blocker) return;
    // A released shard is taken up to the target. An expired one (its holder stopped renewing: it
    // crashed or lost the API server) up to the share of one replica fewer, at once: the members Lease
    // says the holder is gone only about as late again, and rebalancing evens out the rest.
    const at = performance.now();
    const crashTarget = Math.ceil(this.shards / Math.max(1, live - 1));
    const picks: number[] = [];
    for (const i of this.takingOrder(members)) {
      const s = this.state[i]!;
      if (s.held || this.holderOf(i, at) !== '') continue;
      const expired = (s.lease?.spec?.holderIdentity ?? '') !== '';
      if (held.length + picks.length < (expired ? crashTarget : target)) picks.push(i);
    }
    const taken = await Promise.all(picks.map((i) => this.acquire(i)));
    this.takeFailed = taken.includes('failed');
  }

  /**
   * The order in which free shards are taken: the k-th of n live members (by identity) first tries
   * shards k, k + n, k + 2n, ..., then the rest. Replicas that start together and see the same members
   * take disjoint shards, rather than all racing for the lowest free ones and all but one losing.
   */
  private takingOrder(members: readonly string[]): number[] {
    const n = Math.max(1, members.length);
    const k = Math.max(0, [...members].sort().indexOf(this.identity));
    const order = Array.from({ length: this.shards }, (_, i) => i);
    return order.sort((a, b) => ((a - k + n) % n) - ((b - k + n) % n) || a - b);
  }

  /** The live holder of a shard's Lease ('' when free or expired), as last read. */
  private holderOf(shard: number, now: number): string {
    const s = this.state[shard]!;
    if (s.held) return this.identity;
    const holder = s.lease?.spec?.holderIdentity ?? '';
    const duration = (s.lease?.spec?.leaseDurationSeconds ?? 0) * 1000;
    return holder !== '' && s.observedAt + duration > now ? holder : '';
  }

  /** A live Lease held by another replica with another shard count (a Lease without the annotation: 1 shard). */
  private blocker(now: number): string | undefined {
    for (let i = 0; i < this.shards; i++) {
      const holder = this.holderOf(i, now);
      if (holder === '' || holder === this.identity) continue;
      const count = Number(this.state[i]!.lease?.metadata?.annotations?.[SHARDS_ANNOTATION] ?? '1');
      if (count !== this.shards) return shardLeaseName(this.settings.name, i);
    }
    return undefined;
  }

  private noteHolder(holder: string): void {
    if (holder === this.holder) return;
    this.holder = holder;
    this.options.onHolderChanged?.(holder);
  }

  private leasePath(name: string): string {
    return `${this.path}/${encodeURIComponent(name)}`;
  }

  private get requestOptions() {
    return { timeoutMs: Math.max(1_000, this.settings.retryPeriodMs) };
  }

  private async read(shard: number, now: number): Promise<void> {
    const s = this.state[shard]!;
    try {
      const lease = await this.client.get<Lease>(
        this.leasePath(shardLeaseName(this.settings.name, shard)),
        this.requestOptions,
      );
      this.observe(s, lease, now);
      // Someone took it while this replica could not renew: it is theirs.
      if (s.held && lease.spec?.holderIdentity !== this.identity) this.lose(shard);
    } catch (error) {
      if (httpStatusOf(error) === 404) {
        s.lease = undefined;
        if (s.held) this.lose(shard);
      } else {
        this.logger.warn('cannot read a shard lease', { shard, error });
      }
    }
  }

  private observe(s: Shard, lease: Lease, at: number): void {
    if (s.lease?.metadata?.resourceVersion !== lease.metadata?.resourceVersion) s.observedAt = at;
    s.lease = lease;
  }

  private spec(previous: Lease['spec'], acquiring: boolean, now: number): Lease['spec'] {
    const transitions = previous?.leaseTransitions ?? 0;
    return {
      holderIdentity: this.identity,
      // Rounded up: a term shorter than the renew deadline would let another replica
      // take the shard while this one still acts on it.
      leaseDurationSeconds: Math.max(1, Math.ceil(this.settings.leaseDurationMs / 1000)),
      acquireTime: acquiring || !previous?.acquireTime ? microTime(now) : previous.acquireTime,
      renewTime: microTime(now),
      leaseTransitions: acquiring ? transitions + 1 : transitions,
    };
  }

  /** Takes a free shard: 'lost' when another replica took it first, 'failed' when the request failed. */
  private async acquire(shard: number): Promise<'took' | 'lost' | 'failed'> {
    const s = this.state[shard]!;
    const name = shardLeaseName(this.settings.name, shard);
    const sentAt = performance.now();
    const now = Date.now();
    const metadata = {
      ...(s.lease?.metadata ?? { name, namespace: this.settings.namespace }),
      annotations: { ...s.lease?.metadata?.annotations, [SHARDS_ANNOTATION]: String(this.shards) },
    };
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata,
      spec: this.spec(s.lease?.spec, true, now),
    };
    let lease: Lease | undefined;
    try {
      lease = s.lease
        ? await this.client.replace<Lease>(this.leasePath(name), body, this.requestOptions)
        : await this.client.create<Lease>(this.path, body, this.requestOptions);
    } catch (error) {
      if (httpStatusOf(error) === 409) return 'lost';
      // A deadline may pass after the API server applied the write: the Lease then names this replica
      // with this very acquireTime, and it is this replica's (else it would sit idle until it expired).
      lease = await this.readBack(name, body.spec!.acquireTime!);
      if (!lease) {
        this.logger.warn('cannot take a shard lease', { shard, error });
        return 'failed';
      }
    }
    this.observe(s, lease, sentAt);
    s.held = true;
    s.renewedAt = sentAt;
    this.logger.info('took a shard', { shard, identity: this.identity });
    if (shard === 0) this.noteHolder(this.identity);
    this.options.onAcquired?.(shard);
    return 'took';
  }

  /** The Lease when this replica's write of `acquireTime` is what it holds, else undefined. */
  private async readBack(name: string, acquireTime: string): Promise<Lease | undefined> {
    try {
      const lease = await this.client.get<Lease>(this.leasePath(name), this.requestOptions);
      const mine = lease.spec?.holderIdentity === this.identity && lease.spec?.acquireTime === acquireTime;
      return mine ? lease : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Renews a held shard from the Lease as this replica last wrote it. A conflict means the Lease
   * changed since (a missing one, that it was deleted): read, it is lost if another replica holds it
   * or it is gone, renewed once more if not (a renewal that timed out after the API server applied
   * it). A renewal may take what is left of the renew deadline: ownership counts from when it was
   * sent, so a slow answer is as safe as a quick one.
   */
  private async renew(shard: number, again = true): Promise<boolean> {
    const s = this.state[shard]!;
    if (!s.lease || s.releasing) return true;
    const sentAt = performance.now();
    const left = Math.floor(this.settings.renewDeadlineMs - (sentAt - s.renewedAt));
    try {
      const lease = await this.client.replace<Lease>(
        this.leasePath(shardLeaseName(this.settings.name, shard)),
        { ...s.lease, spec: this.spec(s.lease.spec, false, Date.now()) },
        { timeoutMs: Math.max(this.requestOptions.timeoutMs, left) },
      );
      this.observe(s, lease, sentAt);
      s.renewedAt = sentAt;
      return true;
    } catch (error) {
      const status = httpStatusOf(error);
      if (status !== 409 && status !== 404) {
        this.logger.warn('cannot renew a shard lease', { shard, error });
        return false;
      }
      await this.read(shard, performance.now());
      return s.held && again ? this.renew(shard, false) : false;
    }
  }

  /** Stops acting on the shard, waits for its in-flight work (bounded by the renew deadline), then frees the Lease. */
  private async release(shard: number): Promise<void> {
    const s = this.state[shard]!;
    s.releasing = true;
    if (s.inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        s.idle.push(resolve);
        timer = setTimeout(resolve, this.settings.renewDeadlineMs);
      });
      clearTimeout(timer);
    }
    const still = s.held && s.lease && performance.now() - s.renewedAt < this.settings.leaseDurationMs;
    if (still) {
      try {
        const lease = await this.client.replace<Lease>(
          this.leasePath(shardLeaseName(this.settings.name, shard)),
          {
            ...s.lease,
            // Empty holder and 1 s: a successor need not wait for expiry.
            spec: { ...s.lease!.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(Date.now()) },
          },
          this.requestOptions,
        );
        this.observe(s, lease, performance.now());
        this.logger.info('released a shard', { shard, identity: this.identity });
      } catch (error) {
        this.logger.warn('cannot release a shard lease; another replica waits for it to expire', { shard, error });
      }
    }
    this.lose(shard);
    if (shard === 0) this.noteHolder('');
  }

  private lose(shard: number): void {
    const s = this.state[shard]!;
    s.releasing = false;
    if (!s.held) return;
    s.held = false;
    this.options.onLost?.(shard);
  }

  /**
   * Renews this replica's entry in the members Lease (or removes it: `present` false), drops members
   * not renewed within a lease duration as seen on this clock, and returns the live members, this
   * replica included when it counts. A conflict (another member wrote at the same time) is read and
   * written again at once, a few times: replicas that start together must all be counted in the
   * round after.
   */
  private async heartbeat(present: boolean): Promise<string[]> {
    for (let attempt = 1; ; attempt++) {
      const written = await this.heartbeatOnce(present);
      if (written !== 'conflict') return written;
      if (attempt === 3) return this.counted(this.liveMembers(performance.now()), present);
    }
  }

  private async heartbeatOnce(present: boolean): Promise<string[] | 'conflict'> {
    const name = membersLeaseName(this.settings.name);
    const now = performance.now();
    let lease: Lease | undefined;
    try {
      lease = await this.client.get<Lease>(this.leasePath(name), this.requestOptions);
    } catch (error) {
      if (httpStatusOf(error) !== 404) {
        this.logger.warn('cannot read the members lease', { error });
        return this.counted(this.liveMembers(now), present);
      }
    }
    let listed: Record<string, unknown> = {};
    try {
      listed = JSON.parse(lease?.metadata?.annotations?.[MEMBERS_ANNOTATION] ?? '{}') as Record<string, unknown>;
    } catch {
      this.logger.warn('the members lease holds no JSON map; rewriting it', { lease: name });
    }
    for (const [id, value] of Object.entries(listed)) {
      const seen = this.members.get(id);
      if (seen?.value !== String(value)) this.members.set(id, { value: String(value), at: now });
    }
    for (const id of this.members.keys()) if (!(id in listed)) this.members.delete(id);
    this.members.delete(this.identity);
    const live = this.liveMembers(now);
    const members: Record<string, string> = Object.fromEntries(live.map((id) => [id, this.members.get(id)!.value]));
    this.announced ||= this.synced || live.every((id) => this.members.get(id)!.value.startsWith(STARTING));
    this.besideSynced = !this.announced;
    if (present && this.announced) members[this.identity] = `${this.synced ? '' : STARTING}${new Date().toISOString()}`;
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        ...(lease?.metadata ?? { name, namespace: this.settings.namespace }),
        annotations: { ...lease?.metadata?.annotations, [MEMBERS_ANNOTATION]: JSON.stringify(members) },
      },
      spec: lease?.spec ?? {},
    };
    try {
      if (lease) await this.client.replace(this.leasePath(name), body, this.requestOptions);
      else await this.client.create(this.path, body, this.requestOptions);
    } catch (error) {
      if (httpStatusOf(error) === 409) return 'conflict';
      this.logger.warn('cannot write the members lease', { error });
    }
    return this.counted(live, present);
  }

  /** The live members with this replica, when it counts itself (present and announced). */
  private counted(live: string[], present: boolean): string[] {
    return present && this.announced ? [...live, this.identity] : live;
  }

  private liveMembers(now: number): string[] {
    return [...this.members].filter(([, m]) => now - m.at < this.settings.leaseDurationMs).map(([id]) => id);
  }
}

/** `mco_controller_shards_owned`: how many shards this replica owns now. */
export function registerShardMetrics(registry: Registry, owned: () => number): void {
  new Gauge({
    name: 'mco_controller_shards_owned',
    help: 'Shards (placement hash ranges, each with its own Lease) this replica owns and reconciles.',
    registers: [registry],
    collect() {
      this.set(owned());
    },
  });
}

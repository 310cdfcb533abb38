/**
 * The placements whose PlacementDecisions are behind their status: the
 * controller's lower-priority lane. A placement is held once however often
 * its status changes (the write, when it runs, reads the latest status), and
 * never handed out while it is being reconciled or its PlacementDecisions
 * are being written, so two writes of one placement's slices never race.
 */
export class DecisionBacklog {
  /** Placement key -> when its PlacementDecisions fell behind (Map order: the oldest first). */
  private readonly behind = new Map<string, number>();
  private readonly busy = new Set<string>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  get size(): number {
    return this.behind.size;
  }

  /** Notes that `key`'s PlacementDecisions are behind; one already behind keeps its place and its time. */
  add(key: string): void {
    if (!this.behind.has(key)) this.behind.set(key, this.now());
  }

  delete(key: string): void {
    this.behind.delete(key);
  }

  /**
   * The oldest placement that is not busy, marked busy until `end`, with when
   * it fell behind; with `olderThanMs`, only one behind at least that long.
   */
  take(olderThanMs?: number): { key: string; since: number } | undefined {
    for (const [key, since] of this.behind) {
      if (this.busy.has(key)) continue;
      if (olderThanMs !== undefined && this.now() - since < olderThanMs) return undefined;
      this.behind.delete(key);
      this.busy.add(key);
      return { key, since };
    }
    return undefined;
  }

  /** `key` is being reconciled (or written): `take` passes it over until `end`. */
  begin(key: string): void {
    this.busy.add(key);
  }

  end(key: string): void {
    this.busy.delete(key);
  }
}

/**
 * Other replicas at work on statuses, seen as updates of placements this
 * replica does not hold (its own reconciles come from its queue). While they
 * come, and `quietMs` after, this replica's PlacementDecision writes wait too
 * (until overdue), so that across replicas status writes go first as they do
 * within one: the API server they share is the bottleneck
 * (docs/performance.md).
 */
export class PeerActivity {
  private busyUntil = 0;

  constructor(
    private readonly quietMs = 500,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A peer wrote a placement status. */
  seen(): void {
    this.busyUntil = this.now() + this.quietMs;
  }

  /** How long until the peers have been quiet for `quietMs` (0: they have). */
  waitMs(): number {
    return Math.max(0, this.busyUntil - this.now());
  }
}

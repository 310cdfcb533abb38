// What the server sends the page (JSON over server-sent events). Types only:
// the page imports them too.

export interface ClusterView {
  /** `namespace/name`. */
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** `key=value:Effect` of each taint; an unreadable annotation shows as its error. */
  readonly taints: readonly string[];
  readonly cordoned: boolean;
  readonly draining: boolean;
  readonly health: 'Healthy' | 'Unhealthy' | 'Unknown';
  readonly healthMessage?: string;
  readonly properties: Readonly<Record<string, string>>;
  readonly deleting: boolean;
  /** Placements (visible to the viewer) that list this cluster, with its state and capacity signal there. */
  readonly placements: readonly { readonly key: string; readonly state: string; readonly signal?: SignalView }[];
}

/**
 * A listed cluster's capacity signal as the controller's last evaluation of
 * the placement saw it (docs/dashboard.md, "Capacity signals"); absent when
 * the placement reads no signals (no autoscaleForCapacity, or an invalid spec).
 */
export interface SignalView {
  readonly status: 'fresh' | 'stale' | 'at ceiling';
  /** Why it is stale, or what of a fresh signal the source could not observe. */
  readonly why?: string;
}

export interface PlacementClusterView {
  readonly key: string;
  readonly state: string;
  readonly since?: string;
  readonly reason?: string;
  readonly message?: string;
  readonly signal?: SignalView;
  readonly desiredMaxReplicas?: number;
}

export interface ConditionView {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
  readonly lastTransitionTime?: string;
}

export interface PlacementSummary {
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly valid?: string;
  readonly satisfied?: string;
  readonly clusters: readonly PlacementClusterView[];
}

/** One stretch of a cluster's state in a placement; `to` absent: still so. State `-`: not listed. */
export interface LaneSegment {
  readonly state: string;
  readonly from: number;
  readonly to?: number;
  readonly desiredMaxReplicas?: number;
}

/** A row of `mco explain`'s table. */
export interface ExplainRow {
  readonly cluster: string;
  readonly eligible: string;
  readonly priority: string;
  readonly score: string;
  readonly signal: string;
  readonly state: string;
  readonly why: string;
}

export interface EventView {
  readonly type: string;
  readonly reason: string;
  readonly message: string;
  readonly at: string;
  readonly count: number;
}

export interface DeliveryView {
  readonly cluster: string;
  readonly kind: string;
  readonly name: string;
  readonly status: string;
}

export interface PlacementDetail extends PlacementSummary {
  readonly conditions: readonly ConditionView[];
  readonly lanes: readonly { readonly cluster: string; readonly segments: readonly LaneSegment[] }[];
  /** Milliseconds since the epoch from which the lanes are known (the server's start). */
  readonly lanesSince: number;
  readonly explain: { readonly notes: readonly string[]; readonly rows: readonly ExplainRow[] };
  readonly events: readonly EventView[];
  readonly delivery: readonly DeliveryView[];
}

/** When the controller was last seen: the newest renewTime of its Leases (docs/dashboard.md, "Controller liveness"). */
export interface ControllerView {
  /** `namespace/name` of the controller's Lease (shards add `-<i>`, `-members`). */
  readonly lease: string;
  /** Milliseconds since the epoch; absent when no such Lease was seen. */
  readonly lastSeen?: number;
  /** Whether `lastSeen` is older than `staleAfter` milliseconds: the page then says the controller is not seen. */
  readonly stale: boolean;
  readonly staleAfter: number;
}

export interface View {
  readonly now: number;
  readonly controller: ControllerView;
  readonly user: string;
  readonly clusters: readonly ClusterView[];
  readonly placements: readonly PlacementSummary[];
  /** The placement the page asked for, if the viewer may see it. */
  readonly placement?: PlacementDetail;
  /** Whether the informers have listed everything once. */
  readonly synced: boolean;
}

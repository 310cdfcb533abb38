/**
 * A capacity source's answer for one cluster (docs/writing-a-provider.md):
 * how many replicas of the placement's workload the cluster can add now.
 */
export interface CapacityAnswer {
  /** ClusterProfile key `namespace/name`, as Signal uses. */
  readonly cluster: string;
  /** Replicas the cluster can add now; undefined = unknown. */
  readonly addableReplicas?: number;
  /** When the answer was observed (RFC 3339). */
  readonly observedAt: string;
  readonly reason: string;
  /** The capacity source that answered. */
  readonly source: string;
}

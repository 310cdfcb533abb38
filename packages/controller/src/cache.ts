import type { KubeObject } from '@mco/kube-runtime';

/*
 * Cache transforms (the Informer's `transform`): each cached kind keeps only
 * what the controller reads, so memory follows the live set rather than
 * whatever else writers put on the objects (annotations of other tools,
 * creationTimestamp, finalizers, other controllers' status fields).
 */

type Metadata = NonNullable<KubeObject['metadata']>;

function pick(metadata: Metadata | undefined, keys: readonly string[]): Metadata {
  const kept: Metadata = {};
  if (!metadata) return kept;
  for (const key of keys) if (metadata[key] !== undefined) kept[key] = metadata[key];
  return kept;
}

/** Identity, the precondition of writes, and what the engine reads (generation, deletion). */
const PLACEMENT_METADATA = ['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'deletionTimestamp'];

/**
 * A placement: its spec and status, whole (the engine reads both). Status
 * writes go to /status, where the API server keeps the stored metadata and
 * spec, so nothing dropped here is lost on a write.
 */
export function trimPlacement(placement: KubeObject): KubeObject {
  return {
    apiVersion: placement.apiVersion,
    kind: placement.kind,
    metadata: pick(placement.metadata, PLACEMENT_METADATA),
    spec: placement.spec,
    ...(placement.status !== undefined ? { status: placement.status } : {}),
  };
}

/** What `sameDecision` compares, the owner that names the placement, and the write preconditions. */
const DECISION_METADATA = [
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'labels',
  'ownerReferences',
  'deletionTimestamp',
];

export function trimPlacementDecision(decision: KubeObject): KubeObject {
  return {
    apiVersion: decision.apiVersion,
    kind: decision.kind,
    metadata: pick(decision.metadata, DECISION_METADATA),
    ...(decision.decisions !== undefined ? { decisions: decision.decisions } : {}),
    ...(decision.schedulerName !== undefined ? { schedulerName: decision.schedulerName } : {}),
  };
}

/**
 * A ClusterProfile keeps its labels and annotations (the taints annotation,
 * and those signal sources read: a kubeconfig Secret, a Prometheus URL), its
 * spec and status (health, properties, access providers); the rest of its
 * metadata goes.
 */
const PROFILE_METADATA = ['name', 'namespace', 'uid', 'resourceVersion', 'labels', 'annotations', 'deletionTimestamp'];

export function trimClusterProfile(profile: KubeObject): KubeObject {
  return { ...profile, metadata: pick(profile.metadata, PROFILE_METADATA) };
}

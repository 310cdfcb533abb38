import {
  PLACEMENT_API_VERSION,
  PLACEMENT_KIND,
  PlacementStatusSchema,
  type Condition,
  type Placement,
  type PlacementCluster,
} from '@mco/core';
import type { KubeClient } from './client.js';
import { objectPath, PLACEMENTS, resourcePath } from './kube.js';

/** What a placement's status tells a delivery adapter. */
export type PlacementStatusReading =
  | {
      readonly ok: true;
      /** The listed clusters, each with its ClusterProfile namespace. */
      readonly clusters: readonly PlacementCluster[];
      /**
       * The controller has not evaluated the latest spec yet (`observedGeneration`
       * below `metadata.generation`). The clusters are still the last decision and
       * are served as they are: a spec edit must not look like "no clusters".
       */
      readonly lagging: boolean;
    }
  | {
      readonly ok: false;
      /** Absent: no status, or a status the controller never stamped; Invalid: it does not parse. */
      readonly why: 'Absent' | 'Invalid';
      /** Names the placement and the field. */
      readonly reason: string;
    };

/**
 * Reads a placement's `status.clusters` the way every delivery adapter must.
 * No information — no status, a status without `observedGeneration` (not
 * written by the controller), one that does not parse, or a listed cluster
 * without a namespace — is `ok: false`, and the adapter then changes and
 * deletes nothing for that placement (restored from a backup, migrated or
 * cleared, a placement must never read as "no clusters"). Pure.
 */
export function readPlacementStatus(placement: Placement): PlacementStatusReading {
  const key = `${placement.metadata.namespace ?? ''}/${placement.metadata.name}`;
  const status: unknown = placement.status;
  if (status === undefined || status === null) {
    return { ok: false, why: 'Absent', reason: `placement ${key} has no status yet` };
  }
  const parsed = PlacementStatusSchema.safeParse(status);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = ['status', ...(issue?.path ?? []).map(String)].join('.');
    return { ok: false, why: 'Invalid', reason: `placement ${key}: ${path}: ${issue?.message ?? 'invalid'}` };
  }
  const { observedGeneration, clusters = [] } = parsed.data;
  if (observedGeneration === undefined) {
    return { ok: false, why: 'Absent', reason: `placement ${key}: status.observedGeneration is missing` };
  }
  const index = clusters.findIndex((c) => !c.namespace);
  if (index >= 0) {
    return { ok: false, why: 'Invalid', reason: `placement ${key}: status.clusters[${index}].namespace is missing` };
  }
  const generation = placement.metadata.generation;
  return { ok: true, clusters, lagging: generation !== undefined && observedGeneration < generation };
}

/**
 * Applies a delivery adapter's own condition to a placement's status
 * (server-side apply under `fieldManager`, so the controller's conditions and
 * other adapters' are left as they are).
 */
export async function applyPlacementCondition(
  client: KubeClient,
  placement: Placement,
  condition: Condition,
  fieldManager: string,
): Promise<void> {
  const { name, namespace = '' } = placement.metadata;
  await client.patch(
    objectPath(PLACEMENTS, namespace, name, 'status'),
    'apply',
    {
      apiVersion: PLACEMENT_API_VERSION,
      kind: PLACEMENT_KIND,
      metadata: { name, namespace },
      status: { conditions: [condition] },
    },
    { query: { fieldManager, force: true } },
  );
}

/** Records a core/v1 Event about a placement, reported by `component` (message cut to 1,024 characters). */
export async function createPlacementEvent(
  client: KubeClient,
  placement: Placement,
  event: { type: 'Normal' | 'Warning'; reason: string; message: string },
  component: string,
  at: Date = new Date(),
): Promise<void> {
  const { name, namespace = '', uid } = placement.metadata;
  const stamp = at.toISOString();
  await client.create(resourcePath({ group: '', version: 'v1', plural: 'events' }, namespace), {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { generateName: `${name}.`, namespace },
    involvedObject: {
      apiVersion: PLACEMENT_API_VERSION,
      kind: PLACEMENT_KIND,
      name,
      namespace,
      ...(uid ? { uid } : {}),
    },
    type: event.type,
    reason: event.reason,
    message: event.message.slice(0, 1024),
    source: { component },
    reportingComponent: component,
    firstTimestamp: stamp,
    lastTimestamp: stamp,
    count: 1,
  });
}

import type { MemberClusterClient } from '@mco/cluster-access';
import { PLACEMENT_API_VERSION, PLACEMENT_KIND, type Condition, type Placement } from '@mco/core';
import {
  applyPlacementCondition,
  createPlacementEvent,
  objectPath,
  PLACEMENTS,
  type KubeClient,
} from '@mco/kube-runtime';
import { httpStatusOf } from '@mco/runtime';
import { CONFIG_SYNC_GROUP, MANAGED_BY, type MemberObject, type MemberObjectRef } from './template.js';

/** An object as read from a member cluster. */
export interface ExistingObject {
  metadata?: {
    uid?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  status?: unknown;
  [field: string]: unknown;
}

/** The calls mco makes on one member cluster (`memberObjects` implements it). */
export interface MemberObjects {
  get(ref: MemberObjectRef): Promise<ExistingObject | undefined>;
  /** Server-side apply with mco's field manager. */
  apply(object: MemberObject): Promise<ExistingObject>;
  /** Deletes with a uid precondition, so a newer object of the same name is never deleted; quiet when gone. */
  delete(ref: MemberObjectRef, uid: string | undefined): Promise<void>;
}

/** The resources of the member objects mco writes. */
export const MEMBER_RESOURCES = {
  RepoSync: { group: CONFIG_SYNC_GROUP, version: 'v1beta1', plural: 'reposyncs' },
  RootSync: { group: CONFIG_SYNC_GROUP, version: 'v1beta1', plural: 'rootsyncs' },
  RoleBinding: { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings' },
} as const;

/**
 * Member calls through @mco/cluster-access: the cluster's rate limiter, its
 * credential (dropped on 401) and a deadline per request. Namespaced calls by
 * name only, so a Role per target namespace is all mco needs there.
 */
export function memberObjects(member: MemberClusterClient, timeoutMs: number): MemberObjects {
  const { client } = member;
  const path = (ref: MemberObjectRef, version?: string) => {
    const resource = MEMBER_RESOURCES[ref.kind];
    return objectPath({ ...resource, version: version ?? resource.version }, ref.namespace, ref.name);
  };
  return {
    async get(ref) {
      try {
        return await client.get<ExistingObject>(path(ref), { timeoutMs });
      } catch (error) {
        if (httpStatusOf(error) === 404) return undefined;
        throw error;
      }
    },
    apply(object) {
      const ref = { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name };
      return client.patch<ExistingObject>(path(ref, object.apiVersion.split('/')[1] ?? 'v1'), 'apply', object, {
        query: { fieldManager: MANAGED_BY, force: true },
        timeoutMs,
      });
    },
    async delete(ref, uid) {
      try {
        await client.delete(path(ref), uid ? { preconditions: { uid } } : undefined, { timeoutMs });
      } catch (error) {
        if (httpStatusOf(error) !== 404) throw error;
      }
    },
  };
}

/** The hub writes of the adapter (`createHubWriter` implements it). */
export interface HubWriter {
  /** Applies mco's annotations and finalizer on the placement (server-side apply, field manager mco-configsync): absent keys are removed. */
  applyPlacementMetadata(
    placement: Placement,
    annotations: Record<string, string>,
    finalizers: readonly string[],
  ): Promise<void>;
  /** Applies the adapter's one condition to the placement's status; the engine's conditions are not touched. */
  applyCondition(placement: Placement, condition: Condition): Promise<void>;
  createEvent(placement: Placement, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
}

/** The hub writes through the hub's client (RBAC: patch placements and their status, create events). */
export function createHubWriter(client: KubeClient): HubWriter {
  return {
    async applyPlacementMetadata(placement, annotations, finalizers) {
      const { name, namespace = '' } = placement.metadata;
      await client.patch(
        objectPath(PLACEMENTS, namespace, name),
        'apply',
        {
          apiVersion: PLACEMENT_API_VERSION,
          kind: PLACEMENT_KIND,
          metadata: { name, namespace, annotations, finalizers },
        },
        { query: { fieldManager: MANAGED_BY, force: true } },
      );
    },
    applyCondition: (placement, condition) => applyPlacementCondition(client, placement, condition, MANAGED_BY),
    createEvent: (placement, type, reason, message) =>
      createPlacementEvent(client, placement, { type, reason, message }, MANAGED_BY),
  };
}

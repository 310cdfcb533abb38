import {
  objectPath,
  PLACEMENT_DECISIONS,
  PLACEMENTS,
  resourcePath,
  type KubeClient,
  type KubeObject,
} from '@mco/kube-runtime';

/** A core/v1 Event as the controller writes it. */
export interface CoreEvent extends KubeObject {
  metadata: { name: string; namespace: string };
  involvedObject: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
  };
  reason: string;
  message: string;
  type: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  reportingInstance?: string;
}

/** The writes of the controller; `createHubClient` implements it over a `KubeClient`. */
export interface HubClient {
  /** PUT to the /status subresource; the object's resourceVersion makes a stale write fail with 409. */
  replacePlacementStatus(placement: KubeObject): Promise<KubeObject>;
  createPlacementDecision(decision: KubeObject): Promise<KubeObject>;
  /** PUT with the object's resourceVersion. */
  replacePlacementDecision(decision: KubeObject): Promise<KubeObject>;
  /** Deletes with a uid precondition, so a newer object of the same name is never deleted. */
  deletePlacementDecision(namespace: string, name: string, uid: string | undefined): Promise<void>;
  createEvent(namespace: string, event: CoreEvent): Promise<void>;
  /** Merge-patches an existing Event (count and lastTimestamp of a repeated event). */
  patchEvent(namespace: string, name: string, patch: object): Promise<void>;
}

const EVENTS = { group: '', version: 'v1', plural: 'events' };

/** `fieldManager`: the name `metadata.managedFields` records for the status and decision writes. */
export function createHubClient(client: KubeClient, fieldManager?: string): HubClient {
  const path = (resource: typeof PLACEMENTS, o: KubeObject) =>
    objectPath(resource, o.metadata?.namespace ?? '', o.metadata?.name ?? '');
  const write = fieldManager ? { query: { fieldManager } } : {};
  return {
    replacePlacementStatus: (placement) => client.replace(`${path(PLACEMENTS, placement)}/status`, placement, write),
    createPlacementDecision: (decision) =>
      client.create(resourcePath(PLACEMENT_DECISIONS, decision.metadata?.namespace ?? ''), decision, write),
    replacePlacementDecision: (decision) => client.replace(path(PLACEMENT_DECISIONS, decision), decision, write),
    async deletePlacementDecision(namespace, name, uid) {
      await client.delete(
        objectPath(PLACEMENT_DECISIONS, namespace, name),
        uid ? { preconditions: { uid } } : undefined,
      );
    },
    async createEvent(namespace, event) {
      await client.create(resourcePath(EVENTS, namespace), event);
    },
    async patchEvent(namespace, name, patch) {
      await client.patch(objectPath(EVENTS, namespace, name), 'merge', patch);
    },
  };
}

import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  Watch,
  type CoreV1Event,
  type KubeConfig,
} from '@kubernetes/client-node';
import { PLACEMENT_GROUP } from '@mco/core';
import type { KubeObject, ListPage, ListWatch, WatchEventType } from './informer.js';

/** A custom resource the controller reads or writes. */
export interface Resource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

export const CLUSTER_PROFILES: Resource = {
  group: 'multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'clusterprofiles',
};
export const PLACEMENTS: Resource = {
  group: PLACEMENT_GROUP,
  version: 'v1alpha1',
  plural: 'multikubernetesclusterplacements',
};
export const PLACEMENT_DECISIONS: Resource = {
  group: 'multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'placementdecisions',
};

// client-node's generated calls take observable-style middleware (anything
// with toPromise); this one bounds a request's duration (client-node 1.4 sets
// no timeout of its own) and can set the Content-Type of a patch.
export type RequestOptions = Parameters<CustomObjectsApi['listClusterCustomObject']>[1];
export function timeoutOptions(timeoutMs: number, contentType?: string): RequestOptions {
  const resolved = <T>(value: T) => ({ toPromise: () => Promise.resolve(value) });
  const middleware = {
    pre: (context: { setSignal(signal: AbortSignal): void; setHeaderParam(k: string, v: string): void }) => {
      context.setSignal(AbortSignal.timeout(timeoutMs));
      if (contentType) context.setHeaderParam('Content-Type', contentType);
      return resolved(context);
    },
    post: (response: unknown) => resolved(response),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' } as unknown as RequestOptions;
}

/** List and watch one custom resource in all namespaces over client-node. */
export function createListWatch<T extends KubeObject>(
  kubeConfig: KubeConfig,
  resource: Resource,
  options: { labelSelector?: string; requestTimeoutMs?: number } = {},
): ListWatch<T> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const watcher = new Watch(kubeConfig);
  const path = `/apis/${resource.group}/${resource.version}/${resource.plural}`;
  const requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  return {
    async list({ limit, continue: next }): Promise<ListPage<T>> {
      const result = (await api.listClusterCustomObject(
        {
          group: resource.group,
          version: resource.version,
          plural: resource.plural,
          limit,
          ...(next ? { _continue: next } : {}),
          ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
        },
        timeoutOptions(requestTimeoutMs),
      )) as { items?: T[]; metadata?: { resourceVersion?: string; continue?: string } };
      return {
        items: result.items ?? [],
        resourceVersion: result.metadata?.resourceVersion ?? '',
        continue: result.metadata?.continue,
      };
    },
    async watch(resourceVersion, timeoutSeconds, onEvent, onDone) {
      const controller = await watcher.watch(
        path,
        {
          resourceVersion,
          allowWatchBookmarks: true,
          ...(timeoutSeconds > 0 ? { timeoutSeconds } : {}),
          ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
        },
        (type: string, object: T) => onEvent(type as WatchEventType, object),
        onDone,
      );
      return () => controller.abort();
    },
  };
}

/** The writes of the controller; `createHubClient` implements it over client-node. */
export interface HubClient {
  /** PUT to the /status subresource; the object's resourceVersion makes a stale write fail with 409. */
  replacePlacementStatus(placement: KubeObject): Promise<KubeObject>;
  createPlacementDecision(decision: KubeObject): Promise<KubeObject>;
  /** PUT with the object's resourceVersion. */
  replacePlacementDecision(decision: KubeObject): Promise<KubeObject>;
  /** Deletes with a uid precondition, so a newer object of the same name is never deleted. */
  deletePlacementDecision(namespace: string, name: string, uid: string | undefined): Promise<void>;
  createEvent(namespace: string, event: CoreV1Event): Promise<void>;
  /** Merge-patches an existing Event (count and lastTimestamp of a repeated event). */
  patchEvent(namespace: string, name: string, patch: object): Promise<void>;
}

export function createHubClient(kubeConfig: KubeConfig, options: { requestTimeoutMs?: number } = {}): HubClient {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const timeout = options.requestTimeoutMs ?? 30_000;
  const meta = (o: KubeObject) => ({ namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' });
  return {
    async replacePlacementStatus(placement) {
      return (await custom.replaceNamespacedCustomObjectStatus(
        { ...PLACEMENTS, ...meta(placement), body: placement },
        timeoutOptions(timeout),
      )) as KubeObject;
    },
    async createPlacementDecision(decision) {
      return (await custom.createNamespacedCustomObject(
        { ...PLACEMENT_DECISIONS, namespace: meta(decision).namespace, body: decision },
        timeoutOptions(timeout),
      )) as KubeObject;
    },
    async replacePlacementDecision(decision) {
      return (await custom.replaceNamespacedCustomObject(
        { ...PLACEMENT_DECISIONS, ...meta(decision), body: decision },
        timeoutOptions(timeout),
      )) as KubeObject;
    },
    async deletePlacementDecision(namespace, name, uid) {
      await custom.deleteNamespacedCustomObject(
        { ...PLACEMENT_DECISIONS, namespace, name, ...(uid ? { body: { preconditions: { uid } } } : {}) },
        timeoutOptions(timeout),
      );
    },
    async createEvent(namespace, event) {
      await core.createNamespacedEvent({ namespace, body: event }, timeoutOptions(timeout));
    },
    async patchEvent(namespace, name, patch) {
      await core.patchNamespacedEvent(
        { namespace, name, body: patch },
        timeoutOptions(timeout, PatchStrategy.MergePatch),
      );
    },
  };
}

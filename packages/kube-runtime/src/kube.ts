import { PLACEMENT_GROUP } from '@mco/core';
import type { Logger } from '@mco/runtime';
import type { KubeClient } from './client.js';
import { Informer, type KubeObject, type ListPage, type ListWatch, type WatchEventType } from './informer.js';

/** A custom resource mco reads or writes. */
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
/** Core Secrets (adapters keep them in one namespace). */
export const SECRETS: Resource = { group: '', version: 'v1', plural: 'secrets' };
export const PLACEMENT_DECISIONS: Resource = {
  group: 'multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'placementdecisions',
};

/** The API path of `resource`'s collection, in `namespace` or across all namespaces. */
export function resourcePath(resource: Resource, namespace?: string): string {
  const prefix = resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  return `${prefix}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${resource.plural}`;
}

/** The API path of one namespaced object of `resource`. */
export function objectPath(resource: Resource, namespace: string, name: string): string {
  return `${resourcePath(resource, namespace)}/${encodeURIComponent(name)}`;
}

/** Where a list-watch looks. */
export interface ListWatchScope {
  readonly namespace?: string;
  /**
   * Only objects in these namespaces (e.g. `--cluster-profile-namespaces`): one
   * namespace is listed and watched there; several are watched in all
   * namespaces and the others dropped before they reach the cache. Empty or
   * absent: every namespace.
   */
  readonly namespaces?: readonly string[] | undefined;
  readonly labelSelector?: string;
}

/** List and watch one resource (in all namespaces, in `namespace`, or in `namespaces`). */
export function createListWatch<T extends KubeObject>(
  client: KubeClient,
  resource: Resource,
  options: ListWatchScope & { requestTimeoutMs?: number } = {},
): ListWatch<T> {
  const only = options.namespaces?.length ? new Set(options.namespaces) : undefined;
  if (only && options.namespace && !only.has(options.namespace)) {
    throw new Error(`createListWatch: namespace ${options.namespace} is outside namespaces`);
  }
  const namespace = options.namespace ?? (only?.size === 1 ? [...only][0] : undefined);
  const listWatch = createScopedListWatch<T>(client, resource, { ...options, namespace });
  return only && !namespace ? filterNamespaces(listWatch, only) : listWatch;
}

/** Drops objects outside `namespaces` (a namespace never changes, so each event is judged alone). Exported for tests. */
export function filterNamespaces<T extends KubeObject>(
  listWatch: ListWatch<T>,
  namespaces: ReadonlySet<string>,
): ListWatch<T> {
  const inside = (object: T) => namespaces.has(object.metadata?.namespace ?? '');
  return {
    async list(page) {
      const result = await listWatch.list(page);
      return { ...result, items: result.items.filter(inside) };
    },
    watch: (resourceVersion, timeoutSeconds, onEvent, onDone) =>
      listWatch.watch(
        resourceVersion,
        timeoutSeconds,
        (type, object) => {
          if (type === 'BOOKMARK' || type === 'ERROR' || inside(object)) onEvent(type, object);
        },
        onDone,
      ),
  };
}

function createScopedListWatch<T extends KubeObject>(
  client: KubeClient,
  resource: Resource,
  options: {
    labelSelector?: string | undefined;
    requestTimeoutMs?: number | undefined;
    namespace?: string | undefined;
  },
): ListWatch<T> {
  const { namespace, labelSelector } = options;
  const path = resourcePath(resource, namespace);
  const timeoutMs = options.requestTimeoutMs ?? 60_000;
  return {
    async list({ limit, continue: next }): Promise<ListPage<T>> {
      const result = await client.get<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>(
        path,
        { query: { limit, continue: next, labelSelector }, timeoutMs },
      );
      return {
        items: result.items ?? [],
        resourceVersion: result.metadata?.resourceVersion ?? '',
        continue: result.metadata?.continue || undefined,
      };
    },
    watch(resourceVersion, timeoutSeconds, onEvent, onDone) {
      return client.watch<T>(
        path,
        {
          resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: timeoutSeconds > 0 ? timeoutSeconds : undefined,
          labelSelector,
        },
        { onEvent: (type, object) => onEvent(type as WatchEventType, object), onDone },
      );
    },
  };
}

/** Informer tuning the adapters accept (tests shorten the idle timeout and the server's watch timeout). */
export interface InformerTuning {
  readonly idleTimeoutMs?: number;
  readonly watchTimeoutSeconds?: number;
}

/** An informer named after `resource`, listing and watching it (in `scope`) with the given tuning. */
export function createInformer<T extends KubeObject>(
  client: KubeClient,
  resource: Resource,
  options: {
    readonly logger?: Logger;
    readonly tuning?: InformerTuning | undefined;
    readonly scope?: ListWatchScope;
  } = {},
): Informer<T> {
  const { tuning } = options;
  return new Informer<T>({
    name: resource.plural,
    listWatch: createListWatch<T>(client, resource, options.scope),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(tuning?.idleTimeoutMs !== undefined ? { idleTimeoutMs: tuning.idleTimeoutMs } : {}),
    ...(tuning?.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: tuning.watchTimeoutSeconds } : {}),
  });
}

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

/** The API path of one namespaced object of `resource`, or of its subresource (`status`, `scale`). */
export function objectPath(
  resource: Resource,
  namespace: string,
  name: string,
  subresource?: 'status' | 'scale',
): string {
  return `${resourcePath(resource, namespace)}/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}`;
}

/** Where a list-watch looks. */
export interface ListWatchScope {
  readonly namespace?: string;
  /**
   * Only objects in these namespaces (e.g. `--cluster-profile-namespaces`):
   * each namespace is listed and watched on its own, so a Role in each is all
   * the RBAC needed. Empty or absent: every namespace.
   */
  readonly namespaces?: readonly string[] | undefined;
  readonly labelSelector?: string;
  /** E.g. `metadata.name=x`: one object, which a Role limited by `resourceNames` may list and watch. */
  readonly fieldSelector?: string;
}

/** Asks a list for PartialObjectMetadataList (metadata only; JSON where the server cannot). */
const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

/** An item of a metadata-only list (`metadataOnlyList`): its `metadata`, nothing else. */
export function isPartialObjectMetadata(object: KubeObject): boolean {
  return object.kind === 'PartialObjectMetadata';
}

/** List and watch one resource (in all namespaces, in `namespace`, or in `namespaces`). */
export function createListWatch<T extends KubeObject>(
  client: KubeClient,
  resource: Resource,
  options: ListWatchScope & {
    requestTimeoutMs?: number;
    /**
     * Lists return only each object's metadata (`PartialObjectMetadata`, far less for the API server
     * to encode and this process to decode); watches still deliver whole objects.
     */
    metadataOnlyList?: boolean;
  } = {},
): ListWatch<T> {
  const only = options.namespaces?.length ? [...new Set(options.namespaces)].sort() : undefined;
  if (only && options.namespace && !only.includes(options.namespace)) {
    throw new Error(`createListWatch: namespace ${options.namespace} is outside namespaces`);
  }
  const namespace = options.namespace ?? (only?.length === 1 ? only[0] : undefined);
  if (!only || namespace) return createScopedListWatch<T>(client, resource, { ...options, namespace });
  return mergeNamespaces(
    new Map(only.map((ns) => [ns, createScopedListWatch<T>(client, resource, { ...options, namespace: ns })])),
  );
}

/**
 * One list-watch over several namespaces, each listed and watched on its own.
 * It keeps each namespace's resourceVersion itself (they are not comparable
 * across streams): a watch resumes every namespace from its own last list,
 * event or bookmark, whatever version the informer passes. The first stream to
 * end ends the others; the informer then watches again, or relists on 410 Gone.
 * Exported for tests.
 */
export function mergeNamespaces<T extends KubeObject>(perNamespace: ReadonlyMap<string, ListWatch<T>>): ListWatch<T> {
  const namespaces = [...perNamespace.keys()];
  let versions = new Map<string, string>();
  let listing = new Map<string, string>();
  return {
    // The continue token walks the namespaces in order: `<index>` or `<index>:<the namespace's own token>`.
    async list({ limit, continue: token }) {
      const colon = token?.indexOf(':') ?? -1;
      const index = token ? Number(colon < 0 ? token : token.slice(0, colon)) : 0;
      if (!Number.isInteger(index) || index < 0 || index >= namespaces.length) {
        throw new Error(`mergeNamespaces: bad continue token ${JSON.stringify(token)}`);
      }
      if (index === 0 && !token) listing = new Map();
      const namespace = namespaces[index]!;
      const page = await perNamespace.get(namespace)!.list({
        limit,
        continue: colon < 0 ? undefined : token!.slice(colon + 1),
      });
      listing.set(namespace, page.resourceVersion);
      const next = page.continue
        ? `${index}:${page.continue}`
        : index + 1 < namespaces.length
          ? String(index + 1)
          : undefined;
      // The whole list is in: from now on watches resume from it.
      if (!next) versions = listing;
      return { items: page.items, resourceVersion: page.resourceVersion, continue: next };
    },
    async watch(_resourceVersion, timeoutSeconds, onEvent, onDone) {
      const resumeFrom = versions;
      const ends: (() => void)[] = [];
      let done = false;
      const endAll = () => {
        done = true;
        for (const end of ends.splice(0)) end();
      };
      try {
        for (const namespace of namespaces) {
          const end = await perNamespace.get(namespace)!.watch(
            resumeFrom.get(namespace) ?? '',
            timeoutSeconds,
            (type, object) => {
              // Once a stream has ended the informer takes no more events, so none may move a version on;
              // an ERROR ends the informer's watch, so it ends every stream at once.
              if (done) return;
              if (type === 'ERROR') endAll();
              else if (object.metadata?.resourceVersion) resumeFrom.set(namespace, object.metadata.resourceVersion);
              onEvent(type, object);
            },
            (error) => {
              if (done) return;
              endAll();
              onDone(error);
            },
          );
          if (done) end();
          else ends.push(end);
        }
      } catch (error) {
        endAll();
        throw error;
      }
      return endAll;
    },
  };
}

function createScopedListWatch<T extends KubeObject>(
  client: KubeClient,
  resource: Resource,
  options: {
    labelSelector?: string | undefined;
    fieldSelector?: string | undefined;
    requestTimeoutMs?: number | undefined;
    namespace?: string | undefined;
    metadataOnlyList?: boolean | undefined;
  },
): ListWatch<T> {
  const { namespace, labelSelector, fieldSelector } = options;
  const path = resourcePath(resource, namespace);
  const timeoutMs = options.requestTimeoutMs ?? 60_000;
  const accept = options.metadataOnlyList ? METADATA_LIST_ACCEPT : undefined;
  return {
    async list({ limit, continue: next }): Promise<ListPage<T>> {
      const result = await client.get<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>(
        path,
        { query: { limit, continue: next, labelSelector, fieldSelector }, timeoutMs, ...(accept ? { accept } : {}) },
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
          fieldSelector,
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

import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig, type RequestContext } from '@kubernetes/client-node';
import https from 'node:https';
import { PLACEMENT_GROUP } from '@mco/core';
import type { Logger } from '@mco/runtime';
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
/** Core Secrets (`createListWatch` and `createObjectWriter` take them in one namespace). */
export const SECRETS: Resource = { group: '', version: 'v1', plural: 'secrets' };
export const PLACEMENT_DECISIONS: Resource = {
  group: 'multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'placementdecisions',
};

// client-node 1.4 builds a new https.Agent for every request, so every call
// pays a TLS handshake; mco reuses one keep-alive agent per
// kubeconfig, rebuilt when the TLS material changes (a rotated client cert).
const keepAliveAgents = new WeakMap<KubeConfig, { signature: string; agent: https.Agent }>();

function keepAliveAgent(kubeConfig: KubeConfig, created: https.Agent): https.Agent {
  const o = created.options;
  const signature = [o.ca, o.cert, o.key, o.pfx, o.rejectUnauthorized, o.servername]
    .map((v) => (v === undefined ? '' : String(v)))
    .join('\u0000');
  const cached = keepAliveAgents.get(kubeConfig);
  if (cached?.signature === signature) return cached.agent;
  cached?.agent.destroy();
  const agent = new https.Agent({ ...o, keepAlive: true, maxSockets: 64, maxFreeSockets: 16, timeout: 120_000 });
  keepAliveAgents.set(kubeConfig, { signature, agent });
  return agent;
}

// client-node's generated calls take observable-style middleware (anything
// with toPromise). This one reuses the keep-alive agent, bounds a request's
// duration (client-node 1.4 sets no timeout) and can set a patch's Content-Type.
export type RequestOptions = Parameters<CustomObjectsApi['listClusterCustomObject']>[1];
export function requestOptions(kubeConfig: KubeConfig, timeoutMs: number, contentType?: string): RequestOptions {
  const resolved = <T>(value: T) => ({ toPromise: () => Promise.resolve(value) });
  const middleware = {
    pre: (context: RequestContext) => {
      const agent = context.getAgent();
      if (agent instanceof https.Agent) context.setAgent(keepAliveAgent(kubeConfig, agent));
      context.setSignal(AbortSignal.timeout(timeoutMs));
      if (contentType) context.setHeaderParam('Content-Type', contentType);
      return resolved(context);
    },
    post: (response: unknown) => resolved(response),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' } as unknown as RequestOptions;
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

/**
 * List and watch one resource over client-node: a custom resource (in all
 * namespaces, in `namespace`, or in `namespaces`), or core Secrets in
 * `namespace` (`SECRETS`), which adapters keep beside their custom resources.
 */
export function createListWatch<T extends KubeObject>(
  kubeConfig: KubeConfig,
  resource: Resource,
  options: ListWatchScope & { requestTimeoutMs?: number } = {},
): ListWatch<T> {
  const only = options.namespaces?.length ? new Set(options.namespaces) : undefined;
  if (only && options.namespace && !only.has(options.namespace)) {
    throw new Error(`createListWatch: namespace ${options.namespace} is outside namespaces`);
  }
  const namespace = options.namespace ?? (only?.size === 1 ? [...only][0] : undefined);
  const listWatch = createScopedListWatch<T>(kubeConfig, resource, { ...options, namespace });
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
  kubeConfig: KubeConfig,
  resource: Resource,
  options: {
    labelSelector?: string | undefined;
    requestTimeoutMs?: number | undefined;
    namespace?: string | undefined;
  },
): ListWatch<T> {
  const watcher = new Watch(kubeConfig);
  const { namespace, labelSelector } = options;
  const core = resource.group === '';
  if (core && (resource.plural !== 'secrets' || !namespace)) {
    throw new Error('createListWatch: of the core group only Secrets in one namespace are supported');
  }
  const prefix = core ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  const path = `${prefix}${namespace ? `/namespaces/${namespace}` : ''}/${resource.plural}`;
  const requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  const listPage = core
    ? (() => {
        const api = kubeConfig.makeApiClient(CoreV1Api);
        return (page: { limit: number; _continue?: string }) =>
          api.listNamespacedSecret(
            { namespace: namespace ?? '', ...page, ...(labelSelector ? { labelSelector } : {}) },
            requestOptions(kubeConfig, requestTimeoutMs),
          );
      })()
    : (() => {
        const api = kubeConfig.makeApiClient(CustomObjectsApi);
        return (page: { limit: number; _continue?: string }) => {
          const query = { ...resource, ...page, ...(labelSelector ? { labelSelector } : {}) };
          return namespace
            ? api.listNamespacedCustomObject({ ...query, namespace }, requestOptions(kubeConfig, requestTimeoutMs))
            : api.listClusterCustomObject(query, requestOptions(kubeConfig, requestTimeoutMs));
        };
      })();
  return {
    async list({ limit, continue: next }): Promise<ListPage<T>> {
      const result = (await listPage({ limit, ...(next ? { _continue: next } : {}) })) as {
        items?: T[];
        metadata?: { resourceVersion?: string; continue?: string; _continue?: string };
      };
      return {
        items: result.items ?? [],
        resourceVersion: result.metadata?.resourceVersion ?? '',
        // client-node's typed lists name it `_continue`.
        continue: result.metadata?.continue ?? result.metadata?._continue,
      };
    },
    async watch(resourceVersion, timeoutSeconds, onEvent, onDone) {
      const controller = await watcher.watch(
        path,
        {
          resourceVersion,
          allowWatchBookmarks: true,
          ...(timeoutSeconds > 0 ? { timeoutSeconds } : {}),
          ...(labelSelector ? { labelSelector } : {}),
        },
        (type: string, object: T) => onEvent(type as WatchEventType, object),
        onDone,
      );
      return () => controller.abort();
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
  kubeConfig: KubeConfig,
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
    listWatch: createListWatch<T>(kubeConfig, resource, options.scope),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(tuning?.idleTimeoutMs !== undefined ? { idleTimeoutMs: tuning.idleTimeoutMs } : {}),
    ...(tuning?.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: tuning.watchTimeoutSeconds } : {}),
  });
}

import { CoreV1Api, CustomObjectsApi, PatchStrategy, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { requestOptions } from '@mco/kube-runtime/client-node';
import { httpStatusOf } from '@mco/runtime';
import { APPLICATION_SETS, REFRESH_ANNOTATION, type ApplicationSetLike } from './applicationsets.js';
import { DEFAULT_MANAGER, MANAGED_BY_LABEL, SECRET_TYPE_LABEL } from './cluster-secret.js';
import type { ApplicationSetClient } from './refresher.js';
import type { ExistingSecret, SecretClient } from './secret-syncer.js';

export interface ApplicationSetClientOptions {
  /** Only ApplicationSets in this namespace (default: every namespace). */
  readonly namespace?: string;
  readonly requestTimeoutMs?: number;
}

/** Lists ApplicationSets and merge-patches the refresh annotation onto them (RBAC: list, patch). */
export function createApplicationSetClient(
  kubeConfig: KubeConfig,
  options: ApplicationSetClientOptions = {},
): ApplicationSetClient {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  return {
    async list() {
      const items: ApplicationSetLike[] = [];
      let next: string | undefined;
      do {
        const page = (
          options.namespace
            ? await api.listNamespacedCustomObject(
                { ...APPLICATION_SETS, namespace: options.namespace, limit: 500, _continue: next },
                requestOptions(kubeConfig, timeoutMs),
              )
            : await api.listClusterCustomObject(
                { ...APPLICATION_SETS, limit: 500, _continue: next },
                requestOptions(kubeConfig, timeoutMs),
              )
        ) as { items?: ApplicationSetLike[]; metadata?: { continue?: string } };
        items.push(...(page.items ?? []));
        next = page.metadata?.continue || undefined;
      } while (next);
      return items;
    },
    async refresh(namespace, name, stale) {
      const patch = (value: string | null) =>
        api.patchNamespacedCustomObject(
          {
            ...APPLICATION_SETS,
            namespace,
            name,
            body: { metadata: { annotations: { [REFRESH_ANNOTATION]: value } } },
          },
          requestOptions(kubeConfig, timeoutMs, PatchStrategy.MergePatch),
        );
      try {
        if (stale) await patch(null);
        await patch('true');
      } catch (error) {
        if (httpStatusOf(error) !== 404) throw error;
      }
    },
  };
}

export interface SecretClientOptions {
  /** Namespace Argo CD reads cluster Secrets from. */
  readonly namespace: string;
  readonly manager?: string;
  readonly requestTimeoutMs?: number;
}

/** The syncer's Secret calls in one namespace (RBAC: get, list, create, update, delete on secrets there). */
export function createSecretClient(kubeConfig: KubeConfig, options: SecretClientOptions): SecretClient {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const { namespace } = options;
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const selector = `${SECRET_TYPE_LABEL}=cluster,${MANAGED_BY_LABEL}=${options.manager ?? DEFAULT_MANAGER}`;
  return {
    async listOwned() {
      const items: ExistingSecret[] = [];
      let next: string | undefined;
      do {
        const page = await api.listNamespacedSecret(
          { namespace, labelSelector: selector, limit: 500, _continue: next },
          requestOptions(kubeConfig, timeoutMs),
        );
        items.push(...(page.items as ExistingSecret[]));
        next = page.metadata?._continue || undefined;
      } while (next);
      return items;
    },
    async get(name) {
      try {
        return (await api.readNamespacedSecret(
          { namespace, name },
          requestOptions(kubeConfig, timeoutMs),
        )) as ExistingSecret;
      } catch (error) {
        if (httpStatusOf(error) === 404) return undefined;
        throw error;
      }
    },
    async create(secret) {
      await api.createNamespacedSecret({ namespace, body: secret as V1Secret }, requestOptions(kubeConfig, timeoutMs));
    },
    async replace(secret) {
      await api.replaceNamespacedSecret(
        { namespace, name: secret.metadata.name, body: secret as V1Secret },
        requestOptions(kubeConfig, timeoutMs),
      );
    },
    async setAnnotation(secret, key, value) {
      const annotations = { ...secret.metadata?.annotations };
      if (value === undefined) delete annotations[key];
      else annotations[key] = value;
      // An update with the read resourceVersion (RBAC `update`, as for replace): a concurrent change fails with 409.
      await api.replaceNamespacedSecret(
        {
          namespace,
          name: secret.metadata?.name ?? '',
          body: { ...secret, metadata: { ...secret.metadata, annotations } } as V1Secret,
        },
        requestOptions(kubeConfig, timeoutMs),
      );
    },
    async delete(name, uid, resourceVersion) {
      try {
        await api.deleteNamespacedSecret(
          {
            namespace,
            name,
            body: { preconditions: { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) } },
          },
          requestOptions(kubeConfig, timeoutMs),
        );
      } catch (error) {
        if (httpStatusOf(error) !== 404) throw error;
      }
    },
  };
}

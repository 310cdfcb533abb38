import { objectPath, resourcePath, SECRETS, type KubeClient } from '@mco/kube-runtime';
import { httpStatusOf } from '@mco/runtime';
import { APPLICATION_SETS, REFRESH_ANNOTATION, type ApplicationSetLike } from './applicationsets.js';
import { DEFAULT_MANAGER, MANAGED_BY_LABEL, SECRET_TYPE_LABEL } from './cluster-secret.js';
import type { ApplicationSetClient } from './refresher.js';
import type { ExistingSecret, SecretClient } from './secret-syncer.js';

export interface ApplicationSetClientOptions {
  /** Only ApplicationSets in this namespace (default: every namespace). */
  readonly namespace?: string;
}

/** Lists ApplicationSets and merge-patches the refresh annotation onto them (RBAC: list, patch). */
export function createApplicationSetClient(
  client: KubeClient,
  options: ApplicationSetClientOptions = {},
): ApplicationSetClient {
  return {
    list: () => listAll<ApplicationSetLike>(client, resourcePath(APPLICATION_SETS, options.namespace)),
    async refresh(namespace, name, stale) {
      const patch = (value: string | null) =>
        client.patch(objectPath(APPLICATION_SETS, namespace, name), 'merge', {
          metadata: { annotations: { [REFRESH_ANNOTATION]: value } },
        });
      try {
        if (stale) await patch(null);
        await patch('true');
      } catch (error) {
        if (httpStatusOf(error) !== 404) throw error;
      }
    },
  };
}

const APPLICATIONS = { group: 'argoproj.io', version: 'v1alpha1', plural: 'applications' } as const;

/**
 * The Applications in `namespace` whose destination is a cluster (by its
 * Argo CD name or server), read live (RBAC: list applications there).
 */
export function createApplicationLister(
  client: KubeClient,
  namespace: string,
): (cluster: { name: string; server: string }) => Promise<{ deleting: boolean }[]> {
  return async (cluster) => {
    // 404: the Application CRD is not installed, so no Application exists.
    const apps = await listAll<{
      metadata?: { deletionTimestamp?: string };
      spec?: { destination?: { name?: string; server?: string } };
    }>(client, resourcePath(APPLICATIONS, namespace)).catch((error: unknown) => {
      if (httpStatusOf(error) === 404) return [];
      throw error;
    });
    return apps
      .filter(({ spec }) => {
        const to = spec?.destination;
        return (
          (to?.server !== undefined && to.server === cluster.server) ||
          (to?.name !== undefined && to.name === cluster.name)
        );
      })
      .map((a) => ({ deleting: a.metadata?.deletionTimestamp !== undefined }));
  };
}

export interface SecretClientOptions {
  /** Namespace Argo CD reads cluster Secrets from. */
  readonly namespace: string;
  readonly manager?: string;
}

/** The syncer's Secret calls in one namespace (RBAC: get, list, create, update, delete on secrets there). */
export function createSecretClient(client: KubeClient, options: SecretClientOptions): SecretClient {
  const { namespace } = options;
  const selector = `${SECRET_TYPE_LABEL}=cluster,${MANAGED_BY_LABEL}=${options.manager ?? DEFAULT_MANAGER}`;
  const path = (name: string) => objectPath(SECRETS, namespace, name);
  const secret = (body: object) => ({ apiVersion: 'v1', kind: 'Secret', ...body });
  return {
    listOwned: () => listAll<ExistingSecret>(client, resourcePath(SECRETS, namespace), selector),
    async get(name) {
      try {
        return await client.get<ExistingSecret>(path(name));
      } catch (error) {
        if (httpStatusOf(error) === 404) return undefined;
        throw error;
      }
    },
    async create(body) {
      await client.create(resourcePath(SECRETS, namespace), secret(body));
    },
    async replace(body) {
      await client.replace(path(body.metadata.name), secret(body));
    },
    async setAnnotation(secret, key, value) {
      const annotations = { ...secret.metadata?.annotations };
      if (value === undefined) delete annotations[key];
      else annotations[key] = value;
      // An update with the read resourceVersion (RBAC `update`, as for replace): a concurrent change fails with 409.
      await client.replace(path(secret.metadata?.name ?? ''), {
        apiVersion: 'v1',
        kind: 'Secret',
        ...secret,
        metadata: { ...secret.metadata, annotations },
      });
    },
    async delete(name, uid, resourceVersion) {
      try {
        await client.delete(path(name), {
          preconditions: { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) },
        });
      } catch (error) {
        if (httpStatusOf(error) !== 404) throw error;
      }
    },
  };
}

/** Every item of a collection, 500 a page. */
async function listAll<T>(client: KubeClient, path: string, labelSelector?: string): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const page = await client.get<{ items?: T[]; metadata?: { continue?: string } }>(path, {
      query: { labelSelector, limit: 500, continue: next },
    });
    items.push(...(page.items ?? []));
    next = page.metadata?.continue || undefined;
  } while (next);
  return items;
}

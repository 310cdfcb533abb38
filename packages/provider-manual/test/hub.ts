import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { ClusterProfile } from '@mco/core';
import { loadYamlObjects, thirdPartyCrd, type ClusterHandle } from '@mco/testkit';
import { fileURLToPath } from 'node:url';

export const RBAC_FILE = fileURLToPath(new URL('../deploy/rbac.yaml', import.meta.url));

/** The real ClusterProfile CRD (the chart's copy). */
export function clusterProfileCrd(): string {
  return thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml');
}

export async function createNamespaces(hub: ClusterHandle, names: readonly string[]): Promise<void> {
  const core = hub.adminKubeConfig().makeApiClient(CoreV1Api);
  for (const name of names) await core.createNamespace({ body: { metadata: { name } } });
}

/**
 * Binds `user` to the provider's real ClusterRole (deploy/rbac.yaml): cluster-wide,
 * or through RoleBindings in `namespaces` only. Waits until the authorizer sees it.
 */
export async function grantProviderRole(
  hub: ClusterHandle,
  user: string,
  namespaces?: readonly string[],
): Promise<KubeConfig> {
  await hub.apply(loadYamlObjects(RBAC_FILE));
  const rbac = hub.adminKubeConfig().makeApiClient(RbacAuthorizationV1Api);
  const binding = {
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'mco-inventory-provider' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  };
  if (namespaces)
    for (const namespace of namespaces)
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: { metadata: { name: `${user}-provider` }, ...binding },
      });
  else await rbac.createClusterRoleBinding({ body: { metadata: { name: `${user}-provider` }, ...binding } });
  const kc = hub.kubeConfigFor(user);
  const api = kc.makeApiClient(CustomObjectsApi);
  const probe = () =>
    namespaces
      ? api.listNamespacedCustomObject({ ...CP, namespace: namespaces[0]!, limit: 1 })
      : api.listClusterCustomObject({ ...CP, limit: 1 });
  for (let i = 0; i < 100; i++) {
    if (
      await probe().then(
        () => true,
        () => false,
      )
    )
      return kc;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`RBAC for ${user} never took effect`);
}

const CP = { group: 'multicluster.x-k8s.io', version: 'v1alpha1', plural: 'clusterprofiles' };

/** Every ClusterProfile in the hub (as admin), by `namespace/name`. */
export async function readProfiles(hub: ClusterHandle): Promise<Map<string, ClusterProfile>> {
  const list = (await hub
    .adminKubeConfig()
    .makeApiClient(CustomObjectsApi)
    .listClusterCustomObject({ ...CP })) as { items: ClusterProfile[] };
  return new Map(list.items.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p]));
}

/** `namespace/name` → resourceVersion of every ClusterProfile. */
export async function resourceVersions(hub: ClusterHandle): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, p] of [...(await readProfiles(hub))].sort()) out[key] = p.metadata.resourceVersion ?? '';
  return out;
}

/** A ClusterProfile created as admin by another cluster manager. */
export async function createForeignProfile(hub: ClusterHandle, namespace: string, name: string, manager: string) {
  await hub
    .adminKubeConfig()
    .makeApiClient(CustomObjectsApi)
    .createNamespacedCustomObject({
      ...CP,
      namespace,
      body: {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace, labels: { 'x-k8s.io/cluster-manager': manager } },
        spec: { clusterManager: { name: manager } },
      },
    });
}

/** The parts of a profile a provider writes, for whole-object assertions. */
export function written(p: ClusterProfile | undefined) {
  if (!p) return undefined;
  return {
    labels: p.metadata.labels,
    annotations: p.metadata.annotations,
    spec: p.spec,
    status: p.status && {
      ...p.status,
      conditions: p.status.conditions?.map((c) => ({ ...c, lastTransitionTime: c.lastTransitionTime ? 'set' : '' })),
    },
  };
}

export async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

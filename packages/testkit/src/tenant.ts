import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { serviceAccountKubeConfig } from './chart.js';
import type { ClusterHandle } from './control-plane.js';

const PLACEMENT_GROUP = 'orchestra.multicluster.x-k8s.io';
const PLACEMENTS = 'multikubernetesclusterplacements';

/**
 * A tenant of the hub, as a team gets one: the ServiceAccount `name` in
 * `namespace`, allowed to write placements in that namespace and nothing else
 * (no status, no other namespace). Returns a kubeconfig with its own token.
 */
export async function tenantKubeConfig(hub: ClusterHandle, namespace: string, name = 'tenant'): Promise<KubeConfig> {
  await hub.apply([
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: `${name}-placements`, namespace },
      rules: [
        {
          apiGroups: [PLACEMENT_GROUP],
          resources: [PLACEMENTS],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${name}-placements`, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${name}-placements` },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ] as KubernetesObject[]);
  return serviceAccountKubeConfig(hub, namespace, name);
}

/**
 * The controller's part, played by admin: the placement's status lists
 * `clusters` (ClusterProfile `namespace/name`) ACTIVE, stamped with
 * `observedGeneration` 1 as the controller stamps what it evaluated.
 */
export async function placeOn(
  hub: ClusterHandle,
  namespace: string,
  name: string,
  clusters: readonly string[],
): Promise<void> {
  const status = {
    observedGeneration: 1,
    clusters: clusters.map((key) => {
      const [profileNamespace, profileName] = key.split('/', 2);
      return {
        namespace: profileNamespace,
        name: profileName,
        state: 'ACTIVE',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      };
    }),
  };
  const response = await hub.request(
    `/apis/${PLACEMENT_GROUP}/v1alpha1/namespaces/${namespace}/${PLACEMENTS}/${name}/status`,
    {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ status }),
    },
  );
  if (response.status !== 200)
    throw new Error(`placing ${namespace}/${name}: HTTP ${response.status} ${response.body}`);
}

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { serviceAccountKubeConfig } from './chart.js';
import { toYaml } from './objects.js';
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

/** A placement as a tenant writes it (autoscaling, one cluster), naming its workload in `workloadNamespace` if given. */
export function tenantPlacement(namespace: string, name: string, workloadNamespace?: string): KubernetesObject {
  const workload = workloadNamespace
    ? { workloadDetails: { namespace: workloadNamespace, deploymentName: 'web', hpaName: 'web' } }
    : {};
  return {
    apiVersion: `${PLACEMENT_GROUP}/v1alpha1`,
    kind: 'MultiKubernetesClusterPlacement',
    metadata: { name, namespace },
    spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, ...workload } } },
  } as KubernetesObject;
}

/** A Secret (key `kubeconfig`) with a self-contained kubeconfig reaching `cluster` as `user`, as a ClusterProfile names one. */
export function kubeconfigSecret(
  cluster: ClusterHandle,
  metadata: { readonly name: string; readonly namespace: string },
  user: string,
): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata,
    stringData: {
      kubeconfig: toYaml({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'member',
        contexts: [{ name: 'member', context: { cluster: 'member', user: 'mco' } }],
        clusters: [
          { name: 'member', cluster: { server: cluster.server, 'certificate-authority-data': cluster.caData } },
        ],
        users: [{ name: 'mco', user: { token: cluster.token(user) } }],
      }),
    },
  } as KubernetesObject;
}

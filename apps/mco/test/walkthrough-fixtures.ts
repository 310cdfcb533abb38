// What the docs' walk-throughs list under "You need" and a user already has:
// ClusterProfiles written by a cluster manager, a credential plugin, one hub
// identity per mco process with the chart's RBAC. The walk-through tests
// create these, and nothing else, before running the doc's code blocks.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import {
  RELEASE_NAMESPACE,
  renderChart,
  serviceAccountKubeConfig,
  type ClusterHandle,
  type ControlPlane,
} from '@mco/testkit';

/** The access provider the walk-throughs' providers.yaml names, and its credential plugin. */
export const PROVIDER = 'google';
export const CREDENTIAL_PLUGIN = 'gke-gcloud-auth-plugin';

/**
 * The credential plugin providers.yaml names, played by a script for the
 * walk-through's PATH: for the member server mco passes in
 * KUBERNETES_EXEC_INFO (`provideClusterInfo: true`), it hands out the token
 * of `user` on that member.
 */
export function credentialPlugin(dir: string, plane: ControlPlane, user: string): string {
  const file = join(dir, CREDENTIAL_PLUGIN);
  const cases = Object.values(plane.members)
    .map((member) => `  *'"server":"${member.server}"'*) token='${member.token(user)}' ;;`)
    .join('\n');
  writeFileSync(
    file,
    `#!/bin/sh
case "$KUBERNETES_EXEC_INFO" in
${cases}
  *) echo "no member named in KUBERNETES_EXEC_INFO" >&2; exit 1 ;;
esac
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$token"
`,
  );
  chmodSync(file, 0o755);
  return file;
}

/** ClusterProfiles in `namespace`, healthy, each offering {@link PROVIDER} with its member's server. */
export async function clusterProfiles(
  plane: ControlPlane,
  namespace: string,
  profiles: readonly { name: string; member: ClusterHandle; labels?: Record<string, string> }[],
): Promise<void> {
  await plane.hub.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }]);
  await plane.hub.apply(
    profiles.map(({ name, labels }) => ({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name, namespace, ...(labels ? { labels } : {}) },
      spec: { displayName: name, clusterManager: { name: 'test' } },
    })),
  );
  const custom = plane.hub.adminKubeConfig().makeApiClient(CustomObjectsApi);
  for (const { name, member } of profiles) {
    const status = {
      conditions: [
        {
          type: 'ControlPlaneHealthy',
          status: 'True',
          reason: 'Healthy',
          message: 'test',
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      ],
      accessProviders: [
        { name: PROVIDER, cluster: { server: member.server, 'certificate-authority-data': member.caData } },
      ],
    };
    await custom.patchNamespacedCustomObjectStatus({
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      plural: 'clusterprofiles',
      namespace,
      name,
      body: [{ op: 'add', path: '/status', value: status }],
    });
  }
}

/**
 * The chart's ServiceAccounts and RBAC for `values`, applied to the hub
 * (RBAC in a namespace that does not exist yet is returned, for the test to
 * apply once the walk-through has created it), and a kubeconfig file in
 * `dir` for the ServiceAccount of each chart component named.
 */
export async function chartIdentities(
  plane: ControlPlane,
  values: Record<string, string>,
  files: readonly (readonly [file: string, component: string])[],
  dir: string,
  later: (object: KubernetesObject) => boolean = () => false,
): Promise<KubernetesObject[]> {
  const rbac = renderChart(values).filter((o) =>
    ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? ''),
  );
  await plane.hub.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: RELEASE_NAMESPACE } }]);
  await plane.hub.apply(rbac.filter((o) => !later(o)));
  for (const [file, component] of files) {
    const sa = rbac.find(
      (o) => o.kind === 'ServiceAccount' && o.metadata?.labels?.['app.kubernetes.io/component'] === component,
    );
    if (!sa) throw new Error(`the chart renders no ServiceAccount of component ${component}`);
    const kc = await serviceAccountKubeConfig(plane.hub, sa.metadata!.namespace!, sa.metadata!.name!);
    writeFileSync(join(dir, file), kc.exportConfig(), { mode: 0o600 });
  }
  return rbac.filter(later);
}

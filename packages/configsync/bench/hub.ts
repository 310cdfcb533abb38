// What the Config Sync benchmarks share: a hub with mco's CRDs and ClusterProfiles, and a polling wait.
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { startControlPlane, thirdPartyCrd } from '@mco/testkit';

const MKCP_CRD = fileURLToPath(
  new URL('../../core/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml', import.meta.url),
);

/** A real kube-apiserver with the placement and ClusterProfile CRDs and one ClusterProfile per name in `fleet`. */
export async function startBenchHub(profiles: readonly string[]) {
  const cp = await startControlPlane();
  try {
    await cp.hub.installCrds([MKCP_CRD, thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml')]);
    await cp.hub.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'fleet' } }]);
    await cp.hub.apply(
      profiles.map((name) => ({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace: 'fleet' },
        spec: { displayName: name, clusterManager: { name: 'bench' } },
      })) as KubernetesObject[],
    );
  } catch (error) {
    await cp.stop();
    throw error;
  }
  const admin = cp.hub.adminKubeConfig();
  return { cp, admin, custom: admin.makeApiClient(CustomObjectsApi) };
}

/** Polls `done` every 10 ms; `progress` says where things stand, every 10 s and on a timeout. */
export async function until(what: string, done: () => boolean, timeoutMs = 600_000, progress = () => '') {
  const deadline = Date.now() + timeoutMs;
  let report = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what} (${progress()})`);
    if (Date.now() > report) {
      report += 10_000;
      console.error(`waiting for ${what}: ${progress()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

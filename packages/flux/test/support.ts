// Shared by the end-to-end suites that run real Flux controllers.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CustomObjectsApi, PatchStrategy } from '@kubernetes/client-node';
import type { ProviderConfig } from '@mco/cluster-access';
import { CLUSTER_PROFILES, PLACEMENTS } from '@mco/kube-runtime';
import { requestOptions } from '@mco/kube-runtime/client-node';
import { eventually as waitFor, type ClusterHandle, type ControlPlane } from '@mco/testkit';

/** `eventually` of @mco/testkit with the Flux suites' defaults: real controllers take their time. */
export const eventually = <T>(
  what: string,
  probe: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 120_000,
): Promise<T> => waitFor(what, probe, accept, timeoutMs, 200);

export interface FleetFixture {
  /** The access providers for createClusterAccess: one credential plugin per cluster. */
  readonly providers: ProviderConfig[];
  /** Sets placement apps/web's status to list these clusters (namespace fleet), ACTIVE. */
  setPlacement(clusters: readonly string[]): Promise<void>;
}

/**
 * The fleet of the Flux suites on `plane`'s hub: a ClusterProfile per cluster
 * in namespace `fleet` whose access provider runs a credential plugin (the
 * member's admin token for a real member, a placeholder for a server nobody
 * dials), and the placement apps/web with no clusters yet.
 */
export async function fleetFixture(
  plane: ControlPlane,
  dir: string,
  clusters: Readonly<Record<string, ClusterHandle | string>>,
): Promise<FleetFixture> {
  const hub = plane.hub.adminKubeConfig();
  const custom = hub.makeApiClient(CustomObjectsApi);
  const setStatus = (resource: typeof PLACEMENTS, namespace: string, name: string, status: unknown) =>
    custom.patchNamespacedCustomObjectStatus(
      { ...resource, namespace, name, body: { status } },
      requestOptions(hub, 10_000, PatchStrategy.MergePatch),
    );
  const script = join(dir, 'credential-plugin.sh');
  writeFileSync(
    script,
    `#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$1"
`,
  );
  chmodSync(script, 0o755);
  const entries = Object.entries(clusters);
  const serverOf = (target: ClusterHandle | string) => (typeof target === 'string' ? target : target.server);
  const providers = entries.map(([name, target]) => ({
    name: `exec-${name}`,
    execConfig: {
      apiVersion: 'client.authentication.k8s.io/v1' as const,
      command: script,
      args: [typeof target === 'string' ? 'placeholder' : target.token('admin')],
    },
    allowedServers: [serverOf(target)],
  }));
  await plane.hub.apply(
    entries.map(([name]) => ({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name, namespace: 'fleet' },
      spec: { displayName: name, clusterManager: { name: 'test' } },
    })) as never,
  );
  for (const [name, target] of entries) {
    await setStatus(CLUSTER_PROFILES, 'fleet', name, {
      accessProviders: [
        {
          name: `exec-${name}`,
          cluster: {
            server: serverOf(target),
            ...(typeof target === 'string' ? {} : { 'certificate-authority-data': target.caData }),
          },
        },
      ],
    });
  }
  await plane.hub.apply([
    {
      apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name: 'web', namespace: 'apps' },
      spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, useDraining: true } } },
    } as never,
  ]);
  return {
    providers,
    async setPlacement(names) {
      await setStatus(PLACEMENTS, 'apps', 'web', {
        observedGeneration: 1,
        clusters: names.map((name) => ({
          name,
          namespace: 'fleet',
          state: 'ACTIVE',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        })),
      });
    },
  };
}

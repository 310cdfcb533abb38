// Benchmark of the Flux sync on a real kube-apiserver: 100 placements x 10
// clusters, Flux Operator mode (one input provider per placement x cluster)
// plus a rendered Kustomization per placement x cluster. Prints the writes of
// the first pass, of a no-op resync (target 0), and the time from a placement
// status change to its input provider / Kustomization written (p50/p99).
// Prints figures; asserts nothing.
//
//   node scripts/prepare-tools.mjs && npm run bench -w @mco/flux
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, PatchStrategy } from '@kubernetes/client-node';
import type { ClusterProfile, Placement } from '@mco/core';
import {
  CLUSTER_PROFILES,
  Informer,
  PLACEMENTS,
  SECRETS,
  createListWatch,
  createObjectWriter,
  type KubeObject,
  type ObjectWriter,
  type Resource,
} from '@mco/kube-runtime';
import { kubeClientFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import { controlPlaneSkipReason, thirdPartyCrd, startControlPlane } from '@mco/testkit';
import {
  INPUT_PROVIDERS,
  KUSTOMIZATIONS,
  clusterSlug,
  createFluxSync,
  inputProviderName,
  type FluxTemplate,
} from '../src/index.js';

const PLACEMENTS_N = 100;
const CLUSTERS_N = 10;
const SAMPLES = 40;
const NS = 'flux-system';
const T = '2026-01-01T00:00:00Z';
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

const skip = controlPlaneSkipReason({ tools: ['flux', 'flux-operator'] });
if (skip) {
  console.log(`flux bench skipped: ${skip}`);
  process.exit(0);
}

const plane = await startControlPlane();
try {
  await plane.hub.installCrds([
    thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
    join(REPO, 'apps/mco/chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml'),
    thirdPartyCrd('fluxcd.controlplane.io_resourcesetinputproviders.yaml'),
    thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
  ]);
  const hub = plane.hub.adminKubeConfig();
  const custom = hub.makeApiClient(CustomObjectsApi);
  await plane.hub.apply(
    ['fleet', 'apps', NS].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
  );
  const clusters = Array.from({ length: CLUSTERS_N }, (_, i) => `c${String(i).padStart(2, '0')}`);
  await plane.hub.apply(
    clusters.map((name) => ({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name, namespace: 'fleet' },
      spec: { displayName: name, clusterManager: { name: 'bench' } },
    })) as never,
  );
  const names = Array.from({ length: PLACEMENTS_N }, (_, i) => `p${String(i).padStart(3, '0')}`);
  await plane.hub.apply(
    names.map((name) => ({
      apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
      kind: 'MultiKubernetesClusterPlacement',
      metadata: { name, namespace: 'apps' },
      spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, useDraining: true } } },
    })) as never,
  );
  const statusOf = (drainingCluster?: string, max = 0) => ({
    observedGeneration: 1,
    clusters: clusters.map((name) =>
      name === drainingCluster
        ? {
            name,
            namespace: 'fleet',
            state: 'SCALING_IN',
            lastTransitionTime: T,
            draining: { desiredMaxReplicas: max, lastReplicaCountDecrease: T },
          }
        : { name, namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: T },
    ),
  });
  const setStatus = (name: string, status: unknown) =>
    custom.patchNamespacedCustomObjectStatus(
      { ...PLACEMENTS, namespace: 'apps', name, body: { status } },
      requestOptions(hub, 30_000, PatchStrategy.MergePatch),
    );
  for (const name of names) await setStatus(name, statusOf());

  // The same pieces startFluxDelivery wires, with writers that count and time writes.
  let writes = 0;
  const written = new Map<string, number>();
  const counted = (writer: ObjectWriter): ObjectWriter => ({
    apply: async (o) => {
      const stored = await writer.apply(o);
      writes++;
      written.set(`${o.kind}/${o.metadata.name}`, performance.now());
      return stored;
    },
    delete: async (o) => {
      await writer.delete(o);
      writes++;
    },
  });
  const hubClient = kubeClientFromKubeConfig(hub);
  const informers: Informer<KubeObject>[] = [];
  const informer = <T extends KubeObject>(
    resource: Resource,
    scope: { namespace?: string; labelSelector?: string },
  ) => {
    const i = new Informer<T>({ name: resource.plural, listWatch: createListWatch<T>(hubClient, resource, scope) });
    informers.push(i as unknown as Informer<KubeObject>);
    return i;
  };
  const kind = (resource: Resource, labelSelector?: string) => ({
    resource,
    cache: informer(resource, { namespace: NS, ...(labelSelector ? { labelSelector } : {}) }),
    writer: counted(createObjectWriter(hubClient, resource, { fieldManager: 'mco-flux' })),
  });
  const templates: FluxTemplate[] = names.map((name) => ({
    placement: { namespace: 'apps', name },
    kustomization: {
      metadata: { name },
      spec: { interval: '10m', path: './deploy', prune: true, sourceRef: { kind: 'GitRepository', name: 'app' } },
    },
  }));
  const inputProviders = kind(INPUT_PROVIDERS, 'app.kubernetes.io/managed-by=mco-flux');
  const kustomizations = kind(KUSTOMIZATIONS);
  const secrets = kind(SECRETS, 'app.kubernetes.io/managed-by=mco-flux');
  const sync = createFluxSync({
    hub: hubClient,
    placements: informer<Placement>(PLACEMENTS, {}),
    clusterProfiles: informer<ClusterProfile>(CLUSTER_PROFILES, {}),
    inputProviders,
    kustomizations,
    secrets,
    resolveAccess: async (profile) => ({
      server: `https://${profile.metadata.name}.example:6443`,
      insecureSkipTlsVerify: false,
      getCredential: async () => ({ token: `token-${profile.metadata.name}` }),
    }),
    namespace: NS,
    manager: 'mco-flux',
    templates,
  });
  for (const i of informers) i.start();
  await Promise.all(informers.map((i) => i.waitForSync()));

  let started = performance.now();
  const first = await sync.pass();
  const firstMs = performance.now() - started;
  const firstWrites = writes;
  // Let the caches catch up with the first pass's writes, then resync.
  const expected = PLACEMENTS_N * CLUSTERS_N;
  while (
    inputProviders.cache.list().length < expected ||
    kustomizations.cache.list().length < expected ||
    secrets.cache.list().length < CLUSTERS_N
  ) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  writes = 0;
  started = performance.now();
  const resync = await sync.pass();
  const resyncMs = performance.now() - started;
  const resyncWrites = writes;

  // Status change -> input provider / Kustomization written, one change at a time, with the sync running.
  sync.start();
  const providerLatency: number[] = [];
  const kustomizationLatency: number[] = [];
  for (let n = 0; n < SAMPLES; n++) {
    const placement = names[(n * 7) % PLACEMENTS_N]!;
    const cluster = clusters[n % CLUSTERS_N]!;
    const slug = clusterSlug('fleet', cluster);
    const providerKey = `ResourceSetInputProvider/${inputProviderName('apps', placement, slug)}`;
    const kustomizationKey = `Kustomization/${placement}-${slug}`;
    written.delete(providerKey);
    written.delete(kustomizationKey);
    const t0 = performance.now();
    await setStatus(placement, statusOf(cluster, n + 1));
    while (!written.has(providerKey) || !written.has(kustomizationKey)) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    providerLatency.push(written.get(providerKey)! - t0);
    kustomizationLatency.push(written.get(kustomizationKey)! - t0);
  }
  await sync.stop();
  await Promise.all(informers.map((i) => i.stop()));

  const pct = (values: number[], p: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
  };
  console.log(
    `flux sync: ${PLACEMENTS_N} placements x ${CLUSTERS_N} clusters, real kube-apiserver, load average ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log('| pass | writes | applied | pruned | time |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  console.log(`| first | ${firstWrites} | ${first.applied} | ${first.pruned} | ${(firstMs / 1000).toFixed(1)} s |`);
  console.log(`| no-op resync | ${resyncWrites} | ${resync.applied} | ${resync.pruned} | ${resyncMs.toFixed(0)} ms |`);
  console.log(`status change -> object written (${SAMPLES} changes, one at a time):`);
  console.log('| object | p50 | p99 | max |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const [what, values] of [
    ['input provider', providerLatency],
    ['Kustomization', kustomizationLatency],
  ] as const) {
    console.log(
      `| ${what} | ${pct(values, 50).toFixed(0)} ms | ${pct(values, 99).toFixed(0)} ms | ${Math.max(...values).toFixed(0)} ms |`,
    );
  }
} finally {
  await plane.stop();
}

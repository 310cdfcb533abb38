import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { createClusterAccess } from '@mco/cluster-access';
import type { PlacementStatus } from '@mco/core';
import { CLUSTER_PROFILES, PLACEMENTS } from '@mco/kube-runtime';
import { connectionFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import { createLogger } from '@mco/runtime';
import {
  describeWithControlPlane,
  fluxControllerCrds,
  parseYamlDocuments,
  startControlPlane,
  startFluxController,
  thirdPartyCrd,
  type ControlPlane,
  type FluxController,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  INPUT_PROVIDERS,
  KUSTOMIZATIONS,
  clusterSlug,
  inputProviderName,
  kubeconfigSecretName,
  startFluxDelivery,
  type FluxDelivery,
} from '../src/index.js';
import { eventually } from './support.js';

// Real processes start here (a kube-apiserver, flux-operator) on two shared
// cores: generous timeouts, every step waits on a condition.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 240_000 });

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const FLUX_NS = 'flux-system';
const T = '2026-01-01T00:00:00Z';
const CLUSTERS = ['one', 'two', 'three'] as const;
// flux-operator only writes Kustomizations on the hub; it never contacts a
// member, so the ClusterProfiles name servers nobody dials. Delivery to real
// members through these Secrets is kustomize-controller.integration.test.ts.
const serverOf = (name: string) => `https://${name}.fleet.example:6443`;
// The owner labels flux-operator puts on what a ResourceSet generates.
const OWNED_BY_WEB =
  'resourceset.fluxcd.controlplane.io/name=web,resourceset.fluxcd.controlplane.io/namespace=flux-system';

interface Kustomization extends KubernetesObject {
  spec: {
    kubeConfig?: { secretRef?: { name?: string; key?: string } };
    postBuild?: { substitute?: Record<string, string> };
  };
}
interface InputProvider extends KubernetesObject {
  status?: { exportedInputs?: Record<string, unknown>[]; conditions?: { type: string; status: string }[] };
}

describeWithControlPlane(
  'Flux Operator mode end to end: real flux-operator v0.59.0 turns mco input providers into Kustomizations',
  { tools: ['flux-operator', 'flux', 'helm-controller-crds'] },
  () => {
    let plane: ControlPlane;
    let dir: string;
    let hub: KubeConfig;
    let custom: CustomObjectsApi;
    let operator: FluxController | undefined;
    let delivery: FluxDelivery | undefined;

    // mco's own log (debug), kept for a timeout's message.
    const mcoLog: string[] = [];
    // On a timeout, the operator's and mco's last log lines say why.
    const waitFor = <V>(what: string, probe: () => Promise<V>, accept: (value: V) => boolean) =>
      eventually(what, probe, accept).catch((error: Error) => {
        throw new Error(
          `${error.message}\nflux-operator log (last lines):\n${operator?.tail(25)}\nmco log (last lines):\n${mcoLog.slice(-25).join('')}`,
        );
      });

    const setStatus = (resource: typeof PLACEMENTS, namespace: string, name: string, status: unknown) =>
      custom.patchNamespacedCustomObjectStatus(
        { ...resource, namespace, name, body: { status } },
        requestOptions(hub, 10_000, PatchStrategy.MergePatch),
      );
    const setPlacement = (status: PlacementStatus) =>
      setStatus(PLACEMENTS, 'apps', 'web', { observedGeneration: 1, ...status });
    const cluster = (name: string, extra: Record<string, unknown> = {}) => ({
      name,
      namespace: 'fleet',
      state: 'ACTIVE' as const,
      lastTransitionTime: T,
      ...extra,
    });
    /** The Kustomizations the user's ResourceSet generated, by name (a plain object: timeouts print it). */
    const generated = async (): Promise<Record<string, Kustomization>> => {
      const list = (await custom.listNamespacedCustomObject(
        { ...KUSTOMIZATIONS, namespace: FLUX_NS, labelSelector: OWNED_BY_WEB },
        requestOptions(hub, 10_000),
      )) as { items: Kustomization[] };
      return Object.fromEntries(list.items.map((k) => [k.metadata!.name!, k]));
    };
    const kustomizationName = (name: string) => `web-${clusterSlug('fleet', name)}`;
    const substitutes = (all: Record<string, Kustomization>, name: string) =>
      all[kustomizationName(name)]?.spec.postBuild?.substitute;

    beforeAll(async () => {
      plane = await startControlPlane();
      // flux-operator's CRDs from the module version it was built from; the
      // Kustomization and HelmRelease CRDs are Flux's (tools/flux, tools/helm-controller-crds).
      await plane.hub.installCrds([
        thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
        join(REPO, 'apps/mco/chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml'),
        thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
        thirdPartyCrd('helm.toolkit.fluxcd.io_helmreleases.yaml'),
        ...fluxControllerCrds('flux-operator'),
      ]);
      hub = plane.hub.adminKubeConfig();
      custom = hub.makeApiClient(CustomObjectsApi);
      dir = mkdtempSync(join(tmpdir(), 'mco-flux-operator-e2e-'));
      await plane.hub.apply(
        ['fleet', 'apps', FLUX_NS].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
      );

      // The user's ResourceSet: the shipped example, unchanged.
      const [resourceSet] = parseYamlDocuments(
        readFileSync(join(REPO, 'examples/flux/resourceset.yaml'), 'utf8'),
      ) as KubernetesObject[];
      await plane.hub.apply([resourceSet!]);

      // flux-operator as its Deployment runs it, minus what a test has no use
      // for: leader election, the web UI, the metrics endpoint.
      writeFileSync(join(dir, 'hub.kubeconfig'), hub.exportConfig());
      operator = await startFluxController('flux-operator', {
        kubeconfig: join(dir, 'hub.kubeconfig'),
        namespace: FLUX_NS,
        dir,
      });

      // One credential plugin for the fleet; the token is a placeholder nobody checks.
      const script = join(dir, 'credential-plugin.sh');
      writeFileSync(
        script,
        `#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"placeholder"}}'
`,
      );
      chmodSync(script, 0o755);
      const providers = [
        {
          name: 'fleet',
          execConfig: { apiVersion: 'client.authentication.k8s.io/v1' as const, command: script },
          allowedServers: ['https://*.fleet.example:6443'],
        },
      ];
      await plane.hub.apply(
        CLUSTERS.map((name) => ({
          apiVersion: 'multicluster.x-k8s.io/v1alpha1',
          kind: 'ClusterProfile',
          metadata: { name, namespace: 'fleet' },
          spec: { displayName: name, clusterManager: { name: 'test' } },
        })) as never,
      );
      for (const name of CLUSTERS) {
        await setStatus(CLUSTER_PROFILES, 'fleet', name, {
          accessProviders: [{ name: 'fleet', cluster: { server: serverOf(name) } }],
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
      await setPlacement({ clusters: [cluster('one'), cluster('two')] });

      // The real sync, in Operator mode only: no templates.
      const access = createClusterAccess({ providers: { providers }, hub: connectionFromKubeConfig(hub) });
      delivery = startFluxDelivery({
        kubeConfig: hub,
        namespace: FLUX_NS,
        inputProviders: true,
        resolveAccess: (p) => access.accessFor(p),
        logger: createLogger({ level: 'debug', write: (line) => mcoLog.push(line) }),
      });
    });

    afterAll(async () => {
      await delivery?.stop();
      await operator?.stop();
      await plane?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("turns mco's input providers into one Kustomization per placed cluster, with its kubeconfig Secret and inputs", async () => {
      const all = await waitFor(
        'a Kustomization for clusters one and two',
        generated,
        (k) => kustomizationName('one') in k && kustomizationName('two') in k,
      );
      expect(Object.keys(all).sort()).toEqual([kustomizationName('one'), kustomizationName('two')].sort());
      for (const name of ['one', 'two']) {
        const k = all[kustomizationName(name)]!;
        expect(k.spec.kubeConfig).toEqual({ secretRef: { name: kubeconfigSecretName('fleet', name), key: 'value' } });
        expect(k.spec.postBuild!.substitute).toEqual({
          MCO_CLUSTER_NAME: `fleet.${name}`,
          MCO_STATE: 'ACTIVE',
          MCO_DESIRED_MAX_REPLICAS: '',
          MCO_DESIRED_MIN_REPLICAS: '',
        });
      }
      // The operator accepted mco's providers as they are: Ready, exporting mco's inputs.
      const provider = (await custom.getNamespacedCustomObject(
        { ...INPUT_PROVIDERS, namespace: FLUX_NS, name: inputProviderName('apps', 'web', clusterSlug('fleet', 'one')) },
        requestOptions(hub, 10_000),
      )) as InputProvider;
      expect(provider.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(provider.status?.exportedInputs?.[0]).toMatchObject({
        clusterName: 'fleet.one',
        server: serverOf('one'),
        kubeconfigSecretName: kubeconfigSecretName('fleet', 'one'),
        draining: 'false',
      });
    });

    it('draining: the substitute desiredMaxReplicas changes on the draining cluster only', async () => {
      const before = await generated();
      await setPlacement({
        clusters: [
          cluster('one'),
          cluster('two', { state: 'SCALING_IN', draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: T } }),
        ],
      });
      const after = await waitFor(
        'MCO_DESIRED_MAX_REPLICAS 3 for cluster two',
        generated,
        (k) => substitutes(k, 'two')?.MCO_DESIRED_MAX_REPLICAS === '3',
      );
      expect(substitutes(after, 'two')).toEqual({
        MCO_CLUSTER_NAME: 'fleet.two',
        MCO_STATE: 'SCALING_IN',
        MCO_DESIRED_MAX_REPLICAS: '3',
        MCO_DESIRED_MIN_REPLICAS: '',
      });
      const one = after[kustomizationName('one')]!;
      expect(one.metadata!.uid).toBe(before[kustomizationName('one')]!.metadata!.uid);
      expect(one.metadata!.generation).toBe(before[kustomizationName('one')]!.metadata!.generation);
      expect(substitutes(after, 'one')!.MCO_DESIRED_MAX_REPLICAS).toBe('');
    });

    it('scale-out: a Kustomization appears for the new cluster', async () => {
      await setPlacement({
        clusters: [
          cluster('one'),
          cluster('two', { state: 'SCALING_IN', draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: T } }),
          cluster('three'),
        ],
      });
      const all = await waitFor('a Kustomization for cluster three', generated, (k) => kustomizationName('three') in k);
      expect(all[kustomizationName('three')]!.spec.kubeConfig!.secretRef!.name).toBe(
        kubeconfigSecretName('fleet', 'three'),
      );
      expect(Object.keys(all)).toHaveLength(3);
    });

    it('scale-in: that Kustomization disappears, the others are untouched, and the kubeconfig Secret goes only after', async () => {
      const before = await generated();
      const secretName = kubeconfigSecretName('fleet', 'two');
      const core = hub.makeApiClient(CoreV1Api);
      // The Kustomization is read before the Secret: a sample with the
      // Kustomization gone and the Secret still there proves it went first.
      // (Reads, not a watch: a watch that ends under load loses its events silently.)
      const seen: string[] = [];
      const sample = async () => {
        const kustomization = kustomizationName('two') in (await generated());
        const secrets = await core.listNamespacedSecret(
          { namespace: FLUX_NS, fieldSelector: `metadata.name=${secretName}` },
          requestOptions(hub, 10_000),
        );
        const state = `kustomization ${kustomization ? 'present' : 'gone'}, secret ${secrets.items.length ? 'present' : 'gone'}`;
        if (seen.at(-1) !== state) seen.push(state);
        // On a timeout, the input providers left say whose step stalled: one marked deleting was
        // deleted by mco and waits for the operator to remove its finalizer.
        const providers = (await custom.listNamespacedCustomObject(
          { ...INPUT_PROVIDERS, namespace: FLUX_NS },
          requestOptions(hub, 10_000),
        )) as { items: KubernetesObject[] };
        return {
          state,
          seen: [...seen],
          providers: providers.items.map(
            ({ metadata }) => `${metadata!.name}${metadata!.deletionTimestamp ? ' (deleting)' : ''}`,
          ),
        };
      };
      await sample();
      await setPlacement({ clusters: [cluster('one'), cluster('three')] });
      await waitFor("cluster two's Kustomization and kubeconfig Secret deleted", sample, ({ state }) =>
        state.endsWith('gone, secret gone'),
      );
      console.log(`scale-in, states seen: ${seen.join(' -> ')}`);
      expect(seen).toEqual([
        'kustomization present, secret present',
        'kustomization gone, secret present',
        'kustomization gone, secret gone',
      ]);
      const after = await generated();
      expect(Object.keys(after).sort()).toEqual([kustomizationName('one'), kustomizationName('three')].sort());
      for (const name of ['one', 'three']) {
        const [was, is] = [before[kustomizationName(name)]!, after[kustomizationName(name)]!];
        expect(is.metadata!.uid).toBe(was.metadata!.uid);
        expect(is.metadata!.generation).toBe(was.metadata!.generation);
        expect(is.spec).toEqual(was.spec);
      }
    });
  },
);

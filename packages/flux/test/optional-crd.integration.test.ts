// `mco flux` where helm-controller is not installed (no HelmRelease CRD), as
// docs/flux.md runs it: Kustomizations are delivered, one warning says
// HelmReleases are skipped, and they are picked up once their CRD is installed.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { PLACEMENTS } from '@mco/kube-runtime';
import { requestOptions } from '@mco/kube-runtime/client-node';
import { createLogger } from '@mco/runtime';
import {
  describeWithControlPlane,
  eventually,
  startControlPlane,
  thirdPartyCrd,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { HELM_RELEASES, KUSTOMIZATIONS, clusterSlug, startFluxDelivery, type FluxDelivery } from '../src/index.js';

vi.setConfig({ testTimeout: 90_000 });

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const FLUX_NS = 'flux-system';
const HELM_RELEASE_CRD = 'helmreleases.helm.toolkit.fluxcd.io';

describeWithControlPlane(
  'Flux delivery without the HelmRelease CRD, on a real kube-apiserver',
  { tools: ['helm-controller-crds'] },
  () => {
    let plane: ControlPlane;
    let delivery: FluxDelivery | undefined;
    const logs: { level: string; msg: string }[] = [];

    beforeAll(async () => {
      plane = await startControlPlane();
      await plane.hub.installCrds([
        thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
        join(REPO, 'apps/mco/chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml'),
        thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
      ]);
      await plane.hub.apply(
        ['fleet', 'apps', FLUX_NS].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
      );
      const objects = [
        {
          apiVersion: 'multicluster.x-k8s.io/v1alpha1',
          kind: 'ClusterProfile',
          metadata: { name: 'east', namespace: 'fleet' },
          spec: { displayName: 'east', clusterManager: { name: 'test' } },
        },
        {
          apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
          kind: 'MultiKubernetesClusterPlacement',
          metadata: { name: 'web', namespace: 'apps' },
          spec: {},
        },
      ];
      await plane.hub.apply(objects);
      const hub = plane.hub.adminKubeConfig();
      await hub.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
        {
          ...PLACEMENTS,
          namespace: 'apps',
          name: 'web',
          body: {
            status: {
              observedGeneration: 1,
              clusters: [
                { name: 'east', namespace: 'fleet', state: 'ACTIVE', lastTransitionTime: '2026-01-01T00:00:00Z' },
              ],
            },
          },
        },
        requestOptions(hub, 10_000, PatchStrategy.MergePatch),
      );

      delivery = startFluxDelivery({
        kubeConfig: hub,
        namespace: FLUX_NS,
        inputProviders: false,
        templates: [
          {
            placement: { namespace: 'apps', name: 'web' },
            kustomization: {
              metadata: { name: 'web' },
              spec: {
                interval: '1m',
                path: './deploy',
                prune: true,
                sourceRef: { kind: 'GitRepository', name: 'web' },
              },
            },
            helmRelease: {
              metadata: { name: 'web-chart' },
              spec: {
                interval: '5m',
                chart: { spec: { chart: 'web', sourceRef: { kind: 'HelmRepository', name: 'web' } } },
              },
            },
          },
        ],
        // The member's address: nothing connects to it here, the Secret only names it.
        resolveAccess: async () => ({
          server: plane.hub.server,
          caData: plane.hub.caData,
          insecureSkipTlsVerify: false,
          getCredential: async () => ({ token: plane.hub.token('admin') }),
        }),
        optionalKindPollMs: 200,
        logger: createLogger({
          level: 'debug',
          write: (line) => void logs.push(JSON.parse(line) as { level: string; msg: string }),
        }),
      });
    });

    afterAll(async () => {
      await delivery?.stop();
      await plane?.stop();
    });

    const list = async (resource: typeof KUSTOMIZATIONS | typeof HELM_RELEASES) =>
      (
        (await plane.hub
          .adminKubeConfig()
          .makeApiClient(CustomObjectsApi)
          .listNamespacedCustomObject({ ...resource, namespace: FLUX_NS })) as { items: KubernetesObject[] }
      ).items.map((o) => o.metadata!.name);
    const slug = clusterSlug('fleet', 'east');
    const about = (text: string) => logs.filter((l) => l.msg.includes(text));

    it('delivers the Kustomization, warns once, and writes the HelmRelease once its CRD is installed', async () => {
      await eventually(
        'the Kustomization',
        () => list(KUSTOMIZATIONS),
        (names) => names.includes(`web-${slug}`),
      );
      expect(delivery!.ready()).toBe(true);

      await plane.hub.installCrds([thirdPartyCrd('helm.toolkit.fluxcd.io_helmreleases.yaml')]);
      await eventually(
        'the HelmRelease',
        () => list(HELM_RELEASES),
        (names) => names.includes(`web-chart-${slug}`),
      );

      // Discovery was asked many times (every 200 ms) before the CRD came: one warning all along, no retry noise.
      expect({
        notInstalled: about(`${HELM_RELEASE_CRD} is not installed`).map((l) => l.level),
        installed: about('CRD installed').map((l) => l.level),
        failures: logs.filter((l) => /failed/.test(l.msg)).map((l) => l.msg),
      }).toEqual({ notInstalled: ['warn'], installed: ['info'], failures: [] });
    });
  },
);

// A tenant of the hub, with its own ServiceAccount token, tries to reach
// beyond its namespace through Flux delivery: a placement named like the
// operator's (to be picked up by its template or ResourceSet), one naming a
// workload in kube-system, and direct writes to Flux's namespace. mco runs as
// the chart's ServiceAccount with the chart's RBAC.
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { KUBECONFIG_SECRET_ANNOTATION, createClusterAccess } from '@mco/cluster-access';
import { PLACEMENTS } from '@mco/kube-runtime';
import { connectionFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import {
  RELEASE_NAMESPACE,
  describeWithControlPlane,
  eventually,
  kubeconfigSecret,
  renderChart,
  placeOn,
  serviceAccountKubeConfig,
  thirdPartyCrd,
  startControlPlane,
  tenantKubeConfig,
  tenantPlacement,
  type ControlPlane,
} from '@mco/testkit';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  INPUT_PROVIDERS,
  KUSTOMIZATIONS,
  clusterSlug,
  inputProviderName,
  startFluxDelivery,
  type FluxDelivery,
} from '../src/index.js';

vi.setConfig({ testTimeout: 90_000 });

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const FLUX_NS = 'flux-system';
const PLACEMENT = 'orchestra.multicluster.x-k8s.io/placement';
const PLACEMENT_NAMESPACE = 'orchestra.multicluster.x-k8s.io/placement-namespace';

describeWithControlPlane(
  'Flux delivery, tried by a tenant of the hub',
  { tools: ['helm', 'flux', 'flux-operator'] },
  () => {
    let plane: ControlPlane;
    let admin: KubeConfig;
    let tenant: KubeConfig;
    let delivery: FluxDelivery | undefined;

    const custom = () => admin.makeApiClient(CustomObjectsApi);
    /** Every object of the kind mco wrote, in any namespace, as `namespace/name`. */
    const everywhere = async (resource: typeof INPUT_PROVIDERS | typeof KUSTOMIZATIONS, labelSelector?: string) =>
      (
        (await custom().listClusterCustomObject({ ...resource, ...(labelSelector ? { labelSelector } : {}) })) as {
          items: KubernetesObject[];
        }
      ).items
        .map((o) => `${o.metadata!.namespace}/${o.metadata!.name}`)
        .sort();
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'allowed',
        (error: { code?: number }) => error.code,
      );

    beforeAll(async () => {
      plane = await startControlPlane({ clusters: ['member'] });
      await plane.hub.installCrds([
        thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
        join(REPO, 'apps/mco/chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml'),
        thirdPartyCrd('fluxcd.controlplane.io_resourcesetinputproviders.yaml'),
        thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
      ]);
      admin = plane.hub.adminKubeConfig();
      await plane.hub.apply(
        ['fleet', 'apps', 'team-a', FLUX_NS, RELEASE_NAMESPACE].map((name) => ({
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name },
        })),
      );
      // The chart's ServiceAccount and RBAC for `mco flux` with the operator's template for apps/web.
      const chart = renderChart({
        'flux.enabled': 'true',
        'flux.inputProviders': 'true',
        'flux.helmReleases': 'false',
        'flux.templates[0].placement.name': 'web',
        'flux.templates[0].placement.namespace': 'apps',
        'flux.templates[0].kustomization.metadata.name': 'web',
        // The chart needs a provider; the test reaches its member through a kubeconfig Secret instead.
        'flux.providers[0].name': 'unused',
        'flux.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
        'flux.providers[0].execConfig.command': '/bin/false',
        'flux.providers[0].allowedServers[0]': plane.members.member!.server,
      }).filter(
        (o) =>
          o.metadata?.labels?.['app.kubernetes.io/component'] === 'flux' &&
          ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? ''),
      );
      await plane.hub.apply(chart);
      const account = chart.find((o) => o.kind === 'ServiceAccount')!.metadata!;
      const fluxKubeConfig = await serviceAccountKubeConfig(plane.hub, account.namespace!, account.name!);

      tenant = await tenantKubeConfig(plane.hub, 'team-a');

      // Two profiles reached through a kubeconfig Secret for the one member.
      const member = plane.members.member!;
      await plane.hub.apply([
        kubeconfigSecret(member, { name: 'member-kubeconfig', namespace: 'fleet' }, 'admin'),
        ...['east', 'west'].map((name) => ({
          apiVersion: 'multicluster.x-k8s.io/v1alpha1',
          kind: 'ClusterProfile',
          metadata: { name, namespace: 'fleet', annotations: { [KUBECONFIG_SECRET_ANNOTATION]: 'member-kubeconfig' } },
          spec: { displayName: name, clusterManager: { name: 'test' } },
        })),
      ] as unknown as KubernetesObject[]);
      await plane.hub.apply([tenantPlacement('apps', 'web')]);
      await placeOn(plane.hub, 'apps', 'web', ['fleet/east']);

      const access = createClusterAccess({
        providers: [],
        hub: connectionFromKubeConfig(admin),
        kubeconfigSecrets: { allowedServers: [member.server] },
      });
      delivery = startFluxDelivery({
        kubeConfig: fluxKubeConfig,
        namespace: FLUX_NS,
        inputProviders: true,
        helmReleases: false,
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
          },
        ],
        resolveAccess: (p, peers) => access.accessFor(p, undefined, peers),
        informers: { watchTimeoutSeconds: 30 },
      });
    });

    afterAll(async () => {
      await delivery?.stop();
      await plane?.stop();
    });

    it("the tenant can write nothing in Flux's namespace, another team's placements, or a placement's status", async () => {
      const api = tenant.makeApiClient(CustomObjectsApi);
      await api.createNamespacedCustomObject({
        ...PLACEMENTS,
        namespace: 'team-a',
        body: tenantPlacement('team-a', 'web'),
      });
      expect({
        placementInApps: await code(
          api.createNamespacedCustomObject({ ...PLACEMENTS, namespace: 'apps', body: tenantPlacement('apps', 'x') }),
        ),
        ownStatus: await code(
          api.patchNamespacedCustomObjectStatus(
            { ...PLACEMENTS, namespace: 'team-a', name: 'web', body: { status: { observedGeneration: 1 } } },
            requestOptions(tenant, 10_000, PatchStrategy.MergePatch),
          ),
        ),
        kustomizationInFlux: await code(
          api.createNamespacedCustomObject({
            ...KUSTOMIZATIONS,
            namespace: FLUX_NS,
            body: {
              apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
              kind: 'Kustomization',
              metadata: { name: 'x' },
              spec: {},
            },
          }),
        ),
        secretInFlux: await code(
          tenant.makeApiClient(CoreV1Api).createNamespacedSecret({
            namespace: FLUX_NS,
            body: { metadata: { name: 'x' }, stringData: { value: 'x' } },
          }),
        ),
      }).toEqual({ placementInApps: 403, ownStatus: 403, kustomizationInFlux: 403, secretInFlux: 403 });
    });

    it("a tenant placement named like the operator's, or naming a workload in kube-system, reaches nothing beyond its own inputs", async () => {
      const api = tenant.makeApiClient(CustomObjectsApi);
      await api.createNamespacedCustomObject({
        ...PLACEMENTS,
        namespace: 'team-a',
        body: tenantPlacement('team-a', 'sneaky', 'kube-system'),
      });
      // The controller's part: team-a/web is placed on east and west; team-a/sneaky is never evaluated
      // (no status: no information, so nothing is written for it).
      await placeOn(plane.hub, 'team-a', 'web', ['fleet/east', 'fleet/west']);
      const tenantProviders = [
        inputProviderName('team-a', 'web', clusterSlug('fleet', 'east')),
        inputProviderName('team-a', 'web', clusterSlug('fleet', 'west')),
      ].map((n) => `${FLUX_NS}/${n}`);
      const operatorProvider = `${FLUX_NS}/${inputProviderName('apps', 'web', clusterSlug('fleet', 'east'))}`;
      const providers = await eventually(
        "the tenant's input providers",
        () => everywhere(INPUT_PROVIDERS),
        (items) => tenantProviders.every((p) => items.includes(p)),
        60_000,
      );
      // Everything is in Flux's namespace, and nothing exists for the never-evaluated placement.
      expect(providers).toEqual([operatorProvider, ...tenantProviders].sort());
      // The operator's template renders for apps/web only: the tenant's same-named placement gets no Kustomization.
      expect(await everywhere(KUSTOMIZATIONS)).toEqual([`${FLUX_NS}/web-${clusterSlug('fleet', 'east')}`]);
      // A ResourceSet selecting the operator's placement by name and namespace (docs/flux.md) never sees the tenant's.
      expect(await everywhere(INPUT_PROVIDERS, `${PLACEMENT}=web,${PLACEMENT_NAMESPACE}=apps`)).toEqual([
        operatorProvider,
      ]);
      expect(await everywhere(INPUT_PROVIDERS, `${PLACEMENT_NAMESPACE}=team-a`)).toEqual(tenantProviders.sort());
    });
  },
);

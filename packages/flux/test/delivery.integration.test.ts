import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  type KubernetesObject,
  type V1Secret,
} from '@kubernetes/client-node';
import { createClusterAccess, parseProviderFile } from '@mco/cluster-access';
import type { PlacementStatus } from '@mco/core';
import { CLUSTER_PROFILES, PLACEMENTS } from '@mco/kube-runtime';
import { createLogger } from '@mco/runtime';
import { connectionFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import {
  eventually as waitFor,
  describeWithControlPlane,
  loadYamlObjects,
  parseYamlDocuments,
  renderChart,
  requireTool,
  serviceAccountKubeConfig,
  thirdPartyCrd,
  startControlPlane,
  toYaml,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  CREDENTIAL_EXPIRES_ANNOTATION,
  FLUX_WATCH_LABEL,
  FluxTemplatesFileSchema,
  HELM_RELEASES,
  INPUT_PROVIDERS,
  KUSTOMIZATIONS,
  MANAGED_BY_LABEL,
  NOT_DRAINING,
  clusterSlug,
  inputProviderName,
  kubeconfigSecretName,
  startFluxDelivery,
  type FluxDelivery,
  type FluxDeliveryOptions,
  type FluxTemplate,
} from '../src/index.js';

// Each step waits for the API server and the caches: allow for a loaded machine.
vi.setConfig({ testTimeout: 90_000 });

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const FLUX_NS = 'flux-system';
const T = '2026-01-01T00:00:00Z';
const cluster = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: 'fleet',
  state: 'ACTIVE' as const,
  lastTransitionTime: T,
  ...extra,
});

const eventually = <T>(what: string, probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 30_000) =>
  waitFor(what, probe, accept, timeoutMs, 100);

/** Runs a program without blocking the event loop. */
function run(command: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

// The rendering-mode template of placement apps/web, as a user would write it.
const TEMPLATE: FluxTemplate = {
  placement: { namespace: 'apps', name: 'web' },
  kustomization: {
    metadata: { name: 'web' },
    spec: {
      interval: '1m',
      path: './deploy',
      prune: true,
      sourceRef: { kind: 'GitRepository', name: 'web' },
      postBuild: { substitute: { TEAM: 'web' } },
    },
  },
  helmRelease: {
    metadata: { name: 'web-chart' },
    spec: { interval: '5m', chart: { spec: { chart: 'web', sourceRef: { kind: 'HelmRepository', name: 'web' } } } },
  },
};

describeWithControlPlane(
  'Flux delivery on the real kube-apiserver with Flux CRDs',
  { tools: ['helm', 'flux', 'flux-operator', 'helm-controller-crds'] },
  () => {
    let plane: ControlPlane;
    let dir: string;
    let hub: KubeConfig;
    let custom: CustomObjectsApi;
    let core: CoreV1Api;
    let fluxKubeConfig: KubeConfig;
    let delivery: FluxDelivery | undefined;
    let options: FluxDeliveryOptions;

    const setStatus = (resource: typeof PLACEMENTS, namespace: string, name: string, status: unknown) =>
      custom.patchNamespacedCustomObjectStatus(
        { ...resource, namespace, name, body: { status } },
        requestOptions(hub, 10_000, PatchStrategy.MergePatch),
      );
    const setPlacement = (name: string, status: PlacementStatus | Record<string, unknown>) =>
      setStatus(PLACEMENTS, 'apps', name, { observedGeneration: 1, ...status });
    const list = async (resource: typeof INPUT_PROVIDERS | typeof KUSTOMIZATIONS | typeof HELM_RELEASES) =>
      (
        (await custom.listNamespacedCustomObject({ ...resource, namespace: FLUX_NS })) as {
          items: (KubernetesObject & { spec: Record<string, unknown> })[];
        }
      ).items;
    const names = (items: KubernetesObject[]) => items.map((o) => o.metadata!.name!).sort();
    /** Waits until `resource` lists `name`, and returns that object. */
    const listed = async (resource: Parameters<typeof list>[0], name: string) =>
      (
        await eventually(
          `${resource.plural} ${name}`,
          () => list(resource),
          (items) => names(items).includes(name),
        )
      ).find((o) => o.metadata!.name === name)!;
    const secret = (name: string): Promise<V1Secret | null> =>
      core.readNamespacedSecret({ namespace: FLUX_NS, name }).then(
        (s) => s,
        () => null,
      );
    const provider = (placement: string, profile: string) =>
      inputProviderName('apps', placement, clusterSlug('fleet', profile));
    const rendered = (profile: string) => `web-${clusterSlug('fleet', profile)}`;

    beforeAll(async () => {
      plane = await startControlPlane({ clusters: ['member'] });
      await plane.hub.installCrds([
        thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
        join(REPO, 'apps/mco/chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml'),
        thirdPartyCrd('fluxcd.controlplane.io_resourcesetinputproviders.yaml'),
        thirdPartyCrd('fluxcd.controlplane.io_resourcesets.yaml'),
        thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
        thirdPartyCrd('helm.toolkit.fluxcd.io_helmreleases.yaml'),
      ]);
      hub = plane.hub.adminKubeConfig();
      custom = hub.makeApiClient(CustomObjectsApi);
      core = hub.makeApiClient(CoreV1Api);
      dir = mkdtempSync(join(tmpdir(), 'mco-flux-it-'));

      // A credential plugin handing out the member's token, valid for 8 s; it
      // fails while the file `broken` exists (a credential that cannot be had).
      const script = join(dir, 'credential-plugin.sh');
      writeFileSync(
        script,
        `#!/bin/sh
[ -e "${dir}/broken" ] && { echo "no credential" >&2; exit 1; }
exp=$(date -u -d "+8 seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}' "$1" "$exp"
`,
      );
      chmodSync(script, 0o755);
      const member = plane.members.member!;
      const execConfig = {
        apiVersion: 'client.authentication.k8s.io/v1' as const,
        command: script,
        args: [member.token('admin')],
      };
      await plane.hub.apply(
        ['fleet', 'apps', FLUX_NS, 'mco-system'].map((name) => ({
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name },
        })),
      );
      // The chart's ServiceAccount and RBAC: mco runs below as that account, with exactly its rights.
      const chart = renderChart({
        'flux.enabled': 'true',
        'flux.inputProviders': 'true',
        'flux.templates[0].placement.name': 'web',
        'flux.templates[0].placement.namespace': 'apps',
        'flux.templates[0].kustomization.metadata.name': 'web',
        'flux.providers[0].name': 'test-exec',
        'flux.providers[0].execConfig.apiVersion': execConfig.apiVersion,
        'flux.providers[0].execConfig.command': script,
        'flux.providers[0].allowedServers[0]': member.server,
      }).filter(
        (o) =>
          o.metadata?.labels?.['app.kubernetes.io/component'] === 'flux' &&
          ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? ''),
      );
      expect(chart.map((o) => o.kind).sort()).toEqual([
        'ClusterRole',
        'ClusterRoleBinding',
        'Role',
        'RoleBinding',
        'ServiceAccount',
      ]);
      await plane.hub.apply(chart);
      const account = chart.find((o) => o.kind === 'ServiceAccount')!.metadata!;
      fluxKubeConfig = await serviceAccountKubeConfig(plane.hub, account.namespace!, account.name!);

      const profile = (name: string) => ({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name, namespace: 'fleet' },
        spec: { displayName: name, clusterManager: { name: 'test' } },
      });
      await plane.hub.apply([profile('east'), profile('west')]);
      for (const name of ['east', 'west']) {
        await setStatus(CLUSTER_PROFILES, 'fleet', name, {
          accessProviders: [
            { name: 'test-exec', cluster: { server: member.server, 'certificate-authority-data': member.caData } },
          ],
        });
      }
      const placement = (name: string) => ({
        apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
        kind: 'MultiKubernetesClusterPlacement',
        metadata: { name, namespace: 'apps' },
        spec: { scaling: { autoscaleForCapacity: { minClustersBelowCapacityCeiling: 1, useDraining: true } } },
      });
      await plane.hub.apply([placement('web'), placement('other')]);
      await setPlacement('web', { clusters: [cluster('east')] });
      await setPlacement('other', { clusters: [] });

      const access = createClusterAccess({
        // The test member listens on loopback, which a provider reaches only when it names it (and the port).
        providers: { providers: [{ name: 'test-exec', execConfig, allowedServers: [member.server] }] },
        hub: connectionFromKubeConfig(hub),
      });
      options = {
        kubeConfig: fluxKubeConfig,
        namespace: FLUX_NS,
        inputProviders: true,
        templates: [TEMPLATE],
        resolveAccess: (p) => access.accessFor(p),
        refreshBeforeMs: 3_000,
        informers: { watchTimeoutSeconds: 30 },
      };
      delivery = startFluxDelivery(options);
    });

    afterAll(async () => {
      await delivery?.stop();
      await plane?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('writes an input provider with every documented input, a rendered Kustomization and HelmRelease, and a kubeconfig Secret per placed cluster', async () => {
      const ip = await listed(INPUT_PROVIDERS, provider('web', 'east'));
      expect(ip.metadata!.labels).toMatchObject({
        [MANAGED_BY_LABEL]: 'mco-flux',
        'orchestra.multicluster.x-k8s.io/placement': 'web',
        'orchestra.multicluster.x-k8s.io/placement-namespace': 'apps',
      });
      expect(ip.spec).toEqual({
        type: 'Static',
        defaultValues: {
          clusterName: 'fleet.east',
          clusterSlug: clusterSlug('fleet', 'east'),
          clusterProfileName: 'east',
          clusterProfileNamespace: 'fleet',
          server: plane.members.member!.server,
          kubeconfigSecretName: kubeconfigSecretName('fleet', 'east'),
          placementName: 'web',
          placementNamespace: 'apps',
          state: 'ACTIVE',
          draining: 'false',
          desiredMaxReplicas: NOT_DRAINING,
          desiredMinReplicas: '',
        },
      });

      // Rendered objects are separate writes that may follow the input provider.
      const kustomization = await listed(KUSTOMIZATIONS, rendered('east'));
      expect(kustomization.spec).toMatchObject({
        path: './deploy',
        kubeConfig: { secretRef: { name: kubeconfigSecretName('fleet', 'east'), key: 'value' } },
        postBuild: { substitute: { TEAM: 'web', MCO_CLUSTER_NAME: 'fleet.east', MCO_DRAINING: 'false' } },
      });
      const release = await listed(HELM_RELEASES, `web-chart-${clusterSlug('fleet', 'east')}`);
      expect(release.spec).toMatchObject({
        kubeConfig: { secretRef: { name: kubeconfigSecretName('fleet', 'east') } },
        values: { mco: { clusterName: 'fleet.east', draining: 'false' } },
      });

      const stored = await eventually(
        'the kubeconfig Secret of east',
        () => secret(kubeconfigSecretName('fleet', 'east')),
        (s) => s !== null,
      );
      expect(stored!.metadata!.labels).toMatchObject({ [FLUX_WATCH_LABEL]: 'Enabled', [MANAGED_BY_LABEL]: 'mco-flux' });
      // The Secret is a self-contained kubeconfig (no exec) that reaches the member.
      const text = Buffer.from(stored!.data!.value!, 'base64').toString('utf8');
      expect(text).not.toContain('exec');
      const memberKc = new KubeConfig();
      memberKc.loadFromString(text);
      const namespaces = await memberKc.makeApiClient(CoreV1Api).listNamespace();
      expect(namespaces.items.map((n) => n.metadata!.name)).toContain('default');
    });

    it("the shipped ResourceSet example is valid and selects exactly the placement's input providers, whose inputs it uses", async () => {
      const file = join(REPO, 'examples/flux/resourceset.yaml');
      const [resourceSet] = loadYamlObjects(file) as (KubernetesObject & {
        spec: { inputsFrom: { selector: { matchLabels: Record<string, string> } }[] };
      })[];
      await plane.hub.apply([resourceSet!]);
      const selector = Object.entries(resourceSet!.spec.inputsFrom[0]!.selector.matchLabels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      const selected = (
        (await custom.listNamespacedCustomObject({
          ...INPUT_PROVIDERS,
          namespace: FLUX_NS,
          labelSelector: selector,
        })) as {
          items: (KubernetesObject & { spec: { defaultValues: Record<string, string> } })[];
        }
      ).items;
      expect(names(selected)).toEqual([provider('web', 'east')]);
      // Every input the template references is one mco always sets.
      const used = [...readFileSync(file, 'utf8').matchAll(/<<\s*inputs\.(\w+)/g)].map((m) => m[1]!);
      expect(used.length).toBeGreaterThan(3);
      for (const name of used) expect(Object.keys(selected[0]!.spec.defaultValues)).toContain(name);
    });

    it('the chart passes helm lint with Flux on, refuses it without providers or a mode, and its Deployment runs `mco flux` on files that parse', async () => {
      const helm = requireTool('helm');
      const chartDir = join(REPO, 'apps/mco/chart');
      const values = join(dir, 'flux-values.yaml');
      writeFileSync(
        values,
        toYaml({
          flux: {
            enabled: true,
            templates: [TEMPLATE],
            providers: [
              {
                name: 'p',
                execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/p' },
                allowedServers: ['https://member.example'],
              },
            ],
          },
        }),
      );
      // helm runs asynchronously: the delivery shares this event loop and must keep refreshing Secrets.
      expect((await run(helm, ['lint', chartDir, '--strict', '-f', values])).code).toBe(0);
      const refused = async (sets: string[]) =>
        (await run(helm, ['template', 'mco', chartDir, ...sets.flatMap((v) => ['--set', v])])).stderr;
      expect(await refused(['flux.enabled=true'])).toContain('flux.enabled needs flux.providers');
      expect(
        await refused([
          'flux.enabled=true',
          'flux.inputProviders=false',
          'flux.providers[0].name=p',
          'flux.providers[0].execConfig.command=/bin/p',
          'flux.providers[0].allowedServers[0]=https://member.example',
        ]),
      ).toContain('flux.enabled needs flux.inputProviders (Flux Operator) or flux.templates');
      const rendered = parseYamlDocuments(
        (await run(helm, ['template', 'mco', chartDir, '-f', values])).stdout,
      ) as KubernetesObject[];
      const deployment = rendered.find(
        (o) => o.kind === 'Deployment' && o.metadata!.name === 'mco-flux',
      ) as KubernetesObject & {
        spec: { template: { spec: { containers: { args: string[] }[] } } };
      };
      expect(deployment.spec.template.spec.containers[0]!.args).toEqual([
        'flux',
        '--flux-namespace=flux-system',
        '--provider-file=/etc/mco/flux/providers.yaml',
        '--input-providers',
        '--templates=/etc/mco/flux/templates.yaml',
        '--secret-hold-timeout=3600',
        '--manager=mco-flux',
        '--log-level=info',
        '--listen=0.0.0.0:8083',
      ]);
      const config = rendered.find(
        (o) => o.kind === 'ConfigMap' && o.metadata!.name === 'mco-flux',
      ) as KubernetesObject & {
        data: Record<string, string>;
      };
      expect(FluxTemplatesFileSchema.parse(parseYamlDocuments(config.data['templates.yaml']!)[0]).templates).toEqual([
        TEMPLATE,
      ]);
      expect(parseProviderFile(config.data['providers.yaml']!, 'providers.yaml').providers.map((p) => p.name)).toEqual([
        'p',
      ]);
    });

    it('refreshes the kubeconfig Secret before its credential expires', async () => {
      const name = kubeconfigSecretName('fleet', 'east');
      const first = (await secret(name))!.metadata!.annotations![CREDENTIAL_EXPIRES_ANNOTATION]!;
      const later = await eventually(
        'a refreshed credential',
        () => secret(name),
        (s) => {
          const expires = s?.metadata?.annotations?.[CREDENTIAL_EXPIRES_ANNOTATION];
          return expires !== undefined && expires > first;
        },
      );
      expect(later).not.toBeNull();
      // Seen (so written) before the old credential expired.
      expect(Date.now()).toBeLessThan(Date.parse(first));
    });

    it('publishes draining on scale-out and scale-in states', async () => {
      await setPlacement('web', {
        clusters: [
          cluster('east'),
          cluster('west', { state: 'SCALING_IN', draining: { desiredMaxReplicas: 2, lastReplicaCountDecrease: T } }),
        ],
      });
      const providers = await eventually(
        'the input provider of web/west',
        () => list(INPUT_PROVIDERS),
        (items) =>
          items.some(
            (o) =>
              o.metadata!.name === provider('web', 'west') &&
              (o.spec.defaultValues as { draining: string }).draining === 'true',
          ),
      );
      expect(providers.find((o) => o.metadata!.name === provider('web', 'west'))!.spec.defaultValues).toMatchObject({
        state: 'SCALING_IN',
        draining: 'true',
        desiredMaxReplicas: '2',
      });
      const kustomization = await listed(KUSTOMIZATIONS, rendered('west'));
      expect(kustomization.spec).toMatchObject({
        postBuild: { substitute: { MCO_DESIRED_MAX_REPLICAS: '2', MCO_STATE: 'SCALING_IN' } },
      });
      await eventually(
        'the kubeconfig Secret of west',
        () => secret(kubeconfigSecretName('fleet', 'west')),
        (s) => s !== null,
      );
    });

    it('deletes nothing for an invalid placement status or a missing credential', async () => {
      const before = names([...(await list(INPUT_PROVIDERS)), ...(await list(KUSTOMIZATIONS))]);
      // A cluster without a namespace: the status is not trusted.
      await setPlacement('web', { clusters: [{ name: 'east', state: 'ACTIVE', lastTransitionTime: T }] });
      writeFileSync(join(dir, 'broken'), '');
      // A later change of another placement shows a pass ran after both.
      await setPlacement('other', { clusters: [cluster('east')] });
      await eventually(
        'the input provider of other/east',
        () => list(INPUT_PROVIDERS),
        (items) => names(items).includes(provider('other', 'east')),
      );
      // Past the 8 s credential lifetime: passes ran without a credential.
      await eventually(
        'a pass without credentials',
        async () => delivery!.sync.last,
        (last) => (last?.credentialFailures ?? 0) > 0,
      );
      const after = names([...(await list(INPUT_PROVIDERS)), ...(await list(KUSTOMIZATIONS))]);
      expect(after).toEqual([...before, provider('other', 'east')].sort());
      expect(await secret(kubeconfigSecretName('fleet', 'east'))).not.toBeNull();
      expect(await secret(kubeconfigSecretName('fleet', 'west'))).not.toBeNull();
      rmSync(join(dir, 'broken'));
      await setPlacement('other', { clusters: [] });
    });

    it('keeps the kubeconfig Secret of a placed profile that turns hostile as it was, and never writes the hostile server', async () => {
      const name = kubeconfigSecretName('fleet', 'east');
      const server = (s: V1Secret | null) =>
        s &&
        (JSON.parse(Buffer.from(s.data!.value!, 'base64').toString()) as {
          clusters: { cluster: { server: string } }[];
        });
      await setPlacement('other', { clusters: [cluster('east')] });
      // Settle first: a pass still running from the test before (or renewing east's credential)
      // would otherwise be taken for the refusing pass and write the Secret after it was read.
      const settled = await eventually(
        'a pass serving other/east',
        async () => ({ last: delivery!.sync.last, providers: names(await list(INPUT_PROVIDERS)) }),
        ({ last, providers }) => last?.credentialFailures === 0 && providers.includes(provider('other', 'east')),
      );
      await setStatus(CLUSTER_PROFILES, 'fleet', 'east', {
        accessProviders: [{ name: 'test-exec', cluster: { server: 'https://169.254.169.254' } }],
      });
      // The profile change starts a pass; east is refused before its credential plugin runs.
      const refusing = await eventually(
        'a pass refusing east',
        async () => delivery!.sync.last,
        (last) => last !== settled.last && (last?.credentialFailures ?? 0) > 0,
      );
      const first = await secret(name);
      // Another pass (a placement change), still refusing: the Secret is not touched.
      await setPlacement('other', { clusters: [cluster('east', { lastTransitionTime: '2026-01-02T00:00:00Z' })] });
      await eventually(
        'a later pass refusing east',
        async () => delivery!.sync.last,
        (last) => last !== refusing && (last?.credentialFailures ?? 0) > 0,
      );
      const second = await secret(name);
      expect({
        resourceVersion: second?.metadata?.resourceVersion,
        server: server(second)?.clusters[0]?.cluster.server,
      }).toEqual({ resourceVersion: first?.metadata?.resourceVersion, server: plane.members.member!.server });
      await setStatus(CLUSTER_PROFILES, 'fleet', 'east', {
        accessProviders: [
          {
            name: 'test-exec',
            cluster: {
              server: plane.members.member!.server,
              'certificate-authority-data': plane.members.member!.caData,
            },
          },
        ],
      });
      await eventually(
        'east served again',
        async () => delivery!.sync.last,
        (last) => last?.credentialFailures === 0,
      );
      await setPlacement('other', { clusters: [] });
    });

    it("removes the kubeconfig Secret of a placed profile whose server is the hub's own, in another spelling, although Flux objects use it", async () => {
      const name = kubeconfigSecretName('fleet', 'east');
      const restore = () =>
        setStatus(CLUSTER_PROFILES, 'fleet', 'east', {
          accessProviders: [
            {
              name: 'test-exec',
              cluster: {
                server: plane.members.member!.server,
                'certificate-authority-data': plane.members.member!.caData,
              },
            },
          ],
        });
      // The test before removed east from other: its input provider may not be deleted yet, and
      // taken for this test's it could go right after, with no new one written for a profile that
      // names the hub. So this test starts without it and waits for the one its placement makes.
      const otherEast = async () =>
        (await list(INPUT_PROVIDERS)).find((o) => o.metadata?.name === provider('other', 'east'))?.metadata?.uid ??
        null;
      await eventually('the input provider of other/east from the test before gone', otherEast, (u) => u === null);
      await setPlacement('other', { clusters: [cluster('east')] });
      await eventually(
        'the kubeconfig Secret of east',
        () => secret(name),
        (s) => s !== null,
      );
      const uid = await eventually('the input provider of other/east, which uses it', otherEast, (u) => u !== null);
      // The hub's URL with its IPv4 address written as an IPv4-mapped IPv6 one.
      const hubPort = new URL(plane.hub.server).port;
      await setStatus(CLUSTER_PROFILES, 'fleet', 'east', {
        accessProviders: [{ name: 'test-exec', cluster: { server: `https://[::ffff:127.0.0.1]:${hubPort}` } }],
      });
      await eventually(
        'the kubeconfig Secret of east removed',
        () => secret(name),
        (s) => s === null,
      );
      // The same input provider, never deleted in between (other still lists east): it used the Secret throughout.
      const used = (await otherEast()) === uid;
      await restore();
      await eventually(
        'the kubeconfig Secret of east written again',
        () => secret(name),
        (s) => s !== null,
      );
      await setPlacement('other', { clusters: [] });
      expect({ usedWhenRemoved: used }).toEqual({ usedWhenRemoved: true });
    });

    it('after a restart, writes no input provider or rendered object, deletes nothing and logs only real changes', async () => {
      await setPlacement('web', {
        clusters: [
          cluster('east'),
          cluster('west', { state: 'SCALING_IN', draining: { desiredMaxReplicas: 2, lastReplicaCountDecrease: T } }),
        ],
      });
      await eventually(
        'other/east gone',
        () => list(INPUT_PROVIDERS),
        (items) => !names(items).includes(provider('other', 'east')),
      );
      const versions = async () =>
        [...(await list(INPUT_PROVIDERS)), ...(await list(KUSTOMIZATIONS)), ...(await list(HELM_RELEASES))]
          .map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`)
          .sort();
      const before = await versions();
      await delivery!.stop();
      const lines: { msg: string; object?: string; applied?: number; pruned?: number }[] = [];
      delivery = startFluxDelivery({
        ...options,
        logger: createLogger({ level: 'debug', write: (line) => void lines.push(JSON.parse(line) as { msg: string }) }),
      });
      await eventually(
        'the first pass after the restart',
        async () => delivery!.sync.last,
        (last) => last !== undefined,
      );
      expect(await versions()).toEqual(before);
      // An apply the server found nothing to change in is neither counted nor logged; only a
      // kubeconfig Secret whose credential was renewed may be a real change. Every pass since the
      // restart counts (a second one may have run by now): its 'flux pass' line sums what it applied
      // and pruned; a pass still under way may have logged an apply and not yet its sum.
      const tally = () => {
        const passes = lines.filter((l) => l.msg === 'flux pass');
        const applied = lines.filter((l) => l.msg === 'applied').map((l) => String(l.object));
        return {
          pruned: passes.reduce((n, l) => n + (l.pruned ?? 0), 0),
          appliedLines: applied.length,
          counted: passes.reduce((n, l) => n + (l.applied ?? 0), 0),
          notSecrets: applied.filter((o) => !o.startsWith('Secret ')),
        };
      };
      const seen = await eventually(
        'every apply logged since the restart counted by its pass',
        async () => tally(),
        (t) => t.appliedLines === t.counted,
      );
      expect(seen).toEqual({ pruned: 0, appliedLines: seen.counted, counted: seen.counted, notSecrets: [] });
    });

    it('the ServiceAccount may touch Secrets only in the Flux namespace', async () => {
      const authz = fluxKubeConfig.makeApiClient(AuthorizationV1Api);
      const can = async (verb: string, resource: string, namespace: string, group = '') =>
        (
          await authz.createSelfSubjectAccessReview({
            body: { spec: { resourceAttributes: { verb, resource, namespace, group } } },
          })
        ).status!.allowed;
      expect(await can('list', 'secrets', FLUX_NS)).toBe(true);
      expect(await can('patch', 'secrets', FLUX_NS)).toBe(true);
      for (const ns of ['apps', 'fleet', 'mco-system', 'kube-system']) {
        expect(await can('get', 'secrets', ns)).toBe(false);
        expect(await can('list', 'secrets', ns)).toBe(false);
      }
      expect(await can('patch', 'multikubernetesclusterplacements', 'apps', 'orchestra.multicluster.x-k8s.io')).toBe(
        false,
      );
      expect(await can('patch', 'clusterprofiles', 'fleet', 'multicluster.x-k8s.io')).toBe(false);
      expect(await can('patch', 'resourcesets', FLUX_NS, 'fluxcd.controlplane.io')).toBe(false);
    });

    it('on an observed removal deletes the input provider and rendered objects, and the kubeconfig Secret only once no Flux object uses it', async () => {
      // A Kustomization someone else made (as a ResourceSet does) that uses west's
      // Secret and is held by Flux's finalizer while it deletes remote objects.
      const fromResourceSet = {
        apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
        kind: 'Kustomization',
        metadata: { name: 'from-resourceset', namespace: FLUX_NS, finalizers: ['finalizers.fluxcd.io'] },
        spec: {
          interval: '1m',
          prune: true,
          sourceRef: { kind: 'GitRepository', name: 'web' },
          kubeConfig: { secretRef: { name: kubeconfigSecretName('fleet', 'west') } },
        },
      };
      await plane.hub.apply([fromResourceSet as KubernetesObject]);
      // Reconciled once, inventory written (no kustomize-controller runs here): mco waits for
      // nothing being applied. kustomize-controller records the generation and revisions with it.
      await custom.patchNamespacedCustomObjectStatus(
        {
          ...KUSTOMIZATIONS,
          namespace: FLUX_NS,
          name: 'from-resourceset',
          body: {
            status: {
              observedGeneration: 1,
              lastAppliedRevision: 'main@sha1:0123456789abcdef0123456789abcdef01234567',
              lastAttemptedRevision: 'main@sha1:0123456789abcdef0123456789abcdef01234567',
              inventory: { entries: [] },
              conditions: [
                {
                  type: 'Ready',
                  status: 'True',
                  reason: 'ReconciliationSucceeded',
                  message: '',
                  lastTransitionTime: '2026-01-01T00:00:00Z',
                },
              ],
            },
          },
        },
        requestOptions(hub, 10_000, PatchStrategy.MergePatch),
      );
      await setPlacement('web', { clusters: [cluster('east')] });
      await eventually(
        'west objects gone',
        async () => [...(await list(INPUT_PROVIDERS)), ...(await list(KUSTOMIZATIONS))],
        (items) => !names(items).includes(provider('web', 'west')) && !names(items).includes(rendered('west')),
      );
      await custom.deleteNamespacedCustomObject({ ...KUSTOMIZATIONS, namespace: FLUX_NS, name: 'from-resourceset' });
      // Flux is still deleting (finalizer): the Secret must stay. A later change shows a pass ran.
      await setPlacement('other', { clusters: [cluster('east')] });
      await eventually(
        'the input provider of other/east',
        () => list(INPUT_PROVIDERS),
        (items) => names(items).includes(provider('other', 'east')),
      );
      expect(await secret(kubeconfigSecretName('fleet', 'west'))).not.toBeNull();
      // Flux finished: the finalizer goes, then the Secret.
      await custom.patchNamespacedCustomObject(
        { ...KUSTOMIZATIONS, namespace: FLUX_NS, name: 'from-resourceset', body: { metadata: { finalizers: null } } },
        requestOptions(hub, 10_000, PatchStrategy.MergePatch),
      );
      await eventually(
        'the Secret of west gone',
        () => secret(kubeconfigSecretName('fleet', 'west')),
        (s) => s === null,
      );
      expect(await secret(kubeconfigSecretName('fleet', 'east'))).not.toBeNull();
    });
  },
);

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  createWriteStream,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AppsV1Api,
  AutoscalingV2Api,
  CustomObjectsApi,
  PatchStrategy,
  Watch,
  type KubeConfig,
} from '@kubernetes/client-node';
import { createClusterAccess } from '@mco/cluster-access';
import type { PlacementStatus } from '@mco/core';
import { CLUSTER_PROFILES, PLACEMENTS } from '@mco/kube-runtime';
import { connectionFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import {
  describeWithControlPlane,
  preparedTool,
  thirdPartyCrd,
  startControlPlane,
  type ClusterHandle,
  type ControlPlane,
} from '@mco/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { clusterSlug, kubeconfigSecretName, startFluxDelivery, type FluxDelivery } from '../src/index.js';
import { eventually } from './support.js';

// Real processes start here (three kube-apiservers, kustomize-controller) on
// two shared cores: generous timeouts, every step waits on a condition.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 240_000 });

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const FLUX_NS = 'flux-system';
const T = '2026-01-01T00:00:00Z';

// The workload as its Git repository would hold it: the HPA maximum comes from
// mco through postBuild.substitute, with the repository's own default.
const MANIFESTS = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.example/web:1.0
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: default
  labels:
    cluster: \${MCO_CLUSTER_NAME:=unknown}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: \${MCO_DESIRED_MAX_REPLICAS:=10}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: 70}
`;

const toolDir = preparedTool('flux');

describeWithControlPlane(
  'Flux delivery end to end: real kustomize-controller v1.9.5 applies to member apiservers',
  { tools: ['flux'] },
  () => {
    let plane: ControlPlane;
    let dir: string;
    let hub: KubeConfig;
    let custom: CustomObjectsApi;
    let controller: ChildProcess | undefined;
    let server: Server;
    let delivery: FluxDelivery | undefined;

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
    const hpaOf = (member: ClusterHandle) =>
      member
        .adminKubeConfig()
        .makeApiClient(AutoscalingV2Api)
        .readNamespacedHorizontalPodAutoscaler({ namespace: 'default', name: 'web' })
        .then(
          (h) => h,
          () => null,
        );
    const deploymentOf = (member: ClusterHandle) =>
      member
        .adminKubeConfig()
        .makeApiClient(AppsV1Api)
        .readNamespacedDeployment({ namespace: 'default', name: 'web' })
        .then(
          () => true,
          () => false,
        );

    beforeAll(async () => {
      plane = await startControlPlane({ clusters: ['one', 'two'] });
      // kustomize-controller's own CRDs and source-controller's, from the module versions it was built from.
      const fluxCrds = join(toolDir!, 'crds');
      await plane.hub.installCrds([
        thirdPartyCrd('multicluster.x-k8s.io_clusterprofiles.yaml'),
        join(REPO, 'apps/mco/chart/crds/orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml'),
        ...readdirSync(fluxCrds)
          .filter((f) => f.endsWith('.yaml'))
          .map((f) => join(fluxCrds, f)),
      ]);
      hub = plane.hub.adminKubeConfig();
      custom = hub.makeApiClient(CustomObjectsApi);
      dir = mkdtempSync(join(tmpdir(), 'mco-flux-e2e-'));

      // The artifact, as source-controller would serve it: a tar.gz with its sha256 digest.
      mkdirSync(join(dir, 'repo', 'deploy'), { recursive: true });
      writeFileSync(join(dir, 'repo', 'deploy', 'web.yaml'), MANIFESTS);
      execFileSync('tar', ['-czf', join(dir, 'web.tar.gz'), '-C', join(dir, 'repo'), '.']);
      const artifact = readFileSync(join(dir, 'web.tar.gz'));
      server = createServer((request, response) => {
        if (request.url !== '/web.tar.gz') {
          response.writeHead(404).end();
          return;
        }
        response.writeHead(200, { 'content-type': 'application/gzip' }).end(artifact);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/web.tar.gz`;

      await plane.hub.apply(
        ['fleet', 'apps', FLUX_NS].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
      );
      await plane.hub.apply([
        {
          apiVersion: 'source.toolkit.fluxcd.io/v1',
          kind: 'GitRepository',
          metadata: { name: 'web', namespace: FLUX_NS },
          spec: { url: 'https://git.example/web.git', interval: '1h', ref: { branch: 'main' } },
        } as never,
      ]);
      const revision = `main@sha1:${createHash('sha1').update(artifact).digest('hex')}`;
      await custom.patchNamespacedCustomObjectStatus(
        {
          group: 'source.toolkit.fluxcd.io',
          version: 'v1',
          plural: 'gitrepositories',
          namespace: FLUX_NS,
          name: 'web',
          body: {
            status: {
              artifact: {
                path: 'gitrepository/flux-system/web/artifact.tar.gz',
                url,
                revision,
                digest: `sha256:${createHash('sha256').update(artifact).digest('hex')}`,
                lastUpdateTime: new Date().toISOString(),
                size: artifact.length,
              },
              conditions: [
                {
                  type: 'Ready',
                  status: 'True',
                  reason: 'Succeeded',
                  message: 'stored artifact',
                  lastTransitionTime: new Date().toISOString(),
                  observedGeneration: 1,
                },
              ],
            },
          },
        },
        requestOptions(hub, 10_000, PatchStrategy.MergePatch),
      );

      // kustomize-controller, as Flux runs it, on the hub; it reaches the members only through mco's Secrets.
      writeFileSync(join(dir, 'hub.kubeconfig'), hub.exportConfig());
      const log = createWriteStream(join(dir, 'kustomize-controller.log'));
      controller = spawn(
        join(toolDir!, 'kustomize-controller'),
        [
          '--metrics-addr=0',
          '--health-addr=127.0.0.1:0',
          '--enable-leader-election=false',
          '--watch-all-namespaces=false',
          '--log-level=info',
          '--concurrent=2',
        ],
        {
          env: { ...process.env, KUBECONFIG: join(dir, 'hub.kubeconfig'), RUNTIME_NAMESPACE: FLUX_NS },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      controller.stdout!.pipe(log);
      controller.stderr!.pipe(log);

      // A credential plugin per member (its own token), through the ClusterProfile's access provider.
      const script = join(dir, 'credential-plugin.sh');
      writeFileSync(
        script,
        `#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$1"
`,
      );
      chmodSync(script, 0o755);
      const providers = ['one', 'two'].map((name) => ({
        name: `exec-${name}`,
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1' as const,
          command: script,
          args: [plane.members[name]!.token('admin')],
        },
        // The test members listen on loopback, which a provider reaches only when it names it (and the port).
        allowedServers: [plane.members[name]!.server],
      }));
      await plane.hub.apply(
        ['one', 'two'].map((name) => ({
          apiVersion: 'multicluster.x-k8s.io/v1alpha1',
          kind: 'ClusterProfile',
          metadata: { name, namespace: 'fleet' },
          spec: { displayName: name, clusterManager: { name: 'test' } },
        })) as never,
      );
      for (const name of ['one', 'two']) {
        const member = plane.members[name]!;
        await setStatus(CLUSTER_PROFILES, 'fleet', name, {
          accessProviders: [
            { name: `exec-${name}`, cluster: { server: member.server, 'certificate-authority-data': member.caData } },
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
      await setPlacement({ clusters: [cluster('one')] });

      const access = createClusterAccess({ providers: { providers }, hub: connectionFromKubeConfig(hub) });
      delivery = startFluxDelivery({
        kubeConfig: hub,
        namespace: FLUX_NS,
        inputProviders: false,
        helmReleases: false,
        templates: [
          {
            placement: { namespace: 'apps', name: 'web' },
            kustomization: {
              metadata: { name: 'web' },
              spec: {
                interval: '10m',
                path: './deploy',
                prune: true,
                sourceRef: { kind: 'GitRepository', name: 'web' },
              },
            },
          },
        ],
        resolveAccess: (p) => access.accessFor(p),
      });
    });

    afterAll(async () => {
      await delivery?.stop();
      controller?.kill('SIGTERM');
      server?.close();
      await plane?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('applies the workload to the placed member through the kubeconfig Secret, not to the other', async () => {
      const hpa = await eventually(
        'the HPA on member one',
        () => hpaOf(plane.members.one!),
        (h) => h !== null,
      );
      expect(hpa!.spec!.maxReplicas).toBe(10);
      expect(hpa!.metadata!.labels).toMatchObject({ cluster: 'fleet.one' });
      expect(await deploymentOf(plane.members.one!)).toBe(true);
      expect(await deploymentOf(plane.members.two!)).toBe(false);
    });

    it('scale-out: the workload appears on the new member', async () => {
      await setPlacement({ clusters: [cluster('one'), cluster('two')] });
      await eventually(
        'the Deployment on member two',
        () => deploymentOf(plane.members.two!),
        (d) => d,
      );
      expect((await hpaOf(plane.members.two!))!.spec!.maxReplicas).toBe(10);
    });

    it('draining: the HPA maximum steps down on the draining member only', async () => {
      await setPlacement({
        clusters: [
          cluster('one'),
          cluster('two', { state: 'SCALING_IN', draining: { desiredMaxReplicas: 3, lastReplicaCountDecrease: T } }),
        ],
      });
      await eventually(
        'maxReplicas 3 on member two',
        () => hpaOf(plane.members.two!),
        (h) => h?.spec?.maxReplicas === 3,
      );
      expect((await hpaOf(plane.members.one!))!.spec!.maxReplicas).toBe(10);
    });

    it('scale-in: the workload is deleted from that member, and its kubeconfig Secret goes only after', async () => {
      const secretName = kubeconfigSecretName('fleet', 'two');
      const kustomizationName = `web-${clusterSlug('fleet', 'two')}`;
      // The hub and the members share one etcd (testkit: --etcd-prefix), so
      // the resourceVersions of their delete events are one global order.
      const deleted = new Map<string, number>();
      const watches = await Promise.all(
        (
          [
            ['workload', plane.members.two!.adminKubeConfig(), '/apis/apps/v1/namespaces/default/deployments', 'web'],
            [
              'kustomization',
              hub,
              `/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/${FLUX_NS}/kustomizations`,
              kustomizationName,
            ],
            ['secret', hub, `/api/v1/namespaces/${FLUX_NS}/secrets`, secretName],
          ] as const
        ).map(([what, kc, path, name]) =>
          new Watch(kc).watch(
            path,
            { fieldSelector: `metadata.name=${name}` },
            (type: string, object: { metadata: { resourceVersion: string } }) => {
              if (type === 'DELETED') deleted.set(what, Number(object.metadata.resourceVersion));
            },
            () => undefined,
          ),
        ),
      );
      try {
        await setPlacement({ clusters: [cluster('one')] });
        await eventually(
          'the Secret of member two deleted',
          async () => deleted,
          (d) => d.has('secret'),
        );
        const order = [...deleted].sort(([, a], [, b]) => a - b);
        console.log(`scale-in, deletes in etcd order: ${order.map(([what, rv]) => `${what}@${rv}`).join(' -> ')}`);
        expect(order.map(([what]) => what)).toEqual(['workload', 'kustomization', 'secret']);
      } finally {
        for (const w of watches) w.abort();
      }
      expect(await hpaOf(plane.members.two!)).toBeNull();
      expect(await deploymentOf(plane.members.one!)).toBe(true);
    });
  },
);

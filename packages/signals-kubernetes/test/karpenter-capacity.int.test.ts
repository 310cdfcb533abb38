import { CoreV1Api, CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { createClusterAccess, KUBECONFIG_SECRET_ANNOTATION } from '@mco/cluster-access';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { CapacityRequest } from '@mco/runtime';
import {
  describeWithControlPlane,
  kubeconfigSecret,
  loadYamlObjects,
  startControlPlane,
  type ControlPlane,
} from '@mco/testkit';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KarpenterCapacityConfigSchema, createKarpenterCapacitySource } from '../src/index.js';

const RBAC = fileURLToPath(new URL('../deploy/member-rbac.yaml', import.meta.url));
// Karpenter v1.15.0's own CRDs (test/testdata/karpenter/SOURCE.md).
const KARPENTER_CRDS = ['karpenter.sh_nodepools.yaml', 'karpenter.sh_nodeclaims.yaml'].map((f) =>
  fileURLToPath(new URL(`./testdata/karpenter/crds/${f}`, import.meta.url)),
);

const nodeClassRef = { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' };

/** A NodePool in the shape Karpenter v1.15.0's CRD validates, with `resources` as Karpenter writes its status. */
function nodePool(name: string, spec: Record<string, unknown>, resources?: Record<string, string>) {
  const { template = {}, ...rest } = spec as { template?: { spec?: object } };
  return {
    object: {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name },
      spec: { ...rest, template: { ...template, spec: { nodeClassRef, requirements: [], ...template.spec } } },
    } as KubernetesObject,
    resources,
  };
}

describeWithControlPlane('the karpenter capacity source against members with Karpenter v1.15.0 CRDs', () => {
  let cp: ControlPlane;

  beforeAll(async () => {
    cp = await startControlPlane({ clusters: ['placed', 'karp', 'open'] });
    const pools = {
      karp: [
        // 10 cpu, 8 provided by its nodes: room for 4 replicas of 500m (memory leaves 12).
        nodePool('general', { limits: { cpu: '10', memory: '40Gi' } }, { cpu: '8', memory: '28Gi', nodes: '2' }),
        // Only for arm64 pods: the workload selects amd64, so its large room does not count.
        nodePool('arm', {
          limits: { cpu: '1000' },
          template: { spec: { requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['arm64'] }] } },
        }),
        // Tainted for GPU jobs the workload does not tolerate.
        nodePool('gpu', {
          limits: { cpu: '1000' },
          template: { spec: { taints: [{ key: 'nvidia.com/gpu', value: 'true', effect: 'NoSchedule' }] } },
        }),
      ],
      open: [nodePool('default', {})],
    };
    for (const [name, list] of Object.entries(pools)) {
      const member = cp.members[name]!;
      await member.installCrds(KARPENTER_CRDS);
      await member.apply(list.map((p) => p.object));
      const custom = member.adminKubeConfig().makeApiClient(CustomObjectsApi);
      for (const { object, resources } of list) {
        if (!resources) continue;
        await custom.patchClusterCustomObjectStatus({
          group: 'karpenter.sh',
          version: 'v1',
          plural: 'nodepools',
          name: object.metadata!.name!,
          body: [{ op: 'add', path: '/status', value: { resources } }],
        });
      }
    }
    // The workload runs on `placed`: its Deployment's pod template is the shape asked about.
    await cp.members.placed!.apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } } as KubernetesObject,
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'shop' },
        spec: {
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              nodeSelector: { 'kubernetes.io/arch': 'amd64' },
              containers: [
                {
                  name: 'app',
                  image: 'registry.example/web:1',
                  resources: { requests: { cpu: '500m', memory: '1Gi' } },
                },
              ],
            },
          },
        },
      } as KubernetesObject,
    ]);
    const hubCore = cp.hub.adminKubeConfig().makeApiClient(CoreV1Api);
    await hubCore.createNamespace({ body: { metadata: { name: 'fleet' } } });
    for (const name of ['placed', 'karp', 'open']) {
      const member = cp.members[name]!;
      await member.apply([
        ...loadYamlObjects(RBAC),
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: 'mco-signals-reader' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'mco-signals-reader' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'controller' }],
        } as KubernetesObject,
      ]);
      await cp.hub.apply([kubeconfigSecret(member, { name: `${name}-kubeconfig`, namespace: 'fleet' }, 'controller')]);
    }
  });

  afterAll(async () => {
    await cp?.stop();
  });

  const profile = (name: string) =>
    ({
      ...aClusterProfile(`fleet/${name}`),
      metadata: { name, namespace: 'fleet', annotations: { [KUBECONFIG_SECRET_ANNOTATION]: `${name}-kubeconfig` } },
    }) as ClusterProfile;
  const request = (clusters: string[], placed: string[]): CapacityRequest => ({
    placement: {
      namespace: 'shop',
      name: 'web',
      spec: {
        scaling: {
          autoscaleForCapacity: {
            minClustersBelowCapacityCeiling: 1,
            workloadDetails: { deploymentName: 'web', hpaName: 'web' },
          },
        },
      },
    },
    clusters: clusters.map((c) => ({ key: `fleet/${c}`, profile: profile(c) })),
    placed: placed.map((c) => ({ key: `fleet/${c}`, profile: profile(c) })),
  });
  const source = (registry = new Registry()) =>
    createKarpenterCapacitySource({
      access: createClusterAccess({
        providers: [],
        hub: cp.hub.connectionFor('admin'),
        kubeconfigSecrets: { allowedServers: Object.values(cp.members).map((m) => m.server) },
        now: () => new Date(),
      }),
      config: KarpenterCapacityConfigSchema.parse({}),
      metrics: registry,
      now: () => new Date(),
    });

  it('answers from NodePool limits minus status.resources, for the NodePools that admit the pod; no limits is unknown; no Karpenter is unknown', async () => {
    const registry = new Registry();
    const result = await source(registry).answer(request(['karp', 'open', 'placed'], ['placed']));
    expect({
      answers: result.answers.map(({ cluster, addableReplicas, reason, source }) => ({
        cluster,
        addableReplicas,
        reason,
        source,
      })),
      errors: result.errors,
      fresh: result.answers.every((a) => Date.now() - Date.parse(a.observedAt) < 60_000),
    }).toEqual({
      answers: [
        {
          cluster: 'fleet/karp',
          addableReplicas: 4,
          reason: 'room below the NodePool limits for 4: NodePool general: 4 (cpu limit)',
          source: 'karpenter',
        },
        {
          cluster: 'fleet/open',
          addableReplicas: undefined,
          reason: 'NodePool default admits the pod and has no limit on what it requests (cpu, memory)',
          source: 'karpenter',
        },
        {
          cluster: 'fleet/placed',
          addableReplicas: undefined,
          reason: 'Karpenter is not installed (karpenter.sh/v1 NodePools are not served)',
          source: 'karpenter',
        },
      ],
      errors: [],
      fresh: true,
    });
    const counts = (await registry.getSingleMetric('mco_capacity_answers_total')!.get()).values.map(
      (v) => `${v.labels.cluster} ${v.labels.result} ${v.value}`,
    );
    expect(counts.sort()).toEqual(['fleet/karp known 1', 'fleet/open unknown 1', 'fleet/placed unknown 1']);
  });

  it('without a listed cluster that runs the workload, the pod shape is unknown and so is the answer; a member it cannot reach is an error', async () => {
    const result = await source().answer(request(['karp'], []));
    expect(result).toMatchObject({
      answers: [
        {
          cluster: 'fleet/karp',
          reason: 'Deployment shop/web could not be read here (no listed cluster yet): its pod shape is unknown',
        },
      ],
      errors: [],
    });
    expect(result.answers[0]!.addableReplicas).toBeUndefined();
    const unreachable = await source().answer(request(['gone'], ['placed']));
    expect({ answers: unreachable.answers, codes: unreachable.errors.map((e) => `${e.cluster} ${e.code}`) }).toEqual({
      answers: [],
      codes: ['fleet/gone NotFound'],
    });
  });
});

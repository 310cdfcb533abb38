import { CoreV1Api, CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { createClusterAccess, KUBECONFIG_SECRET_ANNOTATION } from '@mco/cluster-access';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { CapacityRequest } from '@mco/runtime';
import {
  AUTOSCALING_MEMBER_TOOLS,
  describeWithControlPlane,
  eventually,
  kubeconfigSecret,
  loadYamlObjects,
  startAutoscalingMember,
  startControlPlane,
  type AutoscalingMember,
  type ControlPlane,
} from '@mco/testkit';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { KarpenterCapacityConfigSchema, createKarpenterCapacitySource } from '../src/index.js';

// A real Karpenter (v1.15.0, kwok provider) with kube-scheduler, kube-controller-manager and kwok on two shared cores.
vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

const RBAC = fileURLToPath(new URL('../deploy/member-rbac.yaml', import.meta.url));

/** A CPU quantity as Karpenter writes it ("900m", "2700m", "3") in millicores. */
const millicores = (q: string | undefined) => (q?.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);

/** A Deployment whose pods request `cpu` each. */
const deployment = (namespace: string, name: string, cpu: string, replicas: number) =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu } } }] },
      },
    },
  }) as KubernetesObject;

describeWithControlPlane(
  'the karpenter capacity source on a member where Karpenter v1.15.0 provisions nodes',
  { tools: AUTOSCALING_MEMBER_TOOLS },
  () => {
    let cp: ControlPlane;
    let karp: AutoscalingMember | undefined;

    beforeAll(async () => {
      cp = await startControlPlane({ clusters: ['placed', 'karp'] });
      // NodePool `default`: at most 3 CPU, nodes of one instance type with 1 CPU (900m allocatable).
      karp = await startAutoscalingMember(cp.members.karp!, {
        dir: mkdtempSync(join(tmpdir(), 'mco-karpenter-capacity-')),
        cpuLimit: '3',
      });
      // The workload runs on `placed`: its pod template (500m) is the shape asked about.
      await cp.members.placed!.apply([
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } } as KubernetesObject,
        deployment('shop', 'web', '500m', 0),
      ]);
      const hubCore = cp.hub.adminKubeConfig().makeApiClient(CoreV1Api);
      await hubCore.createNamespace({ body: { metadata: { name: 'fleet' } } });
      for (const name of ['placed', 'karp']) {
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
        await cp.hub.apply([
          kubeconfigSecret(member, { name: `${name}-kubeconfig`, namespace: 'fleet' }, 'controller'),
        ]);
      }
    });

    afterAll(async () => {
      await karp?.stop();
      await cp?.stop();
    });

    const profile = (name: string) =>
      ({
        ...aClusterProfile(`fleet/${name}`),
        metadata: { name, namespace: 'fleet', annotations: { [KUBECONFIG_SECRET_ANNOTATION]: `${name}-kubeconfig` } },
      }) as ClusterProfile;
    const request: () => CapacityRequest = () => ({
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
      clusters: [{ key: 'fleet/karp', profile: profile('karp') }],
      placed: [{ key: 'fleet/placed', profile: profile('placed') }],
    });
    const answer = async () => {
      const source = createKarpenterCapacitySource({
        access: createClusterAccess({
          providers: [],
          hub: cp.hub.connectionFor('admin'),
          kubeconfigSecrets: { allowedServers: Object.values(cp.members).map((m) => m.server) },
          now: () => new Date(),
        }),
        config: KarpenterCapacityConfigSchema.parse({}),
        metrics: new Registry(),
        now: () => new Date(),
      });
      const { answers, errors } = await source.answer(request());
      return {
        answers: answers.map(({ cluster, addableReplicas, reason }) => ({ cluster, addableReplicas, reason })),
        errors,
      };
    };
    /**
     * The NodePool's status.resources once Karpenter counts `nodes` nodes and
     * as many pods there. Karpenter sums its nodes' status.capacity, which the
     * kwok provider sets to the NodeClaim's requests (kwok/cloudprovider/cloudprovider.go;
     * a cloud's kubelet reports the instance's): hence pods of a whole node's 900m.
     */
    const provisioned = (nodes: string) =>
      eventually(
        `Karpenter to report ${nodes} node(s) in NodePool default's status.resources`,
        async () => {
          const custom = cp.members.karp!.adminKubeConfig().makeApiClient(CustomObjectsApi);
          const pool = (await custom.getClusterCustomObject({
            group: 'karpenter.sh',
            version: 'v1',
            plural: 'nodepools',
            name: 'default',
          })) as { status?: { resources?: Record<string, string> } };
          return pool.status?.resources ?? {};
        },
        (resources) => resources.nodes === nodes && resources.pods === nodes,
        240_000,
        500,
      ).catch((error: Error) => {
        throw new Error(`${error.message}\n${karp?.logs()}`);
      });

    it('answers limits minus status.resources divided by the pod requests while Karpenter provisions for other load, and 0 once that load fills the limits', async () => {
      const member = cp.members.karp!;
      // Other load on the candidate: one pod of 900m (a whole node's allocatable), one node.
      await member.apply([
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'batch' } } as KubernetesObject,
        deployment('batch', 'load', '900m', 1),
      ]);
      const one = await provisioned('1');
      // (3 CPU limit − status.resources.cpu) ÷ 500m, from what Karpenter wrote: (3 − 0.9) ÷ 0.5 = 4.
      expect(Math.floor((3 - millicores(one.cpu) / 1000) / 0.5)).toBe(4);
      expect(await answer()).toEqual({
        answers: [
          {
            cluster: 'fleet/karp',
            addableReplicas: 4,
            reason: 'room below the NodePool limits for 4: NodePool default: 4 (cpu limit)',
          },
        ],
        errors: [],
      });

      // Three take three nodes: the NodePool is at its 3 CPU limit, 2.7 CPU provisioned, less than a replica left.
      await member.apply([deployment('batch', 'load', '900m', 3)]);
      const full = await provisioned('3');
      expect(millicores(full.cpu)).toBe(2700);
      expect(await answer()).toEqual({
        answers: [
          {
            cluster: 'fleet/karp',
            addableReplicas: 0,
            reason: 'room below the NodePool limits for 0: NodePool default: 0 (cpu limit)',
          },
        ],
        errors: [],
      });
    });
  },
);

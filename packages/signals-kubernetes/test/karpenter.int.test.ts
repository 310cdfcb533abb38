import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { createClusterAccess, KUBECONFIG_SECRET_ANNOTATION } from '@mco/cluster-access';
import type { ClusterProfile } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import type { SignalRequest } from '@mco/runtime';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithControlPlane, loadYamlObjects, startControlPlane, type ControlPlane } from '@mco/testkit';
import { KubernetesSignalsConfigSchema, createKubernetesSignalSource } from '../src/index.js';
import { writeWorkload } from './workload.js';

const RBAC = fileURLToPath(new URL('../deploy/member-rbac.yaml', import.meta.url));
// Karpenter v1.15.0's own CRDs (test/testdata/karpenter/SOURCE.md).
const KARPENTER_CRDS = ['karpenter.sh_nodepools.yaml', 'karpenter.sh_nodeclaims.yaml'].map((f) =>
  fileURLToPath(new URL(`./testdata/karpenter/crds/${f}`, import.meta.url)),
);

// What the real components write (see test/autoscalers.test.ts for the upstream sources).
const LIMITS = 'Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=default)';
const ICE =
  'NodeClaim default-8xk2p nominated for this pod failed to launch: insufficient capacity, resolving node class from nodeclaim, kwoknodeclasses.karpenter.kwok.sh "default" not found';
// kube-scheduler (pkg/scheduler/schedule_one.go) through events.k8s.io/v1, reportingController default-scheduler.
const SCHEDULER_NOTE =
  '0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.';

describeWithControlPlane('the kubernetes signal source on members running Karpenter or the cluster autoscaler', () => {
  let cp: ControlPlane;
  const ago = (s: number) => new Date(Date.now() - s * 1000);
  const workload = {
    hpa: { min: 1, max: 10, current: 3, desired: 5 },
    available: { status: 'True' as const, since: ago(3600) },
  };

  beforeAll(async () => {
    cp = await startControlPlane({ clusters: ['karp', 'plain'] });
    const karp = cp.members.karp!;
    const plain = cp.members.plain!;
    await karp.installCrds(KARPENTER_CRDS);
    // A NodePool as a Karpenter fleet has it: capped by `limits` (the shape the v1.15.0 CRD validates).
    await karp.apply([
      {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodePool',
        metadata: { name: 'default' },
        spec: {
          limits: { cpu: '8' },
          disruption: { consolidationPolicy: 'WhenEmptyOrUnderutilized', consolidateAfter: '30s' },
          template: {
            spec: {
              nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
              requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
            },
          },
        },
      } as KubernetesObject,
    ]);
    for (const member of [karp, plain]) {
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
    }
    const hubCore = cp.hub.adminKubeConfig().makeApiClient(CoreV1Api);
    await hubCore.createNamespace({ body: { metadata: { name: 'fleet' } } });
    for (const member of [karp, plain]) {
      const kubeconfig = {
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': member.name,
        contexts: [{ name: member.name, context: { cluster: member.name, user: 'mco' } }],
        clusters: [
          { name: member.name, cluster: { server: member.server, 'certificate-authority-data': member.caData } },
        ],
        users: [{ name: 'mco', user: { token: member.token('controller') } }],
      };
      await hubCore.createNamespacedSecret({
        namespace: 'fleet',
        body: { metadata: { name: `${member.name}-kubeconfig` }, stringData: { kubeconfig: stringify(kubeconfig) } },
      });
    }

    const karpenter = (pod: string, reason: string, message: string, at: Date) => ({
      pod,
      reason,
      message,
      component: 'karpenter',
      at,
      type: reason === 'Nominated' ? 'Normal' : 'Warning',
    });
    const scheduler = (pod: string, at: Date) => ({
      pod,
      reason: 'FailedScheduling',
      controller: 'default-scheduler',
      action: 'Scheduling',
      note: SCHEDULER_NOTE,
      type: 'Warning',
      at,
    });
    const karpAdmin = karp.adminKubeConfig();
    // NodePool at its limits; Karpenter said so 4 minutes ago and will not repeat it for 5 (DedupeTimeout).
    await writeWorkload(karpAdmin, {
      namespace: 'exhausted',
      ...workload,
      pods: { 'web-1': 'Pending', 'web-2': 'Pending', 'web-3': 'Running' },
      coreEvents: [karpenter('web-1', 'FailedScheduling', LIMITS, ago(240))],
      eventsV1: [scheduler('web-1', ago(5)), scheduler('web-2', ago(5))],
    });
    // Only kube-scheduler's FailedScheduling: pods waiting for a node Karpenter is launching.
    await writeWorkload(karpAdmin, {
      namespace: 'scheduler-only',
      ...workload,
      pods: { 'web-1': 'Pending' },
      eventsV1: [scheduler('web-1', ago(5))],
    });
    // The limits were raised: Karpenter nominated a NodeClaim after its FailedScheduling.
    await writeWorkload(karpAdmin, {
      namespace: 'nominated',
      ...workload,
      pods: { 'web-1': 'Pending' },
      coreEvents: [
        karpenter('web-1', 'FailedScheduling', LIMITS, ago(180)),
        karpenter('web-1', 'Nominated', 'Pod should schedule on: nodeclaim/default-8xk2p', ago(60)),
      ],
    });
    // The cloud had no capacity for the NodeClaim launched for the pod.
    await writeWorkload(karpAdmin, {
      namespace: 'stockout',
      ...workload,
      pods: { 'web-1': 'Pending' },
      coreEvents: [
        karpenter('web-1', 'Nominated', 'Pod should schedule on: nodeclaim/default-8xk2p', ago(90)),
        karpenter('web-1', 'InsufficientCapacityError', ICE, ago(30)),
      ],
    });

    const plainAdmin = plain.adminKubeConfig();
    const notTriggered = (pod: string, message: string) => ({
      pod,
      reason: 'NotTriggerScaleUp',
      component: 'cluster-autoscaler',
      message,
      at: ago(20),
    });
    // A pod no node group fits; and a Karpenter-like Event that nothing on this member reads in auto mode.
    await writeWorkload(plainAdmin, {
      namespace: 'exhausted',
      ...workload,
      pods: { 'web-1': 'Pending' },
      coreEvents: [
        notTriggered('web-1', "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector"),
        karpenter('web-1', 'FailedScheduling', LIMITS, ago(20)),
      ],
    });
    // The group the pod fits failed to scale up (e.g. a stockout) and backs off.
    await writeWorkload(plainAdmin, {
      namespace: 'backoff',
      ...workload,
      pods: { 'web-1': 'Pending' },
      coreEvents: [
        notTriggered(
          'web-1',
          "pod didn't trigger scale-up: 1 node(s) had untolerated taint {CriticalAddonsOnly: true}, 1 in backoff after failed scale-up",
        ),
      ],
    });
  });

  afterAll(async () => {
    await cp?.stop();
  });

  const member = (name: string) =>
    ({
      ...aClusterProfile(`fleet/${name}`),
      metadata: { name, namespace: 'fleet', annotations: { [KUBECONFIG_SECRET_ANNOTATION]: `${name}-kubeconfig` } },
    }) as ClusterProfile;
  const request = (namespace: string, clusters: string[]): SignalRequest => ({
    placement: {
      namespace: 'apps',
      name: 'web',
      spec: {
        scaling: {
          autoscaleForCapacity: {
            minClustersBelowCapacityCeiling: 1,
            workloadDetails: { namespace, deploymentName: 'web', hpaName: 'web' },
          },
        },
      },
    },
    clusters: clusters.map((c) => ({ key: `fleet/${c}`, profile: member(c) })),
  });
  const source = (config: object = {}) =>
    createKubernetesSignalSource({
      access: createClusterAccess({
        providers: [],
        hub: cp.hub.connectionFor('admin'),
        kubeconfigSecrets: { allowedServers: [cp.members.karp!.server, cp.members.plain!.server] },
        now: () => new Date(),
      }),
      // A window shorter than Karpenter's 5-minute repeat, which its Events must outlast.
      config: KubernetesSignalsConfigSchema.parse({ eventWindowSeconds: 120, ...config }),
      metrics: new Registry(),
      now: () => new Date(),
    });
  const verdicts = async (s: ReturnType<typeof source>, namespace: string, clusters: string[]) => {
    const result = await s.observe(request(namespace, clusters));
    return {
      signals: result.signals.map((x) => ({
        cluster: x.cluster,
        pendingPods: x.pendingPods,
        failedScaleUp: x.failedScaleUp,
      })),
      errors: result.errors,
    };
  };

  it.each([
    {
      name: 'a NodePool at its limits, reported 4 minutes ago by Karpenter, is a ceiling; the cluster autoscaler says nothing elsewhere',
      namespace: 'exhausted',
      want: [
        { cluster: 'fleet/karp', pendingPods: 2, failedScaleUp: true },
        { cluster: 'fleet/plain', pendingPods: 1, failedScaleUp: false },
      ],
    },
    {
      name: "kube-scheduler's FailedScheduling alone is not a ceiling",
      namespace: 'scheduler-only',
      want: [{ cluster: 'fleet/karp', pendingPods: 1, failedScaleUp: false }],
    },
    {
      name: 'a nomination after the limits were raised ends the ceiling',
      namespace: 'nominated',
      want: [{ cluster: 'fleet/karp', pendingPods: 1, failedScaleUp: false }],
    },
    {
      name: 'a NodeClaim the cloud had no capacity for is a ceiling',
      namespace: 'stockout',
      want: [{ cluster: 'fleet/karp', pendingPods: 1, failedScaleUp: true }],
    },
    {
      name: 'a cluster-autoscaler node group in backoff after a failed scale-up is a ceiling',
      namespace: 'backoff',
      want: [{ cluster: 'fleet/plain', pendingPods: 1, failedScaleUp: true }],
    },
  ])('detects the autoscaler: $name', async ({ namespace, want }) => {
    const clusters = want.map((w) => w.cluster.slice('fleet/'.length));
    expect(await verdicts(source(), namespace, clusters)).toEqual({ signals: want, errors: [] });
  });

  it('reads the autoscaler set per member instead of detecting it', async () => {
    const s = source({ clusterAutoscalers: { 'fleet/plain': 'karpenter', 'fleet/karp': 'cluster-autoscaler' } });
    expect(await verdicts(s, 'exhausted', ['karp', 'plain'])).toEqual({
      signals: [
        // Karpenter's Events are not read where the cluster autoscaler is set.
        { cluster: 'fleet/karp', pendingPods: 2, failedScaleUp: false },
        { cluster: 'fleet/plain', pendingPods: 1, failedScaleUp: true },
      ],
      errors: [],
    });
  });
});

import { describe, expect, it } from 'vitest';
import {
  clusterAutoscalerCeiling,
  clusterAutoscalerLimit,
  eventTime,
  karpenterCeiling,
  karpenterLimit,
  karpenterVerdict,
} from '../src/index.js';
import type { CoreEvent } from '../src/kube-types.js';

const podEvent = (reason: string, message: string, component: string, pod = 'web-1', at?: string): CoreEvent => ({
  involvedObject: { name: pod },
  reason,
  message,
  source: { component },
  ...(at ? { lastTimestamp: at } : {}),
});

// Messages of k8s.io/autoscaler cluster-autoscaler-1.36.1 (processors/status/eventing_scale_up_processor.go
// "pod didn't trigger scale-up: %s", the reasons counted per node group as "%d %s" in
// core/scaleup/orchestrator/skippedreasons.go and orchestrator.go), or as users reported them.
describe('clusterAutoscalerCeiling', () => {
  it.each([
    {
      name: 'a node group at its maximum size is a ceiling',
      message: "pod didn't trigger scale-up: 1 max node group size reached",
      want: true,
    },
    {
      // 2i2c-org/infrastructure#2185 (GKE): the one group the pod fits failed to scale up and backs off.
      name: 'a group in backoff after a failed scale-up, beside groups the pod does not fit, is a ceiling',
      message:
        "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had taint {k8s.dask.org_dedicated: worker}, that the pod didn't tolerate, 1 in backoff after failed scale-up",
      want: true,
    },
    {
      // gist.github.com/Jaykul/0fd178825a5d0bcbdb46175ad2dc73ed (AKS): the scale-up failed on the vCPU quota.
      name: 'a group in backoff after a quota failure is a ceiling',
      message:
        "pod didn't trigger scale-up: 1 node(s) had untolerated taint {CriticalAddonsOnly: true}, 1 in backoff after failed scale-up",
      want: true,
    },
    {
      name: 'the cluster at --max-nodes-total is a ceiling',
      message: "pod didn't trigger scale-up: max total nodes in cluster reached",
      want: true,
    },
    {
      name: 'the cluster-wide --cores-total quota (1.35 and later) is a ceiling',
      message: 'pod didn\'t trigger scale-up: 2 exceeded quota: "cluster-wide", resources: cpu',
      want: true,
    },
    {
      name: 'the cluster-wide resource limit (1.28 to 1.34) is a ceiling',
      message: "pod didn't trigger scale-up: 2 max cluster cpu, memory limit reached",
      want: true,
    },
    {
      name: 'an atomic group that would pass --max-nodes-total is a ceiling',
      message: "pod didn't trigger scale-up: 1 atomic scale-up exceeds cluster node count limit",
      want: true,
    },
    {
      name: 'a pod no node group matches is not a ceiling',
      message: "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector",
      want: false,
    },
    {
      name: 'a pod larger than any new node is not a ceiling',
      message: "pod didn't trigger scale-up: 3 Insufficient cpu",
      want: false,
    },
    {
      name: 'a node group not ready for scale-up is not a ceiling',
      message:
        "pod didn't trigger scale-up: 1 not ready for scale-up, 1 node(s) didn't match Pod's node affinity/selector",
      want: false,
    },
    {
      // 1.12 to 1.19 (core/scale_up.go in 1.17 has the same skipped reasons).
      name: 'a group at its maximum in the message form of 1.12 to 1.19 is a ceiling',
      message: "pod didn't trigger scale-up (it wouldn't fit if a new node is added): 1 max node group size reached",
      want: true,
    },
    {
      // Releases before 1.12 named no reason (the FAQ still shows it).
      name: 'the reasonless message of old releases is not a ceiling',
      message: "pod didn't trigger scale-up (it wouldn't fit if a new node is added)",
      want: false,
    },
  ])('NotTriggerScaleUp: $name', ({ message, want }) => {
    expect(clusterAutoscalerCeiling(podEvent('NotTriggerScaleUp', message, 'cluster-autoscaler'))).toBe(want);
  });

  it('counts any other configured reason whatever its message, as before', () => {
    expect(clusterAutoscalerCeiling(podEvent('FailedScaleUp', 'anything', 'cluster-autoscaler'))).toBe(true);
  });
});

describe('clusterAutoscalerLimit: a size limit stays, a failed scale-up passes (fail-back rule F2)', () => {
  it.each([
    { message: "pod didn't trigger scale-up: 1 max node group size reached", want: true },
    { message: "pod didn't trigger scale-up: max total nodes in cluster reached: 100", want: true },
    { message: 'pod didn\'t trigger scale-up: 1 exceeded quota: "cluster-wide", resources: cpu', want: true },
    { message: "pod didn't trigger scale-up: 1 in backoff after failed scale-up", want: false },
    {
      message: "pod didn't trigger scale-up: 1 in backoff after failed scale-up, 1 max node group size reached",
      want: true,
    },
  ])('NotTriggerScaleUp "$message": $want', ({ message, want }) => {
    expect(clusterAutoscalerLimit(podEvent('NotTriggerScaleUp', message, 'cluster-autoscaler'))).toBe(want);
  });

  it('another configured reason (FailedScaleUp) is a ceiling but says nothing of a limit', () => {
    expect(clusterAutoscalerLimit(podEvent('FailedScaleUp', 'max node group size reached', 'cluster-autoscaler'))).toBe(
      false,
    );
  });
});

// Messages of sigs.k8s.io/karpenter v1.15.0, built from its format strings:
// pkg/controllers/provisioning/scheduling/events.go "Failed to schedule pod, %s"; the errors of
// scheduler.go addToNewNodeClaim wrapped by operatorpkg serrors as "<error> (NodePool=<name>)" and
// joined by multierr with "; "; pkg/scheduling/taints.go "did not tolerate taint (taint=<key>=<value>:<effect>)";
// pkg/controllers/nodeclaim/lifecycle/events.go "NodeClaim %s nominated for this pod failed to launch: %s" with
// pkg/cloudprovider/types.go "insufficient capacity, %s" and the kwok provider's error (kwok/cloudprovider/cloudprovider.go).
describe('karpenterVerdict', () => {
  it.each([
    {
      name: 'a NodePool whose limits every instance type would pass is a ceiling',
      reason: 'FailedScheduling',
      message: 'Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=default)',
      want: 'ceiling',
    },
    {
      name: 'a NodePool at its node-count limit is a ceiling',
      reason: 'FailedScheduling',
      message: 'Failed to schedule pod, node limits have been exhausted for nodepool (NodePool=default)',
      want: 'ceiling',
    },
    {
      name: 'a NodePool at its limits beside one whose taint the pod does not tolerate is a ceiling',
      reason: 'FailedScheduling',
      message:
        'Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=general); did not tolerate taint (taint=nvidia.com/gpu=true:NoSchedule)',
      want: 'ceiling',
    },
    {
      name: 'a repeated Event the recorder combined is still read',
      reason: 'FailedScheduling',
      message:
        '(combined from similar events): Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=default)',
      want: 'ceiling',
    },
    {
      name: 'a pod whose taints no NodePool tolerates is not a ceiling',
      reason: 'FailedScheduling',
      message: 'Failed to schedule pod, did not tolerate taint (taint=nvidia.com/gpu=true:NoSchedule)',
      want: undefined,
    },
    {
      name: 'a pod Karpenter ignores is not a ceiling',
      reason: 'FailedScheduling',
      message:
        'Failed to schedule pod, ignoring pod, pod has Dynamic Resource Allocation requirements that are not yet supported by Karpenter',
      want: undefined,
    },
    {
      name: 'a NodeClaim the cloud had no capacity for is a ceiling',
      reason: 'InsufficientCapacityError',
      message:
        'NodeClaim default-8xk2p nominated for this pod failed to launch: insufficient capacity, resolving node class from nodeclaim, kwoknodeclasses.karpenter.kwok.sh "default" not found',
      want: 'ceiling',
    },
    {
      name: 'a nomination is a place found',
      reason: 'Nominated',
      message: 'Pod should schedule on: nodeclaim/default-8xk2p',
      want: 'placed',
    },
  ])('$name', ({ reason, message, want }) => {
    expect(karpenterVerdict(podEvent(reason, message, 'karpenter'))).toBe(want);
  });
});

describe('karpenterCeiling', () => {
  const LIMITS = 'Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=default)';
  const since = Date.parse('2026-01-01T00:00:00Z');
  // The Events each row is made of, at a minute of 2026-01-01 (00:MM:SS).
  const at = (time: string) => `2026-01-01T00:${time}Z`;
  const limits = (time: string, component = 'karpenter', pod = 'web-1') =>
    podEvent('FailedScheduling', LIMITS, component, pod, at(time));
  const nominated = (time: string) =>
    podEvent('Nominated', 'Pod should schedule on: nodeclaim/default-x', 'karpenter', 'web-1', at(time));
  it.each([
    {
      name: 'a waiting pod whose last Karpenter Event is a ceiling is one',
      events: [limits('01:00')],
      want: true,
    },
    {
      name: "kube-scheduler's own FailedScheduling is not Karpenter's",
      events: [limits('01:00', 'default-scheduler')],
      want: false,
    },
    {
      name: 'a later nomination ends the ceiling',
      events: [limits('01:00'), nominated('02:00')],
      want: false,
    },
    {
      name: 'a launch that failed after the nomination is a ceiling again',
      events: [
        nominated('02:00'),
        podEvent(
          'InsufficientCapacityError',
          'NodeClaim default-x nominated for this pod failed to launch: insufficient capacity, no offering',
          'karpenter',
          'web-1',
          at('03:00'),
        ),
      ],
      want: true,
    },
    {
      name: 'a ceiling last seen before the window is not one',
      events: [podEvent('FailedScheduling', LIMITS, 'karpenter', 'web-1', '2025-12-31T23:59:59Z')],
      want: false,
    },
    {
      name: 'a pod that no longer waits (bound, running or deleted) does not count',
      events: [limits('01:00', 'karpenter', 'web-9')],
      want: false,
    },
    {
      name: 'a nomination at the same instant wins over a ceiling',
      events: [limits('01:00'), nominated('01:00')],
      want: false,
    },
  ])('$name', ({ events, want }) => {
    expect(karpenterCeiling(events, new Set(['web-1', 'web-2']), 'karpenter', since, eventTime)).toBe(want);
  });
});

describe('karpenterLimit: a NodePool at its limits, not insufficient capacity', () => {
  const since = Date.parse('2026-01-01T00:00:00Z');
  const LIMITS = 'Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=default)';
  const ice = 'NodeClaim default-x nominated for this pod failed to launch: insufficient capacity, no offering';
  it.each([
    {
      name: 'the limits FailedScheduling',
      events: [podEvent('FailedScheduling', LIMITS, 'karpenter', 'web-1', '2026-01-01T00:01:00Z')],
      want: true,
    },
    {
      name: 'insufficient capacity (a stockout)',
      events: [podEvent('InsufficientCapacityError', ice, 'karpenter', 'web-1', '2026-01-01T00:01:00Z')],
      want: false,
    },
    {
      name: 'a limit followed by a nomination',
      events: [
        podEvent('FailedScheduling', LIMITS, 'karpenter', 'web-1', '2026-01-01T00:01:00Z'),
        podEvent(
          'Nominated',
          'Pod should schedule on: nodeclaim/default-x',
          'karpenter',
          'web-1',
          '2026-01-01T00:02:00Z',
        ),
      ],
      want: false,
    },
  ])('$name: $want', ({ events, want }) => {
    expect(karpenterLimit(events, new Set(['web-1']), 'karpenter', since, eventTime)).toBe(want);
  });
});

import {
  AppsV1Api,
  AutoscalingV2Api,
  CoreV1Api,
  EventsV1Api,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  type KubeConfig,
} from '@kubernetes/client-node';

export interface WorkloadFixture {
  namespace: string;
  hpa: { min: number; max: number; current: number; desired: number; limited?: { status: string; reason: string } };
  available: { status: 'True' | 'False'; since: Date };
  pods: Record<string, 'Pending' | 'Running'>;
  otherPods?: Record<string, 'Pending' | 'Running'>;
  /** Written as client-go's core/v1 recorder writes them (tools/record/event.go): source and reportingComponent. */
  coreEvents?: { pod: string; reason: string; component: string; at: Date; message?: string; type?: string }[];
  /** Written as an events.k8s.io/v1 recorder (kube-scheduler's) writes them. */
  eventsV1?: {
    pod: string;
    reason: string;
    controller: string;
    at: Date;
    note?: string;
    action?: string;
    type?: string;
  }[];
}

/** Writes a Deployment `web`, its HPA and pods, statuses through their status subresources, and events. */
export async function writeWorkload(kc: KubeConfig, w: WorkloadFixture): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const autoscaling = kc.makeApiClient(AutoscalingV2Api);
  const events = kc.makeApiClient(EventsV1Api);
  const namespace = w.namespace;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const container = { name: 'app', image: 'registry.example/web:1' };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: 'web' },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [container] } },
      },
    },
  });
  await apps.patchNamespacedDeploymentStatus(
    {
      name: 'web',
      namespace,
      body: {
        status: {
          replicas: w.hpa.current,
          readyReplicas: w.hpa.current,
          conditions: [
            {
              type: 'Available',
              status: w.available.status,
              reason: w.available.status === 'True' ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
              lastTransitionTime: w.available.since,
              lastUpdateTime: w.available.since,
            },
          ],
        },
      },
    },
    mergePatch,
  );
  await autoscaling.createNamespacedHorizontalPodAutoscaler({
    namespace,
    body: {
      metadata: { name: 'web' },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
        minReplicas: w.hpa.min,
        maxReplicas: w.hpa.max,
      },
    },
  });
  await autoscaling.patchNamespacedHorizontalPodAutoscalerStatus(
    {
      name: 'web',
      namespace,
      body: {
        status: {
          currentReplicas: w.hpa.current,
          desiredReplicas: w.hpa.desired,
          ...(w.hpa.limited
            ? {
                conditions: [
                  { type: 'ScalingLimited', ...w.hpa.limited, lastTransitionTime: new Date(), message: 'test' },
                ],
              }
            : {}),
        },
      },
    },
    mergePatch,
  );
  const pods = [
    ...Object.entries(w.pods).map(([name, phase]) => ({ name, phase, app: 'web' })),
    ...Object.entries(w.otherPods ?? {}).map(([name, phase]) => ({ name, phase, app: 'other' })),
  ];
  for (const p of pods) {
    await core.createNamespacedPod({
      namespace,
      body: { metadata: { name: p.name, labels: { app: p.app } }, spec: { containers: [container] } },
    });
    if (p.phase !== 'Pending') {
      await core.patchNamespacedPodStatus(
        { name: p.name, namespace, body: { status: { phase: p.phase } } },
        mergePatch,
      );
    }
  }
  for (const [i, e] of (w.coreEvents ?? []).entries()) {
    await core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { name: `${e.pod}.core-${i}` },
        involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace, name: e.pod },
        reason: e.reason,
        message: e.message ?? "pod didn't trigger scale-up",
        source: { component: e.component },
        reportingComponent: e.component,
        reportingInstance: '',
        firstTimestamp: e.at,
        lastTimestamp: e.at,
        count: 1,
        type: e.type ?? 'Normal',
      },
    });
  }
  for (const [i, e] of (w.eventsV1 ?? []).entries()) {
    await events.createNamespacedEvent({
      namespace,
      body: {
        metadata: { name: `${e.pod}.v1-${i}` },
        eventTime: new V1MicroTime(e.at.getTime()),
        reportingController: e.controller,
        reportingInstance: `${e.controller}-0`,
        action: e.action ?? 'ScaleUp',
        reason: e.reason,
        note: e.note ?? "pod didn't trigger scale-up: max node group size reached",
        regarding: { kind: 'Pod', apiVersion: 'v1', namespace, name: e.pod },
        type: e.type ?? 'Normal',
      },
    });
  }
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

import type { KubernetesObject } from '@kubernetes/client-node';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterHandle } from './control-plane.js';
import { startExternalMetrics, type ExternalMetrics } from './external-metrics.js';
import { freePort, startServer, stopServer, tailOf, type ServerProcess } from './processes.js';
import { requireTool } from './tools.js';

/** The prepared tools a member that schedules and autoscales needs (list them in the suite's `tools`). */
export const AUTOSCALING_MEMBER_TOOLS = ['k8s-controlplane', 'kwok', 'karpenter-kwok'] as const;

/** The one instance type the member's NodePool allows: 1 CPU, 4 GiB (from the kwok provider's built-in list). */
export const INSTANCE_TYPE = 'c-1x-amd64-linux';

export interface AutoscalingMemberOptions {
  /** Directory for the processes' logs and kubeconfig (created if missing). */
  readonly dir: string;
  /** The NodePool `default`'s `limits.cpu`: the member's capacity ceiling (default "2": two nodes). */
  readonly cpuLimit?: string;
  /** The NodePool's `disruption.consolidateAfter` (default "5s"). */
  readonly consolidateAfter?: string;
  /** kube-controller-manager's `--horizontal-pod-autoscaler-sync-period` in seconds (default 1). */
  readonly hpaSyncPeriodSeconds?: number;
  /** kube-controller-manager's `--horizontal-pod-autoscaler-downscale-stabilization` in seconds (default 5). */
  readonly hpaDownscaleStabilizationSeconds?: number;
}

/**
 * A member cluster that schedules and autoscales: its kube-apiserver (from
 * startControlPlane) with kube-scheduler, kube-controller-manager (Deployment,
 * ReplicaSet, HPA, garbage collector, namespace controllers), kwok (the
 * kubelets of fake nodes: pods bound to them go Running), Karpenter's kwok
 * provider with a NodePool whose `limits` are the ceiling, and an external
 * metrics API for the HPAs (the load).
 */
export interface AutoscalingMember {
  readonly cluster: ClusterHandle;
  /** The external metrics API the member's HPAs read (`type: External`): set the load here. */
  readonly metrics: ExternalMetrics;
  /** The last lines of each process's log, for failure messages. */
  logs(lines?: number): string;
  /** Stops every process this started (the apiserver stays: it belongs to the control plane). */
  stop(): Promise<void>;
}

const SYSTEM_CONTROLLERS = [
  'deployment-controller',
  'replicaset-controller',
  'horizontal-pod-autoscaler-controller',
  'garbage-collector-controller',
  'namespace-controller',
  // Lifts the not-ready taint kube-apiserver's TaintNodesByCondition puts on every new node once kwok reports it Ready.
  'node-lifecycle-controller',
];

/**
 * Starts the autoscaling stack against a running member apiserver, installs
 * Karpenter's CRDs, a KWOKNodeClass and the NodePool `default` (what a
 * platform team installs on a member), and resolves once every process is up
 * and the external metrics API is Available. Every process dies with the test
 * process even if `stop()` is never called (testkit's process-group reaper).
 */
export async function startAutoscalingMember(
  cluster: ClusterHandle,
  options: AutoscalingMemberOptions,
): Promise<AutoscalingMember> {
  const controlPlane = requireTool('k8s-controlplane');
  const kwok = requireTool('kwok');
  const karpenter = requireTool('karpenter-kwok');
  const dir = join(options.dir, `${cluster.name}-autoscaling`);
  mkdirSync(dir, { recursive: true });
  const kubeconfig = join(dir, 'admin.kubeconfig');
  writeFileSync(kubeconfig, cluster.adminKubeConfig().exportConfig(), { mode: 0o600 });

  const processes: { name: string; server: ServerProcess }[] = [];
  let metrics: ExternalMetrics | undefined;
  const start = (name: string, binary: string, args: string[], env: Record<string, string> = {}) => {
    processes.push({ name, server: startServer(binary, args, join(dir, `${name}.log`), env) });
  };
  const logs = (lines = 25) =>
    processes.map(({ name, server }) => `--- ${cluster.name} ${name}\n${tailOf(server.logFile, lines)}`).join('\n');
  const stop = async () => {
    await Promise.all(processes.splice(0).map(({ server }) => stopServer(server, 5_000)));
    await metrics?.stop();
    metrics = undefined;
  };

  try {
    // Karpenter's CRDs from the module it was built from, then what it needs to launch nodes.
    const crds = join(karpenter, 'crds');
    await cluster.installCrds(
      readdirSync(crds)
        .filter((f) => f.endsWith('.yaml'))
        .map((f) => join(crds, f)),
    );
    await cluster.apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'karpenter' } },
      { apiVersion: 'karpenter.kwok.sh/v1alpha1', kind: 'KWOKNodeClass', metadata: { name: 'default' } },
      {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodePool',
        metadata: { name: 'default' },
        spec: {
          limits: { cpu: options.cpuLimit ?? '2' },
          disruption: {
            consolidationPolicy: 'WhenEmptyOrUnderutilized',
            consolidateAfter: options.consolidateAfter ?? '5s',
          },
          template: {
            spec: {
              nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
              requirements: [
                { key: 'node.kubernetes.io/instance-type', operator: 'In', values: [INSTANCE_TYPE] },
                { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
              ],
            },
          },
        },
      },
    ] as KubernetesObject[]);

    start('kube-scheduler', join(controlPlane, 'kube-scheduler'), [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--secure-port=0',
    ]);
    start('kube-controller-manager', join(controlPlane, 'kube-controller-manager'), [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--secure-port=0',
      `--controllers=${SYSTEM_CONTROLLERS.join(',')}`,
      '--use-service-account-credentials=false',
      `--horizontal-pod-autoscaler-sync-period=${options.hpaSyncPeriodSeconds ?? 1}s`,
      `--horizontal-pod-autoscaler-downscale-stabilization=${options.hpaDownscaleStabilizationSeconds ?? 5}s`,
      '--kube-api-qps=100',
      '--kube-api-burst=200',
    ]);
    // kwok plays the kubelet of the nodes Karpenter's kwok provider creates (annotated kwok.x-k8s.io/node=fake).
    const stages = join(kwok, 'stages');
    start('kwok', join(kwok, 'kwok'), [
      `--kubeconfig=${kubeconfig}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      `--server-address=127.0.0.1:${await freePort()}`,
      '--node-ip=127.0.0.1',
      '--node-lease-duration-seconds=40',
      `--config=${[
        'node/fast/node-initialize.yaml',
        'node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
        'pod/fast/pod-ready.yaml',
        'pod/fast/pod-complete.yaml',
        'pod/fast/pod-delete.yaml',
      ]
        .map((f) => join(stages, f))
        .join(',')}`,
    ]);
    start('karpenter', join(karpenter, 'karpenter-kwok'), [], {
      KUBECONFIG: kubeconfig,
      DISABLE_LEADER_ELECTION: 'true',
      // Port 0: the kernel picks a free one as Karpenter binds (":0"); nothing here reads them, and a port
      // picked beforehand can be taken by another process before Karpenter binds it (it then panics).
      METRICS_PORT: '0',
      HEALTH_PROBE_PORT: '0',
      LOG_LEVEL: 'info',
      // Karpenter's own defaults (1 s idle, 10 s max): a batch as on a real cluster.
    });

    metrics = await startExternalMetrics(cluster);
    // A bad flag or kubeconfig ends a process at once: by now it would have.
    const exited = processes.filter(({ server }) => server.hasExited());
    if (exited.length > 0) throw new Error(`${exited.map((p) => p.name).join(', ')} exited`);
  } catch (error) {
    const message = `${(error as Error).message}\n${logs()}`;
    await stop();
    throw new Error(`the autoscaling member ${cluster.name} did not start: ${message}`);
  }
  return { cluster, metrics, logs, stop };
}

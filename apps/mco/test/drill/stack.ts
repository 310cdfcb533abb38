// The autoscaler drill (issue 43): a hub and two members in two regions whose
// nodes come from a real Karpenter (its kwok provider, the NodePool's `limits`
// the ceiling) and whose HPAs are real (kube-controller-manager, reading an
// external metric: the load). mco's controller with the `kubernetes` signal
// source and mco's Flux delivery run in this process as the end-to-end tests
// run them; Flux's own source-controller and kustomize-controller deliver the
// workload from a Git repository. The test writes nothing into a member but
// the load. Shared by the integration test and the bench.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AppsV1Api,
  AutoscalingV2Api,
  CoreV1Api,
  CustomObjectsApi,
  type CoreV1Event,
  type KubeConfig,
  type V1Pod,
  type V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import { createClusterAccess } from '@mco/cluster-access';
import { createController, type Controller } from '@mco/controller';
import { connectionFromKubeConfig, requestOptions } from '@mco/kube-runtime/client-node';
import { createLogger, silentLogger } from '@mco/runtime';
import { kubernetesSignalsModule, KubernetesSignalsConfigSchema } from '@mco/signals-kubernetes';
import { startFluxDelivery, type FluxDelivery } from '@mco/flux';
import {
  AUTOSCALING_MEMBER_TOOLS,
  fluxControllerCrds,
  fluxControllerTool,
  startAutoscalingMember,
  startControlPlane,
  startFluxController,
  startGitServer,
  thirdPartyCrd,
  type AutoscalingMember,
  type ControlPlane,
  type FluxController,
  type GitServer,
} from '@mco/testkit';
import { Registry } from 'prom-client';
import { clusterProfiles, credentialPlugin, PROVIDER } from '../walkthrough-fixtures.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));

/** The prepared tools the drill needs. */
export const DRILL_TOOLS = [
  ...AUTOSCALING_MEMBER_TOOLS,
  fluxControllerTool('source-controller'),
  fluxControllerTool('kustomize-controller'),
];

export const MEMBERS = ['east', 'west'] as const;
export type Member = (typeof MEMBERS)[number];
export const FLEET = 'fleet';
export const FLUX_NS = 'flux-system';
/** Workload namespace, on the hub (the placement) and on the members (Deployment and HPA). */
export const NS = 'default';
export const WORKLOAD = 'web';
/** The external metric the HPA scales on: one replica per unit (say, a queue's depth per worker). */
export const METRIC = 'queue_depth';

const PLACEMENTS = {
  group: 'orchestra.multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'multikubernetesclusterplacements',
} as const;

/**
 * The workload as its Git repository holds it: each pod requests half of what
 * a node of the NodePool's only instance type offers (1 CPU, 900m
 * allocatable), so a node runs two; the HPA's
 * bounds come from mco through Flux's postBuild substitution.
 */
export const MANIFESTS = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${WORKLOAD}
  namespace: ${NS}
spec:
  selector:
    matchLabels:
      app: ${WORKLOAD}
  template:
    metadata:
      labels:
        app: ${WORKLOAD}
    spec:
      containers:
        - name: web
          image: registry.example/web:1.0
          resources:
            requests:
              cpu: 450m
              memory: 256Mi
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: ${WORKLOAD}
  namespace: ${NS}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: ${WORKLOAD}
  minReplicas: \${MCO_DESIRED_MIN_REPLICAS:=1}
  maxReplicas: \${MCO_DESIRED_MAX_REPLICAS:=10}
  metrics:
    - type: External
      external:
        metric:
          name: ${METRIC}
        target:
          type: AverageValue
          averageValue: "1"
`;

export interface PlacementCluster {
  name: string;
  state: string;
  atCapacityCeiling?: boolean;
}

/** What each member looks like now: pods by phase, nodes, NodeClaims. */
export interface MemberView {
  readonly pods: readonly V1Pod[];
  readonly running: number;
  readonly pending: number;
  readonly nodes: number;
  readonly deployment: boolean;
  readonly hpa: V2HorizontalPodAutoscaler | null;
}

export class DrillStack {
  private constructor(
    readonly plane: ControlPlane,
    readonly dir: string,
    readonly members: Readonly<Record<Member, AutoscalingMember>>,
    private readonly git: GitServer,
    private readonly flux: readonly FluxController[],
    private readonly delivery: FluxDelivery,
    readonly controller: Controller,
  ) {}

  static async start(): Promise<DrillStack> {
    const plane = await startControlPlane({ clusters: [...MEMBERS] });
    const dir = mkdtempSync(join(tmpdir(), 'mco-drill-'));
    const started: { stop(): Promise<void> }[] = [];
    try {
      const members = {} as Record<Member, AutoscalingMember>;
      for (const name of MEMBERS) {
        members[name] = await startAutoscalingMember(plane.members[name]!, { dir, cpuLimit: '2' });
        started.push(members[name]);
      }

      const hub = plane.hub.adminKubeConfig();
      await plane.hub.installCrds([
        // The chart's CRDs: placements, ClusterProfiles and the PlacementDecisions the controller writes.
        join(REPO, 'apps/mco/chart/crds'),
        thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
        ...fluxControllerCrds('source-controller'),
      ]);
      await plane.hub.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: FLUX_NS } }]);

      // The workload's Git repository and Flux's controllers on the hub.
      const git = await startGitServer();
      started.push(git);
      git.commit(WORKLOAD, { 'deploy/web.yaml': MANIFESTS });
      await plane.hub.apply([
        {
          apiVersion: 'source.toolkit.fluxcd.io/v1',
          kind: 'GitRepository',
          metadata: { name: WORKLOAD, namespace: FLUX_NS },
          spec: { url: git.repoUrl(WORKLOAD), interval: '1m', ref: { branch: 'main' } },
        } as never,
      ]);
      const hubFile = join(dir, 'hub.kubeconfig');
      writeFileSync(hubFile, hub.exportConfig(), { mode: 0o600 });
      const flux: FluxController[] = [];
      for (const name of ['source-controller', 'kustomize-controller'] as const) {
        const controller = await startFluxController(name, { kubeconfig: hubFile, namespace: FLUX_NS, dir });
        flux.push(controller);
        started.push(controller);
      }

      // The fleet: one ClusterProfile per region, reached through an access provider's credential plugin.
      await clusterProfiles(
        plane,
        FLEET,
        MEMBERS.map((m, i) => ({
          name: m,
          member: plane.members[m]!,
          labels: { 'topology.kubernetes.io/region': `region-${'ab'[i]}` },
        })),
      );
      const providers = [
        {
          name: PROVIDER,
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1' as const,
            command: credentialPlugin(dir, plane, 'admin'),
            provideClusterInfo: true,
          },
          allowedServers: MEMBERS.map((m) => plane.members[m]!.server),
        },
      ];

      // mco's Flux delivery: a Kustomization per listed cluster, HPA bounds substituted.
      const access = createClusterAccess({ providers: { providers }, hub: connectionFromKubeConfig(hub) });
      const delivery = startFluxDelivery({
        kubeConfig: hub,
        namespace: FLUX_NS,
        inputProviders: false,
        helmReleases: false,
        templates: [
          {
            placement: { namespace: NS, name: WORKLOAD },
            kustomization: {
              metadata: { name: WORKLOAD },
              spec: {
                interval: '10m',
                path: './deploy',
                prune: true,
                sourceRef: { kind: 'GitRepository', name: WORKLOAD },
              },
            },
          },
        ],
        resolveAccess: (p) => access.accessFor(p),
      });
      started.push(delivery);

      // mco's controller with the `kubernetes` signal source as the app builds it (auto-detects Karpenter).
      const logger = process.env.MCO_TEST_LOGS ? createLogger({ level: 'debug' }) : silentLogger;
      const source = kubernetesSignalsModule.create(KubernetesSignalsConfigSchema.parse({ providers }), {
        hub: connectionFromKubeConfig(hub),
        logger,
        metrics: new Registry(),
        now: () => new Date(),
      });
      const controller = createController({
        hub: connectionFromKubeConfig(hub),
        logger,
        signalSources: new Map([['members', source]]),
        defaultSignalSource: 'members',
        signalPollIntervalMs: 1_000,
        signalTimeoutMs: 10_000,
        requestTimeoutMs: 10_000,
        shutdownTimeoutMs: 5_000,
      });
      controller.start();
      started.push(controller);

      await plane.hub.apply([
        {
          apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
          kind: 'MultiKubernetesClusterPlacement',
          metadata: { name: WORKLOAD, namespace: NS },
          spec: {
            scaling: {
              autoscaleForCapacity: {
                minClustersBelowCapacityCeiling: 1,
                maxClusters: 2,
                useDraining: true,
                workloadDetails: { namespace: NS, deploymentName: WORKLOAD, hpaName: WORKLOAD },
                // The machinery's own latency, not waiting windows: scale in as soon as it may.
                behavior: {
                  scaleIn: { stabilizationWindowSeconds: 0, cooldownSeconds: 0 },
                  drain: { stepIntervalSeconds: 1 },
                },
              },
            },
          },
        } as never,
      ]);
      return new DrillStack(plane, dir, members, git, flux, delivery, controller);
    } catch (error) {
      for (const s of started.reverse()) await s.stop().catch(() => undefined);
      await plane.stop();
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** The load on a member: the external metric its HPA reads (replicas wanted = load). */
  setLoad(member: Member, value: number): void {
    this.members[member].metrics.set(METRIC, value);
  }

  async placement(): Promise<PlacementCluster[]> {
    const hub = this.plane.hub.adminKubeConfig();
    const object = (await hub
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...PLACEMENTS, namespace: NS, name: WORKLOAD }, requestOptions(hub, 10_000))) as {
      status?: { clusters?: PlacementCluster[] };
    };
    return object.status?.clusters ?? [];
  }

  /** The state of the placement's cluster `member`, or undefined when it is not listed. */
  async listed(member: Member): Promise<PlacementCluster | undefined> {
    return (await this.placement()).find((c) => c.name === member);
  }

  async view(member: Member): Promise<MemberView> {
    const kc = this.kubeConfig(member);
    const core = kc.makeApiClient(CoreV1Api);
    const [pods, nodes, deployment, hpa] = await Promise.all([
      core.listNamespacedPod({ namespace: NS, labelSelector: `app=${WORKLOAD}` }),
      core.listNode(),
      kc
        .makeApiClient(AppsV1Api)
        .readNamespacedDeployment({ namespace: NS, name: WORKLOAD })
        .then(
          () => true,
          () => false,
        ),
      kc
        .makeApiClient(AutoscalingV2Api)
        .readNamespacedHorizontalPodAutoscaler({ namespace: NS, name: WORKLOAD })
        .then(
          (h) => h,
          () => null,
        ),
    ]);
    const live = pods.items.filter((p) => !p.metadata?.deletionTimestamp);
    return {
      pods: live,
      running: live.filter((p) => p.status?.phase === 'Running').length,
      pending: live.filter((p) => p.status?.phase === 'Pending').length,
      nodes: nodes.items.length,
      deployment,
      hpa,
    };
  }

  /** Events on the member's workload pods (what Karpenter and kube-scheduler said). */
  async podEvents(member: Member): Promise<CoreV1Event[]> {
    const core = this.kubeConfig(member).makeApiClient(CoreV1Api);
    const events = await core.listNamespacedEvent({ namespace: NS, fieldSelector: 'involvedObject.kind=Pod' });
    return events.items;
  }

  kubeConfig(member: Member): KubeConfig {
    return this.plane.members[member]!.adminKubeConfig();
  }

  logs(lines = 30): string {
    return [
      ...MEMBERS.map((m) => this.members[m].logs(lines)),
      ...this.flux.map((f) => `--- hub ${f.name}\n${f.tail(lines)}`),
    ].join('\n');
  }

  async stop(): Promise<void> {
    await this.controller.stop().catch(() => undefined);
    await this.delivery.stop().catch(() => undefined);
    for (const f of this.flux) await f.stop().catch(() => undefined);
    await this.git.stop().catch(() => undefined);
    for (const m of MEMBERS) await this.members[m].stop().catch(() => undefined);
    await this.plane.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Polls every probe until each has held once; resolves with when each first held (performance.now()). */
/**
 * Polls every probe until each has been true once. A probe's time is the start
 * of the round that first saw it true: probes run side by side and answer late
 * under load, so a response's arrival says little. Two steps seen in adjacent
 * rounds can therefore be out of order by at most one round plus the interval,
 * the `resolutionMs` returned.
 */
export async function firstTimes<K extends string>(
  probes: Readonly<Record<K, () => Promise<boolean>>>,
  timeoutMs: number,
  intervalMs = 200,
): Promise<{ times: Record<K, number>; resolutionMs: number }> {
  const times: Partial<Record<K, number>> = {};
  const keys = Object.keys(probes) as K[];
  const deadline = Date.now() + timeoutMs;
  let resolutionMs = 0;
  while (keys.some((k) => times[k] === undefined)) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${keys.filter((k) => times[k] === undefined).join(', ')}`);
    }
    const round = performance.now();
    await Promise.all(
      keys
        .filter((k) => times[k] === undefined)
        .map(async (k) => {
          if (await probes[k]().catch(() => false)) times[k] = round;
        }),
    );
    resolutionMs = Math.max(resolutionMs, performance.now() - round + intervalMs);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return { times: times as Record<K, number>, resolutionMs };
}

const unschedulable = (pod: V1Pod) =>
  pod.status?.conditions?.some(
    (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
  ) ?? false;

/** East alone at a load its NodePool holds (2 replicas, one node), west idle with nothing on it. */
export async function baseline(stack: DrillStack, timeoutMs = 300_000): Promise<void> {
  stack.setLoad('east', 2);
  stack.setLoad('west', 3);
  await firstTimes(
    {
      eastAlone: async () => (await stack.placement()).map((c) => `${c.name}:${c.state}`).join() === 'east:ACTIVE',
      eastSteady: async () => {
        const east = await stack.view('east');
        return east.running === 2 && east.pods.length === 2;
      },
      westEmpty: async () => {
        const west = await stack.view('west');
        return !west.deployment && west.nodes === 0;
      },
    },
    timeoutMs,
  );
}

export const SCALE_OUT_STEPS = [
  'ceiling seen (east atCapacityCeiling)',
  'west added to status',
  'workload applied on west',
  'first pod Running on west',
  'all pods Running on west',
] as const;
export const SCALE_IN_STEPS = [
  'west SCALING_IN',
  'west removed from status',
  'workload deleted from west',
  "west's nodes removed by Karpenter",
] as const;
export interface DrillRun {
  /** Milliseconds from the first unschedulable pod on east, per step. */
  readonly scaleOut: Record<(typeof SCALE_OUT_STEPS)[number], number>;
  /** Milliseconds from the load falling, per step. */
  readonly scaleIn: Record<(typeof SCALE_IN_STEPS)[number], number>;
  /** How far apart two steps seen in adjacent polls can be out of order (see firstTimes). */
  readonly resolutionMs: number;
}

/**
 * One drill from the baseline: east's load grows past its NodePool's limits
 * (6 replicas, room for 4), then falls back (east 2, west 0). Only the load
 * is written; every step is observed.
 */
export async function runDrill(stack: DrillStack, timeoutMs = 300_000): Promise<DrillRun> {
  const east = () => stack.view('east');
  const west = () => stack.view('west');
  stack.setLoad('east', 6);
  const {
    times: { unschedulable: t0 },
  } = await firstTimes({ unschedulable: async () => (await east()).pods.some(unschedulable) }, timeoutMs, 100);
  const out = await firstTimes(
    {
      [SCALE_OUT_STEPS[0]]: async () => (await stack.listed('east'))?.atCapacityCeiling === true,
      [SCALE_OUT_STEPS[1]]: async () => (await stack.listed('west'))?.state === 'ACTIVE',
      [SCALE_OUT_STEPS[2]]: async () => (await west()).deployment,
      [SCALE_OUT_STEPS[3]]: async () => (await west()).running > 0,
      [SCALE_OUT_STEPS[4]]: async () => {
        const w = await west();
        return w.running === 3 && w.pods.length === 3;
      },
    } as Record<(typeof SCALE_OUT_STEPS)[number], () => Promise<boolean>>,
    timeoutMs,
  );
  stack.setLoad('east', 2);
  stack.setLoad('west', 0);
  const t1 = performance.now();
  const back = await firstTimes(
    {
      [SCALE_IN_STEPS[0]]: async () => (await stack.listed('west'))?.state !== 'ACTIVE',
      [SCALE_IN_STEPS[1]]: async () => (await stack.listed('west')) === undefined,
      [SCALE_IN_STEPS[2]]: async () => !(await west()).deployment,
      [SCALE_IN_STEPS[3]]: async () => {
        const w = await west();
        return !w.deployment && w.nodes === 0;
      },
    } as Record<(typeof SCALE_IN_STEPS)[number], () => Promise<boolean>>,
    timeoutMs,
  );
  const since = <K extends string>(from: number, times: Record<K, number>) =>
    Object.fromEntries(Object.entries<number>(times).map(([k, t]) => [k, t - from])) as Record<K, number>;
  return {
    scaleOut: since(t0, out.times),
    scaleIn: since(t1, back.times),
    resolutionMs: Math.max(out.resolutionMs, back.resolutionMs),
  };
}

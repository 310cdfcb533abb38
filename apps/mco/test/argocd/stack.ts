// The Argo CD walk-through of docs/argocd.md, run for real: a hub and two
// member kube-apiservers, Argo CD's own argocd-applicationset-controller
// (tools/argocd), and the built `mco` processes. The test creates only what
// the walk-through lists under "You need"; every code block of the doc is run
// as written by @mco/testkit's Walkthrough (paths, ports and the members'
// server URLs substituted). Shared by the end-to-end test and the latency
// benchmark.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  AutoscalingV2Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  type KubernetesObject,
  type V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import { requestOptions } from '@mco/kube-runtime/client-node';
import {
  freePort,
  requireTool,
  startControlPlane,
  Walkthrough,
  type BlockReport,
  type ControlPlane,
  type Substitution,
} from '@mco/testkit';
import { builtMco } from '../built.js';
import {
  chartIdentities,
  clusterProfiles,
  credentialPlugin,
  CREDENTIAL_PLUGIN,
  PROVIDER,
} from '../walkthrough-fixtures.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const APP = join(REPO, 'apps', 'mco');
const DOC = join(REPO, 'docs', 'argocd.md');

export const ARGOCD = 'argocd';
export const FLEET = 'fleet-cluster-inventory';
export const WORKLOAD_NS = 'hello-world-server';
export const HPA = 'hello-web-autoscale';
export const MEMBERS = ['east', 'west'] as const;
export type Member = (typeof MEMBERS)[number];
/** The ClusterProfile of a member, matched by the hello-world placement's regex. */
export const profileOf = (member: Member) => `mco-cluster-${member}`;
/** Argo CD cluster name = the plugin's `name` = the cluster Secret's name. */
export const argoClusterOf = (member: Member) => `${FLEET}.${profileOf(member)}`;
/** The hello-world template names Applications `{{.name}}-hw`. */
export const applicationOf = (member: Member) => `${argoClusterOf(member)}-hw`;

export const PLACEMENTS = {
  group: 'orchestra.multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'multikubernetesclusterplacements',
} as const;
export const CLUSTER_PROFILES = {
  group: 'multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'clusterprofiles',
} as const;
export const APPLICATIONS = { group: 'argoproj.io', version: 'v1alpha1', plural: 'applications' } as const;
export const APPLICATION_SETS = { group: 'argoproj.io', version: 'v1alpha1', plural: 'applicationsets' } as const;

export interface PlacementStatusCluster {
  name: string;
  namespace: string;
  state: string;
  draining?: { desiredMaxReplicas?: number };
}
export interface PlacementObject extends KubernetesObject {
  spec: Record<string, unknown>;
  status?: { clusters?: PlacementStatusCluster[]; conditions?: { type: string; status: string; reason?: string }[] };
}
export interface Application extends KubernetesObject {
  spec: {
    destination: { name?: string; server?: string; namespace?: string };
    source: { helm?: { parameters?: { name: string; value: string }[] } };
  };
}
export interface ApplicationSetObject extends KubernetesObject {
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/** What the test sets on a member's HPA: the signals mco's kubernetes source reads. */
export interface HpaState {
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly currentReplicas: number;
  /** ScalingLimited: TooManyReplicas (at the ceiling), TooFewReplicas (wants scale-in), or not limited. */
  readonly limited?: 'TooManyReplicas' | 'TooFewReplicas';
}
export const NORMAL: HpaState = { minReplicas: 1, maxReplicas: 4, currentReplicas: 2 };
export const AT_CEILING: HpaState = { minReplicas: 1, maxReplicas: 4, currentReplicas: 4, limited: 'TooManyReplicas' };
export const IDLE: HpaState = { minReplicas: 1, maxReplicas: 4, currentReplicas: 1, limited: 'TooFewReplicas' };

type Role = 'controller' | 'plugin' | 'refresher' | 'secret-syncer' | 'applicationset-controller';

/** Each process of the walk-through's background block, by a text only its command contains. */
const COMMAND_OF: Record<Role, string> = {
  controller: 'mco controller',
  plugin: 'mco argocd-plugin',
  refresher: '--refresh-applicationsets',
  'secret-syncer': '--sync-cluster-secrets',
  'applicationset-controller': 'argocd-applicationset-controller',
};

/** The addresses the walk-through's processes listen on, by name; each gets a free port here. */
const ADDRESSES = {
  plugin: '127.0.0.1:4355',
  'controller-http': '127.0.0.1:8080',
  'refresher-http': '127.0.0.1:8082',
  'secret-syncer-http': '127.0.0.1:8083',
  'appset-metrics': '127.0.0.1:8092',
  'appset-probe': '127.0.0.1:8093',
  'appset-webhook': '127.0.0.1:7000',
} as const;

/** The hub kubeconfig the walk-through gives each mco process, and the chart component whose ServiceAccount it is. */
const IDENTITIES = [
  ['controller.kubeconfig', 'controller'],
  ['plugin.kubeconfig', 'argocd-plugin'],
  ['refresher.kubeconfig', 'argocd-applicationset-refresher'],
  ['secret-syncer.kubeconfig', 'argocd-secret-syncer'],
] as const;

export interface StackOptions {
  /** Placement `behavior` (mco extension), set after the walk-through, so scale-in and draining happen within a test's time. */
  readonly behavior?: Record<string, unknown>;
}

export class ArgoStack {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  /** What the walk-through did with each code block of docs/argocd.md. */
  report: BlockReport[] = [];
  /** The plugin token the walk-through picked (its file `token`). */
  token = '';
  private stalledHub?: HttpServer;

  private constructor(
    readonly plane: ControlPlane,
    readonly dir: string,
    /** The user's directory: the walk-through's files and the kubeconfigs it names. */
    readonly user: string,
    readonly walk: Walkthrough,
    private readonly ports: ReadonlyMap<string, number>,
  ) {
    const admin = plane.hub.adminKubeConfig();
    this.custom = admin.makeApiClient(CustomObjectsApi);
    this.core = admin.makeApiClient(CoreV1Api);
  }

  /** The walk-through's prerequisites, then every code block of docs/argocd.md, in order. */
  static async start(options: StackOptions = {}): Promise<ArgoStack> {
    const argocd = requireTool('argocd');
    const kubectl = requireTool('kubectl');
    const mco = builtMco();
    const plane = await startControlPlane({ clusters: [...MEMBERS] });
    const dir = mkdtempSync(join(tmpdir(), 'mco-argocd-real-'));
    const user = join(dir, 'user');
    let walk: Walkthrough | undefined;
    try {
      const ports = new Map<string, number>();
      for (const name of Object.keys(ADDRESSES)) ports.set(name, await freePort());
      const substitutions: Substitution[] = [
        ...Object.entries(ADDRESSES).map(([name, address]): Substitution => ({
          kind: 'port',
          from: address,
          to: `127.0.0.1:${ports.get(name)}`,
        })),
        ...MEMBERS.map((m): Substitution => ({
          kind: 'address',
          from: `https://${m}.clusters.example:6443`,
          to: plane.members[m]!.server,
        })),
        { kind: 'path', from: 'examples/argocd/hello-world/', to: join(REPO, 'examples', 'argocd', 'hello-world/') },
      ];
      walk = new Walkthrough({
        doc: DOC,
        dir: user,
        substitutions,
        // Every sample output of the doc is the whole output of its command, not a part of it.
        exactOutput: true,
        commands: {
          mco: [process.execPath, mco],
          kubectl,
          'argocd-applicationset-controller': join(argocd, 'argocd-applicationset-controller'),
          [CREDENTIAL_PLUGIN]: credentialPlugin(dir, plane, 'admin'),
        },
        env: { KUBECONFIG: join(user, 'hub.kubeconfig') },
      });
      const stack = new ArgoStack(plane, dir, user, walk, ports);
      await stack.setUp(options, argocd);
      return stack;
    } catch (error) {
      await walk?.stop(0);
      await plane.stop();
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  private async setUp(options: StackOptions, argocd: string): Promise<void> {
    const { plane, user } = this;
    // "You need": the CRDs, and kubectl as the hub's admin.
    await plane.hub.installCrds([join(APP, 'chart', 'crds'), join(argocd, 'crds')]);
    writeFileSync(join(user, 'hub.kubeconfig'), plane.hub.adminKubeConfig().exportConfig(), { mode: 0o600 });

    // "You need": one identity per mco process, with the chart's RBAC. The
    // Roles in `argocd` wait until the walk-through has created the namespace.
    const inArgocd = await chartIdentities(
      plane,
      {
        'argocd.plugin.enabled': 'true',
        'argocd.plugin.existingSecret': 'mco-argocd-plugin-token',
        'argocd.clusterSecretSync.enabled': 'true',
        'argocd.clusterSecretSync.providers[0].name': PROVIDER,
        'argocd.clusterSecretSync.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
        'argocd.clusterSecretSync.providers[0].execConfig.command': CREDENTIAL_PLUGIN,
        'argocd.clusterSecretSync.providers[0].allowedServers[0]': plane.members.east!.server,
      },
      IDENTITIES,
      user,
      (o) => o.metadata?.namespace === ARGOCD,
    );

    // "You need": the workload's Deployment and HPA on each member, whose status stands in for load.
    for (const member of MEMBERS) {
      await plane.members[member]!.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORKLOAD_NS } }]);
      await plane.members[member]!.apply([
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'hello-web', namespace: WORKLOAD_NS },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: 'hello-web' } },
            template: {
              metadata: { labels: { app: 'hello-web' } },
              spec: { containers: [{ name: 'web', image: 'registry.invalid/hello-web:1' }] },
            },
          },
        } as KubernetesObject,
        {
          apiVersion: 'autoscaling/v2',
          kind: 'HorizontalPodAutoscaler',
          metadata: { name: HPA, namespace: WORKLOAD_NS },
          spec: {
            scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'hello-web' },
            minReplicas: 1,
            maxReplicas: 4,
          },
        } as KubernetesObject,
      ]);
      await this.setHpa(member, NORMAL);
    }

    // "You need": the members' ClusterProfiles, offering the provider `google` (what a cluster manager writes).
    await clusterProfiles(
      plane,
      FLEET,
      MEMBERS.map((m) => ({ name: profileOf(m), member: plane.members[m]!, labels: { region: m } })),
    );

    // The walk-through, every block in order (the chart's Roles in `argocd` once it exists).
    await this.walk.run('kubectl create namespace argocd');
    await plane.hub.apply(inArgocd);
    await this.walk.run();
    this.report = this.walk.finish();
    this.token = readFileSync(join(user, 'token'), 'utf8');

    if (options.behavior) {
      await this.custom.patchNamespacedCustomObject(
        {
          ...PLACEMENTS,
          namespace: WORKLOAD_NS,
          name: 'hello-web-placement-autoscale',
          body: { spec: { scaling: { autoscaleForCapacity: { behavior: options.behavior } } } },
        },
        requestOptions(plane.hub.adminKubeConfig(), 10_000, PatchStrategy.MergePatch),
      );
    }
  }

  /** Starts a walk-through process again as the doc wrote it, or with another hub kubeconfig (a fault). */
  start(role: Role, options: { kubeconfig?: string } = {}): void {
    const kubeconfig = options.kubeconfig;
    this.walk.restartProcess(
      COMMAND_OF[role],
      kubeconfig ? (command) => command.replace(/--kubeconfig \S+/, `--kubeconfig ${kubeconfig}`) : undefined,
    );
  }

  /** Stops one process: SIGTERM (graceful) or SIGKILL (a crash). */
  async stopProcess(role: Role, options: { kill?: boolean } = {}): Promise<void> {
    if (this.walk.process(COMMAND_OF[role]).server.hasExited()) return;
    await this.walk.stopProcess(COMMAND_OF[role], options.kill ? 0 : 10_000);
  }

  /**
   * The plugin's kubeconfig pointed at a plain-HTTP proxy of the hub that
   * answers the start-up checks (`limit=1` lists) and never answers anything
   * else (a hub that hangs): the plugin starts, its caches never sync, and it
   * answers 503.
   */
  async stalledHubKubeconfig(): Promise<string> {
    if (!this.stalledHub) {
      const hub = new URL(this.plane.hub.server);
      const ca = Buffer.from(this.plane.hub.caData, 'base64');
      const server = createHttpServer((req, res) => {
        if (new URL(req.url!, 'http://proxy').searchParams.get('limit') !== '1') return; // held until stop()
        const upstream = httpsRequest(
          { host: hub.hostname, port: hub.port, path: req.url, method: req.method, headers: req.headers, ca },
          (answer) => {
            res.writeHead(answer.statusCode!, answer.headers);
            answer.pipe(res);
          },
        );
        upstream.on('error', () => res.destroy());
        req.pipe(upstream);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      this.stalledHub = server;
    }
    const { port } = this.stalledHub.address() as AddressInfo;
    // exportConfig() writes JSON.
    const config = JSON.parse(readFileSync(join(this.user, 'plugin.kubeconfig'), 'utf8')) as {
      clusters: { cluster: Record<string, unknown> }[];
    };
    // client-node speaks plain HTTP only with TLS verification off.
    for (const entry of config.clusters) {
      entry.cluster = { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true };
    }
    const file = join(this.dir, 'stalled-hub.kubeconfig');
    writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
    return file;
  }

  pluginUrl(): string {
    return this.httpUrl('plugin');
  }

  /** Everything each process wrote, by role (every run of it, in order). */
  fullLogs(): Map<string, string> {
    const runs = this.walk.background();
    return new Map(
      (Object.keys(COMMAND_OF) as Role[]).map((role) => [
        role,
        runs
          .filter((p) => p.command.includes(COMMAND_OF[role]))
          .map((p) => readFileSync(p.server.logFile, 'utf8'))
          .join(''),
      ]),
    );
  }

  /** The secrets this walk-through hands out: members' tokens and each process's hub token. */
  credentials(): Record<string, string> {
    const hub = [['hub.kubeconfig', 'admin'] as const, ...IDENTITIES].flatMap(([file, who]) => {
      const config = JSON.parse(readFileSync(join(this.user, file), 'utf8')) as {
        users?: { user?: { token?: string } }[];
      };
      return (config.users ?? []).flatMap((u) =>
        u.user?.token ? [[`hub token of ${who}`, u.user.token] as const] : [],
      );
    });
    return Object.fromEntries([
      ...MEMBERS.map((m) => [`member token of ${m}`, this.plane.members[m]!.token('admin')] as const),
      ...hub,
    ]);
  }

  /** http://127.0.0.1:<port> of a process's HTTP address (`controller-http`, `refresher-http`, ...). */
  httpUrl(name: string): string {
    return `http://127.0.0.1:${this.ports.get(name)}`;
  }

  /** The last lines of each process's log, for failure messages. */
  logs(): string {
    return this.walk.logs();
  }

  async setHpa(member: Member, state: HpaState): Promise<void> {
    const api = this.plane.members[member]!.adminKubeConfig().makeApiClient(AutoscalingV2Api);
    const hpa = await api.readNamespacedHorizontalPodAutoscaler({ name: HPA, namespace: WORKLOAD_NS });
    if (hpa.spec!.minReplicas !== state.minReplicas || hpa.spec!.maxReplicas !== state.maxReplicas) {
      hpa.spec = { ...hpa.spec!, minReplicas: state.minReplicas, maxReplicas: state.maxReplicas };
      Object.assign(
        hpa,
        await api.replaceNamespacedHorizontalPodAutoscaler({ name: HPA, namespace: WORKLOAD_NS, body: hpa }),
      );
    }
    const now = new Date();
    const body: V2HorizontalPodAutoscaler = {
      ...hpa,
      status: {
        currentReplicas: state.currentReplicas,
        desiredReplicas: state.currentReplicas,
        conditions: [
          {
            type: 'ScalingLimited',
            status: state.limited ? 'True' : 'False',
            reason: state.limited ?? 'DesiredWithinRange',
            lastTransitionTime: now,
          },
        ],
      },
    };
    await api.replaceNamespacedHorizontalPodAutoscalerStatus({ name: HPA, namespace: WORKLOAD_NS, body });
  }

  async placement(): Promise<PlacementObject> {
    return (await this.custom.getNamespacedCustomObject({
      ...PLACEMENTS,
      namespace: WORKLOAD_NS,
      name: 'hello-web-placement-autoscale',
    })) as PlacementObject;
  }

  async applications(): Promise<Application[]> {
    const list = (await this.custom.listNamespacedCustomObject({ ...APPLICATIONS, namespace: ARGOCD })) as {
      items: Application[];
    };
    return list.items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  }

  async applicationSet(): Promise<ApplicationSetObject> {
    return (await this.custom.getNamespacedCustomObject({
      ...APPLICATION_SETS,
      namespace: ARGOCD,
      name: 'hello-world-applicationset',
    })) as ApplicationSetObject;
  }

  /**
   * What Argo CD's application controller does once it has removed an
   * Application's resources: drop the resources finalizer so the deletion
   * completes. Only the ApplicationSet controller runs here.
   */
  async finishDeletion(name: string): Promise<void> {
    await this.custom.patchNamespacedCustomObject({
      ...APPLICATIONS,
      namespace: ARGOCD,
      name,
      body: [{ op: 'replace', path: '/metadata/finalizers', value: [] }],
    });
  }

  async stop(): Promise<void> {
    await this.walk.stop(0);
    if (this.stalledHub) {
      this.stalledHub.closeAllConnections();
      await new Promise((resolve) => this.stalledHub!.close(resolve));
    }
    await this.plane.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

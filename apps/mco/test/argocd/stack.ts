// The Argo CD walk-through of docs/argocd.md, run for real: a hub and two
// member kube-apiservers, Argo CD's own argocd-applicationset-controller
// (tools/argocd), and the built `mco controller` and `mco argocd-plugin` as
// processes. Shared by the end-to-end test and the latency benchmark.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  AutoscalingV2Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  type V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import {
  eventually,
  freePort,
  loadYamlObjects,
  parseYamlDocuments,
  ProcessReaper,
  renderChart,
  requireTool,
  serviceAccountKubeConfig,
  startControlPlane,
  startServer,
  stopServer,
  tailOf,
  type ControlPlane,
  type ServerProcess,
} from '@mco/testkit';
import { builtMco } from '../built.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const APP = join(REPO, 'apps', 'mco');
const DOC = join(REPO, 'docs', 'argocd.md');
const HELLO_WORLD = join(REPO, 'examples', 'argocd', 'hello-world');

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

/** The fenced block that follows `<!-- walkthrough: <name> -->` in docs/argocd.md, dedented. */
export function walkthrough(name: string): string {
  const text = readFileSync(DOC, 'utf8');
  const at = text.indexOf(`<!-- walkthrough: ${name} -->`);
  if (at < 0) throw new Error(`docs/argocd.md has no walk-through block "${name}"`);
  const block = /\n( *)```[a-z]*\n([\s\S]*?)\n *```/.exec(text.slice(at));
  if (!block) throw new Error(`docs/argocd.md: no code block after walk-through "${name}"`);
  const indent = block[1]!.length;
  return block[2]!
    .split('\n')
    .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
    .join('\n');
}

/** The shell commands of a walk-through block as argument vectors (`\` continues a line; no quoting is used there). */
export function commandsOf(script: string): string[][] {
  return script
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.split(/\s+/));
}

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

export interface StackOptions {
  /** Run `mco argocd-sync --refresh-applicationsets` (the walk-through's default) or not. */
  readonly refresh?: boolean;
  /** Placement `behavior` (mco extension) so scale-in and draining happen within a test's time. */
  readonly behavior?: Record<string, unknown>;
}

export class ArgoStack {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  private readonly processes = new Map<Role, ServerProcess>();
  private readonly ports = new Map<string, number>();
  private readonly reaper: ProcessReaper;
  private readonly kubeconfigs = new Map<Role, string>();
  private readonly commands = new Map<Role, string[]>();
  private stalledHub?: HttpServer;

  private constructor(
    readonly plane: ControlPlane,
    readonly dir: string,
    readonly token: string,
    /** apps/mco/bin/mco.js: the built bundle. */
    private readonly mco: string,
    private readonly argocd: string,
  ) {
    const admin = plane.hub.adminKubeConfig();
    this.custom = admin.makeApiClient(CustomObjectsApi);
    this.core = admin.makeApiClient(CoreV1Api);
    mkdirSync(join(dir, 'procs'));
    this.reaper = new ProcessReaper(join(dir, 'procs'));
  }

  /** Everything of the walk-through up to (and including) the three processes and the hello-world objects. */
  static async start(options: StackOptions = {}): Promise<ArgoStack> {
    const argocd = requireTool('argocd');
    const mco = builtMco();
    const plane = await startControlPlane({ clusters: [...MEMBERS] });
    const dir = mkdtempSync(join(tmpdir(), 'mco-argocd-real-'));
    const stack = new ArgoStack(plane, dir, randomBytes(36).toString('base64'), mco, argocd);
    try {
      await stack.setUp(options);
    } catch (error) {
      await stack.stop();
      throw error;
    }
    return stack;
  }

  private async setUp(options: StackOptions): Promise<void> {
    const { plane, dir } = this;
    await plane.hub.installCrds([join(APP, 'chart', 'crds'), join(this.argocd, 'crds')]);
    await plane.hub.apply(
      [ARGOCD, 'mco-system', FLEET, WORKLOAD_NS].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
    );

    // Credentials: one access provider per member, each a credential plugin
    // that hands out that member's token (what gke-gcloud-auth-plugin does for GKE).
    const plugin = join(dir, 'credential-plugin.sh');
    writeFileSync(
      plugin,
      `#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$1"
`,
    );
    chmodSync(plugin, 0o755);
    const providers = MEMBERS.map((m) => ({
      name: m,
      execConfig: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: plugin,
        args: [plane.members[m]!.token('admin')],
      },
      // The test members listen on loopback, which a provider reaches only when it names it.
      allowedServers: [plane.members[m]!.server],
    }));
    writeFileSync(join(dir, 'providers.yaml'), JSON.stringify({ providers }));

    // The chart's ServiceAccounts and RBAC: mco runs with exactly what the chart grants.
    const rbac = renderChart({
      'argocd.plugin.enabled': 'true',
      'argocd.plugin.existingSecret': 'mco-argocd-plugin-token',
      'argocd.clusterSecretSync.enabled': 'true',
      'argocd.clusterSecretSync.providers[0].name': 'east',
      'argocd.clusterSecretSync.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
      'argocd.clusterSecretSync.providers[0].execConfig.command': plugin,
      'argocd.clusterSecretSync.providers[0].allowedServers[0]': plane.members.east!.server,
    }).filter((o) =>
      ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? ''),
    );
    await plane.hub.apply(rbac);
    const account = (component: string) =>
      rbac.find(
        (o) => o.kind === 'ServiceAccount' && o.metadata?.labels?.['app.kubernetes.io/component'] === component,
      )!.metadata!;
    const write = (role: Role, kc: KubeConfig) => {
      const file = join(dir, `${role}.kubeconfig`);
      writeFileSync(file, kc.exportConfig(), { mode: 0o600 });
      this.kubeconfigs.set(role, file);
    };
    for (const [role, component] of [
      ['controller', 'controller'],
      ['plugin', 'argocd-plugin'],
      ['refresher', 'argocd-applicationset-refresher'],
      ['secret-syncer', 'argocd-secret-syncer'],
    ] as const) {
      const sa = account(component);
      write(role, await serviceAccountKubeConfig(plane.hub, sa.namespace!, sa.name!));
    }
    write('applicationset-controller', plane.hub.adminKubeConfig());

    // The walk-through's prerequisite: Argo CD's default AppProject. (Its settings,
    // argocd-cm and argocd-secret, come from the walk-through's step 1.)
    await plane.hub.apply([
      {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'AppProject',
        metadata: { name: 'default', namespace: ARGOCD },
        spec: {
          sourceRepos: ['*'],
          destinations: [{ name: '*', server: '*', namespace: '*' }],
          clusterResourceWhitelist: [{ group: '*', kind: '*' }],
        },
      } as KubernetesObject,
    ]);

    // Walk-through step 1 and 2: the token, Argo CD's Secret and ConfigMap, signals.yaml.
    writeFileSync(join(dir, 'token'), `${this.token}\n`, { mode: 0o600 });
    for (const name of [
      'plugin',
      'controller-http',
      'refresher-http',
      'secret-syncer-http',
      'appset-metrics',
      'appset-probe',
      'appset-webhook',
    ]) {
      this.ports.set(name, await freePort());
    }
    await plane.hub.apply(parseYamlDocuments(this.localize(walkthrough('argocd-objects'))) as KubernetesObject[]);
    writeFileSync(join(dir, 'signals.yaml'), this.localize(walkthrough('signals.yaml')));

    // The member clusters: the workload's HPA, whose status stands in for load.
    for (const member of MEMBERS) {
      await plane.members[member]!.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORKLOAD_NS } }]);
      // mco's kubernetes signal source reads the workload's Deployment beside its HPA.
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
    const memberProfile = (member: Member) => ({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name: profileOf(member), namespace: FLEET, labels: { region: member } },
      spec: { displayName: member, clusterManager: { name: 'test' } },
    });
    await plane.hub.apply(MEMBERS.map(memberProfile));
    for (const member of MEMBERS) {
      const handle = plane.members[member]!;
      const status = {
        conditions: [
          {
            type: 'ControlPlaneHealthy',
            status: 'True',
            reason: 'Healthy',
            message: 'test',
            lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          },
        ],
        accessProviders: [
          { name: member, cluster: { server: handle.server, 'certificate-authority-data': handle.caData } },
        ],
      };
      await this.custom.patchNamespacedCustomObjectStatus({
        ...CLUSTER_PROFILES,
        namespace: FLEET,
        name: profileOf(member),
        body: [{ op: 'add', path: '/status', value: status }],
      });
    }

    // Walk-through step 3: the processes.
    for (const command of commandsOf(walkthrough('processes'))) {
      const role = roleOf(command);
      this.commands.set(role, command);
      if (role !== 'refresher' || (options.refresh ?? true)) this.start(role);
    }
    // As a user waits for a rollout: every process ready before the placement and
    // the ApplicationSet exist. Otherwise Argo CD's first reconcile may meet a plugin
    // that is not listening yet and wait out its 3-minute error requeue.
    const ready: [Role, string][] = [
      ['controller', 'controller-http'],
      ['plugin', 'plugin'],
      ['refresher', 'refresher-http'],
      ['secret-syncer', 'secret-syncer-http'],
    ];
    for (const [role, port] of ready) {
      if (!this.processes.has(role)) continue;
      await eventually(
        `${role} to be ready`,
        () => fetch(`${this.httpUrl(port)}/readyz`).then((r) => r.status),
        (status) => status === 200,
        180_000,
      );
    }

    // Walk-through step 4: MCO's hello-world placement and ApplicationSet, unchanged
    // (the placement gains mco's `behavior` extension so scale-in happens within a test).
    const [placement] = loadYamlObjects(join(HELLO_WORLD, 'placement.yaml')) as PlacementObject[];
    const scaling = placement!.spec.scaling as { autoscaleForCapacity: Record<string, unknown> };
    if (options.behavior) scaling.autoscaleForCapacity.behavior = options.behavior;
    await plane.hub.apply([placement!, ...loadYamlObjects(join(HELLO_WORLD, 'applicationset.yaml'))]);
  }

  /** Paths, ports and the token of the walk-through text, for this machine. */
  private localize(text: string): string {
    const port = (name: string) => String(this.ports.get(name));
    return text
      .replace('<the token>', this.token)
      .replace('<a random key>', randomBytes(32).toString('base64'))
      .replace(/127\.0\.0\.1:4355/g, `127.0.0.1:${port('plugin')}`)
      .replace(/(^|\s)(providers\.yaml)/g, `$1${join(this.dir, 'providers.yaml')}`);
  }

  private argsOf(role: Role, command: string[]): string[] {
    const files: Record<string, string> = {
      'hub.kubeconfig': this.kubeconfigs.get(role)!,
      token: join(this.dir, 'token'),
      'signals.yaml': join(this.dir, 'signals.yaml'),
      'providers.yaml': join(this.dir, 'providers.yaml'),
    };
    const ports: Record<string, string> = {
      '4355': 'plugin',
      '8080': 'controller-http',
      '8082': 'refresher-http',
      '8083': 'secret-syncer-http',
      '8090': 'appset-metrics',
      '8091': 'appset-probe',
      '7000': 'appset-webhook',
    };
    return command
      .slice(2)
      .map(
        (arg) =>
          files[arg] ?? arg.replace(/^127\.0\.0\.1:(\d+)$/, (_, p: string) => `127.0.0.1:${this.ports.get(ports[p]!)}`),
      );
  }

  private spawn(role: Role, command: string[], args = this.argsOf(role, command)): void {
    const server =
      role === 'applicationset-controller'
        ? startServer(join(this.argocd, 'argocd-applicationset-controller'), args, join(this.dir, `${role}.log`), {
            KUBECONFIG: this.kubeconfigs.get(role)!,
          })
        : startServer(process.execPath, [this.mco, command[1]!, ...args], join(this.dir, `${role}.log`));
    this.reaper.track(server.child.pid);
    this.processes.set(role, server);
  }

  /** Starts one process of the walk-through, as another hub user when a kubeconfig is given. */
  start(role: Role, options: { kubeconfig?: string } = {}): void {
    const command = this.commands.get(role)!;
    const args = this.argsOf(role, command);
    if (options.kubeconfig) args[args.indexOf('--kubeconfig') + 1] = options.kubeconfig;
    this.spawn(role, command, args);
  }

  /** Stops one process: SIGTERM (graceful) or SIGKILL (a crash). */
  async stopProcess(role: Role, options: { kill?: boolean } = {}): Promise<void> {
    const server = this.processes.get(role);
    if (!server) return;
    await stopServer(server, options.kill ? 0 : 10_000);
    this.reaper.untrack(server.child.pid);
    this.processes.delete(role);
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
    const config = JSON.parse(readFileSync(this.kubeconfigs.get('plugin')!, 'utf8')) as {
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
    return `http://127.0.0.1:${this.ports.get('plugin')}`;
  }

  /** Everything each process wrote, by role (a restarted process appends to its file). */
  fullLogs(): Map<string, string> {
    return new Map(
      [...this.processes.keys()].map((role) => [role, readFileSync(join(this.dir, `${role}.log`), 'utf8')]),
    );
  }

  /** The secrets this walk-through hands out: members' tokens and each process's hub token. */
  credentials(): Record<string, string> {
    const hub = [...this.kubeconfigs.entries()].flatMap(([role, file]) => {
      const users = (JSON.parse(readFileSync(file, 'utf8')) as { users?: { user?: { token?: string } }[] }).users;
      return (users ?? []).flatMap((u) => (u.user?.token ? [[`hub token of ${role}`, u.user.token] as const] : []));
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
    return [...this.processes.entries()]
      .map(([role, p]) => `--- ${role}${p.hasExited() ? ' (exited)' : ''}\n${tailOf(p.logFile, 15)}`)
      .join('\n');
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
    for (const role of [...this.processes.keys()]) await this.stopProcess(role, { kill: true });
    this.reaper.dispose();
    if (this.stalledHub) {
      this.stalledHub.closeAllConnections();
      await new Promise((resolve) => this.stalledHub!.close(resolve));
    }
    await this.plane.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function roleOf(command: string[]): Role {
  if (command[0] === 'KUBECONFIG=hub.kubeconfig' && command[1] === 'argocd-applicationset-controller') {
    return 'applicationset-controller';
  }
  if (command[0] === 'mco' && command[1] === 'controller') return 'controller';
  if (command[0] === 'mco' && command[1] === 'argocd-plugin') return 'plugin';
  if (command[0] === 'mco' && command[1] === 'argocd-sync' && command.includes('--refresh-applicationsets')) {
    return 'refresher';
  }
  if (command[0] === 'mco' && command[1] === 'argocd-sync' && command.includes('--sync-cluster-secrets')) {
    return 'secret-syncer';
  }
  throw new Error(`docs/argocd.md walk-through: unexpected command "${command.join(' ')}"`);
}

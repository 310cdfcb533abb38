// The soak's stack: a hub and three members (real kube-apiservers on one real
// etcd, @mco/testkit), the built `mco controller` as two replicas sharing two
// shards, the built `mco flux` in rendering mode, and Flux's real
// source-controller and kustomize-controller delivering each placement's
// workload from a Git repository; and the Argo CD path: the built
// `mco argocd-plugin` and `mco argocd-sync` (ApplicationSet refresh and
// cluster Secret sync) with Argo CD's real argocd-applicationset-controller
// generating an Application per cluster of two placements; and `mco
// configsync` applying a RepoSync per cluster of one placement on its members;
// and one placement delivered by flux-operator: `mco flux --input-providers`
// writes its ResourceSetInputProviders, and a ResourceSet generates the
// Kustomizations. Three placements, one per delivery path, autoscale on the
// controller's `kubernetes` signal source, which reads an HPA on each member
// whose status the load writes.
// Every process here can be killed and started again by the fault injector.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import {
  fluxControllerCrds,
  fluxControllerTool,
  freePort,
  requireTool,
  startControlPlane,
  startFluxController,
  startGitServer,
  startServer,
  stopServer,
  tailOf,
  thirdPartyCrd,
  type ClusterHandle,
  type ControlPlane,
  type GitServer,
  type RawResponse,
  type ServerProcess,
} from '@mco/testkit';
import { stringify } from 'yaml';
import { builtMco } from '../test/built.js';
import { clusterProfiles, CREDENTIAL_PLUGIN, PROVIDER } from '../test/walkthrough-fixtures.js';
import { MEMBER_LABEL, PLACEMENT_LABEL } from './observe.js';
import { FaultyProxy } from './proxy.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** The prepared tools the soak needs besides kube-apiserver and etcd. */
export const SOAK_TOOLS = [
  fluxControllerTool('source-controller'),
  fluxControllerTool('kustomize-controller'),
  fluxControllerTool('flux-operator'),
  'argocd',
];

export const MEMBERS = ['east', 'west', 'north'] as const;
/**
 * Another server for the `profile-moved` fault: a fourth kube-apiserver no
 * ClusterProfile names until the fault rewrites a member's profile to it (a
 * cluster re-created elsewhere under the same name). The checkers do not
 * watch it: what lands there is the new server's, not the member's.
 */
export const SPARE = 'spare';
export const PLACEMENTS = ['p1', 'p2', 'p3', 'p4'] as const;
export const CONTROLLERS = ['controller-0', 'controller-1'] as const;
export const FLEET = 'fleet';
export const FLUX_NS = 'flux-system';
export const ARGOCD_NS = 'argocd';
/** The placements an ApplicationSet with mco's plugin generator delivers too (besides `mco flux`). */
export const ARGO_PLACEMENTS: readonly string[] = ['p1', 'p2'];
export const APPSET_CONTROLLER = 'argocd-applicationset-controller';
/** The placements `mco configsync` delivers too: a RepoSync on each listed member, named after the placement. */
export const CONFIGSYNC_PLACEMENTS: readonly string[] = ['p3'];
const TEMPLATE_ANNOTATION = 'configsync.mco.x-k8s.io/template';
/**
 * The placements flux-operator delivers (docs/flux.md, Flux Operator mode): a
 * ResourceSet templates a Kustomization per input provider `mco flux` writes
 * for them; `mco flux` renders no Kustomization of its own for them.
 */
export const OPERATOR_PLACEMENTS: readonly string[] = ['p4'];
/** The delivery engines the `engine-kill` fault kills: Flux's kustomize-controller and flux-operator. */
export const ENGINES = ['kustomize-controller', 'flux-operator'] as const;
/**
 * The placements that autoscale for capacity on the controller's `kubernetes`
 * signal source (docs/signals.md), every member eligible in the order of
 * MEMBERS; the others follow the `cluster-list` the load writes. One per
 * delivery path at least: `p2` goes by Flux and Argo CD, `p3` by Flux and
 * Config Sync, `p4` by flux-operator.
 */
export const SCALING_PLACEMENTS: readonly string[] = ['p2', 'p3', 'p4'];
const SIGNAL_SOURCE = 'members';
/** An autoscaling placement's HPA on each member: its maximum (its minimum is 1). */
const HPA_MAX = 4;
/** What the load makes a member's HPA report: at its maximum and limited, within range, or at its minimum and limited. */
export type HpaLevel = 'ceiling' | 'busy' | 'quiet';
export const PLACEMENT_NS = 'soak';
export const WORKLOAD_NS = 'default';
/** What delivery applies per placement on a member: [API path prefix, plural, kind]. */
export const WORKLOAD_KINDS = [
  ['/api/v1', 'configmaps', 'ConfigMap'],
  ['/api/v1', 'services', 'Service'],
  ['/apis/apps/v1', 'deployments', 'Deployment'],
] as const;

/** A placement's workload in Git: a ConfigMap, a Service and a Deployment, labelled with the placement. */
function workload(placement: string): string {
  const metadata = (kind: string) => ({
    name: `${placement}-web`,
    namespace: WORKLOAD_NS,
    labels: { [PLACEMENT_LABEL]: placement, kind: kind.toLowerCase() },
  });
  const app = { app: `${placement}-web` };
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: metadata('ConfigMap'), data: { cluster: '${MCO_CLUSTER_NAME}' } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: metadata('Service'),
      spec: { selector: app, ports: [{ port: 80, targetPort: 8080 }] },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: metadata('Deployment'),
      spec: {
        replicas: 1,
        selector: { matchLabels: app },
        template: {
          metadata: { labels: app },
          spec: { containers: [{ name: 'web', image: 'registry.example/web:1' }] },
        },
      },
    },
  ]
    .map((o) => stringify(o))
    .join('---\n');
}

/** A placement's Kustomization, as `mco flux` renders it and the ResourceSet templates it: its workload from Git. */
const kustomizationSpec = (placement: string) => ({
  interval: '1m',
  retryInterval: '10s',
  timeout: '30s',
  path: `./${placement}`,
  prune: true,
  sourceRef: { kind: 'GitRepository', name: 'soak' },
});

/**
 * A ResourceSet per operator placement, as examples/flux/resourceset.yaml:
 * a Kustomization per input provider of the placement, labelled with the
 * placement and cluster slug as `mco flux` labels what it renders.
 */
const resourceSets = () =>
  OPERATOR_PLACEMENTS.map((p) => ({
    apiVersion: 'fluxcd.controlplane.io/v1',
    kind: 'ResourceSet',
    metadata: { name: p, namespace: FLUX_NS },
    spec: {
      inputsFrom: [
        {
          apiVersion: 'fluxcd.controlplane.io/v1',
          kind: 'ResourceSetInputProvider',
          selector: {
            matchLabels: {
              'app.kubernetes.io/managed-by': 'mco-flux',
              'orchestra.multicluster.x-k8s.io/placement': p,
              'orchestra.multicluster.x-k8s.io/placement-namespace': PLACEMENT_NS,
            },
          },
        },
      ],
      resources: [
        {
          apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
          kind: 'Kustomization',
          metadata: {
            name: `${p}-<< inputs.clusterSlug >>`,
            namespace: FLUX_NS,
            labels: {
              'orchestra.multicluster.x-k8s.io/placement': p,
              'orchestra.multicluster.x-k8s.io/cluster': '<< inputs.clusterSlug >>',
            },
          },
          spec: {
            ...kustomizationSpec(p),
            kubeConfig: { secretRef: { name: '<< inputs.kubeconfigSecretName >>', key: 'value' } },
            postBuild: { substitute: { MCO_CLUSTER_NAME: '<< inputs.clusterName | quote >>' } },
          },
        },
      ],
    },
  }));

/**
 * What argocd-server would have created (the `default` AppProject, Argo CD's
 * settings), the plugin's token Secret and address (docs/argocd.md, steps 3
 * and 4), and one ApplicationSet per Argo CD placement: the plugin generator,
 * an Application per listed cluster, labelled with its placement and member.
 * `preserveResourcesOnDeletion`: no application-controller runs here to
 * remove the resources finalizer, so Applications go when Argo CD deletes them.
 */
function argoObjects(pluginUrl: string, token: string, repoUrl: string): object[] {
  const partOf = { 'app.kubernetes.io/part-of': 'argocd' };
  const encode = (text: string) => Buffer.from(text).toString('base64');
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'argocd-secret', namespace: ARGOCD_NS, labels: partOf },
      data: { 'server.secretkey': encode(randomBytes(32).toString('base64')) },
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-cm', namespace: ARGOCD_NS, labels: partOf } },
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      metadata: { name: 'default', namespace: ARGOCD_NS },
      spec: {
        sourceRepos: ['*'],
        destinations: [{ name: '*', server: '*', namespace: '*' }],
        clusterResourceWhitelist: [{ group: '*', kind: '*' }],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'mco-argocd-plugin-token', namespace: ARGOCD_NS, labels: partOf },
      data: { token: encode(token) },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-mco-placement', namespace: ARGOCD_NS },
      data: { baseUrl: pluginUrl, token: '$mco-argocd-plugin-token:token', requestTimeout: '10' },
    },
    ...ARGO_PLACEMENTS.map((p) => ({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: p, namespace: ARGOCD_NS },
      spec: {
        goTemplate: true,
        goTemplateOptions: ['missingkey=error'],
        generators: [
          {
            plugin: {
              configMapRef: { name: 'argocd-mco-placement' },
              input: {
                parameters: {
                  multiClusterOrchestraPlacementName: p,
                  multiClusterOrchestraPlacementNamespace: PLACEMENT_NS,
                },
              },
              requeueAfterSeconds: 10,
            },
          },
        ],
        syncPolicy: { preserveResourcesOnDeletion: true },
        template: {
          metadata: {
            name: `{{.clusterProfileName}}-${p}`,
            labels: { [PLACEMENT_LABEL]: p, [MEMBER_LABEL]: '{{.clusterProfileName}}' },
          },
          spec: {
            project: 'default',
            destination: { name: '{{.name}}', namespace: WORKLOAD_NS },
            source: { repoURL: repoUrl, path: p, targetRevision: 'main' },
          },
        },
      },
    })),
  ];
}

/**
 * A Config Sync placement's template (docs/configsync.md): the RepoSync mco
 * applies on each listed member, in the placement's namespace. No Config Sync
 * reconciler runs here (it is not buildable), so the RepoSync is what the
 * checkers follow.
 */
const repoSyncTemplate = (placement: string, repoUrl: string) =>
  stringify({
    apiVersion: 'configsync.gke.io/v1beta1',
    kind: 'RepoSync',
    spec: { sourceType: 'git', git: { repo: repoUrl, branch: 'main', dir: placement, auth: 'none' } },
  });

/** A process the injector may kill (-9) or stop (SIGTERM) and start again. */
export class Managed {
  private current: ServerProcess | undefined;
  /** Starts that failed and were retried (a crash loop). */
  crashes = 0;

  constructor(
    readonly name: string,
    private readonly spawn: () => Promise<ServerProcess>,
  ) {}

  /**
   * Starts it and waits until healthy; a start that fails (say, the hub is
   * down and the process exits) is retried with a back-off, as the kubelet
   * restarts a crashing container. `restarts` counts those failed starts.
   */
  async start(timeoutMs = 300_000): Promise<void> {
    if (this.current && !this.current.hasExited()) return;
    const deadline = Date.now() + timeoutMs;
    for (let backoff = 1_000; ; backoff = Math.min(backoff * 2, 10_000)) {
      try {
        this.current = await this.spawn();
        return;
      } catch (error) {
        this.crashes++;
        if (Date.now() + backoff > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, backoff));
      }
    }
  }

  /** SIGKILL (`kill`) or SIGTERM with 25 s grace; resolves once it has exited. */
  async stop(kill: boolean): Promise<void> {
    if (this.current) await stopServer(this.current, kill ? 0 : 25_000);
  }

  pid(): number | undefined {
    return this.current && !this.current.hasExited() ? this.current.child.pid : undefined;
  }

  tail(lines = 20): string {
    return this.current ? `--- ${this.name}\n${tailOf(this.current.logFile, lines)}` : '';
  }
}

/** Waits until `url` answers 200 (a process's /healthz), or throws after `timeoutMs`. */
async function healthy(url: string, server: ServerProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.hasExited()) throw new Error(`${url}: the process exited; its log:\n${tailOf(server.logFile)}`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  // Stopped, so that the retried start does not run a second copy beside it.
  await stopServer(server, 0);
  throw new Error(`${url} not healthy within ${timeoutMs} ms; log:\n${tailOf(server.logFile)}`);
}

const clusterList = (members: readonly string[]) => [
  { type: 'cluster-list', arguments: { clusters: members.map((m) => `${FLEET}/${m}`).join(',') } },
];

/**
 * A placement's spec: the clusters the load wants it on (`cluster-list`), or
 * for an autoscaling placement every member, scaled on the signals of its HPA
 * (`members` unused): one cluster below its ceiling at least, timers short so
 * that scale-in follows the load within seconds.
 */
export const placementSpec = (placement: string, members: readonly string[]) =>
  SCALING_PLACEMENTS.includes(placement)
    ? {
        rules: clusterList(MEMBERS),
        scaling: {
          autoscaleForCapacity: {
            minClustersBelowCapacityCeiling: 1,
            maxClusters: MEMBERS.length,
            signalSource: SIGNAL_SOURCE,
            workloadDetails: {
              namespace: WORKLOAD_NS,
              deploymentName: `${placement}-web`,
              hpaName: `${placement}-web`,
            },
            behavior: { scaleIn: { stabilizationWindowSeconds: 5, cooldownSeconds: 5 } },
          },
        },
      }
    : { rules: clusterList(members) };

/**
 * The HPA levels for an autoscaling placement whose load needs its first
 * `demand` members: those before the last at their ceiling, the last within
 * range, the rest at their minimum (wanting scale-in). §4 of
 * docs/placement-rules.md then lists exactly those `demand` members: it adds
 * the next while every listed one is at its ceiling, and scales in the
 * lowest-priority one that wants it while another has headroom.
 */
export function hpaLevels(demand: number): Record<string, HpaLevel> {
  return Object.fromEntries(
    MEMBERS.map((m, i) => [m, i < demand - 1 ? 'ceiling' : i === demand - 1 ? 'busy' : 'quiet'] as const),
  );
}

/** The HPA status the kubernetes source reads for a level (docs/signals.md). */
function hpaStatus(level: HpaLevel) {
  const replicas = level === 'ceiling' ? HPA_MAX : level === 'busy' ? 2 : 1;
  const [status, reason] =
    level === 'ceiling'
      ? ['True', 'TooManyReplicas']
      : level === 'quiet'
        ? ['True', 'TooFewReplicas']
        : ['False', 'DesiredWithinRange'];
  return {
    currentReplicas: replicas,
    desiredReplicas: replicas,
    conditions: [
      {
        type: 'ScalingLimited',
        status,
        reason,
        message: `soak load: ${level}`,
        lastTransitionTime: new Date().toISOString(),
      },
    ],
  };
}

export class SoakStack {
  readonly processes: Managed[] = [];
  private etcd: ServerProcess | undefined;
  private stopped = false;
  /** `placement|member` -> the HPA level the load wants there, and the chain of writes that puts it there. */
  private readonly levels = new Map<string, HpaLevel>();
  private readonly levelWrites = new Map<string, Promise<void>>();

  private constructor(
    readonly plane: ControlPlane,
    readonly dir: string,
    private readonly git: GitServer,
    /** What mco and Flux reach each member through (its ClusterProfile's server): the `member-slow` fault. */
    readonly proxies: Readonly<Record<string, FaultyProxy>>,
  ) {}

  static async start(): Promise<SoakStack> {
    const mco = builtMco();
    const argocd = requireTool('argocd');
    const plane = await startControlPlane({ clusters: [...MEMBERS, SPARE] });
    const dir = mkdtempSync(join(tmpdir(), 'mco-soak-'));
    let git: GitServer | undefined;
    const proxies: Record<string, FaultyProxy> = {};
    try {
      for (const m of MEMBERS) proxies[m] = await FaultyProxy.start(plane.members[m]!.server);
      git = await startGitServer();
      git.commit('soak', Object.fromEntries(PLACEMENTS.map((p) => [`${p}/workload.yaml`, workload(p)])));
      const stack = new SoakStack(plane, dir, git, proxies);
      await plane.hub.installCrds([
        join(REPO, 'apps/mco/chart/crds'),
        thirdPartyCrd('kustomize.toolkit.fluxcd.io_kustomizations.yaml'),
        ...fluxControllerCrds('source-controller'),
        ...fluxControllerCrds('flux-operator'),
        join(argocd, 'crds'),
      ]);
      for (const m of [...MEMBERS, SPARE]) {
        await plane.members[m]!.installCrds([thirdPartyCrd('configsync.gke.io_reposyncs.yaml')]);
        await plane.members[m]!.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: PLACEMENT_NS } }]);
      }
      // The autoscaling placements' HPAs, on the members only (a moved profile's new server has none:
      // no signal, so nothing scales on it). Not delivered: the load writes their status, which no
      // HPA controller overwrites here.
      for (const m of MEMBERS) {
        await plane.members[m]!.apply(
          SCALING_PLACEMENTS.map((p) => ({
            apiVersion: 'autoscaling/v2',
            kind: 'HorizontalPodAutoscaler',
            metadata: { name: `${p}-web`, namespace: WORKLOAD_NS },
            spec: {
              scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: `${p}-web` },
              minReplicas: 1,
              maxReplicas: HPA_MAX,
            },
          })) as never[],
        );
      }
      await plane.hub.apply(
        [FLUX_NS, PLACEMENT_NS, 'mco-system', ARGOCD_NS].map((name) => ({
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name },
        })),
      );
      await plane.hub.apply([
        {
          apiVersion: 'source.toolkit.fluxcd.io/v1',
          kind: 'GitRepository',
          metadata: { name: 'soak', namespace: FLUX_NS },
          spec: { url: git.repoUrl('soak'), interval: '10m', ref: { branch: 'main' } },
        } as never,
        ...(resourceSets() as never[]),
      ]);
      const hubFile = join(dir, 'hub.kubeconfig');
      writeFileSync(hubFile, plane.hub.adminKubeConfig().exportConfig(), { mode: 0o600 });
      await stack.restoreProfiles([...MEMBERS]);

      const providers = join(dir, 'providers.yaml');
      writeFileSync(
        providers,
        stringify({
          providers: [
            {
              name: PROVIDER,
              execConfig: {
                apiVersion: 'client.authentication.k8s.io/v1',
                command: credentialPlugin(dir, plane, proxies),
                provideClusterInfo: true,
              },
              allowedServers: [...MEMBERS.map((m) => proxies[m]!.url), plane.members[SPARE]!.server],
            },
          ],
        }),
      );
      const signalSources = join(dir, 'signal-sources.yaml');
      writeFileSync(
        signalSources,
        stringify({
          sources: [
            {
              name: SIGNAL_SOURCE,
              plugin: 'kubernetes',
              config: { providersFile: providers, qps: 20, burst: 40 },
              placementNamespaces: [PLACEMENT_NS],
            },
          ],
        }),
      );
      const templates = join(dir, 'templates.yaml');
      writeFileSync(
        templates,
        stringify({
          templates: PLACEMENTS.filter((p) => !OPERATOR_PLACEMENTS.includes(p)).map((p) => ({
            placement: { namespace: PLACEMENT_NS, name: p },
            kustomization: {
              metadata: { name: p },
              spec: kustomizationSpec(p),
            },
          })),
        }),
      );

      // Flux's engines.
      for (const name of ['source-controller', ...ENGINES] as const) {
        const engine = new Managed(
          name,
          async () => (await startFluxController(name, { kubeconfig: hubFile, namespace: FLUX_NS, dir })).process,
        );
        stack.processes.push(engine);
        await engine.start();
      }
      // mco: two controller replicas over two shards, and Flux delivery.
      // `fixed`: an address others name (the plugin's, in Argo CD's ConfigMap), kept across restarts.
      const mcoProcess = (name: string, args: (listen: string) => string[], fixed?: string) =>
        new Managed(name, async () => {
          const listen = fixed ?? `127.0.0.1:${await freePort()}`;
          const server = startServer(process.execPath, [mco, ...args(listen)], join(dir, `${name}.log`));
          await healthy(`http://${listen}/healthz`, server);
          return server;
        });
      for (const name of CONTROLLERS) {
        stack.processes.push(
          mcoProcess(name, (listen) => [
            'controller',
            `--kubeconfig=${hubFile}`,
            '--leader-elect=true',
            '--shards=2',
            `--identity=${name}`,
            `--listen=${listen}`,
            '--lease-duration=8s',
            '--renew-deadline=6s',
            '--retry-period=1s',
            `--cluster-profile-namespaces=${FLEET}`,
            `--signal-sources=${signalSources}`,
            '--signal-poll-interval=3s',
            // The HPAs sit beside the delivered Deployment, in WORKLOAD_NS, not the placements' namespace.
            '--allow-cross-namespace-workloads',
          ]),
        );
      }
      stack.processes.push(
        mcoProcess('mco-flux', (listen) => [
          'flux',
          `--kubeconfig=${hubFile}`,
          `--provider-file=${providers}`,
          `--templates=${templates}`,
          '--input-providers',
          '--no-helm-releases',
          `--listen=${listen}`,
          `--cluster-profile-namespaces=${FLEET}`,
        ]),
      );
      // The Argo CD path: the plugin server, mco's ApplicationSet refresher and cluster Secret
      // syncer in one process (docs/argocd.md runs them as two), and Argo CD's ApplicationSet controller.
      const pluginListen = `127.0.0.1:${await freePort()}`;
      const token = join(dir, 'plugin-token');
      writeFileSync(token, randomBytes(36).toString('base64'), { mode: 0o600 });
      await plane.hub.apply(
        argoObjects(`http://${pluginListen}`, readFileSync(token, 'utf8'), git.repoUrl('soak')) as never[],
      );
      stack.processes.push(
        mcoProcess(
          'mco-argocd-plugin',
          () => [
            'argocd-plugin',
            `--kubeconfig=${hubFile}`,
            `--token-file=${token}`,
            `--listen=${pluginListen}`,
            `--provider-file=${providers}`,
            `--cluster-profile-namespaces=${FLEET}`,
          ],
          pluginListen,
        ),
        mcoProcess('mco-argocd-sync', (listen) => [
          'argocd-sync',
          `--kubeconfig=${hubFile}`,
          '--refresh-applicationsets',
          `--plugin-url=http://${pluginListen}`,
          '--sync-cluster-secrets',
          `--argocd-namespace=${ARGOCD_NS}`,
          `--provider-file=${providers}`,
          `--listen=${listen}`,
          `--cluster-profile-namespaces=${FLEET}`,
        ]),
        new Managed(APPSET_CONTROLLER, async () => {
          const [metrics, probe, webhook] = [await freePort(), await freePort(), await freePort()];
          // Argo CD v3.2.6's controller reads KUBECONFIG outside a pod, not --kubeconfig (docs/argocd.md).
          const server = startServer(
            join(argocd, APPSET_CONTROLLER),
            [
              `--namespace=${ARGOCD_NS}`,
              `--metrics-addr=127.0.0.1:${metrics}`,
              `--probe-addr=127.0.0.1:${probe}`,
              `--webhook-addr=127.0.0.1:${webhook}`,
            ],
            join(dir, `${APPSET_CONTROLLER}.log`),
            { KUBECONFIG: hubFile },
          );
          // Its probe address serves no /healthz in v3.2.6: up once it serves /metrics.
          await healthy(`http://127.0.0.1:${metrics}/metrics`, server);
          return server;
        }),
      );
      stack.processes.push(
        mcoProcess('mco-configsync', (listen) => [
          'configsync',
          `--kubeconfig=${hubFile}`,
          `--provider-file=${providers}`,
          `--listen=${listen}`,
          `--cluster-profile-namespaces=${FLEET}`,
        ]),
      );
      for (const p of stack.processes) await p.start();
      return stack;
    } catch (error) {
      for (const p of Object.values(proxies)) await p.stop();
      await git?.stop().catch(() => undefined);
      await plane.stop();
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  process(name: string): Managed {
    const found = this.processes.find((p) => p.name === name);
    if (!found) throw new Error(`no process ${name}`);
    return found;
  }

  hub(): KubeConfig {
    return this.plane.hub.adminKubeConfig();
  }

  /**
   * Writes a placement's spec (server-side apply), retrying while the hub
   * does not answer; a Config Sync placement's template annotation is written
   * with it each time (an apply that left it out would remove it).
   */
  async writePlacement(name: string, spec: object, timeoutMs = 120_000): Promise<void> {
    const annotations = CONFIGSYNC_PLACEMENTS.includes(name)
      ? { [TEMPLATE_ANNOTATION]: repoSyncTemplate(name, this.git.repoUrl('soak')) }
      : undefined;
    await retry(timeoutMs, () =>
      this.plane.hub.apply([
        {
          apiVersion: 'orchestra.multicluster.x-k8s.io/v1alpha1',
          kind: 'MultiKubernetesClusterPlacement',
          metadata: { name, namespace: PLACEMENT_NS, ...(annotations ? { annotations } : {}) },
          spec,
        } as never,
      ]),
    );
  }

  /**
   * Sets the HPA level the load wants for an autoscaling placement on each
   * member. Each member's status is written in the background, retried while
   * the member is down, always with the latest level; `levelsWritten` waits
   * for every write.
   */
  setLevels(placement: string, levels: Readonly<Record<string, HpaLevel>>): void {
    for (const [member, level] of Object.entries(levels)) {
      const key = `${placement}|${member}`;
      this.levels.set(key, level);
      const write = async () => {
        while (!this.stopped) {
          const latest = this.levels.get(key)!;
          const done = await ok(
            this.plane.members[member]!.request(
              `/apis/autoscaling/v2/namespaces/${WORKLOAD_NS}/horizontalpodautoscalers/${placement}-web/status`,
              {
                method: 'PATCH',
                headers: { 'content-type': 'application/merge-patch+json' },
                body: JSON.stringify({ status: hpaStatus(latest) }),
                timeoutMs: 10_000,
              },
            ),
          ).then(
            () => true,
            () => false,
          );
          if (done) return;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      };
      this.levelWrites.set(key, (this.levelWrites.get(key) ?? Promise.resolve()).then(write));
    }
  }

  async levelsWritten(): Promise<void> {
    await Promise.all(this.levelWrites.values());
  }

  async deleteProfiles(members: readonly string[]): Promise<void> {
    const custom = this.hub().makeApiClient(CustomObjectsApi);
    for (const name of members) {
      await retry(120_000, () =>
        custom
          .deleteNamespacedCustomObject({
            group: 'multicluster.x-k8s.io',
            version: 'v1alpha1',
            plural: 'clusterprofiles',
            namespace: FLEET,
            name,
          })
          .catch((error: { code?: number }) => {
            if (error.code !== 404) throw error;
          }),
      );
    }
  }

  /** (Re)creates the members' ClusterProfiles as their cluster manager would: healthy, with the provider. */
  async restoreProfiles(members: readonly string[]): Promise<void> {
    await retry(120_000, () =>
      clusterProfiles(
        this.plane,
        FLEET,
        // The member as its proxy: the same CA, the proxy's address.
        members.map((m) => ({
          name: m,
          member: Object.create(this.plane.members[m]!, { server: { value: this.proxies[m]!.url } }) as ClusterHandle,
        })),
      ),
    );
  }

  /**
   * Rewrites the member's ClusterProfile, same name, to name the spare
   * server, emptied first as a new cluster would be: delivery follows the
   * profile there, and what it delivered on the member's own server stays
   * (doubt: mco cannot tell a moved cluster from a new one).
   * `restoreProfiles` points it back.
   */
  async moveProfile(member: string): Promise<void> {
    const spare = this.plane.members[SPARE]!;
    const paths = [
      ...WORKLOAD_KINDS.map(
        ([prefix, plural]) => `${prefix}/namespaces/${WORKLOAD_NS}/${plural}?labelSelector=${PLACEMENT_LABEL}`,
      ),
      `/apis/configsync.gke.io/v1beta1/namespaces/${PLACEMENT_NS}/reposyncs`,
    ];
    for (const path of paths) await retry(120_000, () => ok(spare.request(path, { method: 'DELETE' })));
    await retry(120_000, () => clusterProfiles(this.plane, FLEET, [{ name: member, member: spare }]));
  }

  /** What delivery put on the spare server: `Kind name` of its workload objects and RepoSyncs. */
  async onSpare(): Promise<string[]> {
    const spare = this.plane.members[SPARE]!;
    const names: string[] = [];
    const list = async (path: string, kind: string) => {
      const { items } = JSON.parse((await ok(spare.request(path))).body) as { items: { metadata: { name: string } }[] };
      names.push(...items.map((i) => `${kind} ${i.metadata.name}`));
    };
    await list(`/apis/apps/v1/namespaces/${WORKLOAD_NS}/deployments?labelSelector=${PLACEMENT_LABEL}`, 'Deployment');
    await list(`/apis/configsync.gke.io/v1beta1/namespaces/${PLACEMENT_NS}/reposyncs`, 'RepoSync');
    return names.sort();
  }

  /** etcd killed (-9) and started again on its data, as its pod would be. */
  async restartEtcd(downMs: number): Promise<void> {
    const pid = this.etcd?.child.pid ?? etcdPid(this.plane.dir);
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    if (this.etcd) await stopServer(this.etcd, 0);
    else {
      process.kill(-pid, 'SIGKILL');
      while (existsSync(`/proc/${pid}/cmdline`) && readFileSync(`/proc/${pid}/cmdline`, 'utf8') !== '') {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    await new Promise((resolve) => setTimeout(resolve, downMs));
    this.etcd = startServer(argv[0]!, argv.slice(1), join(this.plane.dir, 'etcd.log'));
    await healthy(`${this.plane.etcdEndpoint}/health`, this.etcd);
  }

  etcdPid(): number {
    return this.etcd?.child.pid ?? etcdPid(this.plane.dir);
  }

  logs(lines = 20): string {
    return this.processes.map((p) => p.tail(lines)).join('\n');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const p of [...this.processes].reverse()) await p.stop(true).catch(() => undefined);
    await this.git.stop().catch(() => undefined);
    for (const p of Object.values(this.proxies)) await p.stop();
    await this.plane.stop();
    if (this.etcd) await stopServer(this.etcd, 0);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The credential plugin of the providers file: for the member (proxy) server
 * mco passes in KUBERNETES_EXEC_INFO, the member's admin token.
 */
function credentialPlugin(dir: string, plane: ControlPlane, proxies: Readonly<Record<string, FaultyProxy>>): string {
  const file = join(dir, CREDENTIAL_PLUGIN);
  const cases = [
    ...MEMBERS.map((m) => `  *'"server":"${proxies[m]!.url}"'*) token='${plane.members[m]!.token('admin')}' ;;`),
    `  *'"server":"${plane.members[SPARE]!.server}"'*) token='${plane.members[SPARE]!.token('admin')}' ;;`,
  ];
  writeFileSync(
    file,
    `#!/bin/sh
case "$KUBERNETES_EXEC_INFO" in
${cases.join('\n')}
  *) echo "no member named in KUBERNETES_EXEC_INFO" >&2; exit 1 ;;
esac
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$token"
`,
    { mode: 0o755 },
  );
  return file;
}

/** The pid of the control plane's etcd (its data dir is under the plane's dir). */
function etcdPid(planeDir: string): number {
  const marker = `--data-dir=${join(planeDir, 'etcd')}`;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(marker)) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no etcd process with ${marker}`);
}

/** The response, or an error naming its status. */
async function ok(response: Promise<RawResponse>): Promise<RawResponse> {
  const r = await response;
  if (r.status >= 300) throw new Error(`HTTP ${r.status}: ${r.body.slice(0, 200)}`);
  return r;
}

/** Retries `action` every second until it succeeds or `timeoutMs` passed (then throws its last error). */
export async function retry<T>(timeoutMs: number, action: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await action();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

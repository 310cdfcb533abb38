import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { locateBinaries } from './binaries.js';
import { rawRequest, type RawRequestOptions, type RawResponse } from './http.js';
import { applyObjects, cachedListPath, installCrds, type CrdSource, type InstalledCrd } from './objects.js';
import { freePort, ProcessReaper, startServer, stopServer, tailOf, type ServerProcess } from './processes.js';

/**
 * Users every apiserver knows from its token file. `admin` is in
 * `system:masters`; the others have no group and so no permission until a
 * test binds them to a (real) ClusterRole.
 */
export const DEFAULT_USERS: Readonly<Record<string, readonly string[]>> = {
  admin: ['system:masters'],
  controller: [],
  plugin: [],
  provider: [],
};

export interface ControlPlaneOptions {
  /** Names of simulated member clusters: one more kube-apiserver each, sharing etcd through `--etcd-prefix`. */
  readonly clusters?: readonly string[];
  /** Extra token users (name -> groups), added to {@link DEFAULT_USERS}; the token file is fixed at start. */
  readonly users?: Readonly<Record<string, readonly string[]>>;
  /** `--min-request-timeout`: watches end after 1-2x this, which exercises reconnects. */
  readonly minRequestTimeoutSeconds?: number;
  /** Appended to every kube-apiserver's command line (a repeated flag overrides the default). */
  readonly extraApiserverFlags?: readonly string[];
  /** How long to wait for readiness of each server (default 90 s: two shared cores can be slow). */
  readonly startTimeoutMs?: number;
}

export interface StopOptions {
  /** SIGKILL at once (a crash: open connections just break) instead of a graceful shutdown. */
  readonly kill?: boolean;
}

/** A `KubeConnection` (@mco/runtime) with a fixed bearer token; declared here so the testkit needs no @mco package. */
export interface TokenConnection {
  readonly server: string;
  readonly caData: string;
  readonly insecureSkipTlsVerify: false;
  getCredential(): Promise<{ token: string }>;
  invalidate(): void;
}

export interface ClusterHandle {
  /** `hub` or the member's name. */
  readonly name: string;
  /** `https://127.0.0.1:<port>`; stays the same across {@link ClusterHandle.restart}. */
  readonly server: string;
  /** Base64 PEM of the apiserver's self-signed CA (kubeconfig `certificate-authority-data`). */
  readonly caData: string;
  /** User names in the token file. */
  readonly users: readonly string[];
  /** The apiserver's `--cert-dir`: its self-signed `apiserver.crt` (for 127.0.0.1 and localhost, then its CA) and `apiserver.key`. */
  readonly certDir: string;
  /** The bearer token of a user from {@link ClusterHandle.users}. */
  token(user: string): string;
  /** A kubeconfig for `admin` (system:masters). */
  adminKubeConfig(): KubeConfig;
  /** A kubeconfig for a token user; its kubeconfig user is named `<cluster>-<user>` (distinct per cluster). */
  kubeConfigFor(user: string, namespace?: string): KubeConfig;
  /** The same as a `KubeConnection` of @mco/runtime (for @mco/kube-runtime's own client). */
  connectionFor(user: string): TokenConnection;
  /**
   * A raw HTTPS request (for what typed clients do not cover: Table output,
   * /openapi/v3, health endpoints), as `user` (default `admin`).
   */
  request(path: string, options?: RawRequestOptions & { readonly user?: string }): Promise<RawResponse>;
  /** Server-side apply as admin (field manager `mco-testkit`), sending the objects' JSON as given. */
  apply(objects: readonly KubernetesObject[]): Promise<KubernetesObject[]>;
  /** Applies CRDs as admin and waits until each is Established and serving. */
  installCrds(sources: readonly CrdSource[]): Promise<InstalledCrd[]>;
  /**
   * Stops this kube-apiserver: graceful shutdown (SIGTERM, SIGKILL after 5 s),
   * or a crash with `{ kill: true }` (SIGKILL at once). etcd keeps the data.
   */
  stop(options?: StopOptions): Promise<void>;
  /** Starts it again on the same port with the same certificates and tokens, and waits until ready. */
  start(): Promise<void>;
  /** {@link ClusterHandle.stop} then {@link ClusterHandle.start}. */
  restart(options?: StopOptions): Promise<void>;
  isRunning(): boolean;
}

export interface ControlPlane {
  readonly hub: ClusterHandle;
  readonly members: Readonly<Record<string, ClusterHandle>>;
  /** The hub, then the members in the order given. */
  readonly clusters: readonly ClusterHandle[];
  /** `http://127.0.0.1:<port>` of the shared etcd. */
  readonly etcdEndpoint: string;
  /** Milliseconds from call to every apiserver ready (binaries located beforehand). */
  readonly startupMs: number;
  /** Temp dir with data, certificates, tokens and each server's log; removed by `stop()`. */
  readonly dir: string;
  /** Kills every process and removes the temp dir; safe to call twice. */
  stop(): Promise<void>;
}

interface CrdSummary {
  spec: { group: string; names: { plural: string }; versions: { name: string; served: boolean }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const TOKEN_FILE_NAME = /^[A-Za-z0-9:@._-]+$/;
const PORT_ATTEMPTS = 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts etcd and one kube-apiserver per cluster (the hub plus `clusters`) on
 * loopback, with token auth and RBAC, and waits until all are ready. The
 * processes die with the test process even if `stop()` is never called.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const memberNames = options.clusters ?? [];
  for (const name of memberNames) {
    if (name === 'hub' || !CLUSTER_NAME.test(name)) {
      throw new Error(`startControlPlane: cluster name "${name}" must be a DNS label other than "hub"`);
    }
  }
  if (new Set(memberNames).size !== memberNames.length) throw new Error('startControlPlane: duplicate cluster names');
  const users = { ...DEFAULT_USERS, ...options.users };
  for (const [user, groups] of Object.entries(users)) {
    // The token file is CSV: keep names free of separators and quotes.
    if (![user, ...groups].every((n) => TOKEN_FILE_NAME.test(n))) {
      throw new Error(
        `startControlPlane: user "${user}" or one of its groups has characters other than ${TOKEN_FILE_NAME}`,
      );
    }
  }
  const binDir = locateBinaries();
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'mco-testkit-'));
  const reaper = new ProcessReaper(dir);
  const timeoutMs = options.startTimeoutMs ?? 90_000;
  const apiservers: Apiserver[] = [];
  let etcd: ServerProcess | undefined;
  try {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));

    const etcdStarted = await startEtcd(binDir, dir, reaper, timeoutMs);
    etcd = etcdStarted.process;
    const etcdEndpoint = etcdStarted.endpoint;

    const names = ['hub', ...memberNames];
    for (const name of names) {
      apiservers.push(new Apiserver(name, binDir, dir, etcdEndpoint, users, options, reaper, timeoutMs));
    }
    await Promise.all(apiservers.map((a) => a.start()));
    const startupMs = Date.now() - started;

    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      // Test data is thrown away: no need for graceful shutdown.
      await Promise.all(apiservers.map((a) => a.stop({ kill: true })));
      if (etcd) await stopServer(etcd, 0);
      reaper.dispose();
    };
    const [hub, ...members] = apiservers as [Apiserver, ...Apiserver[]];
    return {
      hub,
      members: Object.fromEntries(members.map((m) => [m.name, m])),
      clusters: apiservers,
      etcdEndpoint,
      startupMs,
      dir,
      stop,
    };
  } catch (error) {
    await Promise.all(apiservers.map((a) => a.stop({ kill: true })));
    if (etcd) await stopServer(etcd, 0);
    reaper.dispose();
    throw error;
  }
}

async function startEtcd(
  binDir: string,
  dir: string,
  reaper: ProcessReaper,
  timeoutMs: number,
): Promise<{ process: ServerProcess; endpoint: string }> {
  const logFile = join(dir, 'etcd.log');
  for (let attempt = 1; ; attempt++) {
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    const endpoint = `http://127.0.0.1:${clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const etcd = startServer(
      join(binDir, 'etcd'),
      [
        '--name=mco',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${endpoint}`,
        `--advertise-client-urls=${endpoint}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=mco=${peer}`,
        '--unsafe-no-fsync', // test data: speed over durability
        // A single member elects itself in ~0.1 s instead of ~1 s.
        '--heartbeat-interval=10',
        '--election-timeout=100',
        '--log-level=warn',
      ],
      logFile,
    );
    reaper.track(etcd.child.pid);
    const ready = await waitUntil(timeoutMs, etcd, async () => {
      const res = await fetch(`${endpoint}/health`).catch(() => undefined);
      return res?.ok === true && ((await res.json()) as { health?: string }).health === 'true';
    });
    if (ready) return { process: etcd, endpoint };
    await stopServer(etcd, 0);
    reaper.untrack(etcd.child.pid);
    if (attempt >= PORT_ATTEMPTS || !isPortClash(logFile)) {
      throw new Error(`etcd did not become healthy; end of its log:\n${tailOf(logFile)}`);
    }
  }
}

function isPortClash(logFile: string): boolean {
  return /address already in use/i.test(tailOf(logFile, 50));
}

/** Polls `check` every 100 ms; false once the process has exited or time is up. */
async function waitUntil(timeoutMs: number, server: ServerProcess, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.hasExited()) return false;
    if (await check().catch(() => false)) return true;
    await sleep(100);
  }
  return false;
}

class Apiserver implements ClusterHandle {
  readonly users: readonly string[];
  private readonly tokens: Readonly<Record<string, string>>;
  readonly certDir: string;
  private readonly tokenFile: string;
  private readonly logFile: string;
  private port = 0;
  private process: ServerProcess | undefined;
  private caPem = '';

  constructor(
    readonly name: string,
    private readonly binDir: string,
    private readonly dir: string,
    private readonly etcdEndpoint: string,
    users: Readonly<Record<string, readonly string[]>>,
    private readonly options: ControlPlaneOptions,
    private readonly reaper: ProcessReaper,
    private readonly timeoutMs: number,
  ) {
    this.users = Object.keys(users);
    this.tokens = Object.fromEntries(this.users.map((u) => [u, randomBytes(24).toString('hex')]));
    this.certDir = join(dir, name, 'certs');
    mkdirSync(this.certDir, { recursive: true });
    this.tokenFile = join(dir, name, 'tokens.csv');
    this.logFile = join(dir, name, 'kube-apiserver.log');
    // token,user,uid,"group1,group2" (kube-apiserver --token-auth-file format)
    const lines = Object.entries(users).map(
      ([user, groups]) => `${this.tokens[user]},${user},${user},"${groups.join(',')}"`,
    );
    writeFileSync(this.tokenFile, `${lines.join('\n')}\n`, { mode: 0o600 });
  }

  get server(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  get caData(): string {
    return Buffer.from(this.caPem).toString('base64');
  }

  token(user: string): string {
    const token = this.tokens[user];
    if (token === undefined) {
      throw new Error(`cluster ${this.name} has no user "${user}" (known: ${this.users.join(', ')})`);
    }
    return token;
  }

  adminKubeConfig(): KubeConfig {
    return this.kubeConfigFor('admin');
  }

  kubeConfigFor(user: string, namespace?: string): KubeConfig {
    const token = this.token(user);
    const kc = new KubeConfig();
    const userName = `${this.name}-${user}`;
    kc.loadFromOptions({
      clusters: [{ name: this.name, server: this.server, caData: this.caData, skipTLSVerify: false }],
      users: [{ name: userName, token }],
      contexts: [{ name: userName, cluster: this.name, user: userName, ...(namespace ? { namespace } : {}) }],
      currentContext: userName,
    });
    return kc;
  }

  connectionFor(user: string): TokenConnection {
    const token = this.token(user);
    return {
      server: this.server,
      caData: this.caData,
      insecureSkipTlsVerify: false,
      getCredential: () => Promise.resolve({ token }),
      invalidate: () => {},
    };
  }

  request(path: string, options: RawRequestOptions & { readonly user?: string } = {}): Promise<RawResponse> {
    return rawRequest(this.server, this.caPem, this.token(options.user ?? 'admin'), path, options);
  }

  apply(objects: readonly KubernetesObject[]): Promise<KubernetesObject[]> {
    return applyObjects(this, objects);
  }

  installCrds(sources: readonly CrdSource[]): Promise<InstalledCrd[]> {
    return installCrds(this, sources);
  }

  isRunning(): boolean {
    return this.process !== undefined && !this.process.hasExited();
  }

  async start(): Promise<void> {
    if (this.isRunning()) return;
    const keepPort = this.port !== 0; // a restart must keep the address clients know
    for (let attempt = 1; ; attempt++) {
      if (!keepPort) this.port = await freePort();
      const proc = startServer(join(this.binDir, 'kube-apiserver'), this.args(), this.logFile);
      this.process = proc;
      this.reaper.track(proc.child.pid);
      if (await waitUntil(this.timeoutMs, proc, () => this.isReady())) return;
      const clash = isPortClash(this.logFile);
      await this.stop({ kill: true });
      if (attempt >= PORT_ATTEMPTS || !clash || keepPort) {
        throw new Error(`kube-apiserver "${this.name}" did not become ready; end of its log:\n${tailOf(this.logFile)}`);
      }
    }
  }

  async stop(options: StopOptions = {}): Promise<void> {
    if (!this.process) return;
    await stopServer(this.process, options.kill ? 0 : 5_000);
    this.reaper.untrack(this.process.child.pid);
    this.process = undefined;
  }

  async restart(options: StopOptions = {}): Promise<void> {
    await this.stop(options);
    await this.start();
  }

  private args(): string[] {
    const dir = this.dir;
    return [
      `--etcd-servers=${this.etcdEndpoint}`,
      `--etcd-prefix=/mco/${this.name}`, // one etcd, one key space per simulated cluster
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${this.port}`,
      `--cert-dir=${this.certDir}`, // self-signed serving cert + CA, kept across restarts
      `--token-auth-file=${this.tokenFile}`,
      '--authorization-mode=RBAC',
      `--service-account-issuer=https://kubernetes.default.svc.cluster.local`,
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--disable-admission-plugins=ServiceAccount', // no controller-manager creates tokens/accounts
      '--profiling=false',
      // Saves ~1 s of start-up; pass --enable-priority-and-fairness=true to test with APF.
      '--enable-priority-and-fairness=false',
      ...(this.options.minRequestTimeoutSeconds !== undefined
        ? [`--min-request-timeout=${this.options.minRequestTimeoutSeconds}`]
        : []),
      ...(this.options.extraApiserverFlags ?? []),
    ];
  }

  /** /readyz passes and the `default` namespace exists (created shortly after start). */
  private async isReady(): Promise<boolean> {
    const certFile = join(this.certDir, 'apiserver.crt');
    if (!existsSync(certFile)) return false;
    // The file holds the serving certificate followed by its self-signed CA.
    this.caPem = readFileSync(certFile, 'utf8');
    const admin = this.token('admin');
    const readyz = await rawRequest(this.server, this.caPem, admin, '/readyz', { timeoutMs: 2_000 });
    if (readyz.status !== 200) return false;
    const ns = await rawRequest(this.server, this.caPem, admin, '/api/v1/namespaces/default', { timeoutMs: 2_000 });
    return ns.status === 200 && (await this.servesAllCrds(admin));
  }

  /**
   * After a restart, custom resources answer 429 until their watch cache is
   * initialised, although /readyz is already ok; wait for that so a test sees
   * the same API as before the restart.
   */
  private async servesAllCrds(admin: string): Promise<boolean> {
    const list = await rawRequest(
      this.server,
      this.caPem,
      admin,
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      {
        timeoutMs: 2_000,
      },
    );
    if (list.status !== 200) return false;
    const crds = (JSON.parse(list.body) as { items: CrdSummary[] }).items;
    for (const crd of crds) {
      const established = crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
      const version = crd.spec.versions.find((v) => v.served)?.name;
      if (!established || !version) continue;
      const path = cachedListPath(crd.spec.group, version, crd.spec.names.plural);
      if ((await rawRequest(this.server, this.caPem, admin, path, { timeoutMs: 2_000 })).status !== 200) return false;
    }
    return true;
  }
}

import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { McoError, type Credential, type KubeConnection } from '@mco/runtime';
import { parse as parseYaml } from 'yaml';
import { createCachedCredential } from './cached-credential.js';
import { runExecPlugin, type ExecClusterInfo, type ExecConfig } from './exec-plugin.js';

/** Where a pod's service account is mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadKubeConfigOptions {
  /** `--kubeconfig`: a file, or several joined like `$KUBECONFIG`. */
  readonly path?: string | undefined;
  /** A context other than the current one. */
  readonly context?: string | undefined;
  /** For `KUBECONFIG`, `HOME`, `KUBERNETES_SERVICE_*`, and what credential plugins inherit (default: the process's). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Default `SERVICE_ACCOUNT_DIR`; tests point it elsewhere. */
  readonly serviceAccountDir?: string;
  /** Credential plugin timeout (default 20 s). */
  readonly execTimeoutMs?: number;
  readonly now?: () => Date;
}

/** A hub connection loaded from a kubeconfig or the pod's service account. */
export interface LoadedKubeConfig extends KubeConnection {
  /** The file(s) it came from, or `in-cluster`. Never a secret. */
  readonly source: string;
  /** The context used; undefined in-cluster. */
  readonly context: string | undefined;
}

/**
 * Loads the hub connection the way every `mco` command (and kubectl) finds
 * it: `path`, then `$KUBECONFIG` (a list of files, merged: the first file that
 * names an entry or the current context wins), then `~/.kube/config`, then the
 * in-cluster service account. Supports a server with a CA (data or file) or
 * `insecure-skip-tls-verify`, and users with a token, a token file (re-read,
 * for projected tokens), a client certificate and key (data or file), or a
 * client-go credential plugin (`exec`, client.authentication.k8s.io v1 and
 * v1beta1; its credential is kept until shortly before it expires). Files are
 * read again after a minute, so rotated ones are picked up.
 *
 * Errors are McoErrors (`Invalid`) naming the file and the field; they never
 * contain a credential.
 */
export function loadKubeConfig(options: LoadKubeConfigOptions = {}): LoadedKubeConfig {
  const env = options.env ?? process.env;
  const files = (options.path ?? env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (files.length > 0) return fromFiles(files, options, env);
  if (existsSync(home)) return fromFiles([home], options, env);
  if (env.KUBERNETES_SERVICE_HOST && existsSync(join(saDir, 'token'))) return inCluster(env, saDir, options);
  throw invalid(
    `no kubeconfig found: pass --kubeconfig <path>, set KUBECONFIG, or create ${home} (in a pod, the service account is used)`,
  );
}

interface Named<T> {
  readonly name: string;
  readonly entry: T;
  /** The file that defined it: relative paths in it are relative to this file's folder. */
  readonly file: string;
  /** `clusters[name=x].cluster`, for errors. */
  readonly at: string;
}

interface ClusterEntry {
  readonly server?: unknown;
  readonly 'certificate-authority'?: unknown;
  readonly 'certificate-authority-data'?: unknown;
  readonly 'insecure-skip-tls-verify'?: unknown;
  readonly 'tls-server-name'?: unknown;
  readonly 'proxy-url'?: unknown;
}

interface UserEntry {
  readonly token?: unknown;
  readonly tokenFile?: unknown;
  readonly 'client-certificate'?: unknown;
  readonly 'client-certificate-data'?: unknown;
  readonly 'client-key'?: unknown;
  readonly 'client-key-data'?: unknown;
  readonly username?: unknown;
  readonly exec?: unknown;
  readonly 'auth-provider'?: unknown;
}

function fromFiles(files: readonly string[], options: LoadKubeConfigOptions, env: LoadKubeConfigOptions['env']) {
  const source = files.join(delimiter);
  const clusters = new Map<string, Named<ClusterEntry>>();
  const users = new Map<string, Named<UserEntry>>();
  const contexts = new Map<string, Named<{ cluster?: unknown; user?: unknown }>>();
  let current: string | undefined;
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw invalid(`cannot read the kubeconfig ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, error);
    }
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch (error) {
      throw invalid(`the kubeconfig ${file} is not valid YAML: ${firstLine((error as Error).message)}`);
    }
    if (doc === null || doc === undefined) continue; // an empty file, as kubectl allows
    if (typeof doc !== 'object' || Array.isArray(doc)) throw invalid(`the kubeconfig ${file} is not a mapping`);
    const d = doc as Record<string, unknown>;
    collect(d, 'clusters', 'cluster', file, clusters);
    collect(d, 'users', 'user', file, users);
    collect(d, 'contexts', 'context', file, contexts);
    if (current === undefined && typeof d['current-context'] === 'string' && d['current-context']) {
      current = d['current-context'];
    }
  }
  const contextName = options.context ?? current;
  if (!contextName)
    throw invalid(`the kubeconfig ${source} has no current context with a cluster: set current-context`);
  const context = contexts.get(contextName);
  if (!context) throw invalid(`context "${contextName}" not found in ${source}`);
  const clusterName = context.entry.cluster;
  const cluster = typeof clusterName === 'string' ? clusters.get(clusterName) : undefined;
  if (!cluster) {
    throw invalid(`${context.file}: ${context.at}.cluster: cluster "${String(clusterName)}" not found in ${source}`);
  }
  const userName = context.entry.user;
  const user = typeof userName === 'string' && userName ? users.get(userName) : undefined;
  if (typeof userName === 'string' && userName && !user) {
    throw invalid(`${context.file}: ${context.at}.user: user "${userName}" not found in ${source}`);
  }
  const server = serverOf(cluster);
  const credential = user ? credentialOf(user, server, options, env) : noCredential;
  return { source, context: contextName, ...server, ...credential };
}

function collect<T>(
  doc: Record<string, unknown>,
  list: string,
  field: string,
  file: string,
  into: Map<string, Named<T>>,
): void {
  const entries = doc[list];
  if (entries === undefined || entries === null) return;
  if (!Array.isArray(entries)) throw invalid(`${file}: ${list} must be a list`);
  for (const [index, e] of entries.entries()) {
    const name = (e as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || !name) throw invalid(`${file}: ${list}[${index}].name must be a non-empty string`);
    const entry = (e as Record<string, unknown>)[field];
    if (entry !== undefined && entry !== null && (typeof entry !== 'object' || Array.isArray(entry))) {
      throw invalid(`${file}: ${list}[name=${name}].${field} must be a mapping`);
    }
    if (!into.has(name)) {
      into.set(name, { name, entry: (entry ?? {}) as T, file, at: `${list}[name=${name}].${field}` });
    }
  }
}

type ServerPart = Pick<KubeConnection, 'server' | 'caData' | 'tlsServerName' | 'proxyUrl' | 'insecureSkipTlsVerify'>;

function serverOf({ entry: c, file, at }: Named<ClusterEntry>): ServerPart {
  const field = (name: keyof ClusterEntry) => optionalString(c[name], `${file}: ${at}.${name}`);
  const server = field('server');
  if (!server) throw invalid(`${file}: ${at}.server is missing`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw invalid(`${file}: ${at}.server is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw invalid(`${file}: ${at}.server must be an https:// (or http://) URL`);
  const proxyUrl = field('proxy-url');
  if (proxyUrl && (!URL.canParse(proxyUrl) || new URL(proxyUrl).protocol !== 'http:' || url.protocol !== 'https:')) {
    throw invalid(`${file}: ${at}.proxy-url: only an http:// proxy for an https:// server is supported`);
  }
  const insecure = c['insecure-skip-tls-verify'];
  if (insecure !== undefined && typeof insecure !== 'boolean') {
    throw invalid(`${file}: ${at}.insecure-skip-tls-verify must be true or false`);
  }
  const caData = field('certificate-authority-data');
  const caFile = field('certificate-authority');
  const ca = caData
    ? checkBase64(caData, `${file}: ${at}.certificate-authority-data`)
    : caFile
      ? readAt(resolveIn(file, caFile), `${file}: ${at}.certificate-authority`).toString('base64')
      : undefined;
  const tlsServerName = field('tls-server-name');
  return {
    server: server.replace(/\/+$/, ''),
    ...(ca ? { caData: ca } : {}),
    ...(tlsServerName ? { tlsServerName } : {}),
    ...(proxyUrl ? { proxyUrl } : {}),
    insecureSkipTlsVerify: insecure === true,
  };
}

type CredentialPart = Pick<KubeConnection, 'getCredential' | 'invalidate'>;

const noCredential: CredentialPart = { getCredential: () => Promise.resolve({}), invalidate: () => {} };

function credentialOf(
  { name: userName, entry: u, file, at }: Named<UserEntry>,
  server: ServerPart,
  options: LoadKubeConfigOptions,
  env: LoadKubeConfigOptions['env'],
): CredentialPart {
  const where = (name: string) => `${file}: ${at}.${name}`;
  if (u['auth-provider'] !== undefined) {
    throw invalid(
      `${where('auth-provider')}: auth providers are not supported; use a credential plugin (exec), e.g. gke-gcloud-auth-plugin or kubelogin`,
    );
  }
  if (u.username !== undefined) {
    throw invalid(`${where('username')}: basic authentication is not supported; use a token, a certificate or exec`);
  }
  const token = optionalString(u.token, where('token'));
  const tokenFile = optionalPath(u.tokenFile, file, where('tokenFile'));
  const certData = optionalString(u['client-certificate-data'], where('client-certificate-data'));
  const keyData = optionalString(u['client-key-data'], where('client-key-data'));
  const certFile = optionalPath(u['client-certificate'], file, where('client-certificate'));
  const keyFile = optionalPath(u['client-key'], file, where('client-key'));
  const hasCert = Boolean(certData || certFile);
  const hasKey = Boolean(keyData || keyFile);
  if (hasCert !== hasKey) {
    throw invalid(`${file}: ${at}: client-certificate and client-key go together; only one of them is set`);
  }
  const cert = certData ? decodeBase64(certData, where('client-certificate-data')) : undefined;
  const key = keyData ? decodeBase64(keyData, where('client-key-data')) : undefined;
  // Read now, so a missing file is a start-up error; read again on every refresh.
  if (certFile) readAt(certFile, where('client-certificate'));
  if (keyFile) readAt(keyFile, where('client-key'));
  if (tokenFile) readAt(tokenFile, where('tokenFile'));
  const exec = u.exec === undefined ? undefined : execConfigOf(u.exec, where('exec'));
  if (!tokenFile && !certFile && !exec) {
    const fixed: Credential = {
      ...(token ? { token } : {}),
      ...(cert && key ? { clientCertificateData: cert, clientKeyData: key } : {}),
    };
    return { getCredential: () => Promise.resolve(fixed), invalidate: () => {} };
  }
  const info: ExecClusterInfo = {
    server: server.server,
    ...(server.caData ? { 'certificate-authority-data': server.caData } : {}),
    ...(server.tlsServerName ? { 'tls-server-name': server.tlsServerName } : {}),
    ...(server.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
  };
  const cache = createCachedCredential(
    async () => {
      const fromExec = exec
        ? await runExecPlugin(exec, {
            provider: userName,
            owner: `kubeconfig user "${userName}"`,
            cluster: info,
            ...(options.execTimeoutMs ? { timeoutMs: options.execTimeoutMs } : {}),
            ...(env ? { baseEnv: env } : {}),
          })
        : undefined;
      const fileToken = tokenFile ? (await readText(tokenFile, where('tokenFile'))).trim() : undefined;
      const certificate = certFile ? await readText(certFile, where('client-certificate')) : cert;
      const privateKey = keyFile ? await readText(keyFile, where('client-key')) : key;
      const bearer = fromExec?.token ?? fileToken ?? token;
      return {
        ...(bearer ? { token: bearer } : {}),
        ...(fromExec?.clientCertificateData
          ? { clientCertificateData: fromExec.clientCertificateData, clientKeyData: fromExec.clientKeyData! }
          : certificate && privateKey
            ? { clientCertificateData: certificate, clientKeyData: privateKey }
            : {}),
        ...(fromExec?.expiresAt ? { expiresAt: fromExec.expiresAt } : {}),
      };
    },
    { reReadAfterMs: 60_000, ...(options.now ? { now: options.now } : {}) },
  );
  return { getCredential: (signal) => cache.get(signal), invalidate: () => cache.invalidate() };
}

const EXEC_API_VERSIONS = new Set(['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1']);

function execConfigOf(raw: unknown, at: string): ExecConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalid(`${at} must be a mapping`);
  const e = raw as Record<string, unknown>;
  if (typeof e.apiVersion !== 'string' || !EXEC_API_VERSIONS.has(e.apiVersion)) {
    throw invalid(`${at}.apiVersion must be client.authentication.k8s.io/v1 or v1beta1`);
  }
  if (typeof e.command !== 'string' || !e.command) throw invalid(`${at}.command must be a non-empty string`);
  const args = e.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) throw invalid(`${at}.args must be strings`);
  const envList = e.env ?? [];
  if (
    !Array.isArray(envList) ||
    envList.some(
      (v) =>
        typeof (v as { name?: unknown })?.name !== 'string' || typeof (v as { value?: unknown }).value !== 'string',
    )
  ) {
    throw invalid(`${at}.env must be a list of name and value strings`);
  }
  const mode = e.interactiveMode;
  if (mode !== undefined && mode !== 'Never' && mode !== 'IfAvailable' && mode !== 'Always') {
    throw invalid(`${at}.interactiveMode must be Never, IfAvailable or Always`);
  }
  return {
    apiVersion: e.apiVersion as ExecConfig['apiVersion'],
    command: e.command,
    args: args as string[],
    env: envList as { name: string; value: string }[],
    provideClusterInfo: e.provideClusterInfo === true,
    ...(mode ? { interactiveMode: mode } : {}),
    ...(typeof e.installHint === 'string' ? { installHint: e.installHint } : {}),
  };
}

function inCluster(
  env: Readonly<Record<string, string | undefined>>,
  dir: string,
  options: LoadKubeConfigOptions,
): LoadedKubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST!;
  const port = env.KUBERNETES_SERVICE_PORT || '443';
  const caFile = join(dir, 'ca.crt');
  const tokenFile = join(dir, 'token');
  // The projected token is rotated by the kubelet: re-read it every minute, like client-go.
  const cache = createCachedCredential(
    async () => ({ token: (await readText(tokenFile, 'in-cluster token')).trim() }),
    {
      reReadAfterMs: 60_000,
      ...(options.now ? { now: options.now } : {}),
    },
  );
  return {
    source: 'in-cluster',
    context: undefined,
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ...(existsSync(caFile) ? { caData: readAt(caFile, 'in-cluster CA').toString('base64') } : {}),
    insecureSkipTlsVerify: false,
    getCredential: (signal) => cache.get(signal),
    invalidate: () => cache.invalidate(),
  };
}

function optionalString(value: unknown, at: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw invalid(`${at} must be a string`);
  return value;
}

function optionalPath(value: unknown, file: string, at: string): string | undefined {
  const path = optionalString(value, at);
  return path === undefined ? undefined : resolveIn(file, path);
}

function resolveIn(file: string, path: string): string {
  return isAbsolute(path) ? path : resolve(dirname(file), path);
}

function readAt(path: string, at: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw invalid(`${at}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, error);
  }
}

async function readText(path: string, at: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new McoError(
      'Unauthorized',
      `${at}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      true,
      { cause: error },
    );
  }
}

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

function checkBase64(value: string, at: string): string {
  if (!BASE64.test(value)) throw invalid(`${at} is not base64`);
  return value.replace(/\s+/g, '');
}

function decodeBase64(value: string, at: string): string {
  return Buffer.from(checkBase64(value, at), 'base64').toString('utf8');
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]!.trim();
}

function invalid(message: string, cause?: unknown): McoError {
  return new McoError('Invalid', message, false, cause === undefined ? undefined : { cause });
}

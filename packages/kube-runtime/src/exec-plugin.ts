import { spawn } from 'node:child_process';
import { McoError, type Credential } from '@mco/runtime';

/**
 * clientcmd ExecConfig: how to run a credential plugin (kubectl's
 * `users[].user.exec`). @mco/cluster-access validates it with a zod schema;
 * `loadKubeConfig` checks the fields it reads.
 */
export interface ExecConfig {
  readonly apiVersion: 'client.authentication.k8s.io/v1' | 'client.authentication.k8s.io/v1beta1';
  readonly command: string;
  readonly args?: readonly string[] | null | undefined;
  readonly env?: readonly { readonly name: string; readonly value: string }[] | null | undefined;
  readonly provideClusterInfo?: boolean | undefined;
  readonly interactiveMode?: 'Never' | 'IfAvailable' | 'Always' | undefined;
  readonly installHint?: string | undefined;
}

/** The cluster as passed to a plugin in `KUBERNETES_EXEC_INFO` (clientcmd's ExecCredentialSpec.cluster). */
export interface ExecClusterInfo {
  readonly server: string;
  readonly 'tls-server-name'?: string;
  readonly 'insecure-skip-tls-verify'?: boolean;
  readonly 'certificate-authority-data'?: string;
  readonly 'proxy-url'?: string;
  readonly 'disable-compression'?: boolean;
  /** The `client.authentication.k8s.io/exec` extension of the access provider's cluster. */
  readonly config?: unknown;
}

export interface ExecPluginOptions {
  /** Names the access provider in errors (`access provider "<name>"`), or what `what` says. */
  readonly provider: string;
  /** How errors name the plugin's owner instead, e.g. `kubeconfig user "admin"`. */
  readonly owner?: string;
  readonly cluster?: ExecClusterInfo;
  /** Default 20 s; the plugin is killed after it. */
  readonly timeoutMs?: number;
  /** The environment the plugin inherits before `execConfig.env`; like kubectl, mco passes its own. */
  readonly baseEnv?: Readonly<Record<string, string | undefined>>;
  readonly signal?: AbortSignal;
  /**
   * Hears the standard error of a plugin that failed (its last 1024 characters,
   * with `redactTokens` applied), for the log. It is never part of the error:
   * errors reach status and Events, and a plugin may print anything there.
   */
  readonly onStderr?: (stderr: string) => void;
}

const MAX_STDOUT_BYTES = 1024 * 1024;
const MAX_STDERR_CHARS = 1024;

/**
 * Replaces every run of 16 or more characters that could be part of a token
 * (letters, digits and `+/=_.~-`: base64, base64url, hex, JWTs) with
 * `[redacted N characters]`. A failing plugin may print the token it holds
 * ("token abc... expired"), and its standard error goes to the log; words,
 * numbers and messages survive, long paths and URLs do not (the command is
 * logged beside it).
 */
export function redactTokens(text: string): string {
  return text.replace(/[A-Za-z0-9+/=_.~-]{16,}/g, (run) => `[redacted ${run.length} characters]`);
}

/**
 * Runs a client-go credential plugin once and returns the credential it printed.
 * `@kubernetes/client-node` cannot be used: it never sets `KUBERNETES_EXEC_INFO`.
 * Errors are McoErrors (`Unauthorized`, or `Timeout`) naming the provider and the
 * command; they never contain the plugin's standard output (it holds the token).
 */
export function runExecPlugin(exec: ExecConfig, options: ExecPluginOptions): Promise<Credential> {
  const what = `${options.owner ?? `access provider "${options.provider}"`}: credential plugin "${exec.command}"`;
  if (exec.interactiveMode === 'Always') {
    return Promise.reject(
      new McoError('Unauthorized', `${what} needs a terminal (interactiveMode: Always) and mco has none`, false),
    );
  }
  const info = {
    apiVersion: exec.apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false, ...(exec.provideClusterInfo && options.cluster ? { cluster: options.cluster } : {}) },
  };
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.baseEnv ?? process.env)) if (v !== undefined) env[k] = v;
  for (const e of exec.env ?? []) env[e.name] = e.value;
  env.KUBERNETES_EXEC_INFO = JSON.stringify(info);
  const timeoutMs = options.timeoutMs ?? 20_000;
  if (options.signal?.aborted) {
    return Promise.reject(new McoError('Timeout', `${what}: cancelled`, true, { cause: options.signal.reason }));
  }

  return new Promise<Credential>((resolve, reject) => {
    let settled = false;
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    // Own process group, so that a timeout also kills what the plugin started (gcloud, sleep, ...).
    const child = spawn(exec.command, [...(exec.args ?? [])], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const finish = (error: McoError | undefined, credential?: Credential) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      if (child.exitCode === null && child.signalCode === null) killGroup(child.pid);
      if (error) reject(error);
      else resolve(credential!);
    };
    const timer = setTimeout(
      () => finish(new McoError('Timeout', `${what} did not finish within ${timeoutMs} ms`, true)),
      timeoutMs,
    );
    const onAbort = () =>
      finish(new McoError('Timeout', `${what}: cancelled`, true, { cause: options.signal?.reason }));
    options.signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > MAX_STDOUT_BYTES) {
        finish(new McoError('Unauthorized', `${what} printed more than ${MAX_STDOUT_BYTES} bytes`, false));
      } else stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-MAX_STDERR_CHARS);
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      const hint = exec.installHint ? ` (${exec.installHint.trim()})` : '';
      const message =
        error.code === 'ENOENT' ? `${what} was not found${hint}` : `${what} could not be started: ${error.message}`;
      finish(new McoError('Unauthorized', message, error.code !== 'ENOENT', { cause: error }));
    });
    child.on('close', (code, signal) => {
      if (code !== 0) {
        const how = code === null ? `was killed by ${signal}` : `exited with code ${code}`;
        const detail = stderr.trim() ? "; its standard error is in mco's log" : '';
        if (detail) options.onStderr?.(redactTokens(stderr.trim()));
        return finish(new McoError('Unauthorized', `${what} ${how}${detail}`, true));
      }
      try {
        finish(undefined, parseExecCredential(Buffer.concat(stdout).toString('utf8'), exec.apiVersion));
      } catch (error) {
        finish(new McoError('Unauthorized', `${what} ${(error as Error).message}`, false));
      }
    });
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Parses an ExecCredential; the thrown message says what is wrong and never quotes the output. */
export function parseExecCredential(output: string, apiVersion: string): Credential {
  let doc: unknown;
  try {
    doc = JSON.parse(output);
  } catch {
    throw new Error(`printed something that is not JSON (${output.length} bytes); expected an ExecCredential`);
  }
  const o = doc as { apiVersion?: unknown; kind?: unknown; status?: Record<string, unknown> } | null;
  if (!o || typeof o !== 'object' || o.kind !== 'ExecCredential') {
    throw new Error('printed JSON that is not an ExecCredential (kind must be "ExecCredential")');
  }
  if (o.apiVersion !== apiVersion) {
    throw new Error(`printed an ExecCredential of apiVersion "${String(o.apiVersion)}", expected "${apiVersion}"`);
  }
  const s = o.status;
  if (!s || typeof s !== 'object') throw new Error('printed an ExecCredential without status');
  const str = (k: string) => (typeof s[k] === 'string' && s[k] !== '' ? (s[k] as string) : undefined);
  const token = str('token');
  const clientCertificateData = str('clientCertificateData');
  const clientKeyData = str('clientKeyData');
  if (!!clientCertificateData !== !!clientKeyData) {
    throw new Error('printed an ExecCredential with only one of status.clientCertificateData and status.clientKeyData');
  }
  if (!token && !clientCertificateData) {
    throw new Error('printed an ExecCredential with neither status.token nor a client certificate');
  }
  let expiresAt: Date | undefined;
  if (s.expirationTimestamp !== undefined && s.expirationTimestamp !== null) {
    expiresAt = new Date(String(s.expirationTimestamp));
    if (Number.isNaN(expiresAt.getTime())) throw new Error('printed an invalid status.expirationTimestamp');
  }
  return {
    ...(token ? { token } : {}),
    ...(clientCertificateData ? { clientCertificateData, clientKeyData } : {}),
    ...(expiresAt ? { expiresAt } : {}),
  };
}

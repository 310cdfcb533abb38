import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseInteger, parseNamespaceList } from '@mco/controller';
import { loadKubeConfig, type LoadedKubeConfig } from '@mco/kube-runtime';
import { httpStatusOf, McoError, type LogLevel } from '@mco/runtime';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';

/** A subcommand of `mco`. Each lives in its own file under commands/. */
export interface Command {
  readonly name: string;
  /** The full `mco <name> --help` text. */
  readonly usage: string;
  run(argv: string[], io: Io): Promise<number>;
}

export interface Io {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

/** Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad input. */
export const EXIT_USAGE = 2;

/** An error that maps to exit code 2 with a message naming what is wrong. */
export class UsageError extends Error {}

/** Whether an error is a configuration problem found at start-up (exit code 2), not a runtime failure. */
export function isConfigurationError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    error instanceof UsageError ||
    (typeof code === 'string' && (code.startsWith('ERR_PARSE_ARGS') || code === 'EADDRINUSE' || code === 'EACCES'))
  );
}

/**
 * `node:util` parseArgs (strict), where a boolean option is a switch that also
 * takes a value, as Kubernetes controllers' flags do: `--flag`, `--flag=true`,
 * `--flag=false`, and `--flag true` or `--flag false` (the next argument, when
 * it is exactly `true` or `false`). Any other value is a UsageError naming the
 * flag. The last occurrence wins.
 */
export function parseFlags<T extends ParseArgsConfig & { args: string[] }>(config: T): ReturnType<typeof parseArgs<T>> {
  const switches = new Set(
    Object.entries(config.options ?? {})
      .filter(([, option]) => option.type === 'boolean')
      .map(([name]) => name),
  );
  const args: string[] = [];
  const set = new Map<string, boolean>();
  for (let i = 0; i < config.args.length; i++) {
    const arg = config.args[i]!;
    if (arg === '--') {
      args.push(...config.args.slice(i));
      break;
    }
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    if (!match || !switches.has(match[1]!)) {
      args.push(arg);
      continue;
    }
    const name = match[1]!;
    let value = match[2];
    const next = config.args[i + 1];
    if (value === undefined && (next === 'true' || next === 'false')) value = config.args[++i];
    if (value !== undefined && value !== 'true' && value !== 'false')
      throw new UsageError(`--${name}: expected true or false (or no value), got "${value}"`);
    set.set(name, value !== 'false');
  }
  const parsed = parseArgs({ ...config, args, strict: config.strict ?? true });
  for (const [name, value] of set) (parsed.values as Record<string, unknown>)[name] = value;
  return parsed as ReturnType<typeof parseArgs<T>>;
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** `--log-level`, checked (info when not given). */
export function parseLogLevel(text: string | undefined): LogLevel {
  const level = text ?? 'info';
  if (!LOG_LEVELS.includes(level as LogLevel))
    throw new UsageError(`--log-level ${level}: expected ${LOG_LEVELS.join(', ')}`);
  return level as LogLevel;
}

/** Resolves on the first SIGTERM or SIGINT: how a long-running command waits to stop. */
export function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
}

/** Reads a JSON or YAML file ("-" for stdin); a syntax error becomes a UsageError naming the file. */
export async function readDocument(path: string): Promise<unknown> {
  let text: string;
  try {
    text = path === '-' ? await readStdin() : await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new UsageError(
      `${path} is not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
    );
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `a.b[0].c` from a zod issue path. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)),
    '',
  );
}

/** Parses with a zod schema or throws a UsageError naming the first offending field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues
    .slice(0, 5)
    .map((issue) => `${formatPath(issue.path) || '(root)'}: ${issue.message}`)
    .join('; ');
  throw new UsageError(`invalid ${what}: ${issues}`);
}

/** `host:port` (host may be empty or a bracketed IPv6 address) of a `--listen` flag; a UsageError otherwise. */
export function parseListenAddress(text: string, flag = '--listen'): { host: string; port: number } {
  const match = /^(.*):(\d{1,5})$/.exec(text);
  if (!match || Number(match[2]) > 65_535) throw new UsageError(`${flag} must be <host>:<port>, got "${text}"`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1') || '0.0.0.0', port: Number(match[2]) };
}

/**
 * An integer flag (`--name`): digits only (no sign, exponent or hex), from `min` to `max`; `undefined`
 * when not given, a UsageError naming the flag, the range and the text otherwise.
 */
export function parseIntegerFlag(
  name: string,
  text: string | undefined,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (text === undefined) return undefined;
  const n = parseInteger(text, min, max);
  if (n === undefined) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`--${name}: expected an integer ${range}, got ${JSON.stringify(text)}`);
  }
  return n;
}

/** `--cluster-profile-namespaces` of every command that reads ClusterProfiles, in `--help` texts. */
export const CLUSTER_PROFILE_NAMESPACES_HELP =
  'comma-separated namespaces whose ClusterProfiles are read; others are ignored (default: all)';

/** `--cluster-profile-namespaces a,b` as a sorted list (empty: every namespace); a UsageError naming a bad entry. */
export function parseClusterProfileNamespaces(text: string | undefined): readonly string[] {
  const parsed = parseNamespaceList(text ?? '');
  if (!parsed.ok) throw new UsageError(`--cluster-profile-namespaces: ${parsed.error}`);
  return parsed.value;
}

/** How every `mco` command finds the hub, in `--help` texts. */
export const KUBECONFIG_HELP =
  'hub kubeconfig (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account)';

/**
 * The hub kubeconfig, looked up the same way by every command (and kubectl):
 * `--kubeconfig`, then `$KUBECONFIG` (a list of files, merged), then
 * `~/.kube/config`, then the in-cluster service account (`loadKubeConfig` of
 * @mco/kube-runtime). Finding none is a UsageError naming every place looked
 * at, never a silent fallback to http://localhost:8080; so is a broken file or
 * an unknown context.
 */
export function loadHub(
  path: string | undefined,
  context?: string,
  env: NodeJS.ProcessEnv = process.env,
): LoadedKubeConfig {
  try {
    return loadKubeConfig({ path, context, env });
  } catch (error) {
    if (error instanceof McoError) throw new UsageError(error.message);
    throw error;
  }
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]!.trim();
}

/** Network error codes that mean "the Kubernetes API cannot be reached". */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ECONNRESET',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
]);

/**
 * One line saying what failed and what to do, for any error a command meets:
 * a Kubernetes API answer (missing namespace, missing CRD, RBAC), an
 * unreachable API server, a port in use. Never a stack trace or a raw
 * client-library dump.
 */
export function explainFailure(error: unknown): string {
  const cause = error instanceof McoError && error.cause !== undefined ? error.cause : error;
  const e = cause as { code?: unknown; body?: unknown; address?: unknown; port?: unknown; message?: unknown };
  if (e?.code === 'EADDRINUSE' || (e?.code === 'EACCES' && e.port !== undefined)) {
    const what = e.code === 'EADDRINUSE' ? 'the address is already in use' : 'permission denied';
    return `cannot listen on ${String(e.address)}:${String(e.port)}: ${what}; choose another address with --listen`;
  }
  const status = httpStatusOf(cause);
  if (status !== undefined && e.body !== undefined) return explainApiStatus(status, e.body);
  const network = typeof e?.code === 'string' && UNREACHABLE.has(e.code) ? e.code : undefined;
  const message = firstLine(String(e?.message ?? cause));
  if (network) {
    const url = /request to (\S+) failed/.exec(message)?.[1];
    const server = url ? new URL(url).origin : 'the server of the kubeconfig';
    return `cannot reach the Kubernetes API at ${server} (${network}): check that the cluster runs and that the kubeconfig points at it`;
  }
  return message;
}

function explainApiStatus(status: number, body: unknown): string {
  const parsed = typeof body === 'string' ? parseJson(body) : body;
  const s = (parsed ?? {}) as { message?: string; details?: { kind?: string; name?: string } };
  const message = s.message ?? `HTTP ${status}`;
  if (status === 404 && s.details?.kind === 'namespaces') {
    const ns = s.details.name ?? '';
    return `namespace "${ns}" not found: create it (kubectl create namespace ${ns}) or choose another namespace`;
  }
  if (status === 404 && /could not find the requested resource/.test(message)) {
    return `${message}: is the CRD installed? (kubectl apply --server-side -f apps/mco/chart/crds/)`;
  }
  if (status === 401)
    return "the Kubernetes API rejected the kubeconfig's credentials (401): refresh them or use another kubeconfig";
  if (status === 403)
    return `${message}: grant this permission (the chart's RBAC lists what mco needs) or use another kubeconfig`;
  return `${message} (HTTP ${status})`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

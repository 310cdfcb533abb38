import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { createLogger } from '@mco/runtime';
import { AUTH_MODES, DEFAULT_GROUP_HEADERS, DEFAULT_USERNAME_HEADERS, type AuthMode } from '../dashboard/auth.js';
import { startDashboard } from '../dashboard/index.js';
import { DEFAULT_CONTROLLER_LEASE } from '../dashboard/model.js';
import {
  KUBECONFIG_HELP,
  loadHub,
  parseListenAddress,
  parseLogLevel,
  UsageError,
  untilSignal,
  type Command,
} from '../cli.js';

const USAGE = `Usage:
  mco dashboard [--listen 127.0.0.1:8090] [--auth none|proxy|token] [--kubeconfig <path>] [--context <name>]

Serves a read-only live web page of the hub (docs/dashboard.md): the fleet
(clusters with labels, taints, health, properties and the placements on each)
and every placement (its clusters' states over time, conditions, Events,
"mco explain"'s table, and delivery objects on the hub), updated as the hub
changes. It reads the hub only, with the kubeconfig's identity, and never
connects to member clusters. The states over time are remembered from when it
started.

Who sees what (--auth):
  none    (default) everyone who reaches the page sees what the kubeconfig may
          list; allowed on a loopback address only, and only for requests
          whose Host is localhost, a loopback address, the listen address or
          one of --allowed-hosts (a page on another name is refused)
  proxy   an authenticating proxy in front sets X-Remote-User and
          X-Remote-Group; the dashboard serves https and believes them only
          on a connection with a client certificate signed by
          --requestheader-client-ca-file (as the Kubernetes aggregation layer)
  token   the page asks for a bearer token once, learns whom it names (a
          SelfSubjectReview) and keeps only that identity in a server-side
          session (a Secure, HttpOnly, SameSite=Strict cookie); the token is
          not kept
With proxy and token, a SubjectAccessReview per namespace (answers reused for
10 s) shows each viewer only the namespaces their own identity may list.

Options:
      --listen <host:port>   address to serve on (default 127.0.0.1:8090)
      --auth <mode>          none, proxy or token (default none)
      --tls-cert-file <path>         serve https with this certificate (PEM; proxy mode needs it)
      --tls-private-key-file <path>  its private key (PEM)
      --requestheader-client-ca-file <path>
                             proxy: the CA that signs the proxy's client certificate (required)
      --requestheader-allowed-names <cn,...>
                             proxy: the common names that certificate may carry (default: any)
      --requestheader-username-headers <h,...>
                             proxy: headers naming the user, first set wins (default ${DEFAULT_USERNAME_HEADERS.join(',')})
      --requestheader-group-headers <h,...>
                             proxy: headers naming the groups (default ${DEFAULT_GROUP_HEADERS.join(',')})
      --allowed-hosts <name,...>
                             none: other Host names to serve (e.g. a name in /etc/hosts for 127.0.0.1)
      --insecure-cookies     token: do not mark the session cookie Secure, for plain http
                             on a loopback address only (browsers drop Secure cookies there
                             except on localhost)
      --controller-lease <namespace/name>
                             the controller's Lease (--leader-election-namespace and -id), read to show
                             when it was last seen (default ${DEFAULT_CONTROLLER_LEASE})
      --kubeconfig <path>    ${KUBECONFIG_HELP}
      --context <name>       hub context (default: the current context)
      --log-level <level>    debug, info, warn or error (default info)
  -h, --help                 show this help

Exit codes: 0 stopped by a signal, 1 runtime failure, 2 bad usage.`;

export const dashboardCommand: Command = {
  name: 'dashboard',
  usage: USAGE,
  async run(argv, io) {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        listen: { type: 'string' },
        auth: { type: 'string' },
        'tls-cert-file': { type: 'string' },
        'tls-private-key-file': { type: 'string' },
        'requestheader-client-ca-file': { type: 'string' },
        'requestheader-allowed-names': { type: 'string' },
        'requestheader-username-headers': { type: 'string' },
        'requestheader-group-headers': { type: 'string' },
        'allowed-hosts': { type: 'string' },
        'insecure-cookies': { type: 'boolean' },
        'controller-lease': { type: 'string' },
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const auth = (values.auth ?? 'none') as AuthMode;
    if (!AUTH_MODES.includes(auth)) throw new UsageError(`--auth ${auth}: expected none, proxy or token`);
    const level = parseLogLevel(values['log-level']);
    const { host, port } = parseListenAddress(values.listen ?? '127.0.0.1:8090');
    if (auth === 'none' && !isLoopback(host)) {
      throw new UsageError(
        `--listen ${values.listen}: --auth none serves the hub kubeconfig's view to anyone; use a loopback address, or --auth proxy|token`,
      );
    }
    const onlyWith = (mode: AuthMode, names: (keyof typeof values)[]) => {
      for (const name of names) {
        if (values[name] !== undefined && auth !== mode)
          throw new UsageError(`--${name} works only with --auth ${mode}`);
      }
    };
    onlyWith('proxy', [
      'requestheader-client-ca-file',
      'requestheader-allowed-names',
      'requestheader-username-headers',
      'requestheader-group-headers',
    ]);
    onlyWith('none', ['allowed-hosts']);
    onlyWith('token', ['insecure-cookies']);
    if ((values['tls-cert-file'] === undefined) !== (values['tls-private-key-file'] === undefined)) {
      throw new UsageError('--tls-cert-file and --tls-private-key-file go together');
    }
    if (auth === 'proxy' && (values['tls-cert-file'] === undefined || !values['requestheader-client-ca-file'])) {
      throw new UsageError(
        '--auth proxy needs --tls-cert-file, --tls-private-key-file and --requestheader-client-ca-file: the headers count only from a client that proves it is the proxy',
      );
    }
    const tls =
      values['tls-cert-file'] !== undefined
        ? { cert: readFlagFile(values, 'tls-cert-file'), key: readFlagFile(values, 'tls-private-key-file') }
        : undefined;
    const proxy =
      auth === 'proxy'
        ? {
            clientCA: readFlagFile(values, 'requestheader-client-ca-file'),
            allowedNames: list(values['requestheader-allowed-names']) ?? [],
            usernameHeaders: headerList(values, 'requestheader-username-headers') ?? DEFAULT_USERNAME_HEADERS,
            groupHeaders: headerList(values, 'requestheader-group-headers') ?? DEFAULT_GROUP_HEADERS,
          }
        : undefined;
    const allowedHosts = list(values['allowed-hosts']) ?? [];
    for (const name of allowedHosts) {
      if (!HOST_NAME.test(name) && isIP(name) === 0) {
        throw new UsageError(`--allowed-hosts: "${name}" is not a host name or IP address`);
      }
    }
    const lease = values['controller-lease'];
    if (lease !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/.test(lease)) {
      throw new UsageError(`--controller-lease ${lease}: expected <namespace>/<name>`);
    }
    const hub = loadHub(values.kubeconfig, values.context);
    const logger = createLogger({ level, write: io.stderr });
    const dashboard = await startDashboard({
      hub,
      host,
      port,
      auth,
      secureCookies: values['insecure-cookies'] !== true,
      ...(tls ? { tls } : {}),
      ...(proxy ? { proxy } : {}),
      allowedHosts,
      ...(lease ? { controllerLease: lease } : {}),
      logger,
    });
    io.stderr(`mco dashboard: serving ${dashboard.url} (auth ${auth}); stop with Ctrl-C\n`);
    await untilSignal();
    await dashboard.close();
    return 0;
  },
};

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const HEADER_NAME = /^[A-Za-z0-9-]{1,100}$/;

/** A comma-separated flag value, without blanks; undefined when the flag is absent. */
function list(value: string | undefined): string[] | undefined {
  return value
    ?.split(',')
    .map((v) => v.trim())
    .filter(Boolean);
}

function headerList(values: Record<string, unknown>, flag: string): string[] | undefined {
  const names = list(values[flag] as string | undefined);
  if (names?.length === 0) throw new UsageError(`--${flag}: expected at least one header name`);
  for (const name of names ?? []) {
    if (!HEADER_NAME.test(name)) throw new UsageError(`--${flag}: "${name}" is not a header name`);
  }
  return names;
}

/** A file a flag names, read at start; a missing or unreadable one is a UsageError naming the flag. */
function readFlagFile(values: Record<string, unknown>, flag: string): Buffer {
  const path = values[flag] as string;
  try {
    return readFileSync(path);
  } catch (error) {
    throw new UsageError(`--${flag} ${path}: ${(error as Error).message}`);
  }
}

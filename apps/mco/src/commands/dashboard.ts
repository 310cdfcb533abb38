import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { createLogger } from '@mco/runtime';
import { AUTH_MODES, type AuthMode } from '../dashboard/auth.js';
import { startDashboard } from '../dashboard/index.js';
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
          list; allowed on a loopback address only
  proxy   an authenticating proxy in front sets X-Remote-User and
          X-Remote-Group; only run it where nothing but the proxy can reach it
  token   the page asks for a bearer token once, learns whom it names (a
          SelfSubjectReview) and keeps only that identity in a server-side
          session (an HttpOnly, SameSite=Strict cookie); the token is not kept
With proxy and token, a SubjectAccessReview per namespace (answers reused for
10 s) shows each viewer only the namespaces their own identity may list.

Options:
      --listen <host:port>   address to serve on (default 127.0.0.1:8090)
      --auth <mode>          none, proxy or token (default none)
      --secure-cookies       mark the session cookie Secure (the page is reached over https)
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
        'secure-cookies': { type: 'boolean' },
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
    const hub = loadHub(values.kubeconfig, values.context);
    const logger = createLogger({ level, write: io.stderr });
    const dashboard = await startDashboard({
      hub,
      host,
      port,
      auth,
      secureCookies: values['secure-cookies'] === true,
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

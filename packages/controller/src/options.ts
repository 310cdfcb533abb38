import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_CONTROLLER_NAMESPACE, INVENTORY_LOSS_CONFIRMATION } from './inventory-guard.js';

/** One command-line flag of `mco controller`, its environment variable and its default. */
export interface FlagSpec {
  readonly flag: string;
  readonly env: string;
  readonly default: string | undefined;
  readonly help: string;
  /** Earlier names of the flag, still accepted. */
  readonly aliases?: readonly string[];
  /** A switch: `--flag` alone means true; `--flag=false` and `--flag false` turn it off. */
  readonly boolean?: true;
}

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "500ms", "15s", "2m", "1h" -> milliseconds. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  return match ? Math.round(Number(match[1]) * UNIT_MS[match[2]!]!) : undefined;
}

const duration = (min: number, max: number) =>
  z.string().transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms < min || ms > max) {
      ctx.addIssue({
        code: 'custom',
        message: `expected a duration like 500ms, 15s, 2m or 1h between ${min}ms and ${max}ms, got "${text}"`,
      });
      return z.NEVER;
    }
    return ms;
  });
const bool = z.enum(['true', 'false']).transform((v) => v === 'true');
/**
 * An integer flag's text: digits only, from `min` to `max`, else undefined. Every `mco` command reads
 * integers with it: Number() would take "1e3", "0x10" and "" (as 0).
 */
export function parseInteger(text: string, min: number, max: number): number | undefined {
  const n = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  return n >= min && n <= max ? n : undefined;
}

const int = (min: number, max: number) =>
  z.string().transform((text, ctx) => {
    const n = parseInteger(text, min, max);
    if (n === undefined) {
      ctx.addIssue({ code: 'custom', message: `expected an integer from ${min} to ${max}, got "${text}"` });
      return z.NEVER;
    }
    return n;
  });
const BINARY_UNITS: Record<string, number> = { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };
/** A byte count: an integer with an optional Ki, Mi or Gi suffix. */
const byteCount = z.string().transform((text, ctx) => {
  const match = /^(\d{1,12})(Ki|Mi|Gi)?$/.exec(text);
  if (!match) {
    ctx.addIssue({ code: 'custom', message: `expected a byte count like 268435456, 64Mi or 1Gi, got "${text}"` });
    return z.NEVER;
  }
  return Number(match[1]) * BINARY_UNITS[match[2] ?? '']!;
});
const name = z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'expected a lower-case DNS name');

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * A comma-separated namespace list (`--cluster-profile-namespaces fleet,team-a`):
 * sorted and de-duplicated; an empty text is an empty list (every namespace).
 * The error names the offending entry.
 */
export function parseNamespaceList(text: string): ParseResult<readonly string[]> {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = names.find((n) => !NAMESPACE.test(n));
  if (bad !== undefined) return { ok: false, error: `"${bad}" is not a namespace name (DNS-1123 label)` };
  return { ok: true, value: [...new Set(names)].sort() };
}

const namespaceList = z.string().transform((text, ctx) => {
  const parsed = parseNamespaceList(text);
  if (!parsed.ok) {
    ctx.addIssue({ code: 'custom', message: parsed.error });
    return z.NEVER;
  }
  return parsed.value;
});

/** Flags in `--help` order. Each can also be set by its environment variable; a flag wins over the variable. */
export const CONTROLLER_FLAGS: readonly FlagSpec[] = [
  {
    flag: 'kubeconfig',
    env: 'KUBECONFIG',
    default: undefined,
    help: 'hub kubeconfig (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account)',
  },
  {
    flag: 'listen',
    env: 'MCO_HTTP_ADDRESS',
    default: '0.0.0.0:8080',
    help: 'host:port of /healthz, /readyz and /metrics',
    aliases: ['http-address'],
  },
  {
    flag: 'leader-elect',
    env: 'MCO_LEADER_ELECT',
    default: 'true',
    boolean: true,
    help: 'elect a leader with a Lease (needed for more than one replica)',
  },
  {
    flag: 'leader-election-namespace',
    env: 'MCO_LEADER_ELECTION_NAMESPACE',
    // Not the pod's namespace: every install shares one Lease, so two installs never both act.
    default: 'kube-system',
    help: 'namespace of the leader Lease, shared by every install on the hub',
  },
  {
    flag: 'leader-election-id',
    env: 'MCO_LEADER_ELECTION_ID',
    default: 'mco-controller',
    help: 'name of the leader Lease, shared by every install on the hub',
  },
  {
    flag: 'shards',
    env: 'MCO_SHARDS',
    default: '8',
    help: 'placements are split into this many shards, each with its own Lease (<leader-election-id>, then <leader-election-id>-1 ...); replicas share them out. Keep it the same on every replica; 1 is plain leader election',
  },
  {
    flag: 'lease-duration',
    env: 'MCO_LEASE_DURATION',
    default: '15s',
    help: 'how long standbys wait after the last renewal before taking over',
  },
  {
    flag: 'renew-deadline',
    env: 'MCO_RENEW_DEADLINE',
    default: '10s',
    help: 'the leader steps down when it could not renew for this long',
  },
  {
    flag: 'retry-period',
    env: 'MCO_RETRY_PERIOD',
    default: '2s',
    help: 'time between two Lease acquire or renew attempts',
  },
  {
    flag: 'identity',
    env: 'POD_NAME',
    default: undefined,
    help: 'name of this replica in the Lease and in Events (default: hostname); a random suffix is added',
  },
  {
    flag: 'install',
    env: 'MCO_INSTALL',
    default: undefined,
    help: 'name of this installation, e.g. <release namespace>/<release name>: prefixes the identity so that a replica seeing another install hold the shared Lease stands by and reports it',
  },
  { flag: 'workers', env: 'MCO_WORKERS', default: '4', help: 'placements reconciled concurrently' },
  {
    flag: 'resync-period',
    env: 'MCO_RESYNC_PERIOD',
    default: '10m',
    help: 'every placement is reconciled at least this often',
  },
  {
    flag: 'signal-sources',
    env: 'MCO_SIGNAL_SOURCES',
    default: undefined,
    help: 'YAML file naming the capacity-signal sources (docs/operations.md); without it autoscaling placements hold their clusters',
  },
  {
    flag: 'signal-poll-interval',
    env: 'MCO_SIGNAL_POLL_INTERVAL',
    default: '30s',
    help: 'autoscaling placements are re-evaluated with fresh signals this often',
  },
  {
    flag: 'signal-timeout',
    env: 'MCO_SIGNAL_TIMEOUT',
    default: '10s',
    help: 'longest wait for one observe() of a signal source',
  },
  {
    flag: 'inventory-loss-threshold',
    env: 'MCO_INVENTORY_LOSS_THRESHOLD',
    default: '30',
    help: 'percent of the ClusterProfiles (and at least 3) whose sudden loss holds removals caused by missing profiles until the count recovers or `mco clusters confirm-removal`',
  },
  {
    flag: 'inventory-loss-window',
    env: 'MCO_INVENTORY_LOSS_WINDOW',
    default: '5m',
    help: 'a loss of ClusterProfiles within this long counts as sudden',
  },
  {
    flag: 'namespace',
    env: 'POD_NAMESPACE',
    default: DEFAULT_CONTROLLER_NAMESPACE,
    help: `the controller's namespace (the chart: its release namespace); the operator confirms an inventory loss there, in ConfigMap ${INVENTORY_LOSS_CONFIRMATION} (mco clusters confirm-removal)`,
  },
  {
    flag: 'watch-idle-timeout',
    env: 'MCO_WATCH_IDLE_TIMEOUT',
    default: '3m',
    help: 'relist a resource when its watch delivered no event or bookmark for this long',
  },
  {
    flag: 'cache-max-objects',
    env: 'MCO_CACHE_MAX_OBJECTS',
    default: '100000',
    help: 'objects one watch cache may hold before it alerts (it keeps them all: metric mco_controller_informer_over_limit and a warning)',
  },
  {
    flag: 'cache-max-bytes',
    env: 'MCO_CACHE_MAX_BYTES',
    default: '256Mi',
    help: 'JSON bytes one watch cache may hold before it alerts, e.g. 64Mi or 1Gi (0: not measured)',
  },
  {
    flag: 'request-timeout',
    env: 'MCO_REQUEST_TIMEOUT',
    default: '30s',
    help: 'timeout of one Kubernetes API request',
  },
  {
    flag: 'events',
    env: 'MCO_EVENTS',
    default: 'true',
    boolean: true,
    help: 'record Kubernetes Events for cluster transitions',
  },
  {
    flag: 'cluster-profile-namespaces',
    env: 'MCO_CLUSTER_PROFILE_NAMESPACES',
    default: '',
    help: 'comma-separated namespaces whose ClusterProfiles are the inventory; others are ignored (empty: all)',
  },
  {
    flag: 'allow-cross-namespace-workloads',
    env: 'MCO_ALLOW_CROSS_NAMESPACE_WORKLOADS',
    default: 'false',
    boolean: true,
    help: 'let placements name workloads outside their own namespace (a trusted single-tenant hub only)',
  },
  { flag: 'log-level', env: 'MCO_LOG_LEVEL', default: 'info', help: 'debug|info|warn|error' },
  {
    flag: 'shutdown-timeout',
    env: 'MCO_SHUTDOWN_TIMEOUT',
    default: '20s',
    help: 'longest wait for in-flight reconciles on SIGTERM',
  },
];

const RawSchema = z.object({
  kubeconfig: z.string().min(1).optional(),
  listen: z.string().transform((text, ctx) => {
    const match = /^(.*):(\d{1,5})$/.exec(text);
    const port = match ? Number(match[2]) : NaN;
    if (!match || port > 65_535) {
      ctx.addIssue({ code: 'custom', message: `expected host:port, got "${text}"` });
      return z.NEVER;
    }
    return { host: match[1]!.replace(/^\[(.*)\]$/, '$1') || '0.0.0.0', port };
  }),
  'leader-elect': bool,
  'leader-election-namespace': name,
  'leader-election-id': name,
  shards: int(1, 256),
  'lease-duration': duration(1000, 3_600_000),
  'renew-deadline': duration(500, 3_600_000),
  'retry-period': duration(100, 600_000),
  identity: z.string().min(1).max(200).optional(),
  install: z
    .string()
    .regex(
      /^[a-z0-9]([-a-z0-9./]*[a-z0-9])?$/,
      'expected lower-case letters, digits, "-", "." and "/", e.g. mco-system/mco',
    )
    .max(200)
    .optional(),
  workers: int(1, 64),
  'resync-period': duration(1000, 86_400_000),
  'signal-sources': z.string().min(1).optional(),
  'signal-poll-interval': duration(1000, 86_400_000),
  'signal-timeout': duration(100, 600_000),
  'inventory-loss-threshold': int(1, 100),
  'inventory-loss-window': duration(1000, 86_400_000),
  namespace: z.string().regex(NAMESPACE, 'expected a namespace name (DNS-1123 label)'),
  'watch-idle-timeout': duration(1000, 86_400_000),
  'cache-max-objects': int(0, 100_000_000),
  'cache-max-bytes': byteCount,
  'request-timeout': duration(100, 600_000),
  events: bool,
  'cluster-profile-namespaces': namespaceList,
  'allow-cross-namespace-workloads': bool,
  'log-level': z.enum(['debug', 'info', 'warn', 'error']),
  'shutdown-timeout': duration(0, 600_000),
});

export interface ControllerConfig {
  readonly kubeconfig: string | undefined;
  readonly http: { readonly host: string; readonly port: number };
  readonly leaderElection:
    | {
        readonly namespace: string;
        readonly name: string;
        readonly shards: number;
        readonly leaseDurationMs: number;
        readonly renewDeadlineMs: number;
        readonly retryPeriodMs: number;
      }
    | undefined;
  readonly identity: string;
  readonly workers: number;
  readonly resyncPeriodMs: number;
  readonly signalSourcesFile: string | undefined;
  readonly signalPollIntervalMs: number;
  readonly signalTimeoutMs: number;
  /** The inventory-loss guard (docs/placement-rules.md §10.5). */
  readonly inventoryLoss: { readonly threshold: number; readonly windowMs: number };
  /** The controller's namespace: where the inventory-loss confirmation is read. */
  readonly namespace: string;
  readonly watchIdleTimeoutMs: number;
  /** Bounds of each watch cache (0: none); past one it alerts, keeping every object. */
  readonly cacheLimits: { readonly maxObjects: number; readonly maxBytes: number };
  readonly requestTimeoutMs: number;
  readonly events: boolean;
  readonly allowCrossNamespaceWorkloads: boolean;
  /** Namespaces whose ClusterProfiles are read; empty: every namespace. */
  readonly clusterProfileNamespaces: readonly string[];
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  readonly shutdownTimeoutMs: number;
}

/**
 * Turns flag values (from `node:util` parseArgs, strings) and the environment
 * into the controller's configuration, once, at the edge. Flags win over
 * environment variables, which win over defaults. The error names the flag
 * and its variable.
 */
export function parseControllerConfig(
  flags: Readonly<Record<string, string | undefined>>,
  env: Readonly<Record<string, string | undefined>>,
): ParseResult<ControllerConfig> {
  const raw: Record<string, string | undefined> = {};
  for (const spec of CONTROLLER_FLAGS) {
    const value =
      [spec.flag, ...(spec.aliases ?? [])].map((f) => flags[f]).find((v) => v !== undefined) ??
      (env[spec.env] || undefined) ??
      spec.default;
    if (value !== undefined) raw[spec.flag] = value;
  }
  const parsed = RawSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const flag = String(issue.path[0]);
    const spec = CONTROLLER_FLAGS.find((f) => f.flag === flag);
    return { ok: false, error: `--${flag}${spec ? ` (${spec.env})` : ''}: ${issue.message}` };
  }
  const v = parsed.data;
  if (v['leader-elect'] && !(v['retry-period'] < v['renew-deadline'] && v['renew-deadline'] < v['lease-duration'])) {
    return { ok: false, error: '--retry-period < --renew-deadline < --lease-duration is required' };
  }
  // The replica part has no '/', so that installOf() finds the install part.
  const base = (v.identity ?? hostname()).replaceAll('/', '-').slice(0, 180);
  return {
    ok: true,
    value: {
      kubeconfig: v.kubeconfig,
      http: v.listen,
      leaderElection: v['leader-elect']
        ? {
            namespace: v['leader-election-namespace'],
            name: v['leader-election-id'],
            shards: v.shards,
            leaseDurationMs: v['lease-duration'],
            renewDeadlineMs: v['renew-deadline'],
            retryPeriodMs: v['retry-period'],
          }
        : undefined,
      // A restarted pod keeps its name; the suffix tells its Lease records apart.
      identity: `${v.install ? `${v.install}/` : ''}${base}_${randomBytes(4).toString('hex')}`,
      workers: v.workers,
      resyncPeriodMs: v['resync-period'],
      signalSourcesFile: v['signal-sources'],
      signalPollIntervalMs: v['signal-poll-interval'],
      signalTimeoutMs: v['signal-timeout'],
      inventoryLoss: { threshold: v['inventory-loss-threshold'] / 100, windowMs: v['inventory-loss-window'] },
      namespace: v.namespace,
      watchIdleTimeoutMs: v['watch-idle-timeout'],
      cacheLimits: { maxObjects: v['cache-max-objects'], maxBytes: v['cache-max-bytes'] },
      requestTimeoutMs: v['request-timeout'],
      events: v.events,
      allowCrossNamespaceWorkloads: v['allow-cross-namespace-workloads'],
      clusterProfileNamespaces: v['cluster-profile-namespaces'],
      logLevel: v['log-level'],
      shutdownTimeoutMs: v['shutdown-timeout'],
    },
  };
}

/** `--flag <v>`, or `--flag` for a switch, as `--help` shows it. */
export const flagSyntax = (f: FlagSpec): string => `--${f.flag}${f.boolean ? '' : ' <v>'}`;

/** The flag table of `mco controller --help`. */
export function controllerFlagsHelp(): string {
  const width = Math.max(...CONTROLLER_FLAGS.map((f) => f.flag.length)) + 9;
  return CONTROLLER_FLAGS.map((f) => {
    const left = `  ${flagSyntax(f)}`.padEnd(width + 2);
    const def = f.default === undefined ? '' : ` (default ${f.default})`;
    const aliases = f.aliases?.length ? `; also ${f.aliases.map((a) => `--${a}`).join(', ')}` : '';
    return `${left}  ${f.help}${def}\n${' '.repeat(width + 4)}env ${f.env}${aliases}`;
  })
    .concat('  A switch alone is true; --flag=false or --flag false turns it off (env: true|false).')
    .join('\n');
}

/** The file named by --signal-sources: named instances of signal-source and capacity-source plugins. */
/**
 * Namespaces whose placements may use a source; `['*']`: every namespace.
 * Required: a source left without it must not quietly serve every team of a
 * shared hub.
 */
const PlacementNamespacesSchema = z
  .array(z.string().min(1).max(63), {
    error: (issue) =>
      issue.input === undefined
        ? "required: the namespaces whose placements may use this source, or ['*'] for every namespace"
        : undefined,
  })
  .min(1, "list at least one namespace, or ['*'] for every namespace")
  .max(1000)
  .refine((namespaces) => !namespaces.includes('*') || namespaces.length === 1, {
    message: "'*' (every namespace) stands alone: list namespaces, or ['*']",
  });

export const SignalSourcesFileSchema = z.object({
  /** The source for autoscaling placements that name none (`spec.scaling.autoscaleForCapacity.signalSource`). */
  defaultSource: z.string().min(1).optional(),
  sources: z
    .array(
      z.object({
        name: z.string().min(1).max(253),
        /** The plugin's module name, e.g. "kubernetes" or "prometheus". */
        plugin: z.string().min(1),
        config: z.unknown().optional(),
        placementNamespaces: PlacementNamespacesSchema,
      }),
    )
    .max(64)
    .default([]),
  /**
   * Capacity sources (docs/signals.md#capacity-sources): every one that serves
   * an autoscaling placement's namespace is asked about its next scale-out
   * candidates.
   */
  capacitySources: z
    .array(
      z
        .object({
          name: z.string().min(1).max(253),
          /** A built-in capacity source: "karpenter", "prometheus" or "cluster-property". */
          plugin: z.string().min(1).optional(),
          /** A capacity-source package, or a path to its module file (relative to this file). */
          module: z.string().min(1).optional(),
          config: z.unknown().optional(),
          placementNamespaces: PlacementNamespacesSchema,
        })
        .refine((entry) => (entry.plugin === undefined) !== (entry.module === undefined), {
          message: 'set exactly one of plugin (a built-in capacity source) and module (a package or file)',
          path: ['plugin'],
        }),
    )
    .max(16)
    .default([]),
  /** How many scale-out candidates, in the engine's order, each capacity source is asked about. */
  capacityCandidates: z.number().int().min(1).max(64).default(3),
});
export type SignalSourcesFile = z.infer<typeof SignalSourcesFileSchema>;

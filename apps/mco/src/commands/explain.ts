import { Registry } from 'prom-client';
import {
  clusterKey,
  compilePlacementSpec,
  createInventory,
  crossNamespaceWorkload,
  DecisionInputSchema,
  explain,
  SignalSchema,
  type CapacityAnswer,
  type ClusterProfile,
  type DecideInput,
  type Explanation,
  type PlacementStatus,
  type Signal,
} from '@mco/core';
import {
  askCapacity,
  REASON_NO_SIGNAL_SOURCE,
  REASON_SIGNAL_SOURCE_NOT_ALLOWED,
  withoutSignalSource,
} from '@mco/controller';
import { CLUSTER_PROFILES, KubeClient, objectPath, PLACEMENTS, resourcePath } from '@mco/kube-runtime';
import { createLogger, type KubeConnection } from '@mco/runtime';
import {
  loadHub,
  parseClusterProfileNamespaces,
  parseOrThrow,
  readDocument,
  UsageError,
  type Command,
  type Io,
  parseFlags,
} from '../cli.js';
import { explanationRows } from '../explain-rows.js';
import { createSignalSources } from './controller.js';

const USAGE = `Usage:
  mco explain -f <input.(json|yaml)> [-o table|json]
  mco explain NAME [-n <namespace>] [--kubeconfig <path>] [--context <name>] [--signal-sources <file>]
                   [--allow-cross-namespace-workloads] [-o table|json]

Explains one evaluation of a placement (docs/api.md, "Explaining a decision"):
for every ClusterProfile, whether it is eligible or the first thing that
excluded it (deletion, a rule, the required affinity, a taint), its priority
and preference score, its signal (fresh, stale or missing; at its ceiling,
wants scale-in, and why), its state before and after, the transitions made,
and why the evaluation did not do more. The explanation comes from the
engine's own evaluation: its verdict is exactly what "mco decide" decides.

-f reads an "mco decide" input file. NAME reads the placement and the
ClusterProfiles live from the hub, and the signals of its listed clusters from
the capacity-signal source the controller would ask (--signal-sources, the
controller's file), and the file's capacity sources about the next scale-out
candidates as the controller asks them; nothing is written. Like the controller, it applies tenant
isolation: a workload outside the placement's namespace makes the spec invalid
(CrossNamespaceWorkload) unless --allow-cross-namespace-workloads is given (give
it when the controller runs with it), and a source whose placementNamespaces
leave out the placement's namespace is not asked.

Options:
  -f, --file <path>          "mco decide" input, JSON or YAML ("-" reads stdin)
  -n, --namespace <ns>       the placement's namespace (default "default")
      --kubeconfig <path>    hub kubeconfig (default: $KUBECONFIG or ~/.kube/config)
      --context <name>       hub context (default: the current context)
      --signal-sources <f>   the controller's signal sources file (without it: no signals)
      --allow-cross-namespace-workloads
                             as the controller's flag: no tenant isolation (live only)
      --cluster-profile-namespaces <a,b>
                             as the controller's flag: only ClusterProfiles in these namespaces (default: all)
  -o, --output <format>      table (default) or json
  -h, --help                 show this help

Exit codes: 0 explained, 1 the hub could not be read, 2 bad usage or input.`;

export const explainCommand: Command = {
  name: 'explain',
  usage: USAGE,
  async run(argv, io) {
    const { values, positionals } = parseFlags({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        file: { type: 'string', short: 'f' },
        namespace: { type: 'string', short: 'n' },
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        'signal-sources': { type: 'string' },
        'allow-cross-namespace-workloads': { type: 'boolean' },
        'cluster-profile-namespaces': { type: 'string' },
        output: { type: 'string', short: 'o' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    const output = values.output ?? 'table';
    if (output !== 'table' && output !== 'json') throw new UsageError(`-o ${output}: expected table or json`);
    if ((values.file === undefined) === (positionals.length === 0)) {
      throw new UsageError('give either -f <input file> or the placement NAME (live from the hub)');
    }
    if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
    let input: DecideInput;
    let missingSource: MissingSource | undefined;
    if (values.file) {
      const doc = parseOrThrow(DecisionInputSchema, await readDocument(values.file), `input ${values.file}`);
      input = {
        now: new Date(doc.now),
        placement: doc.placement,
        clusterProfiles: doc.clusterProfiles,
        signals: doc.signals,
      };
    } else {
      const hub = loadHub(values.kubeconfig, values.context);
      try {
        ({ input, missingSource } = await readLive(
          hub,
          values.namespace ?? 'default',
          positionals[0]!,
          values['signal-sources'],
          values['allow-cross-namespace-workloads'] !== true,
          parseClusterProfileNamespaces(values['cluster-profile-namespaces']),
          io,
        ));
      } catch (error) {
        if (error instanceof UsageError) throw error;
        io.stderr(`mco explain: ${(error as Error).message}\n`);
        return 1;
      }
    }
    const explanation = asTheController(explain(input), input, missingSource);
    io.stdout(output === 'json' ? `${JSON.stringify(explanation, null, 2)}\n` : formatExplanation(explanation));
    return 0;
  },
};

/** Why an autoscaling placement gets no signals: the controller's Satisfied=Unknown reason and message. */
interface MissingSource {
  readonly reason: string;
  readonly message: string;
}

/** Satisfied as the controller writes it when the placement's signal source is missing or not allowed. */
function asTheController(e: Explanation, input: DecideInput, missing: MissingSource | undefined): Explanation {
  if (!missing) return e;
  const status = withoutSignalSource(e.decision.status, input.placement.status ?? {}, missing, input.now);
  const satisfied = status.conditions?.find((c) => c.type === 'Satisfied');
  return satisfied
    ? { ...e, satisfied: { status: satisfied.status, reason: satisfied.reason, message: satisfied.message } }
    : e;
}

/**
 * The snapshot the controller would decide on, read once without informers:
 * the placement, every ClusterProfile, and the signals of the listed clusters
 * from the placement's signal source, under the controller's tenant isolation.
 */
async function readLive(
  hub: KubeConnection,
  namespace: string,
  name: string,
  signalSourcesFile: string | undefined,
  isolated: boolean,
  clusterProfileNamespaces: readonly string[],
  io: Io,
): Promise<{ input: DecideInput; missingSource: MissingSource | undefined }> {
  const client = new KubeClient(hub);
  let placement: {
    metadata: { name: string; namespace: string; generation?: number };
    spec?: unknown;
    status?: PlacementStatus;
  };
  let profiles: ClusterProfile[];
  try {
    placement = await client.get(objectPath(PLACEMENTS, namespace, name));
    profiles = (await client.get<{ items: ClusterProfile[] }>(resourcePath(CLUSTER_PROFILES))).items.filter(
      (p) => clusterProfileNamespaces.length === 0 || clusterProfileNamespaces.includes(p.metadata.namespace),
    );
  } finally {
    client.close();
  }
  const now = new Date();
  const { signals, capacity, missingSource } = await observeSignals(
    hub,
    placement,
    profiles,
    now,
    signalSourcesFile,
    isolated,
    io,
  );
  return {
    input: {
      now,
      placement,
      clusterProfiles: profiles,
      signals,
      ...(capacity ? { capacity } : {}),
      ...(isolated ? { requireWorkloadInPlacementNamespace: true } : {}),
    },
    missingSource,
  };
}

/** The signals of the listed clusters and, as the controller asks them alongside, the capacity answers. */
async function observeSignals(
  hub: KubeConnection,
  placement: { metadata: { name: string; namespace: string }; spec?: unknown; status?: PlacementStatus },
  profiles: readonly ClusterProfile[],
  now: Date,
  file: string | undefined,
  isolated: boolean,
  io: Io,
): Promise<{ signals: Signal[]; capacity?: readonly CapacityAnswer[] | undefined; missingSource?: MissingSource }> {
  const compiled = compilePlacementSpec(placement.spec);
  const autoscale = compiled.ok ? compiled.value.spec.scaling?.autoscaleForCapacity : undefined;
  if (!compiled.ok || !autoscale) return { signals: [] };
  // The controller never observes another namespace's workload: the engine reports the spec invalid.
  if (isolated && crossNamespaceWorkload(compiled.value.spec, placement.metadata.namespace)) return { signals: [] };
  if (!file) {
    io.stderr('mco explain: no --signal-sources given: every signal reads as missing\n');
    // The controller's words for a controller started without --signal-sources.
    const message = 'no capacity-signal source is configured (see --signal-sources)';
    return { signals: [], missingSource: { reason: REASON_NO_SIGNAL_SOURCE, message } };
  }
  const logger = createLogger({ level: 'warn', write: io.stderr });
  const sources = await createSignalSources(file, hub, new Registry(), logger);
  const { namespace, name: placementName } = placement.metadata;
  const asking = askCapacity({
    sources: sources.capacity.byName,
    sourceNamespaces: sources.capacity.namespaces,
    candidates: sources.capacity.candidates,
    placement: { namespace, name: placementName },
    status: placement.status ?? {},
    compiled: compiled.value,
    inventory: createInventory(profiles),
    now,
    timeoutMs: 10_000,
    report: {
      failed: (source, error) =>
        io.stderr(`mco explain: capacity source "${source}" gave no answer: ${(error as Error).message}\n`),
      errors: (source, errors) => {
        for (const e of errors)
          io.stderr(`mco explain: no capacity answer from "${source}" for ${e.cluster}: ${e.message}\n`);
      },
      invalid: (source, a) =>
        io.stderr(`mco explain: dropped an invalid capacity answer from "${source}" for ${a.cluster}\n`),
    },
  });
  // Awaited below; until then (or when the signal source throws) its rejection is not unhandled.
  asking.catch(() => undefined);
  try {
    const name = autoscale.signalSource ?? sources.defaultSource;
    const source = name === undefined ? undefined : sources.byName.get(name);
    if (!source) throw new UsageError(`${file}: no signal source "${name ?? '(default)'}" for this placement`);
    const allowed = sources.namespaces.get(name!);
    if (allowed && !allowed.includes(placement.metadata.namespace)) {
      // As the controller: the source is not asked, so every signal reads as missing.
      const serves = `does not serve namespace "${placement.metadata.namespace}" (its placementNamespaces)`;
      io.stderr(`mco explain: signal source "${name}" ${serves}: every signal reads as missing\n`);
      const message = `capacity-signal source "${name}" ${serves}`;
      return {
        signals: [],
        capacity: await asking,
        missingSource: { reason: REASON_SIGNAL_SOURCE_NOT_ALLOWED, message },
      };
    }
    const byKey = new Map(profiles.map((p) => [clusterKey(p.metadata.namespace, p.metadata.name), p]));
    const clusters = (placement.status?.clusters ?? []).flatMap((c) => {
      const key = clusterKey(c.namespace, c.name);
      const profile = byKey.get(key);
      return profile ? [{ key, profile }] : [];
    });
    const observation = await source.observe(
      {
        placement: {
          namespace: placement.metadata.namespace,
          name: placement.metadata.name,
          spec: compiled.value.spec,
        },
        clusters,
      },
      AbortSignal.timeout(10_000),
    );
    for (const e of observation.errors) io.stderr(`mco explain: no signal for ${e.cluster}: ${e.message}\n`);
    return {
      signals: observation.signals.flatMap((s) => {
        const parsed = SignalSchema.safeParse(s);
        return parsed.success ? [parsed.data] : [];
      }),
      capacity: await asking,
    };
  } finally {
    await Promise.all(
      [...sources.byName.values(), ...sources.capacity.byName.values()].map((s) => s.close?.().catch(() => undefined)),
    );
  }
}

/** One table per placement: a row per cluster, then the notes that explain why nothing more happened. */
export function formatExplanation(e: Explanation): string {
  const rows = explanationRows(e);
  const header = {
    cluster: 'CLUSTER',
    eligible: 'ELIGIBLE',
    priority: 'PRIORITY',
    score: 'SCORE',
    signal: 'SIGNAL',
    state: 'STATE',
    why: 'WHY',
  };
  const table = [header, ...rows];
  const keys = Object.keys(header) as (keyof typeof header)[];
  const width = (k: keyof typeof header) => Math.max(...table.map((r) => r[k].length));
  const lines = table.map((r) =>
    keys
      .map((k, i) => (i === keys.length - 1 ? r[k] : r[k].padEnd(width(k))))
      .join('  ')
      .trimEnd(),
  );
  const condition = (name: string, c: Explanation['valid']) =>
    c ? `${name}: ${c.status} (${c.reason})${c.message ? `: ${c.message}` : ''}` : `${name}: -`;
  const requeue = e.decision.requeueAfterSeconds;
  return `${[
    `placement ${e.placement} at ${e.now}`,
    condition('Valid', e.valid),
    condition('Satisfied', e.satisfied),
    ...e.notes.map((n) => `note: ${n}`),
    `next evaluation: ${requeue === null ? 'on the next change' : `in ${requeue}s at the latest`}`,
    '',
    ...lines,
  ].join('\n')}\n`;
}

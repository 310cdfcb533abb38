import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  formatIssues,
  formatDuration,
  formatSeedsConsole,
  longView,
  parseScenario,
  POLICIES,
  renderReport,
  simulateSeeds,
  type PolicyName,
  type Scenario,
} from '@mco/simulator';
import { UsageError, readDocument, type Command, type Io, parseFlags, parseIntegerFlag } from '../cli.js';

const OPTIONS = {
  report: { type: 'string', short: 'o' },
  seed: { type: 'string' },
  seeds: { type: 'string' },
  policies: { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Seeds `mco simulate` runs by default. */
const DEFAULT_SEEDS = 5;

/** `--seed`: an unsigned 32-bit integer. */
export function parseSeed(value: string | undefined): number | undefined {
  return parseIntegerFlag('seed', value, 0, 0xffffffff);
}

/** `--seeds`: how many seeds, 1 to 100. */
export function parseSeedCount(value: string | undefined, fallback: number): number {
  return parseIntegerFlag('seeds', value, 1, 100) ?? fallback;
}

/** `--policies`: a comma-separated list of known policies, mco first. */
export function parsePolicies(value: string | undefined): PolicyName[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((p) => p.trim());
  const unknown = names.filter((p) => !(POLICIES as readonly string[]).includes(p));
  if (unknown.length > 0 || names.length === 0) {
    throw new UsageError(`--policies: unknown ${unknown.join(', ') || '(empty)'}; known: ${POLICIES.join(', ')}`);
  }
  return names as PolicyName[];
}

export interface RunOptions {
  readonly report: string;
  /** The first seed (default: the scenario's). */
  readonly seed: number | undefined;
  readonly seeds: number;
  readonly policies?: readonly PolicyName[] | undefined;
  readonly quiet: boolean;
}

/**
 * Runs a scenario over the seeds, prints the timeline of the first seed, the
 * comparison and the verdicts, writes the HTML report and prints its path.
 */
export async function runScenario(scenario: Scenario, options: RunOptions, io: Io): Promise<number> {
  const multi = simulateSeeds(scenario, {
    seeds: options.seeds,
    ...(options.seed !== undefined ? { firstSeed: options.seed } : {}),
    ...(options.policies ? { policies: options.policies } : {}),
  });
  const path = resolve(options.report);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, renderReport(multi.results[0]!, { multi }), 'utf8');
  io.stdout(formatSeedsConsole(multi, { timeline: !options.quiet }));
  io.stdout(`\nReport: ${path}\n`);
  // The long view next to the short one: the same scenario over its `longView`.
  const long = longView(scenario);
  if (!long) return 0;
  const longMulti = simulateSeeds(long, {
    seeds: options.seeds,
    ...(options.seed !== undefined ? { firstSeed: options.seed } : {}),
    ...(options.policies ? { policies: options.policies } : {}),
  });
  const longPath = path.replace(/(\.html?)?$/, '-long-view.html');
  await writeFile(longPath, renderReport(longMulti.results[0]!, { multi: longMulti }), 'utf8');
  io.stdout(`\nLong view (${formatDuration(long.duration)}):\n${formatSeedsConsole(longMulti, { timeline: false })}`);
  io.stdout(`\nReport: ${longPath}\n`);
  return 0;
}

export const simulateCommand: Command = {
  name: 'simulate',
  usage: `Usage: mco simulate <scenario.(yaml|json)> [--report <out.html>] [--seeds <n>] [--seed <n>] [--policies <list>] [--quiet]

Simulates a day (or any span) of a GPU fleet at accelerated time: clusters
with node pools that can stock out, a cluster-autoscaler, an HPA per cluster
and a load balancer. Every tick the fleet's signals and ClusterProfiles go to
the real mco engine, and its decision is delivered back to the fleet. The
same world also runs the baselines: "MCO v0.2 as documented" (Google MCO's
documented algorithm), "pick-N" (the fewest clusters by preference that hold
the peak demand) and "all eligible clusters always on".

Prints each decision of mco on the first seed (time since start, transition
id, cluster, reason) and the scenario's events, then every metric as a mean
and a range over the seeds, and a verdict per baseline: mco dominates, is
dominated, trades off, or is equivalent (within 1% cost and 0.02 percentage
points unserved), comparing means. Writes a self-contained HTML report with
charts. See docs/simulator.md for the scenario format.

Options:
  -o, --report <path>  where to write the HTML report (default: ./<scenario name>-report.html)
      --seeds <n>      how many seeds to run: the first seed and the next n-1 (default 5)
      --seed <n>       the first seed (default: the scenario's seed); same seed, same result
      --policies <list>  comma-separated, mco first (default: mco, mco-fail-back when it differs,
                       mco-capacity when the scenario has a capacitySource, mco-v0.2, pick-n,
                       always-on; also: mco-without-hysteresis)
  -q, --quiet          do not print the timeline
  -h, --help           show this help

Exit codes: 0 simulated, 1 the report could not be written, 2 bad usage or an
invalid scenario (the message names the field).`,
  async run(argv, io) {
    const { values, positionals } = parseFlags({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    if (values.help) {
      io.stdout(`${this.usage}\n`);
      return 0;
    }
    if (positionals.length !== 1) throw new UsageError('expected exactly one scenario file');
    const file = positionals[0]!;
    const seed = parseSeed(values.seed);
    const parsed = parseScenario(await readDocument(file));
    if (!parsed.ok) throw new UsageError(`invalid scenario ${file}:\n${indent(formatIssues(parsed.error))}`);
    const report = values.report ?? `${parsed.value.name}-report.html`;
    return runScenario(
      parsed.value,
      {
        report,
        seed,
        seeds: parseSeedCount(values.seeds, DEFAULT_SEEDS),
        policies: parsePolicies(values.policies),
        quiet: values.quiet === true,
      },
      io,
    );
  },
};

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

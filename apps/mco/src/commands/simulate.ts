import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { formatConsole, formatIssues, parseScenario, renderReport, simulate, type Scenario } from '@mco/simulator';
import { UsageError, readDocument, type Command, type Io, parseFlags } from '../cli.js';

const OPTIONS = {
  report: { type: 'string', short: 'o' },
  seed: { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `--seed`: an unsigned 32-bit integer. */
export function parseSeed(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) > 0xffffffff) {
    throw new UsageError(`--seed: expected an integer from 0 to 4294967295, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** Runs a scenario, prints the timeline and the comparison, writes the HTML report and prints its path. */
export async function runScenario(
  scenario: Scenario,
  options: { readonly report: string; readonly seed: number | undefined; readonly quiet: boolean },
  io: Io,
): Promise<number> {
  const result = simulate(scenario, { seed: options.seed });
  const path = resolve(options.report);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, renderReport(result), 'utf8');
  io.stdout(formatConsole(result, { timeline: !options.quiet }));
  io.stdout(`\nReport: ${path}\n`);
  return 0;
}

export const simulateCommand: Command = {
  name: 'simulate',
  usage: `Usage: mco simulate <scenario.(yaml|json)> [--report <out.html>] [--seed <n>] [--quiet]

Simulates a day (or any span) of a GPU fleet at accelerated time: clusters
with node pools that can stock out, a cluster-autoscaler, an HPA per cluster
and a load balancer. Every tick the fleet's signals and ClusterProfiles go to
the real mco engine, and its decision is delivered back to the fleet. The
same scenario also runs two baselines: "MCO as documented" (no stabilization,
no cooldown, no health checking) and "all eligible clusters always on".

Prints each decision (time since start, transition id, cluster, reason) and
the scenario's events, then a comparison table; writes a self-contained HTML
report with charts. See docs/simulator.md for the scenario format.

Options:
  -o, --report <path>  where to write the HTML report (default: ./<scenario name>-report.html)
      --seed <n>       seed of the random draws (default: the scenario's seed); same seed, same result
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
    return runScenario(parsed.value, { report, seed, quiet: values.quiet === true }, io);
  },
};

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

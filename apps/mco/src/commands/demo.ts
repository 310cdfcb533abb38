import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GPU_STOCKOUT_SCENARIO, formatIssues, parseScenarioText } from '@mco/simulator';
import { parseFlags, type Command } from '../cli.js';
import { parseSeed, parseSeedCount, runScenario } from './simulate.js';

export const demoCommand: Command = {
  name: 'demo',
  usage: `Usage: mco demo [--report <out.html>] [--seeds <n>] [--seed <n>] [--quiet]

Runs the built-in GPU-stockout scenario (examples/scenarios/gpu-stockout.yaml)
at accelerated time with the real mco engine: a GPU inference service in
us-central1 meets a morning traffic ramp while the region is out of GPUs, and
mco scales out to the next cluster. No cluster is needed and nothing opens:
it prints the timeline and the comparison with the baselines, and the path
of the HTML report. "mco simulate" runs your own scenarios.

Options:
  -o, --report <path>  where to write the HTML report (default: <tmp>/mco-demo/gpu-stockout-report.html)
      --seeds <n>      how many seeds to run (default 1, to stay quick; mco simulate runs 5)
      --seed <n>       the first seed (default: the scenario's seed)
  -q, --quiet          do not print the timeline
  -h, --help           show this help`,
  async run(argv, io) {
    const { values } = parseFlags({
      args: argv,
      options: {
        report: { type: 'string', short: 'o' },
        seed: { type: 'string' },
        seeds: { type: 'string' },
        quiet: { type: 'boolean', short: 'q' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
    if (values.help) {
      io.stdout(`${this.usage}\n`);
      return 0;
    }
    const seed = parseSeed(values.seed);
    const parsed = parseScenarioText(GPU_STOCKOUT_SCENARIO);
    // The embedded scenario is checked by the simulator's tests; failing here is a bug, not bad input.
    if (!parsed.ok) throw new Error(`the embedded scenario is invalid:\n${formatIssues(parsed.error)}`);
    const report = values.report ?? join(tmpdir(), 'mco-demo', 'gpu-stockout-report.html');
    const seeds = parseSeedCount(values.seeds, 1);
    return runScenario(parsed.value, { report, seed, seeds, quiet: values.quiet === true }, io);
  },
};

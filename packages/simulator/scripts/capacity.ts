// The capacity-source and spread figures of docs/simulator.md ("Capacity
// sources and spread"): on the multi-region-stockout scenarios, mco with a
// capacity source against mco without one and MCO v0.2; the same source
// answering unknown or wrong 20% of the time; a source that always answers
// unknown on every other shipped scenario (the runs must be identical to
// mco's); and spread on the shared-region outage with
// minClustersBelowCapacityCeiling: 2. Exits 1 when a target is missed.
// Run: npm run acceptance:capacity -w @mco/simulator [-- --seeds N] (default 5, seeds 1…N).
import { readdirSync, readFileSync } from 'node:fs';
import {
  formatIssues,
  parseScenarioText,
  simulate,
  type CapacitySource,
  type PolicyName,
  type PolicyRun,
  type Scenario,
} from '../src/index.js';

const at = process.argv.indexOf('--seeds');
const SEEDS = at < 0 ? 5 : Number(process.argv[at + 1]);
if (!Number.isInteger(SEEDS) || SEEDS < 5) throw new Error('--seeds: expected an integer ≥ 5');
const seeds = Array.from({ length: SEEDS }, (_, i) => i + 1);
const scenarios = new URL('../../../examples/scenarios/', import.meta.url);
const STOCKOUTS = ['multi-region-stockout.yaml', 'multi-region-stockout-deep.yaml'];
const OUTAGE = 'region-outage-min-two.yaml';
const OUTAGE_SPREAD = 'region-outage-min-two-spread.yaml';

function load(file: string): Scenario {
  const parsed = parseScenarioText(readFileSync(new URL(file, scenarios), 'utf8'));
  if (!parsed.ok) throw new Error(`${file}:\n${formatIssues(parsed.error)}`);
  return parsed.value;
}
const withSource = (s: Scenario, source: Partial<CapacitySource>): Scenario => ({
  ...s,
  capacitySource: { delay: 0, refreshInterval: 60, dropout: 0, unknown: 0, wrong: 0, ...s.capacitySource, ...source },
});
const runOf = (s: Scenario, seed: number, policy: PolicyName): PolicyRun =>
  simulate(s, { seed, policies: [policy] }).runs[0]!;
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** Seconds from the first FailedScaleUp of the scenario's first stockout (the preferred region) to restored headroom. */
const restored = (r: PolicyRun) => r.summary.stockouts[0]?.restoredAfter ?? Infinity;

let missed = 0;
const check = (ok: boolean, text: string) => {
  if (!ok) missed++;
  process.stdout.write(`${ok ? 'ok  ' : 'MISS'} ${text}\n`);
};
const minutes = (s: number) => `${(s / 60).toFixed(1)} min`;

process.stdout.write(`## multi-region stockouts, seeds ${seeds[0]}–${seeds.at(-1)}\n\n`);
process.stdout.write(
  '| scenario | policy | time to restored headroom (mean) | unserved % (mean) |\n| --- | --- | --- | --- |\n',
);
for (const file of STOCKOUTS) {
  const scenario = load(file);
  const variants: { label: string; scenario: Scenario; policy: PolicyName }[] = [
    { label: 'mco', scenario, policy: 'mco' },
    { label: 'MCO v0.2 as documented', scenario, policy: 'mco-v0.2' },
    { label: 'mco + capacity source', scenario, policy: 'mco-capacity' },
    {
      label: 'mco + capacity source, 20% unknown',
      scenario: withSource(scenario, { unknown: 0.2 }),
      policy: 'mco-capacity',
    },
    {
      label: 'mco + capacity source, 20% wrong',
      scenario: withSource(scenario, { wrong: 0.2 }),
      policy: 'mco-capacity',
    },
  ];
  const runs = variants.map((v) => seeds.map((seed) => runOf(v.scenario, seed, v.policy)));
  const times = runs.map((rs) => mean(rs.map(restored)));
  const unserved = runs.map((rs) => rs.map((r) => r.summary.unservedPercent));
  variants.forEach((v, i) =>
    process.stdout.write(`| ${file} | ${v.label} | ${minutes(times[i]!)} | ${mean(unserved[i]!).toFixed(3)} |\n`),
  );
  const [mco, v02, source] = [0, 1, 2].map((i) => ({ time: times[i]!, loss: mean(unserved[i]!) }));
  check(
    mco!.time >= 2 * source!.time && v02!.time >= 2 * source!.time,
    `${file}: with a capacity source headroom is back ${(mco!.time / source!.time).toFixed(2)}× faster than mco without one and ${(v02!.time / source!.time).toFixed(2)}× faster than MCO v0.2 (target ≥ 2×)`,
  );
  check(
    source!.loss < mco!.loss && source!.loss < v02!.loss,
    `${file}: unserved ${source!.loss.toFixed(3)}% with a capacity source, ${mco!.loss.toFixed(3)}% without, ${v02!.loss.toFixed(3)}% MCO v0.2`,
  );
  for (const i of [3, 4]) {
    const diff = unserved[i]!.map((u, k) => u - unserved[0]![k]!);
    const worst = diff.indexOf(Math.max(...diff));
    check(
      mean(unserved[i]!) <= mean(unserved[0]!),
      `${file}: ${variants[i]!.label}: unserved ${mean(unserved[i]!).toFixed(3)}% on the mean, without a source ${mean(unserved[0]!).toFixed(3)}%; worst seed ${seeds[worst]}: ${diff[worst]! >= 0 ? '+' : ''}${diff[worst]!.toFixed(3)} pp`,
    );
  }
  process.stdout.write('\n');
}

process.stdout.write(
  `## a source that always answers unknown, every other shipped scenario, seeds ${seeds[0]}–${seeds.at(-1)}\n\n`,
);
const others = readdirSync(scenarios)
  .filter((f) => f.endsWith('.yaml') && !STOCKOUTS.includes(f))
  .sort();
for (const file of others) {
  const scenario = withSource(load(file), { unknown: 1 });
  const differs = seeds.filter((seed) => {
    const result = simulate(scenario, { seed, policies: ['mco', 'mco-capacity'] });
    const [mco, unknown] = result.runs.map(({ samples, summary, status, timeline, placements }) =>
      JSON.stringify({ samples, summary, status, timeline, placements }),
    );
    return mco !== unknown;
  });
  check(
    differs.length === 0,
    `${file}: identical to mco${differs.length > 0 ? `, except seeds ${differs.join(', ')}` : ''}`,
  );
}

process.stdout.write(
  `\n## spread on the shared-region outage (minClustersBelowCapacityCeiling: 2), seeds ${seeds[0]}–${seeds.at(-1)}\n\n`,
);
const loss = (file: string) => seeds.map((seed) => runOf(load(file), seed, 'mco').summary.unservedPercent);
const defaults = loss(OUTAGE);
const spread = loss(OUTAGE_SPREAD);
check(
  mean(spread) < mean(defaults),
  `unserved ${mean(spread).toFixed(3)}% with spread { minGroups: 2 }, ${mean(defaults).toFixed(3)}% on defaults (worst seed with spread: ${Math.max(...spread).toFixed(3)}%, seed ${seeds[spread.indexOf(Math.max(...spread))]})`,
);

process.stdout.write(missed === 0 ? '\nevery target met\n' : `\n${missed} target(s) missed\n`);
process.exitCode = missed === 0 ? 0 : 1;

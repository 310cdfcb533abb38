import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  formatSeedsConsole,
  formatVerdictTable,
  parseScenarioText,
  pickNSize,
  replaceVerdictTable,
  simulateSeeds,
  verdicts,
  VERDICT_TABLE_BEGIN,
  VERDICT_TABLE_END,
  type ClusterSpec,
  type MultiSeedResult,
  type PolicyName,
  type Scenario,
  type SimulationResult,
  type Summary,
} from '../src/index.js';

const SCENARIOS = new URL('../../../examples/scenarios/', import.meta.url);
const DOC = new URL('../../../docs/simulator.md', import.meta.url);

function loadScenario(name: string): Scenario {
  const parsed = parseScenarioText(readFileSync(new URL(`${name}.yaml`, SCENARIOS), 'utf8'));
  if (!parsed.ok) throw new Error(`${name}: ${JSON.stringify(parsed.error)}`);
  return parsed.value;
}

/** A multi-seed result with only the figures the verdict reads: cost and unserved % per policy and seed. */
function fake(figures: Partial<Record<PolicyName, [cost: number, unserved: number][]>>): MultiSeedResult {
  const scenario = loadScenario('fail-back-flapping');
  const seeds = Object.values(figures)[0]!.map((_, i) => i + 1);
  const results = seeds.map(
    (seed, i) =>
      ({
        scenario,
        seed,
        clusters: [],
        runs: Object.entries(figures).map(([policy, values]) => ({
          policy,
          label: policy,
          timeline: [],
          samples: [],
          status: {},
          summary: { cost: values[i]![0], unservedPercent: values[i]![1], nodeHours: 0 } as unknown as Summary,
        })),
      }) as unknown as SimulationResult,
  );
  return { scenario, seeds, results };
}

/** What every verdict line says: its kind, then cost and loss against the baseline. */
const VERDICT =
  /^(dominates|is dominated|trades off|equivalent): ((cheaper|dearer) by \d+\.\d%|same cost \([+−]\d+\.\d%\)), (loses \d+\.\d\d pp (less|more)|same loss \([+−]\d+\.\d\d pp\))$/;

describe('verdicts, from the means over the seeds', () => {
  it('judges each mco policy against each baseline: dominates, is dominated, trades off, equivalent', () => {
    const figures = fake({
      mco: [
        [100, 0.1],
        [102, 0.3],
      ],
      'mco-fail-back': [
        [90, 0.5],
        [92, 0.7],
      ],
      'always-on': [
        [120, 0.2],
        [120, 0.2],
      ],
      'pick-n': [
        [101, 0.2],
        [101, 0.21],
      ],
    });
    expect(verdicts(figures).map((v) => `${v.policy} vs ${v.baseline}: ${v.text}`)).toEqual([
      'mco vs always-on: dominates: cheaper by 15.8%, same loss (+0.00 pp)',
      'mco vs pick-n: equivalent: same cost (+0.0%), same loss (−0.01 pp)',
      'mco-fail-back vs always-on: trades off: cheaper by 24.2%, loses 0.40 pp more',
      'mco-fail-back vs pick-n: trades off: cheaper by 9.9%, loses 0.39 pp more',
    ]);
    expect(verdicts(figures)[0]).toMatchObject({ costMeasure: 'GPU cost', cost: { policy: 101, baseline: 120 } });
  });

  it('counts a difference within 1% of the cost and 0.02 percentage points as a tie', () => {
    const v = (mco: [number, number], base: [number, number]) =>
      verdicts(fake({ mco: [mco], 'always-on': [base] }))[0]!.kind;
    expect(v([100.9, 0.52], [100, 0.5])).toBe('equivalent');
    expect(v([101.1, 0.5], [100, 0.5])).toBe('is dominated');
    expect(v([100, 0.53], [100, 0.5])).toBe('is dominated');
    expect(v([98, 0.47], [100, 0.5])).toBe('dominates');
    expect(v([102, 0.4], [100, 0.5])).toBe('trades off');
  });
});

describe('pick-N', () => {
  it('takes the fewest clusters by preference whose room holds the peak', () => {
    const cluster = (maxReplicas: number, maxNodes: number) =>
      ({ hpa: { maxReplicas }, nodePool: { maxNodes, podsPerNode: 1 } }) as ClusterSpec;
    const fleet = new Map([
      ['a', cluster(8, 24)],
      ['b', cluster(24, 4)],
      ['c', cluster(24, 24)],
    ]);
    expect(pickNSize(['a', 'b', 'c'], fleet, 8)).toBe(1);
    expect(pickNSize(['a', 'b', 'c'], fleet, 12)).toBe(2);
    expect(pickNSize(['a', 'b', 'c'], fleet, 13)).toBe(3);
    expect(pickNSize(['c', 'a', 'b'], fleet, 13)).toBe(1);
    expect(pickNSize(['a', 'b', 'c'], fleet, 1000)).toBe(3);
  });
});

describe('several seeds', () => {
  const multi = simulateSeeds(loadScenario('fail-back-flapping'), {
    seeds: 2,
    policies: ['mco', 'mco-v0.2', 'always-on'],
  });

  it("runs the scenario's seed and the next ones, and prints every metric as a mean and a range, then the verdicts", () => {
    expect(multi.seeds).toEqual([5, 6]);
    expect(multi.results.map((r) => r.seed)).toEqual([5, 6]);
    const text = formatSeedsConsole(multi, { timeline: false });
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      'Simulating fail-back-flapping (2 seeds, 5–6): 8h00m at 30s ticks, 3 clusters, placement default/chat',
    );
    expect(lines[2]).toBe('Summary (mean [min–max] over the seeds):');
    const unserved = lines.find((l) => l.startsWith('unserved demand (pending-pod-minutes)'))!;
    expect(unserved).toMatch(/^\S.*\)\s+\d+( \[\d+–\d+\])?\s+\d+( \[\d+–\d+\])?\s+\d+( \[\d+–\d+\])?$/);
    const verdictLines = lines.slice(lines.findIndex((l) => l.startsWith('Verdicts (means over 2 seeds;')) + 1);
    expect(verdictLines.filter(Boolean).map((l) => l.replace(/: .*/, ''))).toEqual([
      '  mco vs MCO v0.2 as documented',
      '  mco vs all eligible clusters always on',
    ]);
    for (const line of verdictLines.filter(Boolean)) expect(line.replace(/^ {2}[^:]+: /, '')).toMatch(VERDICT);
  });

  it('writes the verdict table in a form that parses: a row per scenario and mco policy, a verdict per baseline', () => {
    const table = formatVerdictTable([{ file: 'fail-back-flapping.yaml', multi }]);
    const rows = parseTable(table);
    expect(rows[0]).toEqual([
      'scenario',
      'seeds',
      'policy',
      'mco vs MCO v0.2 as documented',
      'mco vs all eligible clusters always on',
    ]);
    expect(rows.slice(1).map((r) => r.slice(0, 3))).toEqual([['fail-back-flapping.yaml', '5–6', 'mco']]);
    for (const cell of rows.slice(1).flatMap((r) => r.slice(3))) expect(cell).toMatch(VERDICT);
    const doc = `intro\n${VERDICT_TABLE_BEGIN}\nold\n${VERDICT_TABLE_END}\noutro\n`;
    expect(replaceVerdictTable(doc, table)).toBe(
      `intro\n${VERDICT_TABLE_BEGIN}\n\n${table}\n${VERDICT_TABLE_END}\noutro\n`,
    );
    expect(() => replaceVerdictTable('no markers', table)).toThrow(/verdict-table/);
  });
});

describe('docs/simulator.md', () => {
  it('holds the generated verdict table: every shipped scenario over 5 seeds, every cell a verdict', () => {
    const doc = readFileSync(DOC, 'utf8');
    const begin = doc.indexOf(VERDICT_TABLE_BEGIN);
    const end = doc.indexOf(VERDICT_TABLE_END);
    expect(begin).toBeGreaterThan(0);
    const rows = parseTable(doc.slice(begin + VERDICT_TABLE_BEGIN.length, end));
    expect(rows[0]!.slice(0, 3)).toEqual(['scenario', 'seeds', 'policy']);
    const files = readdirSync(SCENARIOS).sort();
    expect([...new Set(rows.slice(1).map((r) => r[0]))]).toEqual(files);
    for (const row of rows.slice(1)) {
      const [first, last] = row[1]!.split('–').map(Number);
      expect(last! - first!).toBe(4);
      for (const cell of row.slice(3))
        expect(cell).toMatch(new RegExp(`${VERDICT.source.slice(0, -1)}( \\(n=[\\d–, ]+\\))?$`));
    }
  });
});

/** The cells of a Markdown table, without its separator line. */
function parseTable(text: string): string[][] {
  return text
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|( -+ \|)+$/.test(line))
    .map((line) =>
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
}

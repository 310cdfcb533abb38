import { formatDuration } from './duration.js';
import { formatHeader, formatMainTimeline, formatSummary, formatTable, metrics, type Metric } from './format.js';
import type { Scenario } from './scenario.js';
import {
  MCO_POLICIES,
  POLICY_LABELS,
  simulate,
  type PolicyName,
  type SimulateOptions,
  type SimulationResult,
  type Summary,
} from './simulate.js';

/*
 * A scenario over several seeds, and the verdict of each mco policy against
 * each baseline from the means over the seeds.
 */

/** Cost within this share, and unserved requests within this many percentage points: equivalent. */
export const EQUIVALENT_COST_SHARE = 0.01;
export const EQUIVALENT_UNSERVED_PP = 0.02;

export interface MultiSeedResult {
  readonly scenario: Scenario;
  /** The scenario's seed + 0…N−1. */
  readonly seeds: readonly number[];
  /** One simulation per seed, in seed order. */
  readonly results: readonly SimulationResult[];
}

/** Runs a scenario for `seeds` seeds: the scenario's seed (or `firstSeed`) and the next ones. */
export function simulateSeeds(
  scenario: Scenario,
  options: Omit<SimulateOptions, 'seed'> & { readonly seeds: number; readonly firstSeed?: number },
): MultiSeedResult {
  if (!Number.isInteger(options.seeds) || options.seeds < 1) throw new Error('seeds: expected an integer ≥ 1');
  const first = options.firstSeed ?? scenario.seed;
  const seeds = Array.from({ length: options.seeds }, (_, i) => (first + i) >>> 0);
  const { seeds: _n, firstSeed: _f, ...rest } = options;
  return { scenario, seeds, results: seeds.map((seed) => simulate(scenario, { ...rest, seed })) };
}

export interface Stat {
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

function stat(values: readonly number[]): Stat | null {
  if (values.length === 0) return null;
  return {
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

/** A policy's summaries over the seeds, in seed order. */
function summariesOf(multi: MultiSeedResult, policy: PolicyName): Summary[] {
  return multi.results.map((r) => r.runs.find((run) => run.policy === policy)!.summary);
}

/** The policies of a multi-seed run, each with its label (e.g. `pick-N (n=2)`, or `pick-N (n=1–2)` when seeds differ). */
export function policiesOf(multi: MultiSeedResult): { policy: PolicyName; label: string }[] {
  const first = multi.results[0]!;
  return first.runs.map((run) => {
    const labels = [...new Set(multi.results.map((r) => r.runs.find((x) => x.policy === run.policy)!.label))];
    if (labels.length === 1) return { policy: run.policy, label: labels[0]! };
    const ns = multi.results.map((r) =>
      Number(/n=(\d+)/.exec(r.runs.find((x) => x.policy === run.policy)!.label)?.[1]),
    );
    return { policy: run.policy, label: `pick-N (n=${Math.min(...ns)}–${Math.max(...ns)})` };
  });
}

export interface MetricStats {
  readonly metric: Metric;
  /** Per policy, in run order: the statistic over the seeds that have a value, or null. */
  readonly stats: readonly (Stat | null)[];
}

/** Every metric as a mean and a range over the seeds. */
export function metricStats(multi: MultiSeedResult): MetricStats[] {
  const policies = policiesOf(multi);
  const all = multi.results.flatMap((r) => r.runs.map((run) => run.summary));
  return metrics(multi.scenario, all).map((metric) => ({
    metric,
    stats: policies.map(({ policy }) =>
      stat(summariesOf(multi, policy).flatMap((s) => (metric.value(s) === null ? [] : [metric.value(s)!]))),
    ),
  }));
}

export type VerdictKind = 'dominates' | 'is dominated' | 'trades off' | 'equivalent';

export interface Verdict {
  /** The mco policy judged. */
  readonly policy: PolicyName;
  readonly baseline: PolicyName;
  readonly baselineLabel: string;
  readonly kind: VerdictKind;
  /** What cost means here: GPU cost when clusters have a price, else GPU node-hours. */
  readonly costMeasure: 'GPU cost' | 'GPU node-hours';
  /** Means over the seeds. */
  readonly cost: { readonly policy: number; readonly baseline: number };
  readonly unservedPercent: { readonly policy: number; readonly baseline: number };
  /**
   * One line, e.g. `trades off: cheaper by 12.3%, loses 0.40 pp more`; a tie
   * reads `same cost (+0.4%)` or `same loss (−0.01 pp)`.
   */
  readonly text: string;
}

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/**
 * The verdict of each mco policy (mco, and mco with fail-back when it ran)
 * against each baseline, comparing fleet-wide means over the seeds: on cost and on
 * unserved requests, a difference within 1% of the baseline's cost or within
 * 0.02 percentage points is a tie. Better on one and no worse on the other:
 * dominates; the reverse: is dominated; better on one, worse on the other:
 * trades off; ties on both: equivalent.
 */
export function verdicts(multi: MultiSeedResult): Verdict[] {
  const policies = policiesOf(multi);
  const withPrice = multi.results.some((r) => r.runs.some((run) => run.summary.cost !== null));
  const costOf = (s: Summary) => (withPrice ? (s.cost ?? 0) : s.nodeHours);
  const judged = policies.filter((p) => MCO_POLICIES.includes(p.policy));
  const baselines = policies.filter((p) => !MCO_POLICIES.includes(p.policy));
  return judged.flatMap(({ policy }) =>
    baselines.map(({ policy: baseline, label }) => {
      const ours = summariesOf(multi, policy);
      const theirs = summariesOf(multi, baseline);
      const cost = { policy: mean(ours.map(costOf)), baseline: mean(theirs.map(costOf)) };
      const unserved = {
        policy: mean(ours.map((s) => s.unservedPercent)),
        baseline: mean(theirs.map((s) => s.unservedPercent)),
      };
      const costShare = cost.baseline === 0 ? (cost.policy === 0 ? 0 : Infinity) : cost.policy / cost.baseline - 1;
      const lossPp = unserved.policy - unserved.baseline;
      // The thresholds are inclusive; 1e-9 absorbs binary rounding (0.52 − 0.5 > 0.02 in floating point).
      const costSign = Math.abs(costShare) <= EQUIVALENT_COST_SHARE + 1e-9 ? 0 : Math.sign(costShare);
      const lossSign = Math.abs(lossPp) <= EQUIVALENT_UNSERVED_PP + 1e-9 ? 0 : Math.sign(lossPp);
      const kind: VerdictKind =
        costSign === 0 && lossSign === 0
          ? 'equivalent'
          : costSign <= 0 && lossSign <= 0
            ? 'dominates'
            : costSign >= 0 && lossSign >= 0
              ? 'is dominated'
              : 'trades off';
      const pct = `${(Math.abs(costShare) * 100).toFixed(1)}%`;
      const pp = `${Math.abs(lossPp).toFixed(2)} pp`;
      const signed = (n: number, text: string) => `${n < 0 ? '−' : '+'}${text}`;
      const costText =
        costSign === 0
          ? `same cost (${signed(costShare, pct)})`
          : costShare < 0
            ? `cheaper by ${pct}`
            : `dearer by ${pct}`;
      const lossText =
        lossSign === 0 ? `same loss (${signed(lossPp, pp)})` : lossPp < 0 ? `loses ${pp} less` : `loses ${pp} more`;
      return {
        policy,
        baseline,
        baselineLabel: label,
        kind,
        costMeasure: withPrice ? 'GPU cost' : 'GPU node-hours',
        cost,
        unservedPercent: unserved,
        text: `${kind}: ${costText}, ${lossText}`,
      } satisfies Verdict;
    }),
  );
}

/** A statistic as `mean [min–max]`, or `mean` alone when every seed agrees. */
export function formatStat(s: Stat | null, digits: number, seconds = false): string {
  if (s === null) return '—';
  const f = (n: number) => (seconds ? formatDuration(Math.round(n)) : n.toFixed(digits));
  return f(s.min) === f(s.max) ? f(s.mean) : `${f(s.mean)} [${f(s.min)}–${f(s.max)}]`;
}

/** The comparison over the seeds as aligned text: every metric as `mean [min–max]`. */
export function formatSeedsSummary(multi: MultiSeedResult): string {
  return formatTable(
    policiesOf(multi).map((p) => p.label),
    metricStats(multi).map(({ metric, stats }) => ({
      label: metric.label,
      values: stats.map((s) => formatStat(s, metric.digits, metric.seconds)),
    })),
  );
}

/** `seeds 7–11` (or `seed 7`). */
export function formatSeeds(seeds: readonly number[]): string {
  return seeds.length === 1 ? `seed ${seeds[0]}` : `${seeds.length} seeds, ${seeds[0]}–${seeds.at(-1)}`;
}

/** The verdicts, one line each, under a heading that states the rule. */
export function formatVerdicts(multi: MultiSeedResult): string {
  const list = verdicts(multi);
  if (list.length === 0) return '';
  const over = multi.seeds.length === 1 ? 'one seed' : `means over ${multi.seeds.length} seeds`;
  const lines = list.map(
    (v) => `  ${v.policy === 'mco' ? 'mco' : 'mco with fail-back'} vs ${v.baselineLabel}: ${v.text}`,
  );
  return (
    `\nVerdicts (${over}; cost = ${list[0]!.costMeasure}; equivalent within ${EQUIVALENT_COST_SHARE * 100}% cost ` +
    `and ${EQUIVALENT_UNSERVED_PP} pp unserved):\n${lines.join('\n')}\n`
  );
}

/**
 * What `mco simulate` prints: the header, the timeline of mco on the first
 * seed, the comparison (each metric as mean and range when there are several
 * seeds) and the verdicts.
 */
export function formatSeedsConsole(multi: MultiSeedResult, options: { readonly timeline?: boolean } = {}): string {
  const first = multi.results[0]!;
  const table = (m: MultiSeedResult) => (m.seeds.length === 1 ? formatSummary(m.results[0]!) : formatSeedsSummary(m));
  const several = first.runs[0]!.placements.length > 1;
  const heading = `Summary${several ? ', fleet-wide' : ''}${multi.seeds.length === 1 ? '' : ' (mean [min–max] over the seeds)'}:`;
  const perPlacement = several
    ? first.runs[0]!.placements.map((p, i) => `\nPlacement ${p.placement}:\n${table(placementView(multi, i))}`).join('')
    : '';
  return (
    `${formatHeader(first, formatSeeds(multi.seeds))}${formatMainTimeline(first, options)}` +
    `\n${heading}\n${table(multi)}${perPlacement}${formatVerdicts(multi)}`
  );
}

/** The same runs seen from one placement: each policy's summary is that placement's. */
export function placementView(multi: MultiSeedResult, placement: number): MultiSeedResult {
  return {
    ...multi,
    results: multi.results.map((r) => ({
      ...r,
      runs: r.runs.map((run) => ({ ...run, summary: run.placements[placement]!.summary })),
    })),
  };
}

/** The markers around the verdict table in docs/simulator.md. */
export const VERDICT_TABLE_BEGIN = '<!-- verdict-table: generated by `npm run docs:verdicts -w @mco/simulator` -->';
export const VERDICT_TABLE_END = '<!-- /verdict-table -->';

/**
 * The verdict table of docs/simulator.md, in Markdown: one row per scenario
 * and mco policy, one column per baseline.
 */
export function formatVerdictTable(
  runs: readonly { readonly file: string; readonly multi: MultiSeedResult }[],
): string {
  const baselines = [...new Set(runs.flatMap(({ multi }) => verdicts(multi).map((v) => v.baseline)))] as PolicyName[];
  const head = baselines.map((b) => `mco vs ${b === 'pick-n' ? 'pick-N' : POLICY_LABELS[b]}`);
  const lines = [`| scenario | seeds | policy | ${head.join(' | ')} |`, `|${' --- |'.repeat(3 + baselines.length)}`];
  for (const { file, multi } of runs) {
    const list = verdicts(multi);
    for (const policy of [...new Set(list.map((v) => v.policy))]) {
      const cells = baselines.map((b) => {
        const v = list.find((x) => x.policy === policy && x.baseline === b);
        if (!v) return '—';
        const n = b === 'pick-n' ? ` (${/n=[^)]+/.exec(v.baselineLabel)?.[0] ?? ''})` : '';
        return `${v.text}${n}`;
      });
      const seeds = `${multi.seeds[0]}–${multi.seeds.at(-1)}`;
      lines.push(`| ${file} | ${seeds} | ${POLICY_LABELS[policy]} | ${cells.join(' | ')} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Replaces the verdict table between its markers in a document; an error when the markers are missing. */
export function replaceVerdictTable(document: string, table: string): string {
  const begin = document.indexOf(VERDICT_TABLE_BEGIN);
  const end = document.indexOf(VERDICT_TABLE_END);
  if (begin < 0 || end < begin) throw new Error(`the document has no ${VERDICT_TABLE_BEGIN} … ${VERDICT_TABLE_END}`);
  return `${document.slice(0, begin + VERDICT_TABLE_BEGIN.length)}\n\n${table}\n${document.slice(end)}`;
}

import { formatDuration, formatElapsed } from './duration.js';
import type { Scenario } from './scenario.js';
import type { PolicyRun, SimulationResult, Summary, TimelineEntry } from './simulate.js';

/** One line of a timeline: `HH:MM:SS  P1  fleet/us-east4  -> ACTIVE  reason`, or an event. */
export function formatTimelineEntry(entry: TimelineEntry): string {
  const at = formatElapsed(entry.t);
  if (entry.kind === 'event') return `${at}  --  ${entry.text}`;
  if (entry.kind === 'fleet') return `${at}  ..  ${entry.text}`;
  const move = `${entry.from ?? '(none)'} -> ${entry.to ?? '(removed)'}`;
  const where = entry.placement ? `${entry.placement} on ${entry.cluster}` : entry.cluster;
  return `${at}  ${entry.id}  ${where}  ${move}: ${entry.reason}`;
}

export function formatTimeline(run: PolicyRun): string {
  return run.timeline.map((e) => `${formatTimelineEntry(e)}\n`).join('');
}

const fixed = (digits: number) => (n: number) => n.toFixed(digits);

/** One row of the comparison: a figure of each policy's summary. */
export interface Metric {
  readonly label: string;
  /** Decimals shown. */
  readonly digits: number;
  /** The figure, or null when the policy has none (e.g. no fail-back). */
  readonly value: (s: Summary) => number | null;
  /** Lower is better (every cost, loss and churn figure); false: neither is better. */
  readonly lowerIsBetter: boolean;
  /** How one run shows it, when not as the number (e.g. "never short"). */
  readonly text?: (s: Summary) => string;
  /** The figure is a duration in seconds. */
  readonly seconds?: boolean;
}

/** The metrics of a comparison, for the summaries of one scenario's runs (any seed). */
export function metrics(scenario: Scenario, summaries: readonly Summary[]): Metric[] {
  const metric = (label: string, digits: number, value: Metric['value'], lowerIsBetter = true): Metric => ({
    label,
    digits,
    value,
    lowerIsBetter,
  });
  const rows: Metric[] = [
    metric('unserved requests (%)', 2, (s) => s.unservedPercent),
    metric('unserved demand (pending-pod-minutes)', 0, (s) => s.pendingPodMinutes),
    metric('cluster-hours (workload deployed)', 1, (s) => s.clusterHours),
    metric('idle cluster-hours (above need)', 1, (s) => s.clusterHoursAboveNeed),
    metric('idle replica-hours (above need)', 1, (s) => s.replicaHoursAboveNeed),
    metric('GPU node-hours', 1, (s) => s.nodeHours),
    ...(summaries.some((s) => s.cost !== null)
      ? [metric('GPU cost (node-hours × gpuHourCost)', 1, (s) => s.cost)]
      : []),
    metric('hours on non-preferred clusters', 1, (s) => s.nonPreferredClusterHours),
    metric('transitions', 0, (s) => s.transitions),
  ];
  if (summaries.some((s) => s.failBack !== null)) {
    const hours = scenario.duration / 3600;
    rows.push(
      metric('fail-backs', 0, (s) => s.failBack?.failBacks ?? null, false),
      {
        ...metric('fail-back/reactivation cycles per hour (most in one window)', 2, (s) =>
          s.failBack ? s.failBack.cycles / hours : null,
        ),
        text: (s) => (s.failBack ? `${fixed(2)(s.failBack.cycles / hours)} (${s.failBack.maxCyclesPerWindow})` : '—'),
      },
    );
  }
  const stockouts = summaries[0]?.stockouts ?? [];
  stockouts.forEach((stockout, i) => {
    rows.push({
      ...metric(`stockout at ${formatElapsed(stockout.at)} (${stockout.scope}): time to restored headroom`, 0, (s) => {
        const o = s.stockouts[i]!;
        return o.firstFailedScaleUp === null ? 0 : o.restoredAfter;
      }),
      seconds: true,
      text: (s) => {
        const o = s.stockouts[i]!;
        if (o.firstFailedScaleUp === null) return 'never short';
        return o.restoredAfter === null ? 'not restored' : formatDuration(o.restoredAfter);
      },
    });
  });
  return rows;
}

/** The rows of the comparison table: a label, and the figure of each policy. */
export function summaryRows(result: SimulationResult): { label: string; values: string[] }[] {
  const summaries = result.runs.map((r) => r.summary);
  return metrics(result.scenario, summaries).map((m) => ({
    label: m.label,
    values: summaries.map((s) => {
      if (m.text) return m.text(s);
      const v = m.value(s);
      return v === null ? '—' : fixed(m.digits)(v);
    }),
  }));
}

/** The comparison table as aligned text. */
export function formatSummary(result: SimulationResult): string {
  return formatTable(
    result.runs.map((r) => r.label),
    summaryRows(result),
  );
}

/** A table as aligned text: the labels left, the values right-aligned under their headers. */
export function formatTable(headers: readonly string[], rows: readonly { label: string; values: string[] }[]): string {
  const labelWidth = Math.max(...rows.map((r) => r.label.length));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r.values[i]!.length)));
  const line = (label: string, cells: readonly string[]) =>
    `${label.padEnd(labelWidth)}  ${cells.map((c, i) => c.padStart(widths[i]!)).join('  ')}`.trimEnd();
  return [line('', headers), ...rows.map((r) => line(r.label, r.values))].join('\n') + '\n';
}

/** The first line of `mco simulate`: the scenario, the seed(s), the clock and the placement. */
export function formatHeader(result: SimulationResult, seeds: string): string {
  const { scenario } = result;
  const placement = scenario.placement.metadata;
  return (
    `Simulating ${scenario.name} (${seeds}): ${formatDuration(scenario.duration)} at ${formatDuration(scenario.tick)} ticks, ` +
    `${result.clusters.length} clusters, placement ${placement.namespace ?? 'default'}/${placement.name}` +
    `${scenario.warmUp ? `; the first ${formatDuration(scenario.warmUp)} (warmUp) are not measured` : ''}\n`
  );
}

/** The timeline of the first policy, under a heading; empty when not wanted. */
export function formatMainTimeline(result: SimulationResult, options: { readonly timeline?: boolean } = {}): string {
  const main = result.runs[0];
  if (options.timeline === false || !main) return '';
  return `\nTimeline (${main.label}, seed ${result.seed}), time since start:\n${formatTimeline(main)}`;
}

/**
 * What `mco simulate` prints for one seed: a header, the timeline of the
 * first policy (each decision with its time, transition id and reason, and
 * the scenario's events), and the comparison table.
 */
export function formatConsole(result: SimulationResult, options: { readonly timeline?: boolean } = {}): string {
  return `${formatHeader(result, `seed ${result.seed}`)}${formatMainTimeline(result, options)}\nSummary:\n${formatSummary(result)}`;
}

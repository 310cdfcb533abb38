import { formatDuration, formatElapsed } from './duration.js';
import { POLICY_LABELS, type PolicyRun, type SimulationResult, type Summary, type TimelineEntry } from './simulate.js';

/** One line of a timeline: `HH:MM:SS  P1  fleet/us-east4  -> ACTIVE  reason`, or an event. */
export function formatTimelineEntry(entry: TimelineEntry): string {
  const at = formatElapsed(entry.t);
  if (entry.kind === 'event') return `${at}  --  ${entry.text}`;
  if (entry.kind === 'fleet') return `${at}  ..  ${entry.text}`;
  const move = `${entry.from ?? '(none)'} -> ${entry.to ?? '(removed)'}`;
  return `${at}  ${entry.id}  ${entry.cluster}  ${move}: ${entry.reason}`;
}

export function formatTimeline(run: PolicyRun): string {
  return run.timeline.map((e) => `${formatTimelineEntry(e)}\n`).join('');
}

const fixed = (digits: number) => (n: number) => n.toFixed(digits);

/** The rows of the comparison table: a label, and the figure of each policy. */
export function summaryRows(result: SimulationResult): { label: string; values: string[] }[] {
  const summaries = result.runs.map((r) => r.summary);
  const row = (label: string, value: (s: Summary) => string) => ({ label, values: summaries.map(value) });
  const rows = [
    row('unserved demand (pending-pod-minutes)', (s) => fixed(0)(s.pendingPodMinutes)),
    row('unserved requests (%)', (s) => fixed(2)(s.unservedPercent)),
    row('cluster-hours (workload deployed)', (s) => fixed(1)(s.clusterHours)),
    row('idle cluster-hours (above need)', (s) => fixed(1)(s.clusterHoursAboveNeed)),
    row('idle replica-hours (above need)', (s) => fixed(1)(s.replicaHoursAboveNeed)),
    row('GPU node-hours', (s) => fixed(1)(s.nodeHours)),
    ...(summaries.some((s) => s.cost !== null)
      ? [row('GPU cost (node-hours × gpuHourCost)', (s) => (s.cost === null ? '—' : fixed(1)(s.cost)))]
      : []),
    row('hours on non-preferred clusters', (s) => fixed(1)(s.nonPreferredClusterHours)),
    row('transitions', (s) => String(s.transitions)),
  ];
  if (summaries.some((s) => s.failBack !== null)) {
    const hours = result.scenario.duration / 3600;
    rows.push(
      row('fail-backs', (s) => (s.failBack ? String(s.failBack.failBacks) : '—')),
      row('fail-back/reactivation cycles per hour (most in one window)', (s) =>
        s.failBack ? `${fixed(2)(s.failBack.cycles / hours)} (${s.failBack.maxCyclesPerWindow})` : '—',
      ),
    );
  }
  const stockouts = summaries[0]?.stockouts ?? [];
  stockouts.forEach((stockout, i) => {
    const label = `stockout at ${formatElapsed(stockout.at)} (${stockout.scope}): time to restored headroom`;
    rows.push(
      row(label, (s) => {
        const o = s.stockouts[i]!;
        if (o.firstFailedScaleUp === null) return 'never short';
        return o.restoredAfter === null ? 'not restored' : formatDuration(o.restoredAfter);
      }),
    );
  });
  return rows;
}

/** The comparison table as aligned text. */
export function formatSummary(result: SimulationResult): string {
  const headers = result.runs.map((r) => POLICY_LABELS[r.policy]);
  const rows = summaryRows(result);
  const labelWidth = Math.max(...rows.map((r) => r.label.length));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r.values[i]!.length)));
  const line = (label: string, cells: string[]) =>
    `${label.padEnd(labelWidth)}  ${cells.map((c, i) => c.padStart(widths[i]!)).join('  ')}`.trimEnd();
  return [line('', headers), ...rows.map((r) => line(r.label, r.values))].join('\n') + '\n';
}

/**
 * What `mco simulate` prints: a header, the timeline of the first policy
 * (each decision with its time, transition id and reason, and the scenario's
 * events), and the comparison table.
 */
export function formatConsole(result: SimulationResult, options: { readonly timeline?: boolean } = {}): string {
  const { scenario } = result;
  const placement = scenario.placement.metadata;
  const main = result.runs[0];
  const header =
    `Simulating ${scenario.name} (seed ${result.seed}): ${formatDuration(scenario.duration)} at ${formatDuration(scenario.tick)} ticks, ` +
    `${result.clusters.length} clusters, placement ${placement.namespace ?? 'default'}/${placement.name}\n`;
  const timeline =
    options.timeline === false || !main
      ? ''
      : `\nTimeline (${POLICY_LABELS[main.policy]}), time since start:\n${formatTimeline(main)}`;
  return `${header}${timeline}\nSummary:\n${formatSummary(result)}`;
}

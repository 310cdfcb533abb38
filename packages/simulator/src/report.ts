import { formatDuration, formatElapsed } from './duration.js';
import { summaryRows } from './format.js';
import { POLICY_LABELS, type PolicyRun, type SimulationResult, type TimelineEntry } from './simulate.js';
import { escapeHtml, laneChart, lineChart, type Marker } from './svg.js';

const POLICY_COLORS = {
  mco: '#1565c0',
  'mco-fail-back': '#00838f',
  'mco-as-documented': '#ef6c00',
  'always-on': '#6d4c41',
} as const;
const CLUSTER_COLORS = ['#1565c0', '#2e7d32', '#c62828', '#6a1b9a', '#ef6c00', '#00838f', '#ad1457', '#5d4037'];
const STATE_COLORS = {
  ACTIVE: '#43a047',
  SCALING_IN: '#fbc02d',
  UNHEALTHY: '#e53935',
  EVICTING: '#8e24aa',
  REMOVING: '#9e9e9e',
};

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#212121;margin:24px auto;max-width:1000px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e0e0e0;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#616161}
table{border-collapse:collapse;margin:8px 0}th,td{padding:4px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}tr.best td.num{font-weight:600}
.timeline td{font-size:13px}.timeline td:nth-child(-n+3){white-space:nowrap}.timeline td.id{font-weight:600;font-family:ui-monospace,monospace}.timeline tr.event td{color:#6d4c41;font-style:italic}.timeline tr.fleet td{color:#616161}
svg.chart{display:block;max-width:100%;height:auto;margin:6px 0}
svg .grid{stroke:#eee}svg .axis{stroke:#9e9e9e}svg text{font:11px system-ui,sans-serif;fill:#424242}
svg .lane-bg{fill:#fafafa;stroke:#eee}svg .marker line{stroke:#616161;stroke-dasharray:3 3}svg .marker text{fill:#616161;font-weight:600}
details{margin:12px 0}summary{cursor:pointer;font-weight:600;font-size:15px}
ol.events{color:#424242;margin:4px 0}.note{color:#616161;font-size:13px}
`;

function markersOf(run: PolicyRun): Marker[] {
  return run.timeline.flatMap((e) =>
    e.kind === 'event' ? [{ t: e.t, label: `${formatElapsed(e.t)} ${e.text}` }] : [],
  );
}

function summaryTable(result: SimulationResult): string {
  const head = result.runs.map((r) => `<th class="num">${escapeHtml(POLICY_LABELS[r.policy])}</th>`).join('');
  const rows = summaryRows(result)
    .map(
      (row) =>
        `<tr><td>${escapeHtml(row.label)}</td>${row.values.map((v) => `<td class="num">${escapeHtml(v)}</td>`).join('')}</tr>`,
    )
    .join('');
  return `<table class="summary"><thead><tr><th></th>${head}</tr></thead><tbody>${rows}</tbody></table>`;
}

function timelineTable(timeline: readonly TimelineEntry[]): string {
  const rows = timeline
    .map((e) =>
      e.kind !== 'transition'
        ? `<tr class="${e.kind}"><td>${formatElapsed(e.t)}</td><td class="id">${e.kind}</td><td colspan="3">${escapeHtml(e.text)}</td></tr>`
        : `<tr class="transition"><td>${formatElapsed(e.t)}</td><td class="id">${e.id}</td><td>${escapeHtml(e.cluster)}</td>` +
          `<td>${e.from ?? '—'} → ${e.to ?? 'removed'}</td><td>${escapeHtml(e.reason)}</td></tr>`,
    )
    .join('');
  return (
    `<table class="timeline"><thead><tr><th>time</th><th>id</th><th>cluster</th><th>state</th><th>reason</th></tr></thead>` +
    `<tbody>${rows}</tbody></table>`
  );
}

function policySection(result: SimulationResult, run: PolicyRun): string {
  const times = run.samples.map((s) => s.t);
  const duration = result.scenario.duration;
  const markers = markersOf(run);
  const id = run.policy;
  const lanes = laneChart({
    id: `states-${id}`,
    title: `Clusters by state over time (${POLICY_LABELS[run.policy]})`,
    times,
    duration,
    colors: STATE_COLORS,
    markers,
    lanes: result.clusters.map((key, i) => ({
      label: key,
      states: run.samples.map((s) => {
        const lane = s.clusters[i]!.lane;
        return lane === 'OFF' ? null : lane;
      }),
      bands: [
        { label: 'stocked out', color: '#ff8f00', on: run.samples.map((s) => s.clusters[i]!.stockedOut) },
        { label: 'unreachable', color: '#212121', on: run.samples.map((s) => !s.clusters[i]!.reachable) },
      ],
    })),
  });
  const replicas = lineChart({
    id: `replicas-${id}`,
    title: `Replicas per cluster (${POLICY_LABELS[run.policy]})`,
    times,
    duration,
    yLabel: 'replicas',
    markers,
    series: [
      ...result.clusters.map((key, i) => ({
        label: key,
        color: CLUSTER_COLORS[i % CLUSTER_COLORS.length]!,
        values: run.samples.map((s) => s.clusters[i]!.replicas),
        step: true,
      })),
      { label: 'needed at target', color: '#9e9e9e', values: run.samples.map((s) => s.need), dash: true },
    ],
  });
  const pending = lineChart({
    id: `pending-${id}`,
    title: `Pending pods (${POLICY_LABELS[run.policy]})`,
    times,
    duration,
    yLabel: 'pending pods',
    markers,
    height: 200,
    series: result.clusters.map((key, i) => ({
      label: key,
      color: CLUSTER_COLORS[i % CLUSTER_COLORS.length]!,
      values: run.samples.map((s) => s.clusters[i]!.pending),
      step: true,
    })),
  });
  return (
    `<h3>Clusters by state over time</h3>${lanes}` +
    `<h3>Replicas per cluster</h3><p class="note">The Deployment's replicas in each cluster (pending ones included); dashed: the replicas needed to serve the demand at the HPA target.</p>${replicas}` +
    `<h3>Pending pods</h3>${pending}` +
    `<h3>Timeline</h3>${timelineTable(run.timeline)}`
  );
}

/**
 * The report of a simulation: one self-contained HTML page (inline CSS and
 * SVG, no script, no external resource). Byte-identical for the same result.
 */
export function renderReport(result: SimulationResult): string {
  const { scenario } = result;
  const main = result.runs[0]!;
  const times = main.samples.map((s) => s.t);
  const markers = markersOf(main);
  const demand = lineChart({
    id: 'demand',
    title: 'Demand vs served capacity',
    times,
    duration: scenario.duration,
    yLabel: scenario.workload.unit,
    markers,
    series: [
      { label: 'demand', color: '#212121', values: main.samples.map((s) => s.demand) },
      ...result.runs.map((run) => ({
        label: `capacity: ${POLICY_LABELS[run.policy]}`,
        color: POLICY_COLORS[run.policy],
        values: run.samples.map((s) => s.capacity),
        dash: run.policy !== 'mco',
      })),
    ],
  });
  const events = markers.map((m) => `<li>${escapeHtml(m.label)}</li>`).join('');
  const placement = scenario.placement.metadata;
  const sections = result.runs
    .map((run, i) =>
      i === 0
        ? `<section id="policy-${run.policy}"><h2>${escapeHtml(POLICY_LABELS[run.policy])}</h2>${policySection(result, run)}</section>`
        : `<details id="policy-${run.policy}"><summary>${escapeHtml(POLICY_LABELS[run.policy])}</summary>${policySection(result, run)}</details>`,
    )
    .join('');
  const meta =
    `seed ${result.seed} · ${formatDuration(scenario.duration)} simulated at ${formatDuration(scenario.tick)} ticks from ${escapeHtml(scenario.start)}` +
    ` · ${result.clusters.length} clusters · placement ${escapeHtml(`${placement.namespace ?? 'default'}/${placement.name}`)}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mco simulation: ${escapeHtml(scenario.name)}</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>mco simulation: ${escapeHtml(scenario.name)}</h1>
${scenario.description ? `<p>${escapeHtml(scenario.description)}</p>` : ''}
<p class="meta">${meta}</p></header>
<section id="summary"><h2>Summary</h2>
${summaryTable(result)}
<p class="note"><b>mco</b>: the placement as written, run by the real @mco/core engine.
<b>mco with fail-back</b> (when the placement does not enable it itself): the same with <code>behavior.failBack.enabled</code>.
<b>MCO as documented</b>: the same placement with no stabilization window, no cooldown (a cluster is scaled in as soon as its HPA wants fewer replicas than its minimum) and no fail-back, and no health checking.
<b>All eligible clusters always on</b>: every eligible cluster runs the workload all the time.
Unserved demand counts pods that could not be scheduled; idle capacity counts cluster-hours beyond the fewest eligible clusters that could hold the replicas needed, and scheduled replica-hours beyond the replicas needed at the HPA target.
Hours on non-preferred clusters count cluster-hours with the workload on a cluster outside the highest-priority eligible clusters that could hold the replicas needed at that moment.
GPU cost is node-hours times each cluster's gpuHourCost.
Time to restored headroom runs from the first FailedScaleUp of a stockout until the fleet is back within its HPA target band.</p>
</section>
<section id="demand-chart"><h2>Demand vs served capacity</h2>
<p class="note">Served capacity is what the ready pods serve at 100% utilisation, per policy.</p>
${demand}
${events ? `<ol class="events">${events}</ol>` : ''}
</section>
${sections}
</body>
</html>
`;
}

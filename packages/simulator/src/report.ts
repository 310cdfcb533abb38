import {
  formatSeeds,
  formatStat,
  metricStats,
  placementView,
  policiesOf,
  verdicts,
  type MultiSeedResult,
  type Stat,
} from './compare.js';
import { formatDuration, formatElapsed } from './duration.js';
import type { PolicyRun, SimulationResult, TimelineEntry } from './simulate.js';
import { escapeHtml, laneChart, lineChart, type Marker } from './svg.js';

const POLICY_COLORS = {
  mco: '#1565c0',
  'mco-fail-back': '#00838f',
  'mco-capacity': '#2e7d32',
  'mco-v0.2': '#ef6c00',
  'pick-n': '#6a1b9a',
  'always-on': '#6d4c41',
  'mco-without-hysteresis': '#c62828',
} as const;
/** Colours of the series of a chart, one per cluster (or per process in the soak's report). */
export const SERIES_COLORS = ['#1565c0', '#2e7d32', '#c62828', '#6a1b9a', '#ef6c00', '#00838f', '#ad1457', '#5d4037'];
const STATE_COLORS = {
  ACTIVE: '#43a047',
  SCALING_IN: '#fbc02d',
  UNHEALTHY: '#e53935',
  EVICTING: '#8e24aa',
  REMOVING: '#9e9e9e',
};

/** The report's stylesheet, charts included (the soak's HTML report uses it too). */
export const REPORT_STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#212121;margin:24px auto;max-width:1400px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e0e0e0;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#616161}
table{border-collapse:collapse;margin:8px 0}th,td{padding:4px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.best{font-weight:700;background:#e8f5e9}
.delta{display:block;font-size:11px;color:#757575}.delta.worse{color:#c62828}.delta.better{color:#2e7d32}
.verdict{font-size:15px;margin:4px 0}.verdict b{padding:1px 6px;border-radius:3px}
.v-dominates{background:#c8e6c9}.v-equivalent{background:#e0e0e0}.v-trades{background:#fff3c4}.v-dominated{background:#ffcdd2}
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(640px,1fr));gap:8px 20px}.multiples h3{margin:10px 0 0}
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

/** A verdict's CSS class. */
const VERDICT_CLASS = {
  dominates: 'v-dominates',
  equivalent: 'v-equivalent',
  'trades off': 'v-trades',
  'is dominated': 'v-dominated',
} as const;

function verdictSection(multi: MultiSeedResult): string {
  const list = verdicts(multi);
  if (list.length === 0) return '';
  const over = multi.seeds.length === 1 ? 'one seed' : `means over ${formatSeeds(multi.seeds)}`;
  const lines = list
    .map((v) => {
      const who = v.policy === 'mco' ? 'mco' : 'mco with fail-back';
      const [kind, ...rest] = v.text.split(': ');
      return (
        `<p class="verdict">${escapeHtml(who)} vs ${escapeHtml(v.baselineLabel)}: ` +
        `<b class="${VERDICT_CLASS[v.kind]}">${escapeHtml(kind!)}</b> ${escapeHtml(rest.join(': '))}` +
        ` <span class="note">(${escapeHtml(v.costMeasure)} ${v.cost.policy.toFixed(1)} vs ${v.cost.baseline.toFixed(1)}; ` +
        `unserved ${v.unservedPercent.policy.toFixed(2)}% vs ${v.unservedPercent.baseline.toFixed(2)}%)</span></p>`
      );
    })
    .join('');
  return (
    `<section id="verdict"><h2>Verdict</h2>${lines}` +
    `<p class="note">Comparing ${over}: cost within 1% and unserved requests within 0.02 percentage points count as equal. ` +
    `Dominates: better on one, no worse on the other; trades off: better on one, worse on the other.</p></section>`
  );
}

/**
 * Only a policy that loses at most this many percentage points more than the
 * one that loses least can have the best value of a row: a cheap policy that
 * drops a quarter of the requests is not the best at cost.
 */
export const BEST_LOSS_TOLERANCE_PP = 1;

/** The comparison table: best value per row highlighted, each baseline's delta against mco. */
function summaryTable(multi: MultiSeedResult): string {
  const policies = policiesOf(multi);
  const head = policies.map((p) => `<th class="num">${escapeHtml(p.label)}</th>`).join('');
  const all = metricStats(multi);
  const losses = all.find((m) => m.metric.label === 'unserved requests (%)')?.stats.map((s) => s?.mean ?? 0);
  const least = losses ? Math.min(...losses) : 0;
  const contender = (i: number) => !losses || losses[i]! <= least + BEST_LOSS_TOLERANCE_PP;
  const rows = all
    .map(({ metric, stats }) => {
      const means = stats.map((s, i) => (contender(i) ? s?.mean : undefined));
      const defined = means.filter((m): m is number => m !== undefined);
      const best = metric.lowerIsBetter && defined.length > 1 ? Math.min(...defined) : undefined;
      const round = (n: number) => Number(n.toFixed(metric.digits));
      const cells = stats.map((s: Stat | null, i) => {
        const isBest = best !== undefined && s !== null && contender(i) && round(s.mean) === round(best);
        const base = stats[0];
        let delta = '';
        if (i > 0 && s !== null && base && base !== null) {
          const d = s.mean - base.mean;
          const shown = metric.seconds ? formatDuration(Math.round(Math.abs(d))) : Math.abs(d).toFixed(metric.digits);
          const sign = round(d) === 0 ? '±' : d > 0 ? '+' : '−';
          const cls = !metric.lowerIsBetter || round(d) === 0 ? '' : d > 0 ? ' worse' : ' better';
          delta = `<span class="delta${cls}" title="this policy minus ${escapeHtml(policies[0]!.label)}">${sign}${shown} vs ${escapeHtml(policies[0]!.label)}</span>`;
        }
        return `<td class="num${isBest ? ' best' : ''}">${escapeHtml(formatStat(s, metric.digits, metric.seconds))}${delta}</td>`;
      });
      return `<tr><td>${escapeHtml(metric.label)}</td>${cells.join('')}</tr>`;
    })
    .join('');
  return `<table class="summary"><thead><tr><th></th>${head}</tr></thead><tbody>${rows}</tbody></table>`;
}

function timelineTable(timeline: readonly TimelineEntry[]): string {
  const rows = timeline
    .map((e) =>
      e.kind !== 'transition'
        ? `<tr class="${e.kind}"><td>${formatElapsed(e.t)}</td><td class="id">${e.kind}</td><td colspan="3">${escapeHtml(e.text)}</td></tr>`
        : `<tr class="transition"><td>${formatElapsed(e.t)}</td><td class="id">${e.id}</td><td>${escapeHtml(e.placement ? `${e.placement} on ${e.cluster}` : e.cluster)}</td>` +
          `<td>${e.from ?? '—'} → ${e.to ?? 'removed'}</td><td>${escapeHtml(e.reason)}</td></tr>`,
    )
    .join('');
  return (
    `<table class="timeline"><thead><tr><th>time</th><th>id</th><th>cluster</th><th>state</th><th>reason</th></tr></thead>` +
    `<tbody>${rows}</tbody></table>`
  );
}

/** A lane label: the cluster and its price, so the lanes show where the expensive hours go. */
function clusterLabels(result: SimulationResult): string[] {
  return result.clusters.map((key, i) => {
    const price = result.scenario.fleet.clusters[i]!.gpuHourCost;
    return price === undefined ? key : `${key} · ${price}/h`;
  });
}

const SMALL = 660;

function laneMultiple(result: SimulationResult, run: PolicyRun): string {
  const labels = clusterLabels(result);
  return laneChart({
    id: `states-${run.policy}`,
    title: `Clusters by state over time (${run.label})`,
    times: run.samples.map((s) => s.t),
    duration: result.scenario.duration,
    colors: STATE_COLORS,
    markers: markersOf(run),
    width: SMALL,
    lanes: labels.map((label, i) => ({
      label,
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
}

function demandMultiple(result: SimulationResult, run: PolicyRun): string {
  return lineChart({
    id: `demand-${run.policy}`,
    title: `Demand and what was served (${run.label})`,
    times: run.samples.map((s) => s.t),
    duration: result.scenario.duration,
    yLabel: result.scenario.workload.unit,
    markers: markersOf(run),
    width: SMALL,
    height: 220,
    series: [
      { label: 'demand', color: '#212121', values: run.samples.map((s) => s.demand) },
      {
        label: 'capacity of ready pods',
        color: POLICY_COLORS[run.policy],
        values: run.samples.map((s) => s.capacity),
        dash: true,
      },
    ],
    areas: [
      {
        label: 'unserved',
        color: '#e53935',
        upper: run.samples.map((s) => s.demand),
        lower: run.samples.map((s) => s.served),
      },
    ],
  });
}

/** Cumulative cost (GPU cost, or node-hours without prices) and cumulative unserved demand, per policy. */
function cumulativeCharts(result: SimulationResult): string {
  const { scenario } = result;
  const prices = scenario.fleet.clusters.map((c) => c.gpuHourCost);
  const priced = prices.some((p) => p !== undefined);
  const hours = scenario.tick / 3600;
  const cumulative = (run: PolicyRun, perTick: (s: PolicyRun['samples'][number]) => number) => {
    let sum = 0;
    return run.samples.map((s) => (sum += perTick(s)));
  };
  const times = result.runs[0]!.samples.map((s) => s.t);
  const markers = markersOf(result.runs[0]!);
  const unit = scenario.workload.unit.endsWith('/s')
    ? scenario.workload.unit.slice(0, -2)
    : `${scenario.workload.unit} × s`;
  const cost = lineChart({
    id: 'cumulative-cost',
    title: priced ? 'GPU cost so far' : 'GPU node-hours so far',
    times,
    duration: scenario.duration,
    yLabel: priced ? 'GPU cost' : 'node-hours',
    markers,
    height: 260,
    series: result.runs.map((run) => ({
      label: run.label,
      color: POLICY_COLORS[run.policy],
      values: cumulative(
        run,
        (s) => s.clusters.reduce((a, c, i) => a + c.nodes * (priced ? (prices[i] ?? 0) : 1), 0) * hours,
      ),
      dash: run.policy !== 'mco',
    })),
  });
  const unserved = lineChart({
    id: 'cumulative-unserved',
    title: 'Unserved demand so far',
    times,
    duration: scenario.duration,
    yLabel: unit,
    markers,
    height: 260,
    series: result.runs.map((run) => ({
      label: run.label,
      color: POLICY_COLORS[run.policy],
      values: cumulative(run, (s) => Math.max(0, s.demand - s.served) * scenario.tick),
      dash: run.policy !== 'mco',
    })),
  });
  return (
    `<h3>${priced ? 'GPU cost' : 'GPU node-hours'} so far</h3>${cost}` +
    `<h3>Unserved demand so far</h3><p class="note">Demand the ready pods could not serve, summed from the start (${escapeHtml(unit)}).</p>${unserved}`
  );
}

function policyDetails(result: SimulationResult, run: PolicyRun): string {
  const times = run.samples.map((s) => s.t);
  const duration = result.scenario.duration;
  const markers = markersOf(run);
  const id = run.policy;
  const labels = clusterLabels(result);
  const replicas = lineChart({
    id: `replicas-${id}`,
    title: `Replicas per cluster (${run.label})`,
    times,
    duration,
    yLabel: 'replicas',
    markers,
    series: [
      ...labels.map((label, i) => ({
        label,
        color: SERIES_COLORS[i % SERIES_COLORS.length]!,
        values: run.samples.map((s) => s.clusters[i]!.replicas),
        step: true,
      })),
      { label: 'needed at target', color: '#9e9e9e', values: run.samples.map((s) => s.need), dash: true },
    ],
  });
  const pending = lineChart({
    id: `pending-${id}`,
    title: `Pending pods (${run.label})`,
    times,
    duration,
    yLabel: 'pending pods',
    markers,
    height: 200,
    series: labels.map((label, i) => ({
      label,
      color: SERIES_COLORS[i % SERIES_COLORS.length]!,
      values: run.samples.map((s) => s.clusters[i]!.pending),
      step: true,
    })),
  });
  return (
    `<h3>Replicas per cluster</h3><p class="note">The Deployment's replicas in each cluster (pending ones included); dashed: the replicas needed to serve the demand at the HPA target.</p>${replicas}` +
    `<h3>Pending pods</h3>${pending}` +
    `<h3>Timeline</h3>${timelineTable(run.timeline)}`
  );
}

/**
 * The report of a simulation: one self-contained HTML page (inline CSS and
 * SVG, no script, no external resource). Byte-identical for the same result.
 * With `multi` (the same scenario over several seeds, `result` its first),
 * the table and the verdict are over the seeds; the charts show `result`.
 */
export function renderReport(result: SimulationResult, options: { readonly multi?: MultiSeedResult } = {}): string {
  const { scenario } = result;
  const multi = options.multi ?? { scenario, seeds: [result.seed], results: [result] };
  const main = result.runs[0]!;
  const events = markersOf(main)
    .map((m) => `<li>${escapeHtml(m.label)}</li>`)
    .join('');
  const placement = scenario.placement.metadata;
  const cell = (title: string, chart: string) => `<div><h3>${escapeHtml(title)}</h3>${chart}</div>`;
  const lanes = result.runs.map((run) => cell(run.label, laneMultiple(result, run))).join('');
  const demand = result.runs.map((run) => cell(run.label, demandMultiple(result, run))).join('');
  const details = result.runs
    .map(
      (run, i) =>
        `<details id="policy-${run.policy}"${i === 0 ? ' open' : ''}><summary>${escapeHtml(run.label)}: replicas, pending pods, timeline</summary>${policyDetails(result, run)}</details>`,
    )
    .join('');
  const placements = main.placements;
  const perPlacement =
    placements.length > 1
      ? placements
          .map((p, i) => `<h3>Placement ${escapeHtml(p.placement)}</h3>${summaryTable(placementView(multi, i))}`)
          .join('') + `<p class="note">The charts below show placement ${escapeHtml(placements[0]!.placement)}.</p>`
      : '';
  const seedNote =
    multi.seeds.length === 1
      ? `seed ${result.seed}`
      : `${formatSeeds(multi.seeds)} (table and verdict); charts for seed ${result.seed}`;
  const meta =
    `${seedNote} · ${formatDuration(scenario.duration)} simulated at ${formatDuration(scenario.tick)} ticks from ${escapeHtml(scenario.start)}` +
    ` · ${result.clusters.length} clusters · placement ${escapeHtml(`${placement.namespace ?? 'default'}/${placement.name}`)}` +
    (scenario.warmUp ? ` · the first ${formatDuration(scenario.warmUp)} (warmUp) are not measured` : '');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mco simulation: ${escapeHtml(scenario.name)}</title>
<style>${REPORT_STYLE}</style>
</head>
<body>
<header><h1>mco simulation: ${escapeHtml(scenario.name)}</h1>
${scenario.description ? `<p>${escapeHtml(scenario.description)}</p>` : ''}
<p class="meta">${meta}</p></header>
${verdictSection(multi)}
<section id="summary"><h2>Summary${perPlacement ? ', fleet-wide' : ''}</h2>
${summaryTable(multi)}${perPlacement}
<p class="note">${multi.seeds.length > 1 ? 'Each figure: the mean over the seeds [lowest–highest]. ' : ''}Shaded green: the best value of the row (lower is better), among the policies that lose at most ${BEST_LOSS_TOLERANCE_PP} percentage point more requests than the one that loses least. Under each value, its difference from mco: green where that policy does better than mco, red where it does worse.
<b>mco</b>: the placement as written, run by the real @mco/core engine.
<b>mco with fail-back</b> (when the placement does not enable it itself): the same with <code>behavior.failBack.enabled</code>.
<b>MCO v0.2 as documented</b>: Google MCO's documented algorithm, its own code: the placement's order, scale-out at the capacity ceiling, scale-in when the HPA wants fewer than its minimum, draining when <code>useDraining</code> is set, no health checking.
<b>pick-N</b>: the fewest clusters by preference that hold the peak demand, always on (as OCM's and KubeFleet's PickN would be configured).
<b>All eligible clusters always on</b>: every eligible cluster runs the workload all the time.
A deployed cluster counts in cluster-hours, node-hours and cost whether or not it is reachable.
Unserved demand counts pods that could not be scheduled; idle capacity counts cluster-hours beyond the fewest eligible clusters that could hold the replicas needed, and scheduled replica-hours beyond the replicas needed at the HPA target.
Time to restored headroom runs from the first FailedScaleUp of a stockout until the fleet is back within its HPA target band.</p>
</section>
<section id="over-time"><h2>Over time (seed ${result.seed})</h2>
${cumulativeCharts(result)}
${events ? `<p class="note">Numbered dashed lines: the scenario's events.</p><ol class="events">${events}</ol>` : ''}
</section>
<section id="lanes"><h2>Clusters by state, per policy</h2>
<p class="note">One lane per cluster (with its price per node-hour), coloured by its state in the placement; grey while delivery removes the workload; a band under the lane while the cluster is stocked out or unreachable.</p>
<div class="multiples">${lanes}</div>
</section>
<section id="demand"><h2>Demand and what was served, per policy</h2>
<div class="multiples">${demand}</div>
</section>
<section id="details"><h2>Per policy</h2>
${details}
</section>
</body>
</html>
`;
}

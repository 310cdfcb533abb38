// The soak's HTML report: one self-contained page (inline CSS and SVG, no
// script, nothing fetched), drawn with the simulator report's charts.
import { escapeHtml, laneChart, lineChart, REPORT_STYLE, SERIES_COLORS, type Marker } from '@mco/simulator';
import { faultWindows, replay, type SoakEvent } from './history.js';
import {
  eventLine,
  eventsAround,
  exemptionText,
  faultEnds,
  faultsByKind,
  growthText,
  MAX_EXEMPTED_SHARE,
  reproduce,
  seconds,
  type ReportInput,
} from './report.js';

const STYLE = `${REPORT_STYLE}
.bad{background:#ffcdd2;padding:1px 6px;border-radius:3px}.good{background:#c8e6c9;padding:1px 6px;border-radius:3px}
pre.around{font-size:12px;margin:4px 0 10px;white-space:pre-wrap}
`;

const FAULT_COLORS = { fault: '#ef6c00', 'two or more at once': '#c62828' };

type RssEvent = Extract<SoakEvent, { type: 'rss' }>;

/** One lane per fault kind, a bar from each fault's start to its end (darker where faults of a kind overlap). */
function faultTimeline(r: ReportInput, kinds: readonly string[], markers: readonly Marker[]): string {
  const windows = faultWindows(r.history, r.endT);
  const times = [...new Set([0, ...windows.flatMap((w) => [w.start, w.end])])]
    .filter((t) => t >= 0 && t < r.endT)
    .sort((a, b) => a - b);
  return laneChart({
    id: 'faults',
    title: 'Faults by kind over time',
    times: times.map((t) => t / 1000),
    duration: r.endT / 1000,
    colors: FAULT_COLORS,
    markers,
    lanes: kinds.map((kind) => ({
      label: kind,
      states: times.map((t) => {
        const n = windows.filter((w) => w.kind === kind && w.start <= t && t < w.end).length;
        return n === 0 ? null : n === 1 ? 'fault' : 'two or more at once';
      }),
      bands: [],
    })),
  });
}

/** ACTIVE clusters of each placement as its status listed them (what the harness saw before the start counts at 0). */
function activeChart(r: ReportInput, markers: readonly Marker[]): string | undefined {
  const placements = [...new Set(r.history.flatMap((e) => (e.type === 'status' ? [e.placement] : [])))].sort();
  if (placements.length === 0) return undefined;
  const times: number[] = [];
  const values = placements.map((): number[] => []);
  replay(r.history, (state, e) => {
    if (e.type !== 'status') return;
    const t = Math.max(0, e.t) / 1000;
    // Events at one moment (the baseline's, all at 0) make one sample: the state after the last of them.
    if (times.at(-1) === t) for (const v of values) v.pop();
    else times.push(t);
    placements.forEach((p, i) =>
      values[i]!.push((state.status.get(p) ?? []).filter((c) => c.state === 'ACTIVE').length),
    );
  });
  return lineChart({
    id: 'active',
    title: 'ACTIVE clusters per placement',
    times,
    duration: r.endT / 1000,
    yLabel: 'ACTIVE clusters',
    markers,
    height: 240,
    series: placements.map((p, i) => ({
      label: p,
      color: SERIES_COLORS[i % SERIES_COLORS.length]!,
      values: values[i]!,
      step: true,
    })),
  });
}

/** RSS over time, one line per process, with its restarts (a new pid) marked. */
function rssChart(r: ReportInput): { svg: string; restarts: Marker[] } | undefined {
  const samples = r.history.filter((e): e is RssEvent => e.type === 'rss');
  if (samples.length === 0) return undefined;
  const byProcess = new Map<string, RssEvent[]>();
  for (const s of samples) byProcess.set(s.process, [...(byProcess.get(s.process) ?? []), s]);
  const times = [...new Set(samples.map((s) => s.t))].sort((a, b) => a - b);
  const restarts: Marker[] = [];
  const series = [...byProcess].map(([process, own], i) => {
    own.forEach((s, k) => {
      const before = own[k - 1];
      if (before && before.pid !== s.pid) {
        restarts.push({ t: s.t / 1000, label: `${seconds(s.t)} ${process} restarted (pid ${before.pid} → ${s.pid})` });
      }
    });
    // Between two samples of a process its last one holds (before its first: its first).
    let k = 0;
    const values = times.map((t) => {
      while (k + 1 < own.length && own[k + 1]!.t <= t) k++;
      return own[k]!.kb / 1024;
    });
    return { label: process, color: SERIES_COLORS[i % SERIES_COLORS.length]!, values };
  });
  restarts.sort((a, b) => a.t - b.t);
  const svg = lineChart({
    id: 'rss',
    title: 'RSS per process',
    times: times.map((t) => t / 1000),
    duration: r.endT / 1000,
    yLabel: 'RSS (MiB)',
    markers: restarts,
    series,
  });
  return { svg, restarts };
}

const table = (head: readonly string[], rows: readonly (readonly string[])[], numeric: readonly number[] = []) =>
  `<table><thead><tr>${head.map((h, i) => `<th${numeric.includes(i) ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('')}</tr></thead>` +
  `<tbody>${rows.map((row) => `<tr>${row.map((c, i) => `<td${numeric.includes(i) ? ' class="num"' : ''}>${escapeHtml(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`;

/** The events around `t`, folded. */
const around = (history: ReportInput['history'], t: number) =>
  `<details><summary>events around it</summary><pre class="around">${eventsAround(history, t)
    .map((e) => escapeHtml(eventLine(e)))
    .join('\n')}</pre></details>`;

/**
 * The HTML report of a soak: the verdict, violations with the events around
 * each, a timeline of the faults (violations marked), ACTIVE clusters per
 * placement, RSS per process over time, and the tables of the text report.
 * Every text from the history is escaped.
 */
export function htmlReport(r: ReportInput): string {
  const { history, verdict } = r;
  const markers = verdict.violations.map((v) => ({
    t: v.t / 1000,
    label: `(${v.invariant}) ${seconds(v.t)} ${v.message}`,
  }));
  const kinds = faultsByKind(history, verdict);
  const violations = verdict.violations
    .map(
      (v) =>
        `<li class="violation"><b>(${v.invariant})</b> at ${seconds(v.t)}: ${escapeHtml(v.message)}${around(history, v.t)}</li>`,
    )
    .join('');
  const active = activeChart(r, markers);
  const rss = rssChart(r);
  const convergenceRows = kinds.map((k) => [
    k.kind,
    String(k.count),
    String(k.errors),
    k.converged ? seconds(k.converged.p50) : '-',
    k.converged ? seconds(k.converged.p99) : '-',
    k.converged ? seconds(k.converged.max) : '-',
    String(k.notConverged),
  ]);
  const convergenceOf = new Map(verdict.convergences.map((c) => [c.id, c]));
  const starts = new Map(history.flatMap((e) => (e.type === 'fault' && e.phase === 'start' ? [[e.id, e.t]] : [])));
  const faultRows = faultEnds(history).map((f) => {
    const ms = convergenceOf.get(f.id)?.ms;
    return [
      String(f.id),
      f.kind,
      f.target,
      seconds(starts.get(f.id) ?? f.t),
      seconds(f.t),
      ms === undefined ? 'never' : seconds(ms),
      f.error ?? '',
    ];
  });
  const counts = verdict.exemptedShare <= MAX_EXEMPTED_SHARE;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mco soak: seed ${r.seed}</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>mco soak: seed ${r.seed}</h1>
<p class="meta">${r.minutes} min, started ${escapeHtml(r.startedAt)}, ran ${seconds(r.endT)} · reproduce: <code>${escapeHtml(reproduce(r))}</code></p>
<p class="meta">${escapeHtml(r.setup)}</p>
<p class="verdict"><b class="${verdict.violations.length ? 'bad' : 'good'}">${verdict.violations.length === 1 ? '1 violation' : `${verdict.violations.length} violations`}</b>
<b class="${counts ? 'good' : 'bad'}">${counts ? 'the run counts' : 'the run does not count'}</b> invariant (b): ${escapeHtml(exemptionText(verdict))}</p></header>
<section id="violations"><h2>Violations</h2>
${violations ? `<p class="note">Numbered as the dashed lines on the charts below.</p><ol class="events">${violations}</ol>` : '<p>None.</p>'}
${
  verdict.latePrunes.length
    ? `<details><summary>${verdict.latePrunes.length} deletion(s) on a listed cluster judged to be an earlier removal's prune, landing after the cluster was listed again (not violations)</summary><ol class="events">${verdict.latePrunes
        .map((p) => `<li>at ${seconds(p.t)}: ${escapeHtml(p.message)}${around(history, p.t)}</li>`)
        .join('')}</ol></details>`
    : ''
}
${
  verdict.stranded.length
    ? `<details><summary>${verdict.stranded.length} placement(s) left objects on a member's own server when its ClusterProfile moved to another server (doubt: kept, not owed gone)</summary><ul>${verdict.stranded
        .map((s) => `<li>${escapeHtml(s)}</li>`)
        .join('')}</ul></details>`
    : ''
}
</section>
<section id="timeline"><h2>Faults over time</h2>
<p class="note">One lane per fault kind, a bar from each fault's start to its end; numbered dashed lines: the violations.</p>
${faultTimeline(
  r,
  kinds.map((k) => k.kind),
  markers,
)}
${active ? `<h3>ACTIVE clusters per placement</h3>${active}` : ''}
</section>
<section id="rss"><h2>RSS over time</h2>
${
  rss
    ? `<p class="note">One line per process (between two samples its last one holds); numbered dashed lines: restarts (a new pid).</p>${rss.svg}` +
      (rss.restarts.length
        ? `<details><summary>${rss.restarts.length} restarts</summary><ol class="events">${rss.restarts.map((m) => `<li>${escapeHtml(m.label)}</li>`).join('')}</ol></details>`
        : '')
    : '<p>No RSS samples.</p>'
}
${table(
  ['process', 'first (kB)', 'last (kB)', 'max (kB)', 'growth over the last 30 min (second half of a shorter run)'],
  verdict.rss.map((p) => [p.process, String(p.firstKb), String(p.lastKb), String(p.maxKb), growthText(p)]),
  [1, 2, 3, 4],
)}
</section>
<section id="faults"><h2>Faults: ${faultRows.length} injected</h2>
<h3>By kind, with the time from each fault's end to convergence</h3>
${table(['kind', 'count', 'errors', 'p50', 'p99', 'max', 'not converged'], convergenceRows, [1, 2, 3, 4, 5, 6])}
<details><summary>Every fault</summary>
${table(['id', 'kind', 'target', 'start', 'end', 'converged after', 'error'], faultRows, [0, 3, 4, 5])}
</details>
</section>
</body>
</html>
`;
}

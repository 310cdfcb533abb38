/*
 * Small inline-SVG charts for the report: no script, no external resource,
 * deterministic output (coordinates rounded to 0.1 px).
 */

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const WIDTH = 960;
const MARGIN = { left: 56, right: 16, top: 20, bottom: 34 };
const r1 = (n: number) => (Math.round(n * 10) / 10).toString();

export interface Series {
  readonly label: string;
  readonly color: string;
  readonly values: readonly number[];
  readonly dash?: boolean;
  /** Draw as steps (discrete counts) instead of straight segments. */
  readonly step?: boolean;
}

export interface Marker {
  readonly t: number;
  readonly label: string;
}

export interface LineChartOptions {
  readonly id: string;
  readonly title: string;
  readonly times: readonly number[];
  readonly duration: number;
  readonly series: readonly Series[];
  readonly yLabel: string;
  readonly markers?: readonly Marker[];
  readonly height?: number;
  /** Default 960 (small multiples use less). */
  readonly width?: number;
  /** Shaded bands between two series, e.g. demand above what was served. */
  readonly areas?: readonly Area[];
}

export interface Area {
  readonly label: string;
  readonly color: string;
  readonly upper: readonly number[];
  readonly lower: readonly number[];
}

/** At most `max` points per series: bucket means, so long runs stay light. */
function downsample(times: readonly number[], values: readonly number[], max: number) {
  if (times.length <= max) return { times, values };
  const size = Math.ceil(times.length / max);
  const t: number[] = [];
  const v: number[] = [];
  for (let i = 0; i < times.length; i += size) {
    const end = Math.min(times.length, i + size);
    let sum = 0;
    for (let j = i; j < end; j++) sum += values[j]!;
    t.push(times[i]!);
    v.push(sum / (end - i));
  }
  return { times: t, values: v };
}

/** A round upper bound and step for an axis from 0 to `max`. */
function niceScale(max: number): { top: number; step: number } {
  if (!(max > 0)) return { top: 1, step: 1 };
  const rough = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough)!;
  return { top: Math.ceil(max / step) * step, step };
}

/** An axis value, short: 1.5M, 250k, 12.5. */
function compact(v: number): string {
  if (Math.abs(v) >= 1e6) return `${Number((v / 1e6).toFixed(2))}M`;
  if (Math.abs(v) >= 1e4) return `${Number((v / 1e3).toFixed(1))}k`;
  return String(Number(v.toFixed(2)));
}

/** Ticks for the time axis, about 6 to 12 of them: minutes under an hour (a short soak), hours beyond. */
function timeTicks(duration: number): number[] {
  const hours = duration / 3600;
  const steps = hours < 1 ? [1 / 60, 2 / 60, 5 / 60, 10 / 60] : [0.25, 0.5, 1, 2, 3, 6, 12, 24, 48];
  const every = steps.find((h) => hours / h <= 12) ?? 96;
  const ticks: number[] = [];
  for (let t = 0; t <= duration + 1e-9; t += every * 3600) ticks.push(t);
  return ticks;
}

function hhmm(t: number): string {
  const minutes = Math.round(t / 60);
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

function timeAxis(x: (t: number) => number, duration: number, top: number, bottom: number): string {
  return timeTicks(duration)
    .map(
      (t) =>
        `<line class="grid" x1="${r1(x(t))}" x2="${r1(x(t))}" y1="${top}" y2="${bottom}"/>` +
        `<text class="tick" x="${r1(x(t))}" y="${bottom + 14}" text-anchor="middle">${hhmm(t)}</text>`,
    )
    .join('');
}

interface LegendItem {
  readonly label: string;
  readonly color: string;
  readonly dash?: boolean;
  readonly area?: boolean;
  /** A band under a lane: drawn as the band is, opaque and thin. */
  readonly band?: boolean;
}

/** Legend entries laid out in rows that fit `width`: the SVG text and the number of rows. */
function legend(
  items: readonly LegendItem[],
  y: number,
  width: number,
  left = MARGIN.left,
): { svg: string; rows: number } {
  let x = left;
  let row = 0;
  const svg = items
    .map((item) => {
      const span = 36 + item.label.length * 6.2;
      if (x > left && x + span > width - MARGIN.right) {
        x = left;
        row++;
      }
      const ly = y + row * 16;
      const mark = item.band
        ? `<rect x="${x}" y="${ly - 2}" width="18" height="5" fill="${item.color}"/>`
        : item.area
          ? `<rect x="${x}" y="${ly - 5}" width="18" height="10" fill="${item.color}" fill-opacity="0.35"/>`
          : `<line x1="${x}" x2="${x + 18}" y1="${ly}" y2="${ly}" stroke="${item.color}" stroke-width="3"` +
            `${item.dash ? ' stroke-dasharray="5 3"' : ''}/>`;
      const out = `<g class="legend-item">${mark}<text class="legend" x="${x + 22}" y="${ly + 4}">${escapeHtml(item.label)}</text></g>`;
      x += span;
      return out;
    })
    .join('');
  return { svg: `<g class="legend">${svg}</g>`, rows: row + 1 };
}

/** Marker labels closer than this (px) go one row lower, so that markers minutes apart do not overlap. */
const MARKER_LABEL_SPACING = 16;

function markerLines(markers: readonly Marker[], x: (t: number) => number, top: number, bottom: number): string {
  const rowEnds: number[] = [];
  return markers
    .map((m, i) => {
      const px = x(m.t);
      let row = rowEnds.findIndex((end) => px >= end);
      if (row < 0) row = rowEnds.push(-Infinity) - 1;
      rowEnds[row] = px + MARKER_LABEL_SPACING;
      return (
        `<g class="marker"><title>${escapeHtml(m.label)}</title>` +
        `<line x1="${r1(px)}" x2="${r1(px)}" y1="${top}" y2="${bottom}"/>` +
        `<text x="${r1(px + 3)}" y="${top + 10 + row * 10}">${i + 1}</text></g>`
      );
    })
    .join('');
}

/** Series whose values equal an earlier one's are dashed and say so, instead of hiding under it. */
function distinguishIdentical(series: readonly Series[]): Series[] {
  return series.map((s, i) => {
    const same = series
      .slice(0, i)
      .find((e) => e.values.length === s.values.length && e.values.every((v, k) => v === s.values[k]));
    return same ? { ...s, label: `${s.label} (identical to ${same.label})`, dash: true } : s;
  });
}

/** A line chart over time with a legend above it. */
export function lineChart(options: LineChartOptions): string {
  const o = { ...options, series: distinguishIdentical(options.series) };
  const width = o.width ?? WIDTH;
  const items: LegendItem[] = [...o.series, ...(o.areas ?? []).map((a) => ({ ...a, area: true }))];
  const key = legend(items, MARGIN.top - 6, width);
  const height = (o.height ?? 300) + (key.rows - 1) * 16;
  const top = MARGIN.top + key.rows * 16;
  const bottom = height - MARGIN.bottom;
  const left = MARGIN.left;
  const right = width - MARGIN.right;
  const x = (t: number) => left + ((right - left) * t) / Math.max(1, o.duration);
  const max = Math.max(0, ...o.series.flatMap((s) => s.values), ...(o.areas ?? []).flatMap((a) => a.upper));
  const { top: yTop, step } = niceScale(max * 1.05);
  const y = (v: number) => bottom - ((bottom - top) * v) / yTop;

  let grid = '';
  for (let v = 0; v <= yTop + 1e-9; v += step) {
    grid +=
      `<line class="grid" x1="${left}" x2="${right}" y1="${r1(y(v))}" y2="${r1(y(v))}"/>` +
      `<text class="tick" x="${left - 6}" y="${r1(y(v) + 4)}" text-anchor="end">${compact(v)}</text>`;
  }
  const areas = (o.areas ?? [])
    .map((a) => {
      const up = downsample(o.times, a.upper, 600);
      const low = downsample(o.times, a.lower, 600);
      const points = [
        ...up.times.map((t, i) => `${r1(x(t))},${r1(y(up.values[i]!))}`),
        ...low.times.map((t, i) => `${r1(x(t))},${r1(y(low.values[i]!))}`).reverse(),
      ];
      return (
        `<polygon class="area" data-area="${escapeHtml(a.label)}" points="${points.join(' ')}"` +
        ` fill="${a.color}" fill-opacity="0.35" stroke="none"/>`
      );
    })
    .join('');
  const paths = o.series
    .map((s, i) => {
      const d = downsample(o.times, s.values, 1200);
      let path = '';
      d.times.forEach((t, i) => {
        const px = r1(x(t));
        const py = r1(y(d.values[i]!));
        if (i === 0) path += `M${px},${py}`;
        else if (s.step) path += `H${px}V${py}`;
        else path += `L${px},${py}`;
      });
      if (s.step && d.times.length > 0) path += `H${r1(x(o.duration))}`;
      return (
        `<path class="series" data-series="${escapeHtml(options.series[i]!.label)}" d="${path}" fill="none" stroke="${s.color}"` +
        ` stroke-width="2"${s.dash ? ' stroke-dasharray="6 4"' : ''}/>`
      );
    })
    .join('');
  return (
    `<svg class="chart" data-chart="${escapeHtml(o.id)}" role="img" aria-label="${escapeHtml(o.title)}"` +
    ` width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg">` +
    `<title>${escapeHtml(o.title)}</title>` +
    key.svg +
    grid +
    timeAxis(x, o.duration, top, bottom) +
    `<line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${bottom}"/>` +
    `<line class="axis" x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}"/>` +
    `<text class="axis-label" transform="translate(14 ${r1((top + bottom) / 2)}) rotate(-90)" text-anchor="middle">${escapeHtml(o.yLabel)}</text>` +
    areas +
    markerLines(o.markers ?? [], x, top, bottom) +
    paths +
    `</svg>`
  );
}

export interface Lane {
  readonly label: string;
  /** A state (key of `colors`) or null per sample. */
  readonly states: readonly (string | null)[];
  /** Conditions drawn as a thin band under the lane, e.g. a stockout. */
  readonly bands: readonly { readonly label: string; readonly color: string; readonly on: readonly boolean[] }[];
}

export interface LaneChartOptions {
  readonly id: string;
  readonly title: string;
  readonly times: readonly number[];
  readonly duration: number;
  readonly lanes: readonly Lane[];
  readonly colors: Readonly<Record<string, string>>;
  readonly markers?: readonly Marker[];
  /** Default 960 (small multiples use less). */
  readonly width?: number;
}

/** Runs of equal values: [start index, end index (exclusive), value]. */
function runs<T>(values: readonly T[]): [number, number, T][] {
  const out: [number, number, T][] = [];
  let start = 0;
  for (let i = 1; i <= values.length; i++) {
    if (i === values.length || values[i] !== values[start]) {
      out.push([start, i, values[start]!]);
      start = i;
    }
  }
  return out;
}

/** One swimlane per cluster, coloured by state over time. */
export function laneChart(o: LaneChartOptions): string {
  const width = o.width ?? WIDTH;
  const laneHeight = 26;
  const bandHeight = 5;
  const gap = 10;
  const left = 150;
  const right = width - MARGIN.right;
  const bandLegend = o.lanes[0]?.bands.map((b) => ({ label: b.label, color: b.color, band: true })) ?? [];
  const legendItems = [...Object.entries(o.colors).map(([label, color]) => ({ label, color })), ...bandLegend];
  const key = legend(legendItems, MARGIN.top - 6, width, 8);
  const top = MARGIN.top + key.rows * 16;
  const bottom = top + o.lanes.length * (laneHeight + bandHeight + gap);
  const height = bottom + MARGIN.bottom;
  const x = (t: number) => left + ((right - left) * t) / Math.max(1, o.duration);
  const end = (i: number) => (i < o.times.length ? o.times[i]! : o.duration);

  const lanes = o.lanes
    .map((lane, li) => {
      const y = top + li * (laneHeight + bandHeight + gap) + gap / 2;
      const rects = runs(lane.states)
        .filter(([, , state]) => state !== null)
        .map(
          ([a, b, state]) =>
            `<rect class="state" data-state="${escapeHtml(state!)}" x="${r1(x(o.times[a]!))}" y="${y}"` +
            ` width="${r1(Math.max(0.5, x(end(b)) - x(o.times[a]!)))}" height="${laneHeight}" fill="${o.colors[state!] ?? '#888'}"><title>${escapeHtml(`${lane.label}: ${state} ${hhmm(o.times[a]!)}–${hhmm(end(b))}`)}</title></rect>`,
        )
        .join('');
      const bands = lane.bands
        .map((band) =>
          runs(band.on)
            .filter(([, , on]) => on)
            .map(
              ([a, b]) =>
                `<rect class="band" x="${r1(x(o.times[a]!))}" y="${y + laneHeight + 1}" width="${r1(Math.max(0.5, x(end(b)) - x(o.times[a]!)))}"` +
                ` height="${bandHeight}" fill="${band.color}"><title>${escapeHtml(`${lane.label}: ${band.label} ${hhmm(o.times[a]!)}–${hhmm(end(b))}`)}</title></rect>`,
            )
            .join(''),
        )
        .join('');
      return (
        `<rect class="lane-bg" x="${left}" y="${y}" width="${right - left}" height="${laneHeight}"/>` +
        `<text class="lane-label" x="${left - 8}" y="${y + laneHeight / 2 + 4}" text-anchor="end">${escapeHtml(lane.label)}</text>` +
        rects +
        bands
      );
    })
    .join('');
  return (
    `<svg class="chart" data-chart="${escapeHtml(o.id)}" role="img" aria-label="${escapeHtml(o.title)}"` +
    ` width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg">` +
    `<title>${escapeHtml(o.title)}</title>` +
    key.svg +
    timeAxis(x, o.duration, top, bottom) +
    lanes +
    markerLines(o.markers ?? [], x, top, bottom) +
    `</svg>`
  );
}

// SVG line and bar charts for the training and benchmark reports, drawn the way a person
// would: title, round-numbered axes with grid lines, labelled axes with units, a legend,
// colour-blind-safe colours. Data need not be clean: NaN/Infinity points leave gaps, a
// lone point is drawn as a dot, and a chart with no data says so instead of failing.
import { linearTicks, logTicks, type Ticks } from './scale.ts';
import {
  border,
  colour,
  dash,
  drawLegend,
  emptyNote,
  type Frame,
  f,
  type LegendItem,
  leftMargin,
  legendRows,
  open,
  plotHeight,
  plotWidth,
  SIZE,
  text,
  textWidth,
  topMargin,
  xLabel,
  yAxis,
} from './svg.ts';

export interface Series {
  name: string;
  points: Array<[number, number]>;
}

export interface LineChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  width?: number;
  height?: number;
  /** Lowest value the y axis shows (e.g. 0 for rates), unless the data go lower. */
  yMin?: number;
  logX?: boolean;
  /** Labelled vertical lines (e.g. where a run resumed). */
  markers?: Array<{ x: number; label: string }>;
}

/** Series with at most this many points get a dot on each. */
const DOT_LIMIT = 40;

function extent(values: number[]): [number, number] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}

export function lineChart(spec: LineChartSpec): string {
  const width = spec.width ?? 800;
  const height = spec.height ?? 450;
  const logX = spec.logX ?? false;
  const usable = (p: [number, number]): boolean =>
    Number.isFinite(p[0]) && Number.isFinite(p[1]) && (!logX || p[0] > 0);
  const series = spec.series.map((s) => ({
    name: s.name,
    // A point without an x has no place, not even as a gap; a NaN y is a gap.
    points: s.points.filter((p) => Number.isFinite(p[0])).sort((a, b) => a[0] - b[0]),
    count: s.points.filter(usable).length,
  }));
  const all = series.flatMap((s) => s.points.filter(usable));
  const empty = all.length === 0;
  const [x0, x1] = empty ? [0, 1] : extent(all.map((p) => p[0]));
  let [y0, y1] = empty ? [spec.yMin ?? 0, (spec.yMin ?? 0) + 1] : extent(all.map((p) => p[1]));
  if (spec.yMin !== undefined) y0 = Math.min(y0, spec.yMin);
  y1 = Math.max(y1, y0);
  const integerX = all.every((p) => Number.isInteger(p[0]));
  const xt = logX && !empty ? logTicks(x0, x1) : linearTicks(x0, x1, 8, integerX);
  const yt = linearTicks(y0, y1, 6);

  const legend: LegendItem[] = series.map((s, i) => ({
    name: s.name,
    colour: colour(i),
    kind: 'line',
    dash: dash(i),
    marker: s.count <= DOT_LIMIT,
  }));
  const left = leftMargin(yt.labels);
  const right = Math.max(24, textWidth(xt.labels.at(-1) ?? '', SIZE.tick) / 2 + 8);
  const rows = legendRows(legend, width - left - right);
  const markerBand = (spec.markers ?? []).length > 0 ? 14 : 0;
  const fr: Frame = { width, height, left, right, top: topMargin(rows) + markerBand, bottom: 58 };
  const pw = plotWidth(fr);
  const ph = plotHeight(fr);
  const lx = logX ? Math.log10 : (v: number) => v;
  const x = (v: number): number => fr.left + ((lx(v) - lx(xt.lo)) / (lx(xt.hi) - lx(xt.lo))) * pw;
  const y = (v: number): number => fr.top + ph - ((v - yt.lo) / (yt.hi - yt.lo)) * ph;

  const out = [open(fr, spec.title), yAxis(fr, yt, y, spec.yLabel), xLabel(fr, spec.xLabel)];
  out.push(xTicks(fr, xt, x));
  const markers = (spec.markers ?? []).filter((m) => Number.isFinite(m.x) && m.x >= xt.lo && m.x <= xt.hi);
  for (const m of markers) {
    const px = f(x(m.x));
    out.push(
      `<line x1="${px}" y1="${fr.top}" x2="${px}" y2="${fr.top + ph}" stroke="#666" stroke-dasharray="4 3"/>`,
    );
  }
  series.forEach((s, i) => {
    // Split at unusable points: a NaN is a gap, not a zero.
    const segments: Array<Array<[number, number]>> = [[]];
    for (const p of s.points) {
      if (usable(p)) segments[segments.length - 1].push(p);
      else if (segments[segments.length - 1].length > 0) segments.push([]);
    }
    const d = dash(i) ? ` stroke-dasharray="${dash(i)}"` : '';
    for (const seg of segments) {
      if (seg.length > 1) {
        const pixels = thin(
          seg.map((p): [number, number] => [x(p[0]), y(p[1])]),
          fr.left,
        );
        const path = pixels.map((p, j) => `${j === 0 ? 'M' : 'L'}${f(p[0])} ${f(p[1])}`).join('');
        out.push(
          `<path d="${path}" fill="none" stroke="${colour(i)}" stroke-width="2" stroke-linejoin="round"${d} clip-path="url(#plot)"/>`,
        );
      }
      if (seg.length === 1 || s.count <= DOT_LIMIT) {
        for (const p of seg)
          out.push(
            `<circle cx="${f(x(p[0]))}" cy="${f(y(p[1]))}" r="3.5" fill="${colour(i)}" stroke="#fff"/>`,
          );
      }
    }
  });
  // Marker labels sit just above the plot, clear of the data, kept inside the page.
  for (const m of markers) {
    const half = textWidth(m.label, SIZE.note) / 2;
    const cx = Math.min(Math.max(x(m.x), fr.left + half), width - half - 4);
    out.push(text(cx, fr.top - 5, m.label, { size: SIZE.note, anchor: 'middle', fill: '#444' }));
  }
  if (empty) out.push(emptyNote(fr, 'no data'));
  out.push(border(fr), drawLegend(rows, fr.left, 52), '</svg>');
  return out.join('\n');
}

/**
 * Pixel points with at most the first, lowest, highest and last point of each pixel column:
 * the same picture as every point (a long run has many per column), a far smaller SVG.
 */
function thin(points: Array<[number, number]>, left: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let col: Array<[number, number]> = [];
  const flush = (): void => {
    if (col.length === 0) return;
    let lo = col[0];
    let hi = col[0];
    for (const p of col) {
      if (p[1] < lo[1]) lo = p;
      if (p[1] > hi[1]) hi = p;
    }
    const keep = new Set([col[0], lo, hi, col[col.length - 1]]);
    out.push(...col.filter((p) => keep.has(p)));
    col = [];
  };
  let current = Number.NaN;
  for (const p of points) {
    const c = Math.floor(p[0] - left);
    if (c !== current) flush();
    current = c;
    col.push(p);
  }
  flush();
  return out;
}

/** Vertical grid lines and x labels; labels thinned when they would collide. */
function xTicks(fr: Frame, xt: Ticks, x: (v: number) => number): string {
  const out: string[] = [];
  const widest = Math.max(...xt.labels.map((l) => textWidth(l, SIZE.tick)));
  const every = Math.max(1, Math.ceil(((widest + 12) * xt.values.length) / plotWidth(fr)));
  const base = fr.top + plotHeight(fr);
  xt.values.forEach((v, i) => {
    const px = x(v);
    out.push(`<line x1="${f(px)}" y1="${fr.top}" x2="${f(px)}" y2="${base}" stroke="#e3e3e3"/>`);
    out.push(`<line x1="${f(px)}" y1="${base}" x2="${f(px)}" y2="${base + 5}" stroke="#888"/>`);
    if (i % every === 0) out.push(text(px, base + 19, xt.labels[i], { anchor: 'middle' }));
  });
  return out.join('');
}

export { type BarChartSpec, barChart } from './bar.ts';

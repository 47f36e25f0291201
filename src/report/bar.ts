// Bar charts (grouped or stacked) for the reports; the spec is in charts.ts with the line chart's.
import { formatValue, linearTicks } from './scale.ts';
import {
  border,
  colour,
  drawLegend,
  emptyNote,
  type Frame,
  f,
  type LegendItem,
  leftMargin,
  legendRows,
  open,
  plotHeight,
  SIZE,
  text,
  textWidth,
  topMargin,
  yAxis,
} from './svg.ts';

export interface BarChartSpec {
  title: string;
  yLabel: string;
  categories: string[];
  series: Array<{ name: string; values: number[] }>;
  stacked?: boolean;
  width?: number;
  height?: number;
}

/** Colours dark enough for white text on them. */
const DARK = new Set(['#0072B2', '#009E73', '#D55E00', '#000000']);
const TILT = (35 * Math.PI) / 180;

function clip(s: string, n = 30): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

export function barChart(spec: BarChartSpec): string {
  const width = spec.width ?? 800;
  const height = spec.height ?? 450;
  const stacked = spec.stacked ?? false;
  const cats = spec.categories.map((c) => clip(c));
  const ns = spec.series.length;
  const val = (s: number, c: number): number => spec.series[s].values[c] ?? Number.NaN;
  // Stacks grow up from 0 for positive values and down for negative ones.
  let y0 = 0;
  let y1 = 0;
  let any = false;
  for (let c = 0; c < cats.length; c++) {
    let pos = 0;
    let neg = 0;
    for (let s = 0; s < ns; s++) {
      const v = val(s, c);
      if (!Number.isFinite(v)) continue;
      any = true;
      if (stacked && v >= 0) pos += v;
      else if (stacked) neg += v;
      else [pos, neg] = [Math.max(pos, v), Math.min(neg, v)];
    }
    [y0, y1] = [Math.min(y0, neg), Math.max(y1, pos)];
  }
  const yt = linearTicks(y0, any ? y1 : 1, 6);

  const legend: LegendItem[] =
    ns > 1 ? spec.series.map((s, i) => ({ name: s.name, colour: colour(i), kind: 'box' as const })) : [];
  const right = 24;
  const labelW = cats.map((c) => textWidth(c, SIZE.tick));
  const widest = Math.max(0, ...labelW);
  let left = leftMargin(yt.labels);
  const slotOf = (l: number): number => (width - l - right) / Math.max(1, cats.length);
  const tilt = widest > slotOf(left) - 8;
  // A tilted first label reaches left of its bar; keep it on the page.
  if (tilt) left = Math.max(left, (labelW[0] ?? 0) * Math.cos(TILT) - slotOf(left) / 2 + 8);
  const rows = legendRows(legend, width - left - right);
  // (textWidth overestimates; 0.85 of it is closer for the tilted labels.)
  const bottom = 34 + (tilt ? 0.85 * widest * Math.sin(TILT) : 0);
  const fr: Frame = { width, height, left, right, top: topMargin(rows), bottom };
  const ph = plotHeight(fr);
  const slot = slotOf(left);
  const y = (v: number): number => fr.top + ph - ((v - yt.lo) / (yt.hi - yt.lo)) * ph;
  const group = Math.min(slot * 0.72, (stacked ? 1 : ns) * 70);
  const barW = stacked ? group : group / Math.max(1, ns);
  const gap = barW > 6 ? 1 : 0;
  const labelled = (stacked ? cats.length : cats.length * ns) <= 24;

  const out = [open(fr, spec.title), yAxis(fr, yt, y, spec.yLabel)];
  const base = fr.top + ph;
  cats.forEach((cat, c) => {
    const cx = fr.left + (c + 0.5) * slot;
    const gx = cx - group / 2;
    if (tilt) out.push(text(cx + 4, base + 16, cat, { anchor: 'end', rotate: -35 }));
    else out.push(text(cx, base + 19, cat, { anchor: 'middle' }));
    let pos = 0;
    let neg = 0;
    for (let s = 0; s < ns; s++) {
      const v = val(s, c);
      const bx = stacked ? gx : gx + s * barW;
      if (!Number.isFinite(v)) {
        if (!stacked)
          out.push(text(bx + barW / 2, y(0) - 4, 'n/a', { size: SIZE.note, anchor: 'middle', fill: '#777' }));
        continue;
      }
      const from = stacked ? (v >= 0 ? pos : neg) : 0;
      const to = from + v;
      if (stacked && v >= 0) pos = to;
      else if (stacked) neg = to;
      const top = Math.min(y(from), y(to));
      const h = Math.abs(y(from) - y(to));
      out.push(
        `<rect x="${f(bx + gap)}" y="${f(top)}" width="${f(barW - 2 * gap)}" height="${f(h)}" fill="${colour(s)}"/>`,
      );
      const label = formatValue(v);
      if (stacked && h >= 16 && textWidth(label, SIZE.note) <= barW - 4) {
        const fill = DARK.has(colour(s)) ? '#fff' : '#222';
        out.push(text(bx + barW / 2, top + h / 2 + 4, label, { size: SIZE.note, anchor: 'middle', fill }));
      } else if (!stacked && labelled && textWidth(label, SIZE.note) <= slot) {
        out.push(
          text(bx + barW / 2, v >= 0 ? top - 4 : top + h + 13, label, { size: SIZE.note, anchor: 'middle' }),
        );
      }
    }
    if (stacked && labelled && ns > 1 && pos > 0) {
      out.push(text(cx, y(pos) - 5, formatValue(pos), { size: SIZE.note, anchor: 'middle', weight: 'bold' }));
    }
  });
  out.push(`<line x1="${fr.left}" y1="${f(y(0))}" x2="${width - right}" y2="${f(y(0))}" stroke="#555"/>`);
  if (!any) out.push(emptyNote(fr, 'no data'));
  out.push(border(fr), drawLegend(rows, fr.left, 52), '</svg>');
  return out.join('\n');
}

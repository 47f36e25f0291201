// SVG building blocks shared by the line and bar charts: the palette, text, the frame with
// its title, axis labels and grid, and the legend. Sizes are in pixels; librsvg (through
// sharp) renders them 1:1 into the PNG.

/** Okabe-Ito: distinguishable with the common colour-vision deficiencies; yellow last (faint on white). */
export const PALETTE = [
  '#0072B2',
  '#E69F00',
  '#009E73',
  '#D55E00',
  '#CC79A7',
  '#56B4E9',
  '#000000',
  '#F0E442',
];

/** After the palette runs out, series repeat its colours with these dash patterns. */
const DASHES = ['', '6 3', '2 3', '8 3 2 3'];

export function colour(i: number): string {
  return PALETTE[i % PALETTE.length];
}

export function dash(i: number): string {
  return DASHES[Math.floor(i / PALETTE.length) % DASHES.length];
}

export const FONT = 'DejaVu Sans, Arial, sans-serif';
export const SIZE = { title: 18, label: 14, tick: 12, legend: 13, note: 11 };

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Width of `s` in DejaVu Sans (a wide face; overestimating is harmless, clipping is not). */
export function textWidth(s: string, size: number): number {
  return s.length * size * 0.62;
}

export function text(
  x: number,
  y: number,
  s: string,
  opts: {
    size?: number;
    anchor?: 'start' | 'middle' | 'end';
    weight?: string;
    fill?: string;
    rotate?: number;
  } = {},
): string {
  const rot = opts.rotate ? ` transform="rotate(${opts.rotate} ${f(x)} ${f(y)})"` : '';
  const weight = opts.weight ? ` font-weight="${opts.weight}"` : '';
  return (
    `<text x="${f(x)}" y="${f(y)}" font-size="${opts.size ?? SIZE.tick}" text-anchor="${opts.anchor ?? 'start'}"` +
    ` fill="${opts.fill ?? '#222'}"${weight}${rot}>${esc(s)}</text>`
  );
}

/** Coordinates with one decimal: enough for anti-aliasing, short SVG. */
export function f(v: number): string {
  return String(Math.round(v * 10) / 10);
}

export interface LegendItem {
  name: string;
  colour: string;
  /** A line swatch (line charts) or a filled square (bars). */
  kind: 'line' | 'box';
  dash?: string;
  marker?: boolean;
}

const SWATCH = 24;
const ROW = 20;

function itemWidth(it: LegendItem): number {
  return SWATCH + 6 + textWidth(it.name, SIZE.legend) + 18;
}

/** Legend items flowed into rows of at most `width`; returns the rows (item indices). */
export function legendRows(items: LegendItem[], width: number): LegendItem[][] {
  const rows: LegendItem[][] = [];
  let used = Number.POSITIVE_INFINITY;
  for (const it of items) {
    const w = itemWidth(it);
    if (used + w > width) {
      rows.push([]);
      used = 0;
    }
    rows[rows.length - 1].push(it);
    used += w;
  }
  return rows;
}

export function legendHeight(rows: LegendItem[][]): number {
  return rows.length * ROW;
}

/** Draws the rows left-aligned at `x`, first row's centre line at `y`. */
export function drawLegend(rows: LegendItem[][], x: number, y: number): string {
  const out: string[] = [];
  rows.forEach((row, r) => {
    let cx = x;
    const cy = y + r * ROW;
    for (const it of row) {
      if (it.kind === 'box') {
        out.push(`<rect x="${f(cx + 6)}" y="${f(cy - 6)}" width="12" height="12" fill="${it.colour}"/>`);
      } else {
        const d = it.dash ? ` stroke-dasharray="${it.dash}"` : '';
        out.push(
          `<line x1="${f(cx)}" y1="${f(cy)}" x2="${f(cx + SWATCH)}" y2="${f(cy)}" stroke="${it.colour}" stroke-width="2.5"${d}/>`,
        );
        if (it.marker)
          out.push(
            `<circle cx="${f(cx + SWATCH / 2)}" cy="${f(cy)}" r="3.5" fill="${it.colour}" stroke="#fff"/>`,
          );
      }
      out.push(text(cx + SWATCH + 6, cy + 4.5, it.name, { size: SIZE.legend }));
      cx += itemWidth(it);
    }
  });
  return out.join('');
}

/** The plot rectangle inside the margins. */
export interface Frame {
  width: number;
  height: number;
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export function plotWidth(fr: Frame): number {
  return fr.width - fr.left - fr.right;
}

export function plotHeight(fr: Frame): number {
  return fr.height - fr.top - fr.bottom;
}

/** Opening of the document: white page, title, and a clip path for the plot area. */
export function open(fr: Frame, title: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${fr.width}" height="${fr.height}" viewBox="0 0 ${fr.width} ${fr.height}" font-family="${FONT}">` +
    `<rect width="100%" height="100%" fill="#fff"/>` +
    `<defs><clipPath id="plot"><rect x="${fr.left}" y="${fr.top}" width="${plotWidth(fr)}" height="${plotHeight(fr)}"/></clipPath></defs>` +
    text(fr.width / 2, 26, title, { size: SIZE.title, anchor: 'middle', weight: 'bold' })
  );
}

/** Horizontal grid lines with y tick labels, and the rotated y axis label. */
export function yAxis(
  fr: Frame,
  ticks: { values: number[]; labels: string[] },
  y: (v: number) => number,
  label: string,
): string {
  const out: string[] = [];
  const x1 = fr.width - fr.right;
  ticks.values.forEach((v, i) => {
    const py = y(v);
    out.push(`<line x1="${fr.left}" y1="${f(py)}" x2="${x1}" y2="${f(py)}" stroke="#e3e3e3"/>`);
    out.push(text(fr.left - 8, py + 4, ticks.labels[i], { anchor: 'end' }));
  });
  const cy = fr.top + plotHeight(fr) / 2;
  out.push(text(20, cy, label, { size: SIZE.label, anchor: 'middle', rotate: -90 }));
  return out.join('');
}

/** The x axis label, centred under the plot. */
export function xLabel(fr: Frame, label: string): string {
  return text(fr.left + plotWidth(fr) / 2, fr.height - 12, label, { size: SIZE.label, anchor: 'middle' });
}

/** The plot's outline, drawn last so it sits over bars and lines. */
export function border(fr: Frame): string {
  return `<rect x="${fr.left}" y="${fr.top}" width="${plotWidth(fr)}" height="${plotHeight(fr)}" fill="none" stroke="#888"/>`;
}

/** A grey message in the middle of an empty plot. */
export function emptyNote(fr: Frame, message: string): string {
  return text(fr.left + plotWidth(fr) / 2, fr.top + plotHeight(fr) / 2, message, {
    size: SIZE.label,
    anchor: 'middle',
    fill: '#777',
  });
}

/** Top margin: the title, then the legend rows. */
export function topMargin(rows: LegendItem[][]): number {
  return 44 + legendHeight(rows) + (rows.length > 0 ? 6 : 0);
}

/** Left margin: the rotated y label, then the widest y tick label. */
export function leftMargin(tickLabels: string[]): number {
  return 38 + Math.max(0, ...tickLabels.map((l) => textWidth(l, SIZE.tick)));
}

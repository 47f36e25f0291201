// Number helpers for benchmark reports: medians (robust to a slow repeat on a shared
// machine), significant-figure formatting and markdown tables.

/** The median (mean of the middle two for an even count); NaN for no values. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** `digits` significant figures without exponent notation; '—' for a missing value. */
export function fmt(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  const mag = Math.floor(Math.log10(Math.abs(x)));
  return x.toFixed(Math.max(0, digits - 1 - mag));
}

/** A markdown table whose first column is left-aligned and the others right-aligned. */
export function markdownTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, 3, ...rows.map((r) => (r[i] ?? '').length)));
  const cell = (s: string, i: number) => (i === 0 ? s.padEnd(widths[i]) : s.padStart(widths[i]));
  const line = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(headers), rule, ...rows.map((r) => line(headers.map((_, i) => r[i] ?? '')))].join('\n');
}

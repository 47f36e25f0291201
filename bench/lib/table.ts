// Markdown tables and number formatting for benchmark output.

export type Align = 'left' | 'right';

/** A markdown table, columns padded so it also reads well in a terminal. */
export function markdownTable(headers: string[], rows: string[][], align: Align[] = []): string {
  const widths = headers.map((h, i) => Math.max(h.length, 3, ...rows.map((r) => (r[i] ?? '').length)));
  const cell = (s: string, i: number): string =>
    align[i] === 'right' ? s.padStart(widths[i]) : s.padEnd(widths[i]);
  const line = (cells: string[]): string => `| ${cells.map((c, i) => cell(c, i)).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (align[i] === 'right' ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(headers), rule, ...rows.map((r) => line(headers.map((_, i) => r[i] ?? '')))].join('\n');
}

/** A number with `digits` significant figures, without exponent notation for usual ranges. */
export function fmt(x: number, digits = 3): string {
  if (!Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  const mag = Math.floor(Math.log10(Math.abs(x)));
  return x.toFixed(Math.max(0, digits - 1 - mag));
}

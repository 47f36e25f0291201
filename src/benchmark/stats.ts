// Number helpers for every benchmark (`tsddp bench` and the bench/ scripts): medians
// (robust to a slow repeat on a shared machine) with min and max, timing loops calibrated
// to a target duration, significant-figure formatting and markdown tables (architecture
// §10: medians over repeated runs, never pass/fail timings).

/** The median (mean of the middle two for an even count); NaN for no values. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * A distribution-free confidence interval for the median: the order statistics x(k) and
 * x(n+1-k) with the largest k for which P(Binomial(n, 1/2) < k) <= (1 - level) / 2. It
 * assumes only independent rounds, so a ratio's interval says whether its median differs
 * from 1 by more than the machine's round-to-round spread. Null when `xs` has too few
 * values for that level (fewer than 6 at 95%).
 */
export function medianInterval(xs: readonly number[], level = 0.95): [number, number] | null {
  if (!(level > 0 && level < 1))
    throw new RangeError(`medianInterval: level must be in (0, 1), got ${level}`);
  const n = xs.length;
  const tail = (1 - level) / 2;
  // cdf = P(X <= j) for X ~ Binomial(n, 1/2), accumulated term by term.
  let term = 0.5 ** n;
  let cdf = term;
  let k = 0;
  for (let j = 0; j < n && cdf <= tail; j++) {
    k = j + 1; // P(X < k) = P(X <= j) <= tail
    term *= (n - j) / (j + 1);
    cdf += term;
  }
  if (k === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return [s[k - 1], s[n - k]];
}

/** The smallest value; NaN for no values. */
export function min(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : Math.min(...xs);
}

/** The largest value; NaN for no values. */
export function max(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : Math.max(...xs);
}

/** Median with the min and max, the summary benchmarks report. */
export interface Summary {
  median: number;
  min: number;
  max: number;
  values: number[];
}

export function summarize(xs: readonly number[]): Summary {
  return { median: median(xs), min: min(xs), max: max(xs), values: [...xs] };
}

/** A loop body timed by itself: runs `n` iterations and returns the elapsed seconds. */
export type TimedLoop = (n: number) => number;

/** Seconds since an arbitrary origin, for timing loops. */
export function now(): number {
  return performance.now() / 1000;
}

/**
 * The iteration count that makes `loop` take about `targetS` seconds: doubles from 16
 * until one run takes at least 50 ms, then times a run of about targetS / 2 and scales
 * from that (the first estimate is skewed by JIT warm-up). Also serves as the warm-up.
 * bench/reference/*.py use the same rule.
 */
export function calibrate(loop: TimedLoop, targetS: number): number {
  let n = 16;
  let dt = loop(n);
  while (dt < 0.05) {
    n *= 2;
    dt = loop(n);
  }
  n = Math.max(1, Math.round((n * targetS) / 2 / dt));
  dt = loop(n);
  return Math.max(1, Math.round((n * targetS) / dt));
}

/** Microseconds per iteration of `loop` over `n` iterations, after a warm-up of n/5. */
export function usPerIter(loop: TimedLoop, n: number): number {
  loop(Math.max(1, Math.floor(n / 5)));
  return (loop(n) / n) * 1e6;
}

/** `digits` significant figures without exponent notation; '—' for a missing value. */
export function fmt(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  const mag = Math.floor(Math.log10(Math.abs(x)));
  return x.toFixed(Math.max(0, digits - 1 - mag));
}

export type Align = 'left' | 'right';

/**
 * A markdown table, columns padded so it also reads well in a terminal. `align` gives each
 * column's alignment; a column it leaves out is left-aligned if it is the first (labels)
 * and right-aligned otherwise (numbers).
 */
export function markdownTable(headers: string[], rows: string[][], align: readonly Align[] = []): string {
  const widths = headers.map((h, i) => Math.max(h.length, 3, ...rows.map((r) => (r[i] ?? '').length)));
  const right = (i: number): boolean => (align[i] ?? (i === 0 ? 'left' : 'right')) === 'right';
  const cell = (s: string, i: number): string => (right(i) ? s.padStart(widths[i]) : s.padEnd(widths[i]));
  const line = (cells: string[]): string => `| ${cells.map(cell).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (right(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(headers), rule, ...rows.map((r) => line(headers.map((_, i) => r[i] ?? '')))].join('\n');
}

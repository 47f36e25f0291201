// Axis scales for the report charts: "nice" round tick values (1, 2 or 5 x 10^k steps, as a
// person would draw them), decade ticks for log axes, and tick labels whose precision
// follows the tick step, so a 0.25-step axis reads 0.25 / 0.50 and a 500-step one 1,500.

export interface Ticks {
  /** Domain of the axis: the data range widened to whole ticks. */
  lo: number;
  hi: number;
  values: number[];
  labels: string[];
}

/** The 1-2-5 step nearest to `span / count`. */
function niceStep(span: number, count: number): number {
  const raw = span / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

/** A padded range around a single value, so a flat series still gets an axis. */
function widen(lo: number, hi: number): [number, number] {
  if (hi > lo) return [lo, hi];
  const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
  return [lo - pad, hi + pad];
}

/**
 * Linear ticks covering [min, max]; about `count` of them. `integer`: the data are whole
 * numbers (steps, world sizes), so never put a tick between two of them.
 */
export function linearTicks(min: number, max: number, count = 6, integer = false): Ticks {
  const [a, b] = widen(min, max);
  let step = niceStep(b - a, count);
  if (integer) step = Math.max(1, step);
  const lo = Math.floor(a / step + 1e-9) * step;
  const hi = Math.ceil(b / step - 1e-9) * step;
  const values: number[] = [];
  for (let i = 0; lo + i * step <= hi + step * 1e-9; i++) values.push(round(lo + i * step, step));
  const unit = Math.max(Math.abs(lo), Math.abs(hi));
  return { lo, hi, values, labels: values.map((v) => formatTick(v, step, unit)) };
}

/**
 * Log-axis ticks for positive [min, max]: each decade, plus its 2x and 5x when the range
 * spans few decades (otherwise the axis would have only one or two labels).
 */
export function logTicks(min: number, max: number): Ticks {
  let [a, b] = [min, max];
  if (!(a > 0)) a = b > 0 ? b / 10 : 1;
  if (!(b > a)) b = a * 10;
  const d0 = Math.floor(Math.log10(a) + 1e-9);
  const d1 = Math.ceil(Math.log10(b) - 1e-9);
  const mults = d1 - d0 <= 3 ? [1, 2, 5] : [1];
  const all: number[] = [];
  for (let d = d0; d <= d1; d++) for (const m of mults) all.push(round(m * 10 ** d, 10 ** d));
  // Widen to the candidates just outside the data, not to whole decades.
  const lo = all.filter((v) => v <= a * (1 + 1e-9)).at(-1) ?? a;
  const hi = all.find((v) => v >= b * (1 - 1e-9)) ?? b;
  const values = all.filter((v) => v >= lo && v <= hi);
  return { lo, hi, values, labels: values.map((v) => formatTick(v, 10 ** Math.floor(Math.log10(v) + 1e-9))) };
}

/** Rounds away float noise (0.30000000000000004) at the precision of `step`. */
function round(v: number, step: number): number {
  const digits = Math.max(0, -Math.floor(Math.log10(step)) + 2);
  return Number(v.toFixed(Math.min(20, digits)));
}

/**
 * A tick label with as many decimals as the step needs, thousands separated; in M or G when
 * the axis (`scale`: its largest magnitude) reaches them, so all its labels share one unit.
 */
export function formatTick(v: number, step: number, scale = Math.abs(v)): string {
  if (v === 0) v = 0; // -0 would print as "-0"
  if (scale >= 1e6) {
    const [div, unit] = scale >= 1e9 ? [1e9, 'G'] : [1e6, 'M'];
    return `${formatTick(v / div, step / div, 0)}${unit}`;
  }
  const digits = Math.min(6, Math.max(0, -Math.floor(Math.log10(step) + 1e-9)));
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A value with `sig` significant digits, for labels on bars and in tables. */
export function formatValue(v: number, sig = 3): string {
  if (!Number.isFinite(v)) return 'n/a';
  if (v === 0) return '0';
  const digits = Math.max(0, sig - 1 - Math.floor(Math.log10(Math.abs(v))));
  return v.toLocaleString('en-US', { maximumFractionDigits: Math.min(6, digits) });
}

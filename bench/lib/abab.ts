// Alternating (ABAB) comparison runner: on a shared, noisy machine, run side A then
// side B, round after round, so slow periods hit both; compare per-round pairs.
import { median } from '../../src/benchmark/stats.ts';

/** One side of a comparison: runs every case once and returns a number per case (e.g. µs). */
export interface AbabSide {
  name: string;
  run: (round: number) => Record<string, number>;
}

/** side name -> case name -> one value per round. */
export type AbabValues = Record<string, Record<string, number[]>>;

/** Runs the sides in turn for `rounds` rounds; `log` gets a line after each side's run. */
export function runAbab(sides: AbabSide[], rounds: number, log?: (line: string) => void): AbabValues {
  const values: AbabValues = {};
  for (const s of sides) values[s.name] = {};
  for (let r = 0; r < rounds; r++) {
    for (const s of sides) {
      const t0 = performance.now();
      const out = s.run(r);
      const byCase = values[s.name];
      for (const [k, v] of Object.entries(out)) {
        if (byCase[k] === undefined) byCase[k] = [];
        byCase[k].push(v);
      }
      log?.(`round ${r + 1}/${rounds} ${s.name}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
  }
  return values;
}

/** Per-round ratios a[i] / b[i] (the pairs measured next to each other). */
export function pairedRatios(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.min(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(a[i] / b[i]);
  return out;
}

/** Median of the per-round ratios, robust to a round that was slow for both sides. */
export function pairedRatio(a: readonly number[], b: readonly number[]): number {
  return median(pairedRatios(a, b));
}

// Shaping step records into chart series: per rank, mean over ranks, and a light centred
// moving average for the noisy per-step values (per-batch loss and accuracy swing a lot on
// small batches; the trend is what a reader wants, and the legend says it is smoothed).
import type { StepRecord } from '../metrics/index.ts';

export type Points = Array<[number, number]>;

/** Moving-average window for `n` points: about 1/25 of the run, at most 50; 1 (none) when short. */
export function smoothingWindow(n: number): number {
  const w = Math.min(50, Math.floor(n / 25));
  return w >= 3 ? w : 1;
}

/** Centred moving average over `w` points, ignoring NaN; edges average what they have. */
export function movingAverage(points: Points, w: number): Points {
  if (w <= 1) return points;
  const half = Math.floor(w / 2);
  return points.map(([x], i) => {
    let sum = 0;
    let n = 0;
    for (let j = Math.max(0, i - half); j <= Math.min(points.length - 1, i - half + w - 1); j++) {
      const v = points[j][1];
      if (Number.isFinite(v)) {
        sum += v;
        n++;
      }
    }
    return [x, n > 0 ? sum / n : Number.NaN];
  });
}

/** "moving avg of 15 steps", or "" when not smoothed. */
export function smoothedNote(w: number): string {
  return w > 1 ? `moving avg of ${w} steps` : '';
}

export function mean(values: number[]): number {
  let sum = 0;
  let n = 0;
  for (const v of values) {
    if (Number.isFinite(v)) {
      sum += v;
      n++;
    }
  }
  return n > 0 ? sum / n : Number.NaN;
}

export function byRank(steps: StepRecord[]): Map<number, StepRecord[]> {
  const out = new Map<number, StepRecord[]>();
  for (const s of steps) {
    const list = out.get(s.rank) ?? [];
    list.push(s);
    out.set(s.rank, list);
  }
  return new Map([...out].sort((a, b) => a[0] - b[0]));
}

/** `value` of each step, averaged over the ranks that recorded that step. */
export function meanByStep(steps: StepRecord[], value: (s: StepRecord) => number): Points {
  const groups = new Map<number, number[]>();
  for (const s of steps) {
    const list = groups.get(s.step) ?? [];
    list.push(value(s));
    groups.set(s.step, list);
  }
  return [...groups].sort((a, b) => a[0] - b[0]).map(([step, vs]) => [step, mean(vs)]);
}

/** A legend name with its qualifiers: "train (mean of 2 ranks, moving avg of 15 steps)". */
export function label(name: string, ...notes: string[]): string {
  const kept = notes.filter((n) => n !== '');
  return kept.length > 0 ? `${name} (${kept.join(', ')})` : name;
}

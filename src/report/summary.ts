// The summary table of a training report: what a reader checks first (how big, how long,
// how fast, how good), from the run's summary record when it has one, else from its steps.
import { formatDuration } from '../metrics/index.ts';
import type { Metrics } from './load.ts';
import { byRank, mean, meanByStep } from './series.ts';

export type SummaryRow = [label: string, value: string];

function num(v: unknown): number {
  return typeof v === 'number' ? v : Number.NaN;
}

function fixed(v: number, digits: number): string {
  return Number.isFinite(v)
    ? v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : 'n/a';
}

export function percent(v: unknown): string {
  return `${fixed(100 * num(v), 2)}%`;
}

export function loss(v: unknown): string {
  return fixed(num(v), 4);
}

export function duration(sec: number): string {
  return `${formatDuration(sec)} (${fixed(sec, 1)} s)`;
}

export function rate(v: number): string {
  return `${fixed(v, 1)} images/s`;
}

/** Images/s over all ranks from the step records: each rank's images over its step time, summed. */
function estimatedRate(m: Metrics): number {
  let total = 0;
  for (const steps of byRank(m.steps).values()) {
    const ms = steps.reduce((a, s) => a + (Number.isFinite(s.stepMs) ? s.stepMs : 0), 0);
    const images = steps.reduce((a, s) => a + (Number.isFinite(s.images) ? s.images : 0), 0);
    if (ms > 0) total += images / (ms / 1000);
  }
  return total;
}

export function summarize(m: Metrics): SummaryRow[] {
  const ranks = byRank(m.steps);
  const last = m.steps[m.steps.length - 1];
  const summary = m.summaries[0];
  const resumed = m.resumes.length > 0;
  const rows: SummaryRow[] = [];
  rows.push(['World size', String(summary?.worldSize ?? ranks.size)]);
  rows.push([
    'Steps',
    String(last.step) + (resumed ? ` (resumed at step ${m.resumes.map((r) => r.step).join(', ')})` : ''),
  ]);
  if (summary !== undefined) {
    rows.push(['Wall time', duration(summary.wallSec) + (resumed ? ', since the last resume' : '')]);
    rows.push(['Throughput', `${rate(summary.imagesPerSec)}, all ranks`]);
  } else {
    // A run that died or is still going wrote no summary; the step records still tell.
    const times = m.steps.map((s) => s.time).filter(Number.isFinite);
    const lo = times.reduce((a, t) => Math.min(a, t), Number.POSITIVE_INFINITY);
    const hi = times.reduce((a, t) => Math.max(a, t), Number.NEGATIVE_INFINITY);
    const span = times.length > 1 ? (hi - lo) / 1000 : Number.NaN;
    rows.push(['Wall time', `${duration(span)}, first to last step record (no summary record)`]);
    rows.push(['Throughput', `${rate(estimatedRate(m))}, all ranks (from step records)`]);
  }
  rows.push(['Mean step time', `${fixed(mean(m.steps.map((s) => s.stepMs)), 1)} ms`]);
  // --skip-bad-samples: each rank's count is cumulative; the run's is the sum of the last ones.
  if (m.steps.some((s) => s.skippedSamples !== undefined)) {
    let skipped = 0;
    for (const steps of ranks.values()) skipped += steps[steps.length - 1].skippedSamples ?? 0;
    rows.push(['Bad samples skipped', `${skipped} (--skip-bad-samples)`]);
  }
  const finalLoss = meanByStep(
    m.steps.filter((s) => s.step === last.step),
    (s) => s.loss,
  )[0][1];
  rows.push([`Final train loss (step ${last.step})`, loss(finalLoss)]);
  const lastEval = m.evals[m.evals.length - 1];
  if (lastEval !== undefined) {
    rows.push([
      `Final validation (step ${lastEval.step})`,
      `loss ${loss(lastEval.loss)}, top-1 ${percent(lastEval.top1)}, top-5 ${percent(lastEval.top5)} on ${lastEval.count} images`,
    ]);
    const best = m.evals.reduce((a, e) => (num(e.top1) > num(a.top1) ? e : a));
    rows.push(['Best validation top-1', `${percent(best.top1)} at step ${best.step}`]);
  } else {
    rows.push(['Validation', 'none recorded']);
  }
  return rows;
}

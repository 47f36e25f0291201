// The charts of a training report, as SVG, from the records of a metrics file.
import { barChart, type LineChartSpec, lineChart, type Series } from './charts.ts';
import type { Metrics } from './load.ts';
import { byRank, label, mean, meanByStep, movingAverage, smoothedNote, smoothingWindow } from './series.ts';

function num(v: unknown): number {
  return typeof v === 'number' ? v : Number.NaN;
}

function resumeMarkers(m: Metrics): LineChartSpec['markers'] {
  return m.resumes.map((r) => ({ x: r.step, label: `resumed at step ${r.step}` }));
}

function ranksNote(m: Metrics): string {
  const n = byRank(m.steps).size;
  return n > 1 ? `mean of ${n} ranks` : '';
}

/** The per-step mean over ranks of `value`, smoothed, as a named series. */
function trainSeries(m: Metrics, name: string, value: (s: Metrics['steps'][number]) => number): Series {
  const raw = meanByStep(m.steps, value);
  const w = smoothingWindow(raw.length);
  return { name: label(name, ranksNote(m), smoothedNote(w)), points: movingAverage(raw, w) };
}

export function lossChart(m: Metrics): string {
  const series = [trainSeries(m, 'train', (s) => s.loss)];
  if (m.evals.length > 0)
    series.push({ name: 'validation', points: m.evals.map((e) => [e.step, num(e.loss)]) });
  return lineChart({
    title: 'Loss',
    xLabel: 'step',
    yLabel: 'cross-entropy loss',
    series,
    yMin: 0,
    markers: resumeMarkers(m),
  });
}

export function accuracyChart(m: Metrics): string {
  const series = [trainSeries(m, 'train top-1', (s) => 100 * s.acc)];
  if (m.evals.length > 0) {
    const pct = (v: unknown): number => 100 * num(v);
    series.push({ name: 'validation top-1', points: m.evals.map((e) => [e.step, pct(e.top1)]) });
    series.push({ name: 'validation top-5', points: m.evals.map((e) => [e.step, pct(e.top5)]) });
  }
  return lineChart({
    title: 'Accuracy',
    xLabel: 'step',
    yLabel: 'accuracy (%)',
    series,
    yMin: 0,
    markers: resumeMarkers(m),
  });
}

export function throughputChart(m: Metrics): string {
  const ranks = [...byRank(m.steps)];
  const w = smoothingWindow(ranks[0][1].length);
  // With many ranks, eight legend entries repeating the window would crowd the chart: the
  // title says it once instead.
  const inLegend = ranks.length <= 4;
  const series: Series[] = ranks.map(([rank, steps]) => ({
    name: label(`rank ${rank}`, inLegend ? smoothedNote(w) : ''),
    points: movingAverage(
      steps.map((s): [number, number] => [s.step, s.imagesPerSec]),
      w,
    ),
  }));
  return lineChart({
    title: label('Training throughput per rank', inLegend ? '' : smoothedNote(w)),
    xLabel: 'step',
    yLabel: 'images/s (one rank)',
    series,
    yMin: 0,
    markers: resumeMarkers(m),
  });
}

export function stepTimeChart(m: Metrics): string {
  const ranks = [...byRank(m.steps)];
  const phase = (name: string, ms: (s: Metrics['steps'][number]) => number) => ({
    name,
    values: ranks.map(([, steps]) => mean(steps.map(ms))),
  });
  const series = [
    phase('data wait', (s) => s.dataMs),
    phase('forward', (s) => s.forwardMs),
    phase('backward', (s) => s.backwardMs),
    phase('optimizer', (s) => s.optimizerMs),
  ];
  // What the four phases do not cover (metric bookkeeping, .item() syncs); shown only when
  // it is big enough to matter, so the stack adds up to the step time.
  const other = phase('other', (s) => s.stepMs - s.dataMs - s.forwardMs - s.backwardMs - s.optimizerMs);
  const stepMs = mean(m.steps.map((s) => s.stepMs));
  if (mean(other.values) > 0.02 * stepMs) series.push(other);
  return barChart({
    title: 'Step time by phase (mean per rank)',
    yLabel: 'ms per step',
    categories: ranks.map(([rank]) => `rank ${rank}`),
    series,
    stacked: true,
  });
}

/**
 * DDP's all-reduce time and its overlap with backward (c10d::Logger running averages), or
 * null when the run recorded none (one process, or no DistributedDataParallel). c10d
 * reports 0 until its first sampled iteration: that is "not measured yet", so it is a gap.
 */
export function commChart(m: Metrics): string | null {
  const measured = (s: Metrics['steps'][number]): boolean => num(s.commMs) > 0;
  if (!m.steps.some(measured)) return null;
  const note = ranksNote(m);
  const series: Series[] = [
    {
      name: label('all-reduce', note),
      points: meanByStep(m.steps, (s) => (measured(s) ? num(s.commMs) : Number.NaN)),
    },
    {
      name: label('overlapped with backward', note),
      points: meanByStep(m.steps, (s) => (measured(s) ? num(s.overlapMs) : Number.NaN)),
    },
  ];
  return lineChart({
    title: 'DDP gradient communication per step (c10d running average)',
    xLabel: 'step',
    yLabel: 'ms per step',
    series,
    yMin: 0,
    markers: resumeMarkers(m),
  });
}

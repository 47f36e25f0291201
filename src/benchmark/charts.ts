// PNG charts of a benchmark report: throughput against world size, DDP communication time
// against bucket size, and the tsddp / PyTorch ratio of every measured setting.
import { join } from 'node:path';
import { barChart, lineChart, type Series } from '../report/charts.ts';
import { svgToPng } from '../report/png.ts';
import { modelLabel, shortModel, threadsFor } from './cases.ts';
import type { BenchReport, ReportScenario as Plan } from './report.ts';

function slug(p: Plan): string {
  const c = p.rows[0].case;
  const stem = c.stem === 'cifar' ? '-cifar' : '';
  return `${p.name}-${c.model}${stem}-${c.size}`;
}

function scalingChart(r: BenchReport, p: Plan): string {
  // The rows that use the whole machine (cores / world threads each), not the baselines.
  const rows = p.rows.filter((row) => row.case.threads === threadsFor(r.settings.cores, row.case.world));
  const series: Series[] = [
    { name: 'tsddp', points: rows.map((row) => [row.case.world, r.cases[row.key].tsddp.imgPerS]) },
  ];
  if (r.sides.pytorch) {
    series.push({
      name: 'PyTorch',
      points: rows.map((row) => [row.case.world, r.cases[row.key].pytorch?.imgPerS ?? Number.NaN]),
    });
  }
  return lineChart({
    title: `Throughput vs world size: ${modelLabel(p.rows[0].case)}`,
    xLabel: 'world size',
    yLabel: 'images/s',
    series,
    yMin: 0,
  });
}

function bucketChart(r: BenchReport, p: Plan): string {
  const comm = (side: 'tsddp' | 'pytorch'): Array<[number, number]> =>
    p.rows.map((row) => [row.x, r.cases[row.key][side]?.commMs ?? Number.NaN]);
  const series: Series[] = [{ name: 'tsddp', points: comm('tsddp') }];
  if (r.sides.pytorch) series.push({ name: 'PyTorch', points: comm('pytorch') });
  return lineChart({
    title: `DDP comm per batch vs bucket size: ${shortModel(p.rows[0].case)}`,
    xLabel: 'bucketCapMb (MiB)',
    yLabel: 'backward comm ms/batch',
    series,
    yMin: 0,
    logX: true,
  });
}

function ratioChart(r: BenchReport): string {
  const categories: string[] = [];
  const values: number[] = [];
  for (const p of r.scenarios) {
    for (const row of p.rows) {
      categories.push(`${shortModel(row.case)} ${row.short ?? row.label}`);
      values.push(r.cases[row.key].ratio ?? Number.NaN);
    }
  }
  return barChart({
    title: 'tsddp / PyTorch throughput (> 1: tsddp faster)',
    yLabel: 'ratio',
    categories,
    series: [{ name: 'tsddp / PyTorch', values }],
    width: Math.max(640, 60 * categories.length),
  });
}

/** Writes the report's charts into `dir`; returns the file names. */
export async function writeCharts(r: BenchReport, dir: string): Promise<string[]> {
  const charts: [string, string][] = [];
  for (const p of r.scenarios) {
    if (p.name === 'scaling') charts.push([`${slug(p)}.png`, scalingChart(r, p)]);
    if (p.name === 'bucket') charts.push([`${slug(p)}.png`, bucketChart(r, p)]);
  }
  if (r.sides.pytorch) charts.push(['ratios.png', ratioChart(r)]);
  for (const [file, svg] of charts) await svgToPng(svg, join(dir, file));
  return charts.map(([f]) => f);
}

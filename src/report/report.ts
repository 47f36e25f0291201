// `tsddp report`: a training run's metrics JSONL -> PNG charts and an HTML page, rendered
// with sharp (no browser). Every chart plots what was recorded, warm-up steps included.
import { unlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ensureSafeDir, kindOf, UnsafePathError, writeFileAtomicSync } from '../files/index.ts';
import { type PageChart, renderPage } from './html.ts';
import { loadMetrics, ReportError } from './load.ts';
import { svgToPng } from './png.ts';
import { summarize } from './summary.ts';
import { accuracyChart, commChart, lossChart, stepTimeChart, throughputChart } from './training-charts.ts';

export { ReportError };

export interface ReportPaths {
  /** The HTML page. */
  html: string;
  /** The PNG charts, in page order. */
  charts: string[];
  /** The rank files read because the metrics file was missing (an interrupted run); else empty. */
  mergedFrom: string[];
}

const SMOOTHED = 'Noisy per-step values are drawn as a centred moving average; the legend gives its window.';

/** Reads `metricsFile` and writes the charts and report.html into `outDir`; returns their absolute paths. */
export async function buildReport(metricsFile: string, outDir: string): Promise<ReportPaths> {
  const m = loadMetrics(metricsFile);
  const dir = resolve(outDir);
  prepareOutDir(dir);
  const charts: Array<PageChart & { svg: string }> = [
    {
      file: 'loss.png',
      title: 'Loss',
      caption: `Training loss per step, averaged over ranks; validation loss after each evaluation. ${SMOOTHED}`,
      svg: lossChart(m),
    },
    {
      file: 'accuracy.png',
      title: 'Accuracy',
      caption: `Top-1 accuracy on each step's training batches, averaged over ranks; validation top-1 and top-5. ${SMOOTHED}`,
      svg: accuracyChart(m),
    },
    {
      file: 'throughput.png',
      title: 'Throughput',
      caption: `Images per second each rank trained, per step (batch x accumulation over the step's wall time). ${SMOOTHED}`,
      svg: throughputChart(m),
    },
    {
      file: 'step-time.png',
      title: 'Step time',
      caption:
        'Mean milliseconds per step in each phase, per rank. Backward includes waiting for the last gradient all-reduce.',
      svg: stepTimeChart(m),
    },
  ];
  const notes: Array<{ title: string; text: string }> = [];
  const comm = commChart(m);
  if (comm !== null) {
    charts.push({
      file: 'comm.png',
      title: 'DDP communication',
      caption:
        'Time from the first bucket all-reduce starting to the last finishing, and how much of it overlapped ' +
        'backward computation: c10d::Logger averages over its sampled iterations, as PyTorch reports them.',
      svg: comm,
    });
  } else {
    // A stale chart from an earlier report in the same folder would contradict the page.
    if (kindOf(join(dir, 'comm.png')) === 'file') unlinkSync(join(dir, 'comm.png'));
    notes.push({
      title: 'DDP communication',
      text: 'no DDP communication recorded (a single process, or a run without DistributedDataParallel)',
    });
  }
  for (const c of charts) await svgToPng(c.svg, join(dir, c.file));
  const html = join(dir, 'report.html');
  const page = renderPage({
    metricsFile: resolve(metricsFile),
    rows: summarize(m),
    resumes: m.resumes,
    charts,
    notes,
  });
  writeFileAtomicSync(html, page);
  return { html, charts: charts.map((c) => join(dir, c.file)), mergedFrom: m.mergedFrom };
}

/** The report folder: created if missing; a file there, or a folder another user controls, is a ReportError. */
function prepareOutDir(dir: string): void {
  const kind = kindOf(dir);
  if (kind === 'file' || kind === 'other')
    throw new ReportError(
      dir,
      'exists and is not a folder; give --out a folder for report.html and the charts',
    );
  try {
    ensureSafeDir(dir, 'the report folder');
  } catch (e) {
    // UnsafePathError, or the file system's refusal (EACCES, ENOTDIR, EROFS...), named.
    if (e instanceof UnsafePathError || (e as NodeJS.ErrnoException).code !== undefined)
      throw new ReportError(dir, `cannot hold the report: ${(e as Error).message}`);
    throw e;
  }
}

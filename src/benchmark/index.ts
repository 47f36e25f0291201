// The DDP scenario suite behind `tsddp bench` and bench/ddp.ts: measure the plans (with
// PyTorch alternating when a reference interpreter is given), then write results.md,
// results.json and the PNG charts.
import { join, resolve } from 'node:path';
import { ensureSafeDir, writeFileAtomicSync } from '../files/index.ts';
import { machineInfo } from '../host/machine.ts';
import type { ScenarioPlan } from './cases.ts';
import { writeCharts } from './charts.ts';
import type { TorchPython } from './reference.ts';
import { type BenchReport, buildReport, reportMarkdown } from './report.ts';
import { runBench } from './runner.ts';

export * from './cases.ts';
export { findTorchPython, type TorchPython } from './reference.ts';
export { type BenchReport, reportMarkdown, scalingEfficiency } from './report.ts';
export type { CaseResult, RunResult, SideResult } from './runner.ts';

export interface SuiteOptions {
  plans: ScenarioPlan[];
  warmup: number;
  steps: number;
  repeats: number;
  /** The cores the plans' thread counts were derived from (stated in the report). */
  cores: number;
  reference: TorchPython | null;
  /** Output directory; created if needed. */
  out: string;
  log?: (line: string) => void;
}

export interface SuiteResult {
  report: BenchReport;
  markdown: string;
  /** Paths of everything written. */
  files: string[];
}

export async function runSuite(o: SuiteOptions): Promise<SuiteResult> {
  const machine = machineInfo();
  const run = await runBench(o.plans, o);
  const report = buildReport(o.plans, run, o, machine);
  const markdown = reportMarkdown(report);
  const out = resolve(o.out);
  ensureSafeDir(out, 'the benchmark folder');
  const md = join(out, 'results.md');
  const json = join(out, 'results.json');
  writeFileAtomicSync(md, `${markdown}\n`);
  writeFileAtomicSync(json, `${JSON.stringify(report, null, 2)}\n`);
  const charts = await writeCharts(report, out);
  return { report, markdown, files: [md, json, ...charts.map((f) => join(out, f))] };
}

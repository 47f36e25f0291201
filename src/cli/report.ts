// `tsddp report <metrics.jsonl>`: PNG charts and an HTML page from a training run's metrics
// (the file `tsddp train --metrics-file` writes), rendered without a browser.
import { dirname, join } from 'node:path';
import type { Command } from 'commander';

export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description('charts (PNG) and an HTML page from a training run’s metrics JSONL')
    .argument('<metrics.jsonl>', 'the merged metrics file of a run (tsddp train --metrics-file)')
    .option('--out <dir>', 'where report.html and the charts go (default: <metrics dir>/report)')
    .action(async (file: string, opts: { out?: string }) => {
      process.exitCode = await reportCommand(file, opts);
    });
}

/** Builds the report; prints the paths written and resolves with the exit code. */
export async function reportCommand(file: string, opts: { out?: string }): Promise<number> {
  // Loaded on use: sharp is only needed by this command.
  const { buildReport, ReportError } = await import('../report/report.ts');
  const out = opts.out ?? join(dirname(file), 'report');
  try {
    const paths = await buildReport(file, out);
    if (paths.mergedFrom.length > 0)
      process.stderr.write(
        `tsddp report: ${file} is missing (the run stopped before merging its metrics); ` +
          `read its rank files ${paths.mergedFrom.join(', ')}\n`,
      );
    process.stdout.write(`${[paths.html, ...paths.charts].join('\n')}\n`);
    return 0;
  } catch (e) {
    // A file system's refusal while writing (ENOSPC, EROFS) names its path; no stack trace.
    const fsError = (e as NodeJS.ErrnoException).code !== undefined && (e as NodeJS.ErrnoException).syscall;
    if (!(e instanceof ReportError) && !fsError) throw e;
    process.stderr.write(`tsddp report: error: ${(e as Error).message}\n`);
    return 2;
  }
}

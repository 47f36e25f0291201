// A job with the dashboard around it: serve the page from a thread of its own (see
// thread.ts), pass on the job's events, and close the server when the job ends (it must not
// keep the launcher alive).
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { isCompiled, siblingModule } from '../core/module-url.ts';
import { makePrivateTempDir } from '../files/index.ts';
import { METRICS_FILE_ENV } from '../metrics/index.ts';
import { type DashboardEvent, endStatus } from './events.ts';
import { DashboardError } from './server.ts';
import type { FromThread, ThreadSpec, ToThread } from './thread.ts';

export { METRICS_FILE_ENV };

export interface DashboardJob {
  port: number;
  /** Where the ranks' files are (`<metricsFile>.rank<N>`). */
  metricsFile: string;
  runId: string;
  worldSize: number;
  maxRestarts: number;
  /** Where the URL line goes (default: stderr). */
  log?: (line: string) => void;
}

/** What the job tells the page. */
export interface DashboardReporter {
  attempt(attempt: number): void;
  failure(attempt: number, summary: string): void;
}

/**
 * The metrics file a dashboard follows when the user gave none: TSDDP_METRICS_FILE, else
 * `<logDir>/<runId>/metrics.jsonl`, else one in a new private folder under the temp folder
 * (mkdtemp: mode 0700, an unguessable name; kept: it is the run's record).
 */
export function defaultMetricsFile(runId: string, logDir?: string, env = process.env): string {
  const given = env[METRICS_FILE_ENV];
  if (given) return resolve(given);
  if (logDir !== undefined) return join(logDir, runId, 'metrics.jsonl');
  return join(makePrivateTempDir(`tsddp-${runId}-`), 'metrics.jsonl');
}

/** Under tsx, a worker thread registers tsx's loader itself (Node 20 does not pass it on). */
function startThread(spec: ThreadSpec): Worker {
  const entry = siblingModule('./thread.ts', import.meta.url);
  if (isCompiled(import.meta.url)) return new Worker(entry, { workerData: spec });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(code, { eval: true, workerData: spec });
}

/** The next message of `kind` from the thread (rejects if the thread ends first). */
function next<K extends FromThread['kind']>(thread: Worker, kinds: K[]): Promise<FromThread & { kind: K }> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: FromThread) => {
      if (!kinds.includes(m.kind as K)) return;
      thread.off('message', onMessage);
      resolve(m as FromThread & { kind: K });
    };
    thread.on('message', onMessage);
    thread.once('error', reject);
    thread.once('exit', (code) => reject(new Error(`the dashboard thread exited (code ${code})`)));
  });
}

/**
 * Serves the dashboard for the duration of `job` and resolves with its exit code. Rejects
 * with a DashboardError (before `job` starts) when the port cannot be had.
 */
export async function withDashboard(
  spec: DashboardJob,
  job: (report: DashboardReporter) => Promise<number>,
): Promise<number> {
  const ranks = Array.from({ length: spec.worldSize }, (_, r) => r);
  const thread = startThread({ port: spec.port, metricsFile: spec.metricsFile, ranks });
  const started = await next(thread, ['ready', 'error']);
  if (started.kind === 'error') {
    await thread.terminate();
    throw started.dashboardError ? new DashboardError(started.message) : new Error(started.message);
  }
  const send = (m: ToThread) => thread.postMessage(m);
  const publish = (event: DashboardEvent) => send({ kind: 'event', event });
  (spec.log ?? ((line: string) => process.stderr.write(`${line}\n`)))(`dashboard: ${started.url}`);
  publish({
    type: 'job',
    runId: spec.runId,
    worldSize: spec.worldSize,
    maxRestarts: spec.maxRestarts,
    metricsFile: spec.metricsFile,
    time: Date.now(),
  });
  let exitCode = 1;
  try {
    exitCode = await job({
      attempt: (attempt) => publish({ type: 'attempt', attempt, time: Date.now() }),
      failure: (attempt, summary) => publish({ type: 'failure', attempt, summary, time: Date.now() }),
    });
    return exitCode;
  } finally {
    const closed = next(thread, ['closed']).catch(() => undefined);
    send({ kind: 'finish', event: { type: 'end', status: endStatus(exitCode), exitCode, time: Date.now() } });
    await closed;
    await thread.terminate();
  }
}

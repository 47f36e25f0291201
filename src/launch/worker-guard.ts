// Makes a worker die with its launcher, even when the launcher is SIGKILLed and cannot
// clean up (docs/reliability.md R4). Every worker is started with `--import <guardImportUrl()>`.
//
// The check runs on its own worker thread, because the worker's main thread may be stuck
// in a synchronous native call (a blocking rendezvous, a long op) and never reach its
// event loop. When the launcher is gone the worker is re-parented, process.ppid changes,
// and the thread SIGKILLs its process — which ends every thread in it (DataLoader workers
// included). Linux's PR_SET_PDEATHSIG would do the same, but needs native code.

/** The environment variable that tells the guard which process is the launcher. */
export const LAUNCHER_PID_ENV = 'TSDDP_LAUNCHER_PID';

const POLL_MS = 200;

// Plain JavaScript, so it works for .js entry files without a TypeScript loader.
const GUARD_SOURCE = `
import { isMainThread, Worker } from 'node:worker_threads';
const launcher = Number(process.env.${LAUNCHER_PID_ENV});
// Only the worker's main thread, and only once: the variable is removed so that
// processes the worker starts itself (which have another parent) are not affected.
if (isMainThread && launcher > 0) {
  delete process.env.${LAUNCHER_PID_ENV};
  const watch = new Worker(
    'setInterval(() => { if (process.ppid !== ' + launcher + ') process.kill(process.pid, "SIGKILL"); }, ${POLL_MS});',
    { eval: true, stdout: false, stderr: false, env: {}, execArgv: [] },
  );
  watch.unref();
}
`;

/** A `data:` URL for `node --import`, so the guard needs no file on disk. */
export function guardImportUrl(): string {
  return `data:text/javascript,${encodeURIComponent(GUARD_SOURCE)}`;
}

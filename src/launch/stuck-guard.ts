// The elastic launcher's guard against its own main thread being stuck. A store call runs
// synchronously on the main thread, and when this machine is cut off the network it may
// never return (TCP keeps retrying for many minutes). A worker thread, which does not need
// the main thread, watches its ticks: after `limitMs` without one it says why and SIGKILLs
// the launcher; the worker guard (worker-guard.ts) then ends the workers. The job's other
// nodes notice the missing keep-alives and go on without this one.
import { Worker } from 'node:worker_threads';

const TICK_MS = 250;

const WATCH_SOURCE = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const ticks = new BigInt64Array(workerData.ticks);
setInterval(() => {
  const silent = Date.now() - Number(Atomics.load(ticks, 0));
  if (silent < workerData.limitMs) return;
  writeSync(2, 'tsrun: error: the launcher has been stuck for ' + (silent / 1000).toFixed(1) +
    ' s (a rendezvous store call did not return: is ' + workerData.store +
    ' reachable from this machine?); stopping this node\\n');
  process.kill(process.pid, 'SIGKILL');
}, 200);
`;

export class StuckGuard {
  private readonly ticks = new BigInt64Array(new SharedArrayBuffer(8));
  private readonly timer: NodeJS.Timeout;
  private readonly watch: Worker;

  /** `store`: where the store is, for the message. */
  constructor(limitMs: number, store: string) {
    this.tick();
    this.timer = setInterval(() => this.tick(), TICK_MS).unref();
    this.watch = new Worker(WATCH_SOURCE, {
      eval: true,
      workerData: { ticks: this.ticks.buffer, limitMs, store },
      stdout: false,
      stderr: false,
      env: {},
      execArgv: [],
    });
    this.watch.unref();
  }

  private tick(): void {
    Atomics.store(this.ticks, 0, BigInt(Date.now()));
  }

  stop(): void {
    clearInterval(this.timer);
    void this.watch.terminate();
  }
}

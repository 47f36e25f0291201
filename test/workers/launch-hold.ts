// tsrun test worker (docs/reliability.md R4): joins the process group, starts a worker thread (as a
// DataLoader does), reports its pid, then holds: rank 0 with its main thread blocked in a
// synchronous wait (as in a long native call), the others in an idle event loop.
import { Worker } from 'node:worker_threads';
import * as t from '../../src/index.ts';

const d = t.distributed;
const pg = d.initProcessGroup({ backend: 'gloo', timeoutMs: 60_000 });
await d.barrier();
new Worker('setInterval(() => {}, 1000)', { eval: true });
console.log(JSON.stringify({ rank: pg.rank, pid: process.pid, ready: true }));
if (pg.rank === 0) {
  setTimeout(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120_000), 50);
} else {
  setInterval(() => {}, 1000);
}

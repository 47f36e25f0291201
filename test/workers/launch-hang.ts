// tsrun test worker (docs/reliability.md R5): all-reduces in a loop with a short collective
// timeout; on attempt 0 rank 1 stops itself (SIGSTOP) at step 3, a hung peer.
//   args: --timeout-ms <ms> --steps <n>
import { parseArgs } from 'node:util';
import * as t from '../../src/index.ts';

const d = t.distributed;
const { values: args } = parseArgs({
  options: { 'timeout-ms': { type: 'string' }, steps: { type: 'string' } },
});
const attempt = Number(process.env.TORCHELASTIC_RESTART_COUNT);
const pg = d.initProcessGroup({ backend: 'gloo', timeoutMs: Number(args['timeout-ms']) });
const x = t.zeros([4]).keep();
for (let s = 0; s < Number(args.steps); s++) {
  if (attempt === 0 && pg.rank === 1 && s === 3) process.kill(process.pid, 'SIGSTOP');
  x.fill_(1);
  await d.allReduce(x);
}
console.log(JSON.stringify({ rank: pg.rank, attempt, sum: x.toTypedArray()[0] }));
d.destroyProcessGroup();

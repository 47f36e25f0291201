// tsrun test worker (docs/reliability.md R14): rank 1 has one batch fewer than rank 0; both then
// meet at a final barrier. The mismatch must end in a clear timeout error, never a hang.
//   args: --timeout-ms <ms> --batches <n>
import { parseArgs } from 'node:util';
import * as t from '../../src/index.ts';

const d = t.distributed;
const { values: args } = parseArgs({
  options: { 'timeout-ms': { type: 'string' }, batches: { type: 'string' } },
});
const pg = d.initProcessGroup({ backend: 'gloo', timeoutMs: Number(args['timeout-ms']) });
const batches = Number(args.batches) - (pg.rank === 1 ? 1 : 0);
const g = t.zeros([8]).keep();
for (let b = 0; b < batches; b++) {
  g.fill_(b);
  await d.allReduce(g);
}
await d.barrier();
console.log(JSON.stringify({ rank: pg.rank, batches }));
d.destroyProcessGroup();

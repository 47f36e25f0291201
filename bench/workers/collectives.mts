// bench/collectives.ts's tsddp worker, one rank of a long-lived gang (env://, Gloo),
// driven by JSON lines on stdin (src/host/gang.ts's Gang); the PyTorch twin is
// bench/reference/collectives.py and follows the same steps:
//
//   node --import tsx bench/workers/collectives.mts
//
// It answers `ready` (versions), then one line per request until stdin closes. A request
// {cmd: 'cell', collective, bytes, iters, warmup, cellS} times one collective and size
// (float32 zeros; E = bytes / 4 elements rounded down to a multiple of the world size, the
// size nccl-tests counts: all-gather's output, reduce-scatter's input, all-to-all's input):
//   1. one untimed op, its time (the slowest rank's) the estimate per op;
//   2. min(warmup - 1, 0.25 cellS / estimate) more untimed ops, which re-estimate it;
//   3. a barrier, then n = min(iters, max(3, cellS / estimate)) ops, each timed on its own
//      from its call to its return (a blocking call, as PyTorch's async_op=False).
// Each rank takes the median and the mean of its n times; the answer's numbers are the
// largest over the ranks (an all-reduce MAX), so every rank answers the same.
import { createInterface } from 'node:readline';
import * as t from '../../src/index.ts';

const dist = t.distributed;
t.setNumThreads(Number(process.env.OMP_NUM_THREADS ?? 1));
dist.initProcessGroup({ backend: 'gloo' });
const world = dist.getWorldSize();

/** The op of one collective on tensors of E elements; the tensors to free. */
function setup(name: string, e: number): { op: () => unknown; tensors: t.Tensor[] } {
  const z = (n: number) => t.zeros([n]);
  switch (name) {
    case 'all-reduce': {
      const x = z(e);
      return { op: () => dist.allReduce(x, 'sum'), tensors: [x] };
    }
    case 'all-gather': {
      const [out, x] = [z(e), z(e / world)];
      return { op: () => dist.allGatherIntoTensor(out, x), tensors: [out, x] };
    }
    case 'reduce-scatter': {
      const [out, x] = [z(e / world), z(e)];
      return { op: () => dist.reduceScatterTensor(out, x, 'sum'), tensors: [out, x] };
    }
    case 'all-to-all': {
      const [out, x] = [z(e), z(e)];
      return { op: () => dist.allToAllSingle(out, x), tensors: [out, x] };
    }
    case 'broadcast': {
      const x = z(e);
      return { op: () => dist.broadcast(x, 0), tensors: [x] };
    }
    default:
      throw new Error(`unknown collective ${name}`);
  }
}

/** Every rank's values, elementwise maximum (float64), at least 1 ns. */
function maxOverRanks(values: number[]): number[] {
  const x = t.tensor(values, { dtype: 'float64' });
  dist.allReduce(x, 'max');
  const out = Array.from(x.toTypedArray() as Float64Array, (v) => Math.max(v, 1e-9));
  x.dispose();
  return out;
}

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

interface CellRequest {
  collective: string;
  bytes: number;
  iters: number;
  warmup: number;
  cellS: number;
}

function cell({ collective, bytes, iters, warmup, cellS }: CellRequest) {
  const e = Math.floor(bytes / 4 / world) * world;
  const { op, tensors } = setup(collective, e);
  dist.barrier();
  let t0 = performance.now();
  op();
  let [est] = maxOverRanks([(performance.now() - t0) / 1000]);
  const warm = Math.max(0, Math.min(warmup - 1, Math.floor((0.25 * cellS) / est)));
  if (warm > 0) {
    t0 = performance.now();
    for (let i = 0; i < warm; i++) op();
    [est] = maxOverRanks([(performance.now() - t0) / 1000 / warm]);
  }
  const n = Math.min(iters, Math.max(3, Math.floor(cellS / est)));
  const times: number[] = [];
  dist.barrier();
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    op();
    times.push((performance.now() - s) / 1000);
  }
  const mean = times.reduce((a, b) => a + b, 0) / n;
  const [medianS, meanS] = maxOverRanks([median(times), mean]);
  for (const x of tensors) x.dispose();
  return { collective, bytes: e * 4, iters: n, warmup: 1 + warm, medianS, meanS };
}

const answer = (obj: object) => process.stdout.write(`${JSON.stringify(obj)}\n`);
answer({ side: 'tsddp', torch: t.buildInfo().torchVersion, runtime: `Node ${process.version}`, world });
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  try {
    const req = JSON.parse(line) as { cmd: string } & CellRequest;
    if (req.cmd !== 'cell') throw new Error(`unknown cmd '${req.cmd}'`);
    answer(cell(req));
  } catch (e) {
    const err = e as Error;
    answer({ error: `${err.name}: ${err.message}`, traceback: err.stack ?? '' });
  }
}
dist.destroyProcessGroup();

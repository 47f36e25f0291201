// bench/collectives.ts's tsddp worker, one process per rank (env://, Gloo); the PyTorch
// twin is bench/reference/collectives.py and follows the same steps:
//
//   node --import tsx bench/workers/collectives.mts COLLECTIVES BYTES ITERS WARMUP CELL_S
//
// For each collective and size (float32 zeros; E = BYTES / 4 elements rounded down to a
// multiple of the world size, the size nccl-tests counts: all-gather's output,
// reduce-scatter's input, all-to-all's input):
//   1. one untimed op, its time (the slowest rank's) the estimate per op;
//   2. min(WARMUP - 1, 0.25 CELL_S / estimate) more untimed ops, which re-estimate it;
//   3. a barrier, then n = min(ITERS, max(3, CELL_S / estimate)) ops, each timed on its own
//      from its call to the end of its `await`.
// Each rank takes the median and the mean of its n times; the cell's numbers are the
// largest over the ranks (an all-reduce MAX). Rank 0 prints one JSON line at the end.
import * as t from '../../src/index.ts';

const [names, bytesList, itersArg, warmupArg, cellArg] = process.argv.slice(2);
const ITERS = Number(itersArg);
const WARMUP = Number(warmupArg);
const CELL_S = Number(cellArg);

const dist = t.distributed;
t.setNumThreads(Number(process.env.OMP_NUM_THREADS ?? 1));
dist.initProcessGroup({ backend: 'gloo' });
const rank = dist.getRank();
const world = dist.getWorldSize();

/** The op of one collective on tensors of E elements, as an awaitable; the tensors to free. */
function setup(name: string, e: number): { op: () => PromiseLike<void>; tensors: t.Tensor[] } {
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
async function maxOverRanks(values: number[]): Promise<number[]> {
  const x = t.tensor(values, { dtype: 'float64' });
  await dist.allReduce(x, 'max');
  const out = Array.from(x.toTypedArray() as Float64Array, (v) => Math.max(v, 1e-9));
  x.dispose();
  return out;
}

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function cell(name: string, bytes: number) {
  const e = Math.floor(bytes / 4 / world) * world;
  const { op, tensors } = setup(name, e);
  await dist.barrier();
  let t0 = performance.now();
  await op();
  let [est] = await maxOverRanks([(performance.now() - t0) / 1000]);
  const warm = Math.max(0, Math.min(WARMUP - 1, Math.floor((0.25 * CELL_S) / est)));
  if (warm > 0) {
    t0 = performance.now();
    for (let i = 0; i < warm; i++) await op();
    [est] = await maxOverRanks([(performance.now() - t0) / 1000 / warm]);
  }
  const n = Math.min(ITERS, Math.max(3, Math.floor(CELL_S / est)));
  const times: number[] = [];
  await dist.barrier();
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await op();
    times.push((performance.now() - s) / 1000);
  }
  const mean = times.reduce((a, b) => a + b, 0) / n;
  const [medianS, meanS] = await maxOverRanks([median(times), mean]);
  for (const x of tensors) x.dispose();
  return { collective: name, bytes: e * 4, iters: n, warmup: 1 + warm, medianS, meanS };
}

const cells = [];
for (const name of names.split(',')) {
  for (const b of bytesList.split(',')) cells.push(await cell(name, Number(b)));
}
if (rank === 0) {
  const torch = t.buildInfo().torchVersion;
  console.log(JSON.stringify({ side: 'tsddp', torch, runtime: `Node ${process.version}`, world, cells }));
}
dist.destroyProcessGroup();

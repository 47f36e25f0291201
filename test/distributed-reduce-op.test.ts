// t.distributed.ReduceOp against torch.distributed.ReduceOp: allReduce and reduceScatter
// with every op on a 2-process Gloo group give PyTorch's results
// (test/fixtures/distributed/reduce_ops.py, run live when .venv has torch), and refuse
// what PyTorch's Gloo refuses with its message: BAND/BOR/BXOR on floating tensors, AVG
// on integer and bool tensors (Gloo's AVG sums, then divides by the world size; tsddp
// refuses it before the collective, so the group's next collective is not failed too).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { fixtureJson } from './helpers/live-fixture.ts';
import { okResults, runJob } from './helpers/multiproc.ts';

type PyOutcome = { values: number[] } | { error: string };
type Outcome = { values: number[] } | { error: { name: string; message: string } };
interface Fixture {
  torch: string;
  inputs: Record<string, number[][]>;
  ranks: { all_reduce: Record<string, PyOutcome>; reduce_scatter: Record<string, PyOutcome> }[];
}
interface Result {
  allReduce: Record<string, Outcome>;
  reduceScatter: Record<string, Outcome>;
  bxorString: number[];
  after: number[];
}

const { data: fixture } = fixtureJson<Fixture>('distributed/reduce_ops.py', 'distributed/reduce_ops.json');

test('ReduceOp has PyTorch’s members, as the lowercase strings tsddp always took', () => {
  const { ReduceOp } = t.distributed;
  assert.deepEqual(Object.keys(ReduceOp), ['SUM', 'AVG', 'PRODUCT', 'MIN', 'MAX', 'BAND', 'BOR', 'BXOR']);
  assert.deepEqual(Object.values(ReduceOp), ['sum', 'avg', 'product', 'min', 'max', 'band', 'bor', 'bxor']);
  assert.ok(Object.isFrozen(ReduceOp));
  // The members of torch.distributed.ReduceOp but PREMUL_SUM (NCCL's, with a factor).
  const ops = Object.keys(fixture.ranks[0].all_reduce).map((k) => k.split('/')[0]);
  assert.deepEqual([...new Set(ops)], Object.keys(ReduceOp));
});

/** An outcome against PyTorch's: the same values, or an error carrying PyTorch's message. */
function assertSame(ours: Outcome | undefined, theirs: PyOutcome, label: string): void {
  assert.ok(ours !== undefined, `${label}: no outcome`);
  if ('values' in theirs) {
    assert.ok('values' in ours, `${label}: ${JSON.stringify(ours)}`);
    assert.deepEqual(ours.values, theirs.values, label);
  } else {
    assert.ok(
      'error' in ours,
      `${label}: expected PyTorch's error '${theirs.error}', got ${JSON.stringify(ours)}`,
    );
    assert.ok(ours.error.message.includes(theirs.error), `${label}: ${ours.error.message}`);
  }
}

test('allReduce and reduceScatter with every ReduceOp on 2 Gloo ranks give PyTorch’s results', async () => {
  const outcomes = await runJob<Result>('reduce-op', {
    worldSize: 2,
    config: { inputs: fixture.inputs },
    timeoutMs: 120_000,
  });
  const rs = okResults(outcomes);
  for (const [r, res] of rs.entries()) {
    const py = fixture.ranks[r];
    for (const [key, theirs] of Object.entries(py.all_reduce))
      assertSame(res.allReduce[key], theirs, `rank ${r} allReduce ${key}`);
    for (const [key, theirs] of Object.entries(py.reduce_scatter))
      assertSame(res.reduceScatter[key], theirs, `rank ${r} reduceScatter ${key}`);
    assert.deepEqual(res.bxorString, (py.all_reduce['BXOR/int32'] as { values: number[] }).values);
    assert.deepEqual(res.after, [3], 'the group works after the refused ops');
  }
  // What is refused, and how: a bitwise op on floats by libtorch's Gloo at the call; AVG
  // of integers by tsddp before the collective, a TypeError that names the op.
  const refused = rs[0].allReduce['BAND/float32'] as { error: { message: string } };
  assert.match(refused.error.message, /Cannot use ReduceOp\.BAND with non-integral dtype/);
  const avg = rs[0].allReduce['AVG/int32'] as { error: { name: string; message: string } };
  assert.equal(avg.error.name, 'TypeError');
  assert.match(
    avg.error.message,
    /^allReduce\(\): ReduceOp\.AVG on Gloo needs a floating-point tensor, got int32 \(result type Float/,
  );
});

// One rank of test/distributed-reduce-op.test.ts: allReduce with every ReduceOp on
// float32, int32 and bool tensors, and reduceScatter with every ReduceOp, on the inputs
// of test/fixtures/distributed/reduce_ops.py (passed in the config); each outcome is the
// result's values or the error. All on the default group, with a barrier after each op:
// no refused op may fail the ones after it.
import * as t from '../../src/index.ts';
import { errorInfo, rank, values, workerConfig, writeResult } from './common.ts';

const dist = t.distributed;

interface Config {
  inputs: Record<'float32' | 'int32' | 'bool', number[][]>;
}
type Outcome = { values: number[] } | { error: { name: string; message: string } };

const cfg = workerConfig<Config>();
const OPS = ['SUM', 'AVG', 'PRODUCT', 'MIN', 'MAX', 'BAND', 'BOR', 'BXOR'] as const;

function input(dtype: 'float32' | 'int32' | 'bool'): t.Tensor {
  const xs = cfg.inputs[dtype][rank];
  return dtype === 'bool'
    ? t.tensor(xs.map((v) => v !== 0) as never, { dtype: 'bool' })
    : t.tensor(xs, { dtype });
}

/** Runs a collective; a refusal (thrown at the call or by the Work) is its outcome. */
async function outcome(run: () => Promise<t.Tensor>): Promise<Outcome> {
  try {
    return { values: values(await run()) };
  } catch (e) {
    const { name, message } = errorInfo(e);
    return { error: { name, message } };
  }
}

async function main(): Promise<void> {
  dist.initProcessGroup({ backend: 'gloo', timeoutMs: 30_000 });
  const allReduce: Record<string, Outcome> = {};
  const reduceScatter: Record<string, Outcome> = {};
  for (const op of OPS) {
    for (const dtype of ['float32', 'int32', 'bool'] as const) {
      allReduce[`${op}/${dtype}`] = await outcome(async () => {
        const x = input(dtype);
        await dist.allReduce(x, dist.ReduceOp[op]);
        return x;
      });
    }
    const dtype = op === 'AVG' ? 'float32' : 'int32';
    reduceScatter[`${op}/${dtype}`] = await outcome(async () => {
      const x = input(dtype);
      const out = t.zeros([4], { dtype });
      await dist.reduceScatter(
        out,
        [0, 1].map((k) => x.add(10 * k)),
        dist.ReduceOp[op],
      );
      return out;
    });
    await dist.barrier();
  }
  // The lowercase strings are the same ops.
  const s = input('int32');
  await dist.allReduce(s, 'bxor');
  const after = t.tensor([rank + 1]);
  await dist.allReduce(after);
  writeResult({ allReduce, reduceScatter, bxorString: values(s), after: values(after) });
  dist.destroyProcessGroup();
}

await main();

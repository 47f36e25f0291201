// One rank of test/collectives.test.ts. Scenarios (config.scenario):
//  - 'ops': every collective with rank-dependent inputs, the Work API, a barrier with
//    a late rank 0, and the argument checks; the test compares the results. Then, with
//    config.fault, the last rank leaves: 'exit' (it exits by itself) or 'kill' (it
//    prints READY and the test SIGKILLs it before sending 'go' to the others), and the
//    others report how their next all-reduce failed, then destroy the group.
//  - 'hang': after a barrier, rank 0 (asyncOp) and rank 2 (blocking) start an all-reduce
//    that rank 1 never joins (the test SIGSTOPs it); they report the error, how long it
//    took and how often a 100 ms timer ticked meanwhile. With config.pending, rank 0 issues a
//    reduce-scatter and waits for it later on its thread instead (a PendingCollective, as
//    fully sharded data parallel's deferred reduce-scatters are).
import { startReduceScatterTensor } from '../../src/distributed/collectives.ts';
import { getDefaultGroup } from '../../src/distributed/process-group.ts';
import * as t from '../../src/index.ts';
import {
  errorInfo,
  finish,
  rank,
  values,
  waitForLine,
  workerConfig,
  worldSize,
  writeResult,
} from './common.ts';

const dist = t.distributed;

interface Config {
  scenario: 'ops' | 'hang';
  pending?: boolean;
  timeoutMs?: number;
  fault?: 'exit' | 'kill';
}

const cfg = workerConfig<Config>();

/** Runs `fn`, expecting it to throw synchronously; returns the error. */
function thrown(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    return errorInfo(e);
  }
  return null;
}

async function ops(): Promise<Record<string, unknown>> {
  const beforeInit = thrown(() => dist.allReduce(t.tensor([1])));
  const pg = dist.initProcessGroup({ backend: 'gloo', timeoutMs: cfg.timeoutMs ?? 30_000 });
  const twice = thrown(() => dist.initProcessGroup({ backend: 'gloo' }));
  const r = rank;

  const allReduce: Record<string, number[]> = {};
  for (const op of ['sum', 'avg', 'product', 'min', 'max'] as const) {
    const x = t.tensor([r + 1, -(r + 2), 0.5 * (r + 1), 3]);
    await dist.allReduce(x, op);
    allReduce[op] = values(x);
  }
  const ints = t.tensor(BigInt64Array.from([BigInt(r + 1), BigInt(1000 * r)]), { dtype: 'int64' });
  await dist.allReduce(ints, 'sum');
  const defaultOp = t.tensor([r + 1]);
  await dist.allReduce(defaultOp);

  // The Work handle of asyncOp: completed once awaited; wait() works too. A blocking call
  // (the default) returns one already completed.
  const y = t.tensor([10 * r + 1, 10 * r + 2]);
  const work = dist.broadcast(y, worldSize - 1, { asyncOp: true });
  const broadcastWork = work instanceof dist.Work;
  await work.wait();
  const completed = work.isCompleted();
  const blockingCompleted = dist.barrier().isCompleted();

  const outputs = Array.from({ length: worldSize }, () => t.zeros([3]));
  await dist.allGather(outputs, t.tensor([r, r * r, -r]));

  const reduceScatter: Record<string, number[]> = {};
  for (const op of ['sum', 'max'] as const) {
    const out = t.zeros([2]);
    const inputs = Array.from({ length: worldSize }, (_, k) => t.tensor([100 * r + k, r * k]));
    await dist.reduceScatter(out, inputs, op);
    reduceScatter[op] = values(out);
  }

  // Rank 0 arrives late: nobody may leave before it entered.
  if (r === 0) await new Promise((res) => setTimeout(res, 300));
  const barrierEnter = Date.now();
  await dist.barrier();
  const barrierExit = Date.now();

  const x = t.tensor([1, 2]);
  const bad = {
    broadcastSrcTooLarge: thrown(() => dist.broadcast(x, worldSize)),
    broadcastSrcNegative: thrown(() => dist.broadcast(x, -1)),
    broadcastSrcFraction: thrown(() => dist.broadcast(x, 0.5)),
    allGatherTooFew: thrown(() => dist.allGather([t.zeros([2])], x)),
    reduceScatterTooMany: thrown(() =>
      dist.reduceScatter(
        t.zeros([2]),
        Array.from({ length: worldSize + 1 }, () => t.zeros([2])),
      ),
    ),
    allReduceUnknownOp: thrown(() => dist.allReduce(x, 'mean' as t.distributed.ReduceOp)),
    reduceScatterUnknownOp: thrown(() =>
      dist.reduceScatter(
        t.zeros([2]),
        Array.from({ length: worldSize }, () => t.zeros([2])),
        'avg2' as t.distributed.ReduceOp,
      ),
    ),
  };
  // The group is still usable after refused calls.
  const after = t.tensor([r]);
  await dist.allReduce(after, 'sum');

  const info = { rank: dist.getRank(), worldSize: dist.getWorldSize(), backend: pg.backend };
  return {
    info,
    beforeInit,
    twice,
    allReduce,
    ints: Array.from(ints.toTypedArray() as BigInt64Array, Number),
    defaultOp: values(defaultOp),
    broadcast: values(y),
    broadcastWork,
    completed,
    blockingCompleted,
    allGather: outputs.map(values),
    reduceScatter,
    barrierEnter,
    barrierExit,
    bad,
    after: values(after),
  };
}

/**
 * An all-reduce that is expected to fail: the error, how long it took, and the ticks of a
 * 100 ms timer meanwhile (the JS thread is free during an asyncOp call, blocked during a
 * blocking one, as a PyTorch caller's).
 */
async function failingAllReduce(asyncOp = false) {
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 100);
  const start = Date.now();
  let error = null;
  try {
    await dist.allReduce(t.tensor([1, 2, 3]), 'sum', { asyncOp });
  } catch (e) {
    error = { ...errorInfo(e), isDistributedError: e instanceof dist.DistributedError };
  }
  const elapsedMs = Date.now() - start;
  clearInterval(ticker);
  return { error, elapsedMs, ticks };
}

async function opsThenFault(): Promise<unknown> {
  const result: Record<string, unknown> = await ops();
  writeResult(result);
  if (cfg.fault) {
    await dist.barrier();
    const leaving = rank === worldSize - 1;
    if (cfg.fault === 'exit') {
      if (leaving) finish(0);
      await new Promise((res) => setTimeout(res, 300));
    } else {
      console.log('READY');
      if (leaving) {
        setInterval(() => {}, 1000);
        await new Promise(() => {});
      }
      await waitForLine('go');
    }
    result.fault = await failingAllReduce();
  }
  // Destroying the group works, also after a failed collective.
  dist.destroyProcessGroup();
  result.isInitializedAfterDestroy = dist.isInitialized();
  return result;
}

async function hang(): Promise<unknown> {
  const timeoutMs = cfg.timeoutMs ?? 3000;
  dist.initProcessGroup({ backend: 'gloo', timeoutMs });
  await dist.barrier();
  console.log('READY');
  if (rank === 1) {
    // The test stops this process here and kills it at the end.
    setInterval(() => {}, 1000);
    await new Promise(() => {});
  }
  await waitForLine('go');
  if (cfg.pending) return { ...pendingReduceScatter(), timeoutMs };
  return { ...(await failingAllReduce(rank === 0)), timeoutMs };
}

/** A reduce-scatter issued now and waited for on this thread (it times out: a peer is stopped). */
function pendingReduceScatter() {
  const start = Date.now();
  let error = null;
  const call = startReduceScatterTensor(t.zeros([1]), t.ones([worldSize]), 'sum', getDefaultGroup());
  const issuedMs = Date.now() - start;
  try {
    call.wait();
  } catch (e) {
    error = { ...errorInfo(e), isDistributedError: e instanceof dist.DistributedError };
  }
  return { error, elapsedMs: Date.now() - start, issuedMs };
}

const run = { ops: opsThenFault, hang }[cfg.scenario];
writeResult(await run());
finish(0);

// Every collective of torch.distributed in one 3-rank world, each rank PyTorch or tsddp:
// test/workers/collectives_rank.py and collectives-rank.mts run the same calls (point to
// point, a batch of isend/irecv, all-to-all with equal and uneven splits and lists,
// gather, scatter, reduce with every op, the single-tensor all-gather and reduce-scatter,
// the coalesced all-reduce, a group of ranks 0 and 2 that rank 1 is not in, subgroups by
// enumeration, monitoredBarrier) and print what each left on the rank. Worlds that mix
// the two, in both orders, and an all-tsddp world must give, rank by rank, what the
// all-PyTorch world gives. Needs a Python with torch (setup's .venv); skipped without one.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { probeTorchPython, REPO_ROOT } from '../src/benchmark/reference.ts';
import { freePort } from '../src/host/gang.ts';
import { runCommand } from './helpers/run.ts';

const torch = probeTorchPython();
const skip = torch === null ? 'no Python that can import torch (npm run setup makes .venv)' : false;
const PY_RANK = join(REPO_ROOT, 'test/workers/collectives_rank.py');
const TS_RANK = join(REPO_ROOT, 'test/workers/collectives-rank.mts');

type Side = 'pytorch' | 'tsddp';
type RankResult = Record<string, unknown> & { rank: number; side: Side };

/** A 3-rank env:// world whose rank r runs sides[r]; each rank's printed results. */
async function world(sides: Side[]): Promise<RankResult[]> {
  const port = await freePort();
  const runs = await Promise.all(
    sides.map((side, rank) => {
      const env = {
        ...process.env,
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(port),
        WORLD_SIZE: String(sides.length),
        RANK: String(rank),
        LOCAL_RANK: String(rank),
      };
      const cmd =
        side === 'pytorch'
          ? [(torch as { python: string }).python, PY_RANK]
          : [process.execPath, '--import', 'tsx', TS_RANK];
      return runCommand(cmd, { env, cwd: REPO_ROOT });
    }),
  );
  for (const [rank, r] of runs.entries()) assert.equal(r.code, 0, `rank ${rank} (${sides[rank]}):\n${r.out}`);
  return runs.map((r, rank) => {
    const line = r.out.split('\n').find((l) => l.startsWith('{'));
    assert.ok(line, `rank ${rank} printed no results:\n${r.out}`);
    return JSON.parse(line) as RankResult;
  });
}

let reference: Promise<RankResult[]> | undefined;
const allPyTorch = () => {
  reference ??= world(['pytorch', 'pytorch', 'pytorch']);
  return reference;
};

async function assertSameAsPyTorch(sides: Side[]): Promise<void> {
  const [got, ref] = await Promise.all([world(sides), allPyTorch()]);
  for (const [rank, mine] of got.entries()) {
    assert.equal(mine.side, sides[rank]);
    const { side: _a, ...ours } = mine;
    const { side: _b, ...theirs } = ref[rank];
    assert.deepEqual(ours, theirs, `rank ${rank} (${sides[rank]}) differs from PyTorch's rank ${rank}`);
  }
}

test(
  'a world of PyTorch rank 0 and tsddp ranks 1 and 2 gives PyTorch’s result of every collective',
  {
    skip,
  },
  () => assertSameAsPyTorch(['pytorch', 'tsddp', 'tsddp']),
);

test(
  'a world of tsddp rank 0 (serving the store) and PyTorch ranks 1 and 2 gives PyTorch’s results',
  {
    skip,
  },
  () => assertSameAsPyTorch(['tsddp', 'pytorch', 'pytorch']),
);

test('an all-tsddp world gives PyTorch’s result of every collective', { skip }, () =>
  assertSameAsPyTorch(['tsddp', 'tsddp', 'tsddp']),
);

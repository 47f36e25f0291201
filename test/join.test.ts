// Join for uneven inputs (src/distributed/join.ts) between real processes: rank 0 has 5
// batches and rank 1 has 3; DDP inside Join trains to PyTorch's parameters, losses and
// BatchNorm buffers (test/fixtures/distributed/join.py: PyTorch's DDP + Join on the same
// data), with divideByInitialWorldSize true and false, through Join and ddp.join();
// throwOnEarlyTermination throws on every rank; without Join (enable: false) the rank
// with more batches fails at its collective timeout instead of finishing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { assertClose, type FixtureTensor } from './helpers/fixtures.ts';
import { okResults, runJob } from './helpers/multiproc.ts';

interface CaseResult {
  losses: number[];
  after: Record<string, number[]>;
}
type Result = Record<'divide_true' | 'divide_false', CaseResult> & {
  error?: { name: string; message: string };
};
interface CaseFixture {
  losses: number[];
  after: Record<string, FixtureTensor>;
}
const fx = JSON.parse(readFileSync(new URL('./fixtures/distributed/join.json', import.meta.url), 'utf8')) as {
  ranks: Record<'divide_true' | 'divide_false', CaseFixture>[];
};

function checkAgainstPyTorch(rs: Result[]): void {
  for (const [rank, r] of rs.entries())
    for (const name of ['divide_true', 'divide_false'] as const) {
      const want = fx.ranks[rank][name];
      assertClose(r[name].losses, want.losses, 1e-5, 1e-6, `rank ${rank} ${name} losses`);
      assert.equal(r[name].losses.length, rank === 0 ? 5 : 3);
      for (const [k, v] of Object.entries(want.after))
        assertClose(r[name].after[k], v.data, 1e-5, 1e-6, `rank ${rank} ${name} ${k}`);
    }
}

test('DDP in Join: rank 0 with 5 batches and rank 1 with 3 finish with PyTorch’s parameters', async () => {
  checkAgainstPyTorch(okResults(await runJob<Result>('join', { worldSize: 2, config: { mode: 'join' } })));
});

test('ddp.join() is the same context', async () => {
  checkAgainstPyTorch(
    okResults(await runJob<Result>('join', { worldSize: 2, config: { mode: 'ddp.join' } })),
  );
});

test('throwOnEarlyTermination: every rank throws once one runs out of inputs', async () => {
  const rs = okResults(await runJob<Result>('join', { worldSize: 2, config: { mode: 'throw' } }));
  assert.match(rs[0].error?.message ?? '', /Detected at least one rank that exhausted inputs/);
  assert.match(rs[1].error?.message ?? '', /Rank 1 exhausted all inputs/);
});

test('without Join (enable: false) the rank with more batches fails at its timeout, naming the collective', async () => {
  const rs = okResults(
    await runJob<Result>('join', { worldSize: 2, config: { mode: 'disabled' }, timeoutMs: 60_000 }),
  );
  assert.ok(rs[0].error, 'rank 0 fails');
  assert.match(rs[0].error?.message ?? '', /timed out|timeout|Connection closed|reset/i);
});

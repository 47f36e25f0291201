// tsddp train --uneven join: each sample trained on once per epoch, ranks with unequal
// shares (31 images, batch 4: rank 0 has 4 batches, rank 1 has 3), each epoch in Join.
// Both ranks finish every epoch at the world's step count and end in one state: the
// parameters, BatchNorm buffers, SGD momentum and learning rate of the rank that trained
// longest; checkpoints wait for the epoch's end. Mid-epoch checkpoints are refused.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { parseConfig } from '../src/train/config.ts';
import { okResults, runJob } from './helpers/multiproc.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-uneven-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

interface Result {
  steps: number;
  checkpoints: string[];
  lr: number;
  params: number;
  buffers: number;
  momentum: number;
}

test('--uneven join: ranks with 4 and 3 batches per epoch end 2 epochs in one state at step 8', async () => {
  const rs = okResults(
    await runJob<Result>('train-uneven', {
      worldSize: 2,
      config: {
        config: {
          ...{ trainSize: 31, batchSize: 4, epochs: 2, uneven: 'join', momentum: 0.9 },
          checkpointDir: join(tmp, 'ck'),
        },
      },
      timeoutMs: 120_000,
    }),
  );
  for (const r of rs) {
    assert.equal(r.steps, 8, 'the world’s 4 steps per epoch, on both ranks');
    assert.deepEqual(r.checkpoints, ['ckpt-000004', 'ckpt-000008'], 'a checkpoint at each epoch’s end');
  }
  for (const key of ['lr', 'params', 'buffers', 'momentum'] as const)
    assert.equal(rs[1][key], rs[0][key], `${key} equal on both ranks`);
  assert.ok(rs[0].momentum > 0);
});

test('--uneven join with --strategy zero1: the optimizer joins too; one model, each rank its own shard', async () => {
  const rs = okResults(
    await runJob<Result>('train-uneven', {
      worldSize: 2,
      config: {
        config: {
          ...{ trainSize: 31, batchSize: 4, epochs: 2, uneven: 'join', momentum: 0.9, strategy: 'zero1' },
          ...{ schedule: 'cosine', checkpointDir: join(tmp, 'ck-zero1') },
        },
      },
      timeoutMs: 120_000,
    }),
  );
  for (const r of rs) {
    assert.equal(r.steps, 8, 'the world’s 4 steps per epoch, on both ranks');
    assert.deepEqual(r.checkpoints, ['ckpt-000004', 'ckpt-000008']);
  }
  // Every step broadcasts each shard, so the parameters agree; the learning rate is the
  // schedule's at step 8 on both (rank 1 stopped its schedule at step 3 of each epoch).
  for (const key of ['lr', 'params', 'buffers'] as const)
    assert.equal(rs[1][key], rs[0][key], `${key} equal on both ranks`);
  // Each rank holds momentum for its own shard only, and both shards have some.
  assert.ok(rs[0].momentum > 0 && rs[1].momentum > 0);
  assert.notEqual(rs[0].momentum, rs[1].momentum);
});

test('--uneven join refuses --checkpoint-every (checkpoints wait for the end of the epoch)', () => {
  assert.throws(
    () => parseConfig({ uneven: 'join', checkpointEvery: 5, checkpointDir: 'x' }),
    /--uneven.*join checkpoints at epoch ends only/s,
  );
});

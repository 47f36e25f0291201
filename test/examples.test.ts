// examples/train_resnet50.ts, the classic recipe, runs under the launcher with DDP, AMP
// (bf16 on CPU), gradient accumulation and rank-0 checkpoints, and resumes from them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { verifyCheckpoint } from '../src/checkpoint/index.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-examples-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function recipe(epochs: number) {
  const args = [
    'bin/tsddp.mjs',
    'run',
    '--nproc-per-node',
    '2',
    '--standalone',
    'examples/train_resnet50.ts',
  ];
  const opts = [
    '--width',
    '0.125',
    '--train-size',
    '128',
    '--batch-size',
    '16',
    '--accum',
    '2',
    '--workers',
    '1',
  ];
  const run = spawnSync(
    process.execPath,
    [...args, ...opts, '--epochs', String(epochs), '--checkpoint-dir', join(tmp, 'ckpt')],
    { encoding: 'utf8', timeout: 180_000 },
  );
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  return run.stdout;
}

test('examples/train_resnet50.ts trains under tsddp run, checkpoints on rank 0, and resumes', async () => {
  const first = recipe(1);
  assert.match(
    first,
    /\[rank 0\] resnet50 x0\.125 on 2 process\(es\), Shapes 32x32, batch 16 x 2 x 2, lr 0\.025, amp bf16/,
  );
  assert.doesNotMatch(first, /\[rank 1\] resnet50/, 'only rank 0 prints');
  // 128 images / 2 ranks / 16 per batch = 4 batches = 2 optimizer steps per epoch.
  assert.deepEqual(readdirSync(join(tmp, 'ckpt')), ['ckpt-000002']);
  await verifyCheckpoint(join(tmp, 'ckpt', 'ckpt-000002'));
  const second = recipe(2);
  assert.match(second, /resumed from .*ckpt-000002 at epoch 1/);
  assert.deepEqual(readdirSync(join(tmp, 'ckpt')).sort(), ['ckpt-000002', 'ckpt-000004']);
});

// Never lose a run (docs/reliability.md R18, R19). The fault as it was reported: rerunning the same
// `tsddp train` command into the same --checkpoint-dir started again at step 0, overwrote
// ckpt-000050, truncated the metrics rank file, and with another seed pruned the earlier
// run's checkpoints. Now the rerun is refused before any work and nothing is touched;
// --resume auto continues the earlier run (its configuration must match); --overwrite
// deletes it and starts again.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readJsonLines } from '../src/metrics/index.ts';
import { parseConfig, type TrainConfigInput, train } from '../src/train/index.ts';
import { snapshot } from './helpers/snapshot.ts';
import { TINY_TRAIN } from './helpers/tiny-train.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-prior-run-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const quiet = { progress: false } as const;

function config(name: string): TrainConfigInput {
  return {
    ...TINY_TRAIN,
    epochs: 2,
    checkpointEvery: 2,
    checkpointDir: join(tmp, name, 'ckpt'),
    metricsFile: join(tmp, name, 'm.jsonl'),
  };
}

test('rerunning into the folder of an earlier run is refused before any work, and nothing is touched', async () => {
  const cfg = config('rerun');
  await train({ ...cfg, maxSteps: 6 }, quiet); // the earlier run: 6 steps, checkpoints at 2, 4, 6
  const before = snapshot(join(tmp, 'rerun'));
  assert.ok(Object.keys(before).some((f) => f.endsWith('ckpt-000006/manifest.json')));
  const t0 = performance.now();
  for (const again of [cfg, { ...cfg, seed: 7 }]) {
    await assert.rejects(train(again, quiet), (e: Error) => {
      assert.equal(e.name, 'PriorRunError');
      assert.match(e.message, /ckpt holds 3 checkpoint\(s\) \(ckpt-000002, ckpt-000004, ckpt-000006\)/);
      assert.match(e.message, /m\.jsonl, .*m\.jsonl\.rank0/);
      assert.match(e.message, /--resume auto.*--overwrite/);
      return true;
    });
  }
  assert.ok(performance.now() - t0 < 5000, 'refused before building data and model');
  assert.deepEqual(snapshot(join(tmp, 'rerun')), before);
});

test('--resume auto continues the earlier run; a changed configuration is refused untouched', async () => {
  const cfg = config('continue');
  await train({ ...cfg, maxSteps: 4 }, quiet);
  const before = snapshot(join(tmp, 'continue'));
  await assert.rejects(train({ ...cfg, seed: 7, resume: 'auto' }, quiet), /cannot resume: seed was 0, now 7/);
  assert.deepEqual(snapshot(join(tmp, 'continue')), before);

  const r = await train({ ...cfg, resume: 'auto' }, quiet);
  assert.equal(r.startStep, 4);
  assert.equal(r.steps, 8);
  const steps = readJsonLines(cfg.metricsFile as string).filter((x) => x.type === 'step');
  assert.deepEqual(
    steps.map((s) => s.step),
    [1, 2, 3, 4, 5, 6, 7, 8],
    'the merged metrics hold both parts of the run',
  );
});

test('--overwrite deletes the earlier run and starts again; it cannot be combined with --resume', async () => {
  const cfg = config('overwrite');
  await train({ ...cfg, maxSteps: 6, seed: 3 }, quiet);
  // A stray file of the user's in the checkpoint folder is not the run's: it stays.
  writeFileSync(join(cfg.checkpointDir as string, 'notes.txt'), 'mine');
  const r = await train({ ...cfg, maxSteps: 2, overwrite: true }, quiet);
  assert.equal(r.startStep, 0);
  assert.deepEqual(readdirSync(cfg.checkpointDir as string).sort(), ['ckpt-000002', 'notes.txt']);
  const steps = readJsonLines(cfg.metricsFile as string).filter((x) => x.type === 'step');
  assert.deepEqual(
    steps.map((s) => s.step),
    [1, 2],
  );
  assert.throws(() => parseConfig({ ...cfg, overwrite: true, resume: 'auto' }), /--overwrite.*--resume auto/);
});

test('--resume auto with metrics but no checkpoint to resume is refused (steps would repeat)', async () => {
  const cfg = config('nockpt');
  // The earlier run kept metrics only (it died before checkpointing, or had no folder).
  await train({ ...cfg, maxSteps: 1, checkpointDir: undefined, checkpointEvery: 0 }, quiet);
  assert.ok(!existsSync(cfg.checkpointDir as string));
  const size = statSync(`${cfg.metricsFile}.rank0`).size;
  await assert.rejects(train({ ...cfg, resume: 'auto' }, quiet), (e: Error) => {
    assert.equal(e.name, 'PriorRunError');
    assert.match(e.message, /no checkpoint to resume, but an earlier run left metrics: .*m\.jsonl/);
    return true;
  });
  assert.equal(statSync(`${cfg.metricsFile}.rank0`).size, size);
});

test('the same `tsddp train` command run twice: the second is refused with exit 1 and the way out', () => {
  const dir = join(tmp, 'cli');
  const args = [
    'bin/tsddp.mjs',
    'train',
    ...['--model', 'resnet18', '--width-multiplier', '0.125', '--image-size', '16', '--train-size', '32'],
    ...['--val-size', '8', '--batch-size', '8', '--epochs', '1', '--workers', '0', '--eval-every', '0'],
    ...['--checkpoint-dir', join(dir, 'ck'), '--metrics-file', join(dir, 'm.jsonl')],
  ];
  const env = { ...process.env, OMP_NUM_THREADS: '1' };
  const first = spawnSync(process.execPath, args, { encoding: 'utf8', env });
  assert.equal(first.status, 0, first.stderr);
  const before = snapshot(dir);
  const again = spawnSync(process.execPath, args, { encoding: 'utf8', env });
  assert.equal(again.status, 1);
  assert.match(
    again.stderr,
    /^tsddp train: PriorRunError: an earlier run is where this one would write: .*ckpt-000004.*--resume auto.*--overwrite/m,
  );
  assert.deepEqual(snapshot(dir), before);
});

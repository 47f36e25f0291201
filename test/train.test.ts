// The recipe in one process: it learns, its loop keeps a flat live-tensor count, its
// metrics hold what they promise, and a run that dies and resumes from its last
// checkpoint continues exactly as if it had never stopped (docs/reliability.md R17: optimizer,
// LR schedule, grad scaler, sampler epoch and step all restored).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readJsonLines, type StepRecord } from '../src/metrics/index.ts';
import { type TrainConfigInput, train } from '../src/train/index.ts';
import { encodePng } from './fixtures/data/png.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-train-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const quiet = { progress: false } as const;

const steps = (file: string) => readJsonLines(file).filter((r): r is StepRecord => r.type === 'step');
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

test('single-process training reduces the loss; flat live tensors; metrics and evaluation recorded', async () => {
  const metricsFile = join(tmp, 'learn.jsonl');
  const r = await train(
    {
      model: 'resnet18',
      widthMultiplier: 0.125,
      imageSize: 16,
      // 64 images seen 15 times: a ResNet memorises them, so the loss must fall far.
      trainSize: 64,
      valSize: 30,
      batchSize: 16,
      epochs: 15,
      lr: 0.05,
      warmupEpochs: 1,
      augment: false,
      workers: 1,
      evalEvery: 5,
      metricsFile,
    },
    quiet,
  );
  assert.equal(r.steps, 60);
  assert.equal(r.epochs, 15);
  assert.equal(r.worldSize, 1);
  const recs = steps(metricsFile);
  assert.deepEqual(
    recs.map((s) => s.step),
    Array.from({ length: 60 }, (_, i) => i + 1),
  );
  const mean = (xs: StepRecord[]) => xs.reduce((a, s) => a + s.loss, 0) / xs.length;
  const first = mean(recs.slice(0, 8));
  const last = mean(recs.slice(-8));
  assert.ok(first > 2, `initial loss ${first.toFixed(3)} is about chance (ln 10 = 2.30)`);
  assert.ok(last < 0.8, `loss fell from ${first.toFixed(3)} to ${last.toFixed(3)}`);
  for (const s of recs) {
    for (const k of [
      'lr',
      'imagesPerSec',
      'dataMs',
      'forwardMs',
      'backwardMs',
      'optimizerMs',
      'stepMs',
    ] as const) {
      assert.ok(Number.isFinite(s[k]) && s[k] >= 0, `${k} = ${s[k]}`);
    }
    assert.equal(s.images, 16);
  }
  // Every step in a memory scope: the live-tensor count does not grow.
  const live = new Set(recs.slice(2).map((s) => s.liveTensors));
  assert.equal(live.size, 1, `live tensors per step: ${[...live].join(', ')}`);
  // The warm-up ramps the lr, then cosine brings it down.
  assert.ok(recs[0].lr < recs[4].lr && recs[59].lr < recs[4].lr);
  assert.equal(recs[4].lr, 0.05);
  const evals = readJsonLines(metricsFile).filter((x) => x.type === 'eval');
  assert.equal(evals.length, 3);
  for (const e of evals) if (e.type === 'eval') assert.equal(e.count, 30);
  assert.ok(r.lastEval !== null && r.lastEval.top1 >= 0 && r.lastEval.top1 <= r.lastEval.top5);
  assert.equal(readdirSync(tmp).filter((f) => f.startsWith('learn.jsonl.rank')).length, 1);
});

test('resume after a crash continues bitwise like an uninterrupted run (fp16 scaler, accumulation, mid-epoch)', async () => {
  const base: TrainConfigInput = {
    model: 'resnet18',
    widthMultiplier: 0.125,
    imageSize: 16,
    trainSize: 96,
    valSize: 10,
    batchSize: 8,
    gradAccum: 2,
    epochs: 2,
    lr: 0.05,
    nesterov: true,
    warmupEpochs: 1,
    amp: 'fp16',
    workers: 1,
    seed: 3,
    evalEvery: 0,
    checkpointEvery: 3,
  };
  const whole = { ...base, checkpointDir: join(tmp, 'whole'), metricsFile: join(tmp, 'whole.jsonl') };
  const a = await train(whole, quiet);
  assert.equal(a.steps, 12); // 96 / 8 = 12 batches = 6 steps per epoch

  const broken = { ...base, checkpointDir: join(tmp, 'broken'), metricsFile: join(tmp, 'broken.jsonl') };
  await assert.rejects(
    train(broken, {
      ...quiet,
      onStep: ({ step }) => {
        if (step === 5) throw new Error('crash at step 5');
      },
    }),
    /crash at step 5/,
  );
  assert.ok(existsSync(join(tmp, 'broken', 'ckpt-000003')));
  assert.ok(!existsSync(join(tmp, 'broken', 'ckpt-000005')));

  const b = await train({ ...broken, resume: 'auto' }, quiet);
  assert.equal(b.startStep, 3);
  assert.equal(b.resumedFrom, join(tmp, 'broken', 'ckpt-000003'));
  assert.equal(b.steps, 12);

  // Every step after the resume equals the uninterrupted run's: loss, lr, accuracy.
  const sa = steps(whole.metricsFile);
  const sb = steps(broken.metricsFile);
  assert.deepEqual(
    sb.map((s) => s.step),
    sa.map((s) => s.step),
    'the merged metrics hold each step once',
  );
  for (let i = 0; i < sa.length; i++) {
    assert.equal(sb[i].loss, sa[i].loss, `loss at step ${sa[i].step}`);
    assert.equal(sb[i].lr, sa[i].lr, `lr at step ${sa[i].step}`);
    assert.equal(sb[i].acc, sa[i].acc, `acc at step ${sa[i].step}`);
  }
  // Final model and optimizer state: byte-identical files.
  for (const f of ['model.safetensors', 'optimizer.safetensors']) {
    assert.equal(sha(join(tmp, 'broken', 'ckpt-000012', f)), sha(join(tmp, 'whole', 'ckpt-000012', f)), f);
  }
  const ta = JSON.parse(readFileSync(join(tmp, 'whole', 'ckpt-000012', 'trainer.json'), 'utf8'));
  const tb = JSON.parse(readFileSync(join(tmp, 'broken', 'ckpt-000012', 'trainer.json'), 'utf8'));
  assert.deepEqual(tb.parts, ta.parts, 'schedule, scaler and optimizer groups');
  assert.equal(tb.epoch, 2);
  assert.equal(tb.samplerEpoch, 2);
  assert.equal(tb.worldSize, 1);
  // keepLast (3 by default) pruned the older checkpoints.
  assert.deepEqual(readdirSync(join(tmp, 'whole')).sort(), ['ckpt-000006', 'ckpt-000009', 'ckpt-000012']);
});

test('resume refuses a changed batch size (the data order and step numbering depend on it)', async () => {
  const cfg: TrainConfigInput = {
    model: 'resnet18',
    widthMultiplier: 0.125,
    imageSize: 16,
    trainSize: 32,
    valSize: 10,
    batchSize: 8,
    epochs: 1,
    workers: 0,
    evalEvery: 0,
    checkpointDir: join(tmp, 'changed'),
  };
  await train(cfg, quiet);
  await assert.rejects(train({ ...cfg, batchSize: 4, resume: 'auto' }, quiet), (e: Error) => {
    assert.equal(e.name, 'CheckpointError');
    assert.match(e.message, /cannot resume: batchSize was 8, now 4/);
    return true;
  });
});

test('--skip-bad-samples: a corrupt JPEG in an ImageFolder run is skipped, logged, counted in the metrics and the report', () => {
  const data = join(tmp, 'images');
  for (const split of ['train', 'val'])
    for (const cls of ['a', 'b']) {
      mkdirSync(join(data, split, cls), { recursive: true });
      for (let i = 0; i < 4; i++)
        writeFileSync(
          join(data, split, cls, `${i}.png`),
          encodePng(
            8,
            8,
            Uint8Array.from({ length: 8 * 8 * 3 }, (_, k) => (k * (i + 3) + (cls === 'a' ? 0 : 99)) % 256),
          ),
        );
    }
  const bad = join(data, 'train', 'a', '2-broken.jpg');
  writeFileSync(bad, Buffer.from('not a jpeg at all'));
  const metrics = join(tmp, 'skip.jsonl');
  const args = [
    '--dataset',
    'imagefolder',
    '--data',
    data,
    '--model',
    'resnet18',
    '--width-multiplier',
    '0.125',
  ];
  const opts = [
    '--image-size',
    '16',
    '--batch-size',
    '3',
    '--epochs',
    '1',
    '--workers',
    '1',
    '--metrics-file',
    metrics,
  ];
  const run = spawnSync(
    process.execPath,
    ['bin/tsddp.mjs', 'train', ...args, ...opts, '--skip-bad-samples'],
    {
      encoding: 'utf8',
      env: { ...process.env, OMP_NUM_THREADS: '1' },
    },
  );
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  // Logged once, with the file, though every epoch would meet it.
  assert.equal(run.stderr.split(`DataLoader: skipped ${bad}`).length - 1, 1, run.stderr);
  const recs = steps(metrics);
  assert.equal(recs.at(-1)?.skippedSamples, 1);
  const report = spawnSync(process.execPath, ['bin/tsddp.mjs', 'report', metrics], { encoding: 'utf8' });
  assert.equal(report.status, 0, report.stderr);
  assert.match(
    readFileSync(join(tmp, 'report', 'report.html'), 'utf8'),
    /Bad samples skipped<\/th><td>1 \(--skip-bad-samples\)/,
  );

  // Without the flag the same data stops the run at that file.
  const strict = spawnSync(process.execPath, ['bin/tsddp.mjs', 'train', ...args, ...opts, '--overwrite'], {
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
  assert.equal(strict.status, 1);
  assert.match(strict.stderr, new RegExp(`DataLoaderWorkerError: .*${bad.replace(/[.]/g, '\\.')}`));
});

test('--model vit_tiny with AdamW, warm-up + cosine and gradient clipping: the loss falls; AdamW state resumes', async () => {
  const metricsFile = join(tmp, 'vit.jsonl');
  const checkpointDir = join(tmp, 'vit-ckpt');
  const cfg: TrainConfigInput = {
    model: 'vit_tiny',
    imageSize: 16, // 4 px patches: 16 tokens + the class token
    // 128 images seen 20 times: the ViT memorises them (2.30 -> 1.3 here).
    trainSize: 128,
    valSize: 16,
    batchSize: 16,
    epochs: 20,
    optimizer: 'adamw',
    betas: '0.9,0.999',
    lr: 5e-4,
    weightDecay: 0.05,
    clipGradNorm: 1,
    warmupEpochs: 2,
    augment: false,
    workers: 0,
    evalEvery: 0,
    checkpointDir, // a checkpoint per epoch (8 steps), the last 3 kept
    metricsFile,
  };
  const r = await train(cfg, quiet);
  assert.equal(r.steps, 160);
  const recs = steps(metricsFile);
  const mean = (xs: StepRecord[]) => xs.reduce((a, s) => a + s.loss, 0) / xs.length;
  const first = mean(recs.slice(0, 8));
  const last = mean(recs.slice(-8));
  assert.ok(first > 2.1 && last < 1.9, `loss ${first} -> ${last}`);
  // The AdamW state (both averages per parameter, and the step) is in the checkpoint and
  // a resume from step 152 reproduces the run's next step exactly.
  const opt = await import('../src/checkpoint/index.ts').then((m) =>
    m.safetensors.loadFile(join(checkpointDir, 'ckpt-000152', 'optimizer.safetensors')),
  );
  assert.ok(Object.keys(opt).some((k) => k.endsWith('exp_avg_sq')));
  const again = await train(
    {
      ...cfg,
      resume: join(checkpointDir, 'ckpt-000152'),
      maxSteps: 153,
      checkpointDir: join(tmp, 'vit-ckpt-2'),
      metricsFile: join(tmp, 'vit-2.jsonl'),
    },
    quiet,
  );
  assert.equal(again.steps, 153);
  assert.equal(steps(join(tmp, 'vit-2.jsonl'))[0].loss, recs[152].loss);
  // Unknown optimizer and bad betas are named.
  await assert.rejects(train({ ...cfg, betas: '0.9' }, quiet), /betas.*two numbers/);
});

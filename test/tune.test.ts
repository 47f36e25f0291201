// --tune (src/train/tune.ts, tune-loader.ts, tune-buckets.ts, src/cli/train.ts,
// src/cli/tune.ts): which candidates a machine gets, the timed trial on a real model and
// batch, the loader and bucket rules, settings the run names left alone, the tune file
// (kept whole, reused only for the same run and machine, a corrupt one refused by name),
// and `tsddp train --tune` launching workers that train with the choice (bucket size from
// a 2-process trial), a resumed run reusing it, and a worker of another launcher refusing
// to tune alone.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import * as t from '../src/core/index.ts';
import { planRun } from '../src/train/plan.ts';
import {
  nativeBf16,
  readTuneFile,
  TuneError,
  type TuneResult,
  tune,
  tuneKey,
  writeTuneFile,
} from '../src/train/tune.ts';
import { BUCKET_CANDIDATES, chooseBucket } from '../src/train/tune-buckets.ts';
import { chooseWorkers, workerCandidates } from '../src/train/tune-loader.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-tune-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const TINY = {
  model: 'resnet18',
  widthMultiplier: 0.125,
  imageSize: 16,
  trainSize: 32,
  valSize: 10,
  batchSize: 4,
  workers: 0,
} as const;

test('nativeBf16: CUDA, or a CPU flag for bf16 units; otherwise bf16 is not tried', () => {
  const flags = (f: string) => `processor\t: 0\nflags\t\t: fpu sse2 avx2 ${f}\n`;
  assert.equal(nativeBf16('cpu', flags('avx512f avx512_bf16')).yes, true);
  assert.match(nativeBf16('cpu', flags('amx_bf16 amx_tile')).why, /amx_bf16/);
  const no = nativeBf16('cpu', flags('avx512f'));
  assert.equal(no.yes, false);
  assert.match(no.why, /neither avx512_bf16 nor amx_bf16/);
  assert.equal(nativeBf16('cuda', '').yes, true);
});

test('tune: every candidate timed on the run’s model and a batch of its data; the fastest is chosen', async () => {
  const c = planRun(TINY);
  const lines: string[] = [];
  const r = await tune(c, { steps: 1, rounds: 1, log: (l) => lines.push(l), threadsGiven: false });
  const bf16 = nativeBf16('cpu').yes;
  assert.equal(r.measured.length, bf16 ? 4 : 2, r.bf16);
  assert.deepEqual(
    r.measured.map((m) => [m.channelsLast, m.amp]),
    bf16
      ? [
          [false, 'off'],
          [true, 'off'],
          [false, 'bf16'],
          [true, 'bf16'],
        ]
      : [
          [false, 'off'],
          [true, 'off'],
        ],
  );
  for (const m of r.measured) assert.ok(m.msPerStep > 0 && m.imgPerS > 0, JSON.stringify(m));
  const best = Math.min(...r.measured.map((m) => m.msPerStep));
  const chosen = r.measured.find((m) => m.channelsLast === r.choice.channelsLast && m.amp === r.choice.amp);
  assert.equal(chosen?.msPerStep, best);
  // Then the optimizer on that winner: foreach against fused, the faster chosen.
  assert.deepEqual(
    r.optimizers.map((o) => o.optimizerImpl),
    ['foreach', 'fused'],
  );
  for (const o of r.optimizers) assert.ok(o.msPerStep > 0 && o.imgPerS > 0, JSON.stringify(o));
  const fastest = r.optimizers.reduce((a, b) => (b.msPerStep < a.msPerStep ? b : a));
  assert.equal(r.choice.optimizerImpl, fastest.optimizerImpl);
  // Then the threads: the share and half of it, when the share is more than one.
  const share = t.getNumThreads();
  assert.deepEqual(
    r.threads.map((m) => m.threads),
    share > 1 ? [share, Math.max(1, Math.floor(share / 2))] : [],
  );
  if (share > 1) assert.ok(r.choice.threads === share || r.choice.threads === r.threads[1].threads);
  else assert.equal(r.choice.threads, undefined);
  assert.equal(
    lines.length,
    r.measured.length + r.optimizers.length + r.threads.length,
    'one line per step candidate and round',
  );
  // Then the loader: 0, 1, 2, ... workers timed, the choice by the rule.
  assert.deepEqual(
    r.loaders.map((m) => m.workers),
    workerCandidates(),
  );
  for (const m of r.loaders) assert.ok(m.msPerBatch > 0, JSON.stringify(m));
  assert.equal(typeof r.choice.workers, 'number');
  // One rank: no bucket trial, and the notes say so.
  assert.deepEqual(r.buckets, []);
  assert.equal(r.choice.bucketCapMb, undefined);
  assert.ok(
    r.notes.some((n) => /bucket size: one rank/.test(n)),
    r.notes.join('\n'),
  );
  assert.deepEqual(r.key, tuneKey(c, 'cpu'));
});

test('tune: what the run names (optimizer, workers, bucket size, OMP_NUM_THREADS) is kept, not tuned', async () => {
  const c = planRun({ ...TINY, optimizerImpl: 'loop', bucketCapMb: 50 });
  const r = await tune(c, {
    steps: 1,
    rounds: 1,
    ranks: 2,
    given: ['optimizerImpl', 'workers', 'bucketCapMb'],
    threadsGiven: true,
  });
  assert.deepEqual(r.optimizers, []);
  assert.equal(r.choice.optimizerImpl, 'loop');
  assert.deepEqual([r.threads, r.loaders, r.buckets], [[], [], []]);
  assert.deepEqual(
    [r.choice.threads, r.choice.workers, r.choice.bucketCapMb],
    [undefined, undefined, undefined],
  );
  assert.deepEqual(
    r.notes.map((n) => n.replace(/:.*/, '')),
    ['threads', 'workers', 'bucket size'],
  );
  assert.match(r.notes.join('\n'), /workers: 0, as given.*\n.*bucket size: 50 MiB, as given/);
});

test('the loader rule: no workers when inline loading is cheap, else the fewest that keep ahead', () => {
  assert.deepEqual(workerCandidates(1), [0, 1]);
  assert.deepEqual(workerCandidates(2), [0, 1, 2]);
  assert.deepEqual(workerCandidates(64), [0, 1, 2, 4, 8]);
  const m = (ms: number[]) => ms.map((msPerBatch, workers) => ({ workers, msPerBatch }));
  assert.equal(chooseWorkers(m([2, 1.5, 1]), 100).workers, 0, '2 ms is 2% of a 100 ms step');
  const slow = chooseWorkers(m([80, 45, 30]), 100);
  assert.equal(slow.workers, 1, slow.why);
  assert.match(slow.why, /fewest workers that make a batch in half a 100 ms step \(45\.0 ms\)/);
  const none = chooseWorkers(m([300, 200, 120]), 100);
  assert.equal(none.workers, 2);
  assert.match(none.why, /no worker count .* the fastest/);
});

test('the bucket rule: the fastest size, PyTorch’s 25 MiB unless beaten by 2%', () => {
  assert.deepEqual(BUCKET_CANDIDATES, [5, 10, 25, 50, 100]);
  const m = (img: number[]) =>
    img.map((imgPerS, i) => ({ bucketCapMb: BUCKET_CANDIDATES[i], imgPerS, commMs: 1, exposedMs: 1 }));
  assert.equal(chooseBucket(m([10, 10, 10, 10.1, 10])), 25, 'within the noise');
  assert.equal(chooseBucket(m([10, 10, 10, 10.3, 10])), 50);
  assert.equal(chooseBucket(m([11, 10, 10, 10, 10])), 5);
});

test('the tune file: written whole, reused for the same run only, a corrupt one refused by name', () => {
  const c = planRun(TINY);
  const file = join(tmp, 'sub', 'tune.json');
  assert.equal(readTuneFile(file, tuneKey(c, 'cpu')), null, 'no file yet');
  const r: TuneResult = {
    version: 3,
    key: tuneKey(c, 'cpu'),
    choice: { channelsLast: true, amp: 'off', optimizerImpl: 'fused', workers: 1 },
    measured: [],
    optimizers: [],
    threads: [],
    loaders: [],
    buckets: [],
    bf16: 'bf16 not tried',
    notes: [],
    date: new Date().toISOString(),
  };
  writeTuneFile(file, r);
  assert.deepEqual(readTuneFile(file, tuneKey(c, 'cpu')), r);
  assert.equal(
    readTuneFile(file, tuneKey(planRun({ ...TINY, batchSize: 8 }), 'cpu')),
    null,
    'another batch size: tune again',
  );
  assert.equal(readTuneFile(file, tuneKey(c, 'cpu', 2)), null, 'another number of ranks: tune again');
  writeFileSync(file, JSON.stringify({ ...r, version: 2 }));
  assert.throws(() => readTuneFile(file, tuneKey(c, 'cpu')), /is not a tsddp tune result \(version 3\)/);
  writeFileSync(file, '{"version": 3, "choi');
  assert.throws(
    () => readTuneFile(file, tuneKey(c, 'cpu')),
    (e: Error) => {
      assert.ok(e instanceof TuneError);
      assert.match(e.message, /tune\/?.*tune\.json is not valid JSON .*delete it to tune again/);
      return true;
    },
  );
});

test('no upper bounds: a tune file choosing 100000 workers or 1e9 threads is a TuneError naming the file and the field', () => {
  const c = planRun(TINY);
  const file = join(tmp, 'bounds', 'tune.json');
  const r: TuneResult = {
    version: 3,
    key: tuneKey(c, 'cpu'),
    choice: {
      channelsLast: false,
      amp: 'off',
      optimizerImpl: 'foreach',
      threads: 2,
      workers: 2,
      bucketCapMb: 25,
    },
    measured: [],
    optimizers: [],
    threads: [],
    loaders: [],
    buckets: [],
    bf16: 'bf16 not tried',
    notes: [],
    date: new Date().toISOString(),
  };
  writeTuneFile(file, r);
  assert.deepEqual(readTuneFile(file, tuneKey(c, 'cpu')), r, 'values within the bounds are kept');
  const bad: [string, unknown, RegExp][] = [
    ['workers', 100000, /choice\.workers is 100000; allowed: an integer from 0 to 256/],
    ['threads', 1e9, /choice\.threads is 1000000000; allowed: an integer from 1 to 1024/],
    ['threads', 0, /choice\.threads is 0; allowed: an integer from 1 to 1024/],
    ['workers', '4', /choice\.workers is "4"; allowed: an integer from 0 to 256/],
    ['bucketCapMb', -1, /choice\.bucketCapMb is -1; allowed: a number > 0/],
  ];
  for (const [field, value, message] of bad) {
    writeFileSync(file, JSON.stringify({ ...r, choice: { ...r.choice, [field]: value } }));
    assert.throws(
      () => readTuneFile(file, tuneKey(c, 'cpu')),
      (e: Error) => {
        assert.ok(e instanceof TuneError, String(e));
        assert.ok(e.message.startsWith(`tune file ${file}: `), e.message);
        assert.match(e.message, message);
        assert.match(e.message, /delete it to tune again/);
        return true;
      },
    );
  }
});

const tsddp = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, ['bin/tsddp.mjs', ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, OMP_NUM_THREADS: '1', ...env },
  });
const flags = (dir: string) => [
  '--model',
  'resnet18',
  '--width-multiplier',
  '0.125',
  '--image-size',
  '16',
  '--train-size',
  '32',
  '--val-size',
  '10',
  '--batch-size',
  '4',
  '--epochs',
  '1',
  '--workers',
  '0',
  '--checkpoint-dir',
  dir,
];

test('tsddp train --tune --nproc-per-node 2: tunes once, the workers train with the choice, a resume reuses it', () => {
  const dir = join(tmp, 'run');
  const first = tsddp([
    'train',
    '--tune',
    '--nproc-per-node',
    '2',
    '--master-port',
    '0',
    ...flags(dir),
    '--max-steps',
    '2',
  ]);
  assert.equal(first.status, 0, first.stderr);
  const out = first.stderr + first.stdout;
  const saved = JSON.parse(readFileSync(join(dir, 'tune.json'), 'utf8')) as TuneResult;
  assert.equal(saved.key.threads, 1, 'measured with the threads each worker gets (OMP_NUM_THREADS)');
  const chose = /tune: chose (channels-(first|last)), (fp32|bf16 autocast)/.exec(out);
  assert.ok(chose, out);
  assert.equal(chose[1] === 'channels-last', saved.choice.channelsLast);
  assert.equal(chose[3] === 'bf16 autocast' ? 'bf16' : 'off', saved.choice.amp);
  // The workers' own start line says what they train with.
  const start =
    /\[rank 0\] tsddp train: .*; amp (off|bf16)(, channels-last)?; sgd \((foreach|fused)\); /.exec(out);
  assert.ok(start, out);
  assert.equal(start[1], saved.choice.amp);
  assert.equal(start[2] !== undefined, saved.choice.channelsLast);
  assert.equal(start[3], saved.choice.optimizerImpl);
  assert.equal(
    (out.match(/round 1\/2/g) ?? []).length,
    saved.measured.length + saved.optimizers.length + saved.threads.length + saved.buckets.length,
    'tuned in the launcher only',
  );
  // The bucket sizes were timed on 2 processes and the workers train with the chosen one.
  assert.deepEqual(
    saved.buckets.map((b) => b.bucketCapMb),
    [5, 10, 25, 50, 100],
  );
  for (const b of saved.buckets) assert.ok(b.imgPerS > 0 && (b.commMs ?? 0) > 0, JSON.stringify(b));
  assert.equal(saved.key.ranks, 2);
  assert.match(
    out,
    new RegExp(
      `\\[rank 0\\] tsddp train: .*; ${saved.choice.workers ?? 0} loader worker\\(s\\); DDP buckets ${saved.choice.bucketCapMb} MiB`,
    ),
  );

  const again = tsddp([
    'train',
    '--tune',
    '--nproc-per-node',
    '2',
    '--master-port',
    '0',
    ...flags(dir),
    '--max-steps',
    '4',
    '--resume',
    'auto',
  ]);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stderr, /tune: reusing .*tune\.json/);
  assert.doesNotMatch(again.stderr, /round 1\/2/);
  assert.ok(existsSync(join(dir, 'ckpt-000004')));
});

test('a worker of another launcher refuses --tune without a tune file made beforehand; tsddp tune makes one', () => {
  const dir = join(tmp, 'torchrun');
  const env = { RANK: '0', WORLD_SIZE: '1', LOCAL_RANK: '0', MASTER_ADDR: '127.0.0.1', MASTER_PORT: '1' };
  const refused = tsddp(['train', '--tune', ...flags(dir), '--max-steps', '1'], env);
  assert.equal(refused.status, 2, refused.stderr);
  assert.match(
    refused.stderr,
    /--tune under a launcher needs a tune file made for this run \(.*tune\.json\): run `tsddp tune`/,
  );
  const made = tsddp(['tune', ...flags(dir)]);
  assert.equal(made.status, 0, made.stderr);
  assert.match(made.stderr, /tsddp tune: wrote .*torchrun\/tune\.json/);
  assert.ok(existsSync(join(dir, 'tune.json')));
});

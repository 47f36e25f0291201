// --tune (src/train/tune.ts, src/cli/train.ts, src/cli/tune.ts): which candidates a machine
// gets, the timed trial on a real model and batch, the tune file (kept whole, reused only
// for the same run and machine, a corrupt one refused by name), and `tsddp train --tune`
// launching workers that train with the choice, a resumed run reusing it, and a worker of
// another launcher refusing to tune alone.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { parseConfig } from '../src/train/config.ts';
import {
  nativeBf16,
  readTuneFile,
  TuneError,
  type TuneResult,
  tune,
  tuneKey,
  writeTuneFile,
} from '../src/train/tune.ts';

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
  const c = parseConfig(TINY);
  const lines: string[] = [];
  const r = await tune(c, { steps: 1, rounds: 1, log: (l) => lines.push(l) });
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
  assert.equal(lines.length, r.measured.length + 2, 'one line per candidate and round');
  assert.match(lines.at(-1) ?? '', /, fused sgd: [0-9.]+ ms\/step$/);
  assert.deepEqual(r.key, tuneKey(c, 'cpu'));
});

test('tune: an optimizer implementation the run names is kept, not tuned', async () => {
  const c = parseConfig({ ...TINY, optimizerImpl: 'loop' });
  const r = await tune(c, { steps: 1, rounds: 1 });
  assert.deepEqual(r.optimizers, []);
  assert.equal(r.choice.optimizerImpl, 'loop');
});

test('the tune file: written whole, reused for the same run only, a corrupt one refused by name', () => {
  const c = parseConfig(TINY);
  const file = join(tmp, 'sub', 'tune.json');
  assert.equal(readTuneFile(file, tuneKey(c, 'cpu')), null, 'no file yet');
  const r: TuneResult = {
    version: 2,
    key: tuneKey(c, 'cpu'),
    choice: { channelsLast: true, amp: 'off', optimizerImpl: 'fused' },
    measured: [],
    optimizers: [],
    bf16: 'bf16 not tried',
    date: new Date().toISOString(),
  };
  writeTuneFile(file, r);
  assert.deepEqual(readTuneFile(file, tuneKey(c, 'cpu')), r);
  assert.equal(
    readTuneFile(file, tuneKey({ ...c, batchSize: 8 }, 'cpu')),
    null,
    'another batch size: tune again',
  );
  writeFileSync(file, JSON.stringify({ ...r, version: 1 }));
  assert.throws(() => readTuneFile(file, tuneKey(c, 'cpu')), /is not a tsddp tune result \(version 2\)/);
  writeFileSync(file, '{"version": 2, "choi');
  assert.throws(
    () => readTuneFile(file, tuneKey(c, 'cpu')),
    (e: Error) => {
      assert.ok(e instanceof TuneError);
      assert.match(e.message, /tune\/?.*tune\.json is not valid JSON .*delete it to tune again/);
      return true;
    },
  );
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
    saved.measured.length + saved.optimizers.length,
    'tuned in the launcher only',
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

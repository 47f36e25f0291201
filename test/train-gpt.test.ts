// examples/train_gpt.ts, nanoGPT's train.py for bytes: a tiny GPT learns the sonnets in
// test/fixtures/text/tiny.txt under tsrun with 2 processes (DDP, gradient accumulation
// with noSync), checkpoints on rank 0, resumes where it stopped, and samples text. It
// also runs as a plain process, without a launcher, and fine-tunes a Hugging Face GPT-2 folder.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { verifyCheckpoint } from '../src/checkpoint/index.ts';
import * as t from '../src/index.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-train-gpt-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

// 2 layers, 2 heads, width 32, block 32: 0.03M parameters, about 20 ms a step on 2 cores.
const TINY = [
  ['--data', 'test/fixtures/text/tiny.txt'],
  ['--n-layer', '2'],
  ['--n-head', '2'],
  ['--n-embd', '32'],
  ['--block-size', '32'],
  ['--batch-size', '8'],
  ['--grad-accum', '2'],
  ['--lr', '3e-3'],
  ['--min-lr', '3e-4'],
  ['--warmup-iters', '20'],
  ['--eval-interval', '100'],
  ['--eval-iters', '10'],
  ['--log-interval', '50'],
  ['--sample-tokens', '120'],
].flat();

// One libtorch thread per process, as tsrun sets for 2 workers on 2 cores: a model this
// small gains nothing from more, and on a busy machine a single process with 2 threads
// slows down about tenfold as they wait for each other.
const env = { ...process.env, OMP_NUM_THREADS: '1' };

function run(launcher: string[], flags: string[]): string {
  const r = spawnSync(process.execPath, [...launcher, 'examples/train_gpt.ts', ...TINY, ...flags], {
    encoding: 'utf8',
    timeout: 120_000,
    env,
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  return r.stdout;
}
const tsrun = (flags: string[]) => run(['bin/tsrun.mjs', '--nproc-per-node', '2', '--standalone'], flags);

/** { step: [train loss, val loss] } of the evaluation lines. */
function evals(out: string): Map<number, [number, number]> {
  const m = new Map<number, [number, number]>();
  for (const [, step, train, val] of out.matchAll(/step (\d+): train loss ([\d.]+), val loss ([\d.]+)/g)) {
    m.set(Number(step), [Number(train), Number(val)]);
  }
  return m;
}

/** Each rank's parameter fingerprint. */
function fingerprints(out: string): Map<number, string> {
  return new Map(
    [...out.matchAll(/parameters sha256 ([0-9a-f]{16}) \(rank (\d) of 2\)/g)].map(([, h, r]) => [
      Number(r),
      h,
    ]),
  );
}

test('examples/train_gpt.ts learns bytes under tsrun with DDP, checkpoints, resumes and samples', async () => {
  const outDir = join(tmp, 'ddp');
  const first = tsrun(['--max-iters', '300', '--out-dir', outDir]);
  assert.match(first, /\[rank 0\] gpt: 2 layers, 2 heads, width 32, block 32, 0\.03M parameters/);
  assert.match(first, /2 process\(es\) x 8 x 2 micro-steps x 32 = 1024 tokens\/iter/);
  assert.doesNotMatch(first, /\[rank 1\] (gpt|step|iter|sample)/, 'only rank 0 logs and samples');
  assert.match(first, /\[rank 0\] iter 50: loss [\d.]+, lr [\d.e-]+, [\d.]+ ms\/iter/);

  // Measured: val loss 5.53 at step 0 (ln 256 = 5.55), about 3.07 at 100, 2.71 at 200 and
  // 2.55 at 300 (a unigram model of the text scores about 3.0).
  const losses = evals(first);
  assert.deepEqual([...losses.keys()], [0, 100, 200, 300]);
  assert.ok(losses.get(0)![1] > 5.4, `initial val loss ${losses.get(0)![1]}`);
  const val = losses.get(300)![1];
  assert.ok(val < 2.8, `val loss after 300 steps: ${val}, want < 2.8`);

  // DDP kept the two replicas identical.
  const fp = fingerprints(first);
  assert.equal(fp.size, 2);
  assert.equal(fp.get(0), fp.get(1));

  // keepLast 2 of the checkpoints at steps 100, 200, 300.
  assert.deepEqual(readdirSync(outDir).sort(), ['ckpt-000200', 'ckpt-000300']);
  await verifyCheckpoint(join(outDir, 'ckpt-000300'));

  // A sample of bytes follows the header.
  const sample = first.split('sample (120 bytes, temperature 0.8, top-k 40):\n')[1];
  assert.ok(sample !== undefined, first);
  assert.ok(sample.replace(/\[rank 0\] /g, '').trim().length > 20, sample);

  // The same command with a later --max-iters continues from step 300: the restored
  // model evaluates exactly as it did when saved, and training goes on from there.
  const second = tsrun(['--max-iters', '400', '--out-dir', outDir]);
  assert.match(second, /resuming from .*ckpt-000300 at iter 300/);
  const resumed = evals(second);
  assert.deepEqual([...resumed.keys()], [300, 400]);
  assert.deepEqual(resumed.get(300), losses.get(300));
  assert.deepEqual(
    [...second.matchAll(/iter (\d+): loss/g)].map((m) => Number(m[1])),
    [350, 400],
  );
  assert.ok(resumed.get(400)![1] < val + 0.05, `val loss after resuming: ${resumed.get(400)![1]}`);
  const fp2 = fingerprints(second);
  assert.equal(fp2.get(0), fp2.get(1));
  assert.deepEqual(readdirSync(outDir).sort(), ['ckpt-000300', 'ckpt-000400']);
});

test('examples/train_gpt.ts runs as a single process without a launcher', () => {
  const out = run(['--import', 'tsx'], ['--max-iters', '20', '--out-dir', join(tmp, 'single')]);
  assert.match(out, /1 process\(es\) x 8 x 2 micro-steps/);
  assert.match(out, /step 20: train loss [\d.]+, val loss [\d.]+/);
  assert.match(out, /parameters sha256 [0-9a-f]{16} \(rank 0 of 1\)/);
  assert.deepEqual(readdirSync(join(tmp, 'single')), ['ckpt-000020']);
});

test('--strategy fsdp (with --activation-checkpointing) and zero1 train, and resume from each other’s checkpoints', () => {
  const outDir = join(tmp, 'strategies');
  const common = ['--eval-interval', '50', '--out-dir', outDir];
  const fsdp = tsrun(['--strategy', 'fsdp', '--activation-checkpointing', '--max-iters', '100', ...common]);
  const fsdpEvals = evals(fsdp);
  assert.deepEqual([...fsdpEvals.keys()], [0, 50, 100]);
  assert.ok(fsdpEvals.get(100)![1] < fsdpEvals.get(0)![1] - 1, `fsdp val loss ${fsdpEvals.get(100)![1]}`);
  let fp = fingerprints(fsdp);
  assert.equal(fp.size, 2);
  assert.equal(fp.get(0), fp.get(1), 'fsdp: the gathered weights are the same on both ranks');

  // The checkpoint holds the whole model and optimizer state: zero1 goes on from it, and the
  // restored model evaluates exactly as the sharded one did when it was saved.
  const zero1 = tsrun(['--strategy', 'zero1', '--max-iters', '150', ...common]);
  assert.match(zero1, /resuming from .*ckpt-000100 at iter 100/);
  const zeroEvals = evals(zero1);
  assert.deepEqual(zeroEvals.get(100), fsdpEvals.get(100));
  fp = fingerprints(zero1);
  assert.equal(fp.get(0), fp.get(1), 'zero1: the replicas are identical');

  const back = tsrun(['--strategy', 'fsdp', '--max-iters', '200', ...common]);
  assert.match(back, /resuming from .*ckpt-000150 at iter 150/);
  assert.deepEqual(evals(back).get(150), zeroEvals.get(150));
  assert.ok(evals(back).get(200)![1] < fsdpEvals.get(100)![1] + 0.05);
});

test('--init-from a Hugging Face GPT-2 folder fine-tunes it on token ids, logs to TensorBoard, and --save-pretrained writes a folder fromPretrained reads', async () => {
  // Token ids (uint16, as nanoGPT's prepare.py writes them) the tiny GPT-2 of the fixture
  // can learn: each id is the previous plus 7, modulo its 64 tokens.
  const data = join(tmp, 'ids.bin');
  writeFileSync(data, Buffer.from(Uint16Array.from({ length: 4000 }, (_, i) => (i * 7) % 64).buffer));
  const [tb, saved] = [join(tmp, 'tb'), join(tmp, 'fine-tuned')];
  const out = tsrun([
    ...['--init-from', 'test/fixtures/hf/gpt2/single', '--data', data, '--block-size', '16'],
    ...['--max-iters', '60', '--eval-interval', '30', '--log-interval', '30', '--out-dir', join(tmp, 'ft')],
    ...['--tensorboard', tb, '--save-pretrained', saved],
  ]);
  assert.match(
    out,
    /gpt: 2 layers, 2 heads, width 16, block 16, [\d.]+M parameters from test\/fixtures\/hf\/gpt2\/single/,
  );
  assert.match(out, /3600 train \/ 400 val tokens/);
  const losses = evals(out);
  assert.deepEqual([...losses.keys()], [0, 30, 60]);
  assert.ok(
    losses.get(60)![1] < losses.get(0)![1] - 1,
    `val loss ${losses.get(0)![1]} -> ${losses.get(60)![1]}`,
  );
  assert.doesNotMatch(out, /sample \(/, 'token ids are not bytes: no text sample');
  // TensorBoard: the iteration curves in the folder, each evaluation's pair as two series.
  for (const dir of [tb, join(tb, 'loss_train'), join(tb, 'loss_val')])
    assert.ok(
      readdirSync(dir).some((f) => f.startsWith('events.out.tfevents.')),
      dir,
    );
  // The saved folder holds the fine-tuned weights: the same fingerprint as the ranks printed.
  const model = await t.models.GPT.fromPretrained(saved);
  const digest = createHash('sha256');
  for (const p of Object.values(model.stateDict())) digest.update(p.toBytes());
  assert.equal(digest.digest('hex').slice(0, 16), fingerprints(out).get(0));
});

// `tsddp train --strategy zero1|fsdp` and `--activation-checkpointing` on 2 real ranks:
// ZeRO-1 (ZeroRedundancyOptimizer), FSDP (fullyShard per block) and checkpointed blocks
// train to the losses of plain DDP, step for step; a zero1 or fsdp checkpoint holds the
// whole model and optimizer state (rank 0 gathers the shards), so a run resumes across a
// change of strategy, either way, to the uninterrupted run.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type EvalRecord, readJsonLines, type StepRecord } from '../src/metrics/index.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-train-strategy-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs `tsddp train` on 2 ranks (2 epochs of 4 steps) with `extra` flags; the mean loss per step. */
function train(name: string, extra: string[]): number[] {
  return run(name, extra).losses;
}

/** Runs `tsddp train` on 2 ranks; the mean loss per step, and rank 0's evaluations. */
function run(name: string, extra: string[]): { losses: number[]; evals: EvalRecord[] } {
  const metrics = join(tmp, `${name}.jsonl`);
  const r = spawnSync(
    process.execPath,
    [
      ...[
        'bin/tsddp.mjs',
        'train',
        '--nproc-per-node',
        '2',
        '--model',
        'resnet18',
        '--width-multiplier',
        '0.125',
      ],
      ...[
        '--image-size',
        '16',
        '--train-size',
        '32',
        '--val-size',
        '8',
        '--batch-size',
        '4',
        '--epochs',
        '2',
      ],
      ...['--lr', '0.1', '--workers', '0', '--eval-every', '0', '--seed', '5', '--metrics-file', metrics],
      ...['--checkpoint-dir', join(tmp, name), '--checkpoint-keep', '3'],
      ...extra,
    ],
    { encoding: 'utf8', timeout: 180_000, env: { ...process.env, OMP_NUM_THREADS: '1' } },
  );
  assert.equal(r.status, 0, `${name}: ${r.stdout}\n${r.stderr}`);
  // The run says what it does.
  assert.equal(/sgd sharded by ZeRO-1;/.test(r.stdout), extra.includes('zero1'), `${name}: ${r.stdout}`);
  assert.equal(
    /fully sharded per block, FSDP/.test(r.stdout),
    extra.includes('fsdp'),
    `${name}: ${r.stdout}`,
  );
  assert.equal(
    /, activation checkpointing;/.test(r.stdout),
    extra.includes('--activation-checkpointing'),
    name,
  );
  const records = readJsonLines(metrics);
  const by = new Map<number, number[]>();
  for (const s of records.filter((x): x is StepRecord => x.type === 'step'))
    by.set(s.step, [...(by.get(s.step) ?? []), s.loss]);
  const losses = [...by.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([, ls]) => ls.reduce((a, b) => a + b, 0) / ls.length);
  const evals = records.filter((x): x is EvalRecord => x.type === 'eval' && x.rank === 0);
  return { losses, evals };
}

/** The checkpoint folder of the first epoch's end (step 4) of run `name`. */
function epoch1(name: string): string {
  const dirs = readdirSync(join(tmp, name)).filter((d) => d.includes('4'));
  assert.equal(
    dirs.length,
    1,
    `${name}: one checkpoint at step 4, in ${readdirSync(join(tmp, name)).join(', ')}`,
  );
  return join(tmp, name, dirs[0]);
}

let ddpLosses: number[] | null = null;
/** Plain DDP's losses (run once, its checkpoints kept for the resumes). */
function ddpBaseline(): number[] {
  ddpLosses ??= train('ddp', []);
  return ddpLosses;
}

function assertSame(got: number[], want: number[], what: string): void {
  assert.equal(got.length, want.length, `${what}: steps`);
  for (const [i, v] of got.entries())
    assert.ok(
      Math.abs(v - want[i]) <= 1e-6 * Math.abs(want[i]) + 1e-7,
      `${what} step ${i + 1}: ${v} vs ${want[i]}`,
    );
}

test('zero1 and activation checkpointing train to plain DDP’s losses; zero1 and ddp resume from each other’s checkpoints', () => {
  const ddp = ddpBaseline();
  assert.equal(ddp.length, 8);
  assertSame(train('zero1', ['--strategy', 'zero1']), ddp, 'zero1');
  assertSame(train('ac', ['--activation-checkpointing']), ddp, 'activation checkpointing');
  const fromDdp = train('zero1-from-ddp', ['--strategy', 'zero1', '--resume', epoch1('ddp')]);
  assertSame(fromDdp, ddp.slice(4), 'zero1 resumed from a ddp checkpoint');
  const fromZero = train('ddp-from-zero1', ['--resume', epoch1('zero1')]);
  assertSame(fromZero, ddp.slice(4), 'ddp resumed from a zero1 checkpoint');
});

test('fsdp trains to plain DDP’s losses and evaluations, and fsdp and ddp resume from each other’s checkpoints', () => {
  const ddp = ddpBaseline();
  assertSame(train('fsdp', ['--strategy', 'fsdp']), ddp, 'fsdp');
  const fromDdp = train('fsdp-from-ddp', ['--strategy', 'fsdp', '--resume', epoch1('ddp')]);
  assertSame(fromDdp, ddp.slice(4), 'fsdp resumed from a ddp checkpoint');
  const fromFsdp = train('ddp-from-fsdp', ['--resume', epoch1('fsdp')]);
  assertSame(fromFsdp, ddp.slice(4), 'ddp resumed from an fsdp checkpoint');
});

test('fsdp with gradient accumulation, clipping and uneven validation shares: DDP’s losses and evaluations', () => {
  // 9 validation images in batches of 2: rank 0 has 3 batches, rank 1 two (and one placeholder forward).
  const flags = ['--grad-accum', '2', '--clip-grad-norm', '0.5', '--val-size', '9', '--eval-batch-size', '2'];
  const ddp = run('ddp-accum', [...flags, '--eval-every', '1']);
  const fsdp = run('fsdp-accum', [...flags, '--eval-every', '1', '--strategy', 'fsdp']);
  assert.equal(ddp.losses.length, 4);
  assertSame(fsdp.losses, ddp.losses, 'fsdp with accumulation and clipping');
  assert.equal(ddp.evals.length, 2);
  assert.equal(fsdp.evals.length, 2);
  for (const [i, e] of fsdp.evals.entries()) {
    assert.equal(e.count, 9);
    assertSame(
      [e.loss, e.top1, e.top5],
      [ddp.evals[i].loss, ddp.evals[i].top1, ddp.evals[i].top5],
      `eval ${i}`,
    );
  }
});

test('fsdp with --uneven join, DDP options, fp16 or --tune is refused', async () => {
  const { parseConfig } = await import('../src/train/index.ts');
  const refused: [Record<string, unknown>, RegExp][] = [
    [{ uneven: 'join' }, /fsdp with --uneven join is not supported/],
    [{ bucketCapMb: 50 }, /--bucket-cap-mb.*DistributedDataParallel option/s],
    [{ staticGraph: true }, /--static-graph.*DistributedDataParallel option/s],
    [{ commHook: 'bf16' }, /--comm-hook.*DistributedDataParallel option/s],
    [{ amp: 'fp16' }, /--amp.*GradScaler.*--amp bf16/s],
    [{ tune: true }, /--tune.*--strategy fsdp/s],
  ];
  for (const [opts, message] of refused)
    assert.throws(() => parseConfig({ strategy: 'fsdp', ...opts }), message, JSON.stringify(opts));
  assert.equal(parseConfig({ strategy: 'fsdp', amp: 'bf16' }).strategy, 'fsdp');
});

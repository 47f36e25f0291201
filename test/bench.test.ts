// `tsddp bench` (the DDP scenario suite): a smoke run on a tiny ResNet with PyTorch
// alternating (2 timed steps, world 1 and 2) writes the table, JSON and PNG charts with
// positive numbers; bad options are refused with errors naming them; the plans share the
// base case between scenarios.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type BenchReport, caseKey, planScenarios } from '../src/benchmark/index.ts';
import { parseBenchOptions } from '../src/benchmark/options.ts';

const out = mkdtempSync(join(tmpdir(), 'tsddp-bench-'));
after(() => rmSync(out, { recursive: true, force: true }));

const tsddp = (args: string[]) =>
  spawnSync(process.execPath, ['bin/tsddp.mjs', 'bench', ...args], { encoding: 'utf8', timeout: 300_000 });

const PNG_SIGNATURE = '89504e470d0a1a0a';

test('tsddp bench --reference: scaling and bucket tables, JSON and PNG charts from a real 1- and 2-rank run', () => {
  const run = tsddp([
    ...[
      '--model',
      'resnet18-cifar',
      '--width-multiplier',
      '0.125',
      '--image-size',
      '16',
      '--batch-size',
      '2',
    ],
    ...['--scenarios', 'scaling,bucket', '--bucket-caps', '1,25', '--max-world', '2', '--cores', '2'],
    ...['--warmup', '1', '--steps', '2', '--repeats', '1', '--reference', '--out', out],
  ]);
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);

  const md = readFileSync(join(out, 'results.md'), 'utf8');
  assert.match(md, /Machine: .+, 2 cores/);
  assert.match(md, /PyTorch: torch 2\.\d+/);
  const tables = md.split('\n## ').slice(1);
  assert.equal(tables.length, 3, md);
  const rows = (section: string) =>
    section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| setting'));
  const header = (section: string) => section.split('\n').find((l) => l.startsWith('| setting')) ?? '';
  const cells = (line: string) =>
    line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());

  const scaling = tables[0];
  assert.match(scaling, /^Scaling \(world size\)/);
  assert.deepEqual(cells(header(scaling)), [
    'setting',
    'tsddp img/s',
    'PyTorch img/s',
    'ratio',
    'ratio 95% CI',
    'scaling eff. (tsddp / PyTorch)',
    'comm ms/batch (tsddp / PyTorch)',
    'overlap (tsddp / PyTorch)',
    'exposed ms (tsddp / PyTorch)',
    'page faults/step (tsddp / PyTorch)',
  ]);
  assert.deepEqual(
    rows(scaling).map((l) => cells(l)[0]),
    ['world 1 x 2 thread(s)', 'world 1 x 1 thread(s)', 'world 2 x 1 thread(s)'],
  );
  for (const line of rows(scaling)) {
    const c = cells(line);
    assert.ok(Number(c[1]) > 0 && Number(c[2]) > 0, line);
    assert.match(c[3], /^\d+\.\d\dx$/, line);
  }
  assert.match(cells(rows(scaling)[2])[5], /^\d+% \/ \d+%$/, 'efficiency for world 2');
  for (const line of rows(scaling)) assert.equal(cells(line)[4], '—', 'one round: no interval');
  for (const line of rows(scaling)) assert.match(cells(line)[9], /^\d+ \/ \d+$/, line);

  const bucket = tables[1];
  assert.match(bucket, /^bucketCapMb sweep \(world 2\)/);
  assert.deepEqual(
    rows(bucket).map((l) => cells(l)[0]),
    ['1 MiB', '25 MiB'],
  );

  // Achieved FLOP/s: the same model FLOPs on both sides, so the ratio of GFLOP/s is the img/s ratio.
  const flops = tables[2];
  assert.match(flops, /^Model FLOP\/s and the share of the CPU’s peak/);
  assert.match(flops, /Training FLOPs per image .*resnet18-cifar x0.125 16x16, batch 2\/process: \d/);
  const flopRows = flops.split('\n').filter((l) => l.startsWith('| resnet'));
  assert.equal(flopRows.length, 4, flops);
  for (const line of flopRows) {
    const c = cells(line);
    assert.ok(Number(c[3]) > 0 && Number(c[5]) > 0, line);
    if (/Peak \(fp32.*\): \d/.test(flops)) assert.match(c[4], /^\d+\.\d%$/, line);
  }

  const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
  assert.equal(Object.keys(report.cases).length, 4, 'world 2 at 25 MiB is measured once for both tables');
  for (const c of Object.values(report.cases)) {
    for (const side of [c.tsddp, c.pytorch]) {
      assert.ok(side && side.imgPerS > 0 && side.ms.step > 0 && Number.isFinite(side.loss), c.key);
      assert.ok(side.commMs !== null && side.commMs > 0, `${c.key}: comm time from the Logger`);
    }
    assert.ok(c.ratio !== null && c.ratio > 0);
  }
  for (const png of ['scaling-resnet18-cifar-16.png', 'bucket-resnet18-cifar-16.png', 'ratios.png']) {
    assert.equal(readFileSync(join(out, png)).subarray(0, 8).toString('hex'), PNG_SIGNATURE, png);
  }
});

describe('tsddp bench options', () => {
  test('bad values exit 2 with the option named', () => {
    const run = tsddp(['--scenarios', 'scaling,warp', '--out', out]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /tsddp bench: error: --scenarios scaling,warp: unknown scenario warp/);
  });

  test('every option is validated', () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ model: 'resnet9' }, /--model resnet9: expected one of resnet18/],
      [{ stem: 'tiny' }, /--stem tiny/],
      [{ steps: '0' }, /--steps 0: expected an integer >= 1/],
      [{ warmup: '0' }, /--warmup 0: expected an integer >= 1/],
      [{ batchSize: '2.5' }, /--batch-size 2\.5/],
      [{ maxWorld: 'two' }, /--max-world two/],
      [{ bucketCaps: '25,-1' }, /--bucket-caps -1: expected a number > 0/],
      [{ widthMultiplier: '0' }, /--width-multiplier 0/],
    ];
    for (const [raw, message] of bad) {
      assert.throws(() => parseBenchOptions(raw), { name: 'BenchOptionError', message });
    }
    const o = parseBenchOptions({ model: 'resnet18-cifar', cores: '4' });
    assert.deepEqual(o.model, { model: 'resnet18', stem: 'cifar', widthMultiplier: 1, size: 64, batch: 8 });
    assert.equal(o.scenarios.length, 6);
    assert.equal(o.maxWorld, 2, 'no GPU: 2 processes');
    // With GPUs: one process per GPU, by default and at most.
    assert.equal(parseBenchOptions({}, 4).maxWorld, 4);
    assert.equal(parseBenchOptions({ maxWorld: '2' }, 4).maxWorld, 2);
    assert.throws(() => parseBenchOptions({ maxWorld: '3' }, 2), {
      name: 'BenchOptionError',
      message: /--max-world 3: this machine has 2 CUDA device\(s\)/,
    });
  });

  test('plans: threads = cores / world, world-1 baselines for efficiency, the base case shared', () => {
    const model = { model: 'resnet50', stem: 'imagenet', widthMultiplier: 1, size: 64, batch: 8 } as const;
    const plans = planScenarios(model, ['scaling', 'bucket', 'amp', 'accum', 'hooks', 'channels-last'], {
      cores: 8,
      maxWorld: 4,
      bucketCaps: [5, 25],
    });
    const scaling = plans[0].rows.map((r) => [r.case.world, r.case.threads]);
    assert.deepEqual(scaling, [
      [1, 8],
      [1, 4],
      [1, 2],
      [2, 4],
      [3, 2],
      [4, 2],
    ]);
    const base = plans[1].rows[1].case;
    for (const p of plans.slice(2)) assert.equal(caseKey(p.rows[0].case), caseKey(base), p.name);
    assert.deepEqual(
      plans.find((p) => p.name === 'hooks')?.rows.map((r) => r.case.hook),
      ['none', 'fp16', 'bf16'],
    );
  });
});

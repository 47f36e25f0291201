// nn.SyncBatchNorm between real processes (Gloo on loopback) against PyTorch's BatchNorm over
// the concatenated global batch (test/fixtures/distributed/sync_batchnorm.py; PyTorch's own
// SyncBatchNorm refuses CPU tensors): uneven batches at world 2 and 3, two training steps
// (output, input/weight/bias gradients, running statistics, batch count), eval on the
// running statistics, subgroups, and a DDP model converted by convertSyncBatchnorm. The
// tolerance is that of a reduction in another order (the ranks sum their own images).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import * as t from '../src/index.ts';
import { parseConfig } from '../src/train/config.ts';
import { assertClose, type FixtureTensor } from './helpers/fixtures.ts';
import { okResults, runJob } from './helpers/multiproc.ts';

const fx = JSON.parse(
  readFileSync(new URL('./fixtures/distributed/sync_batchnorm.json', import.meta.url), 'utf8'),
);
const RTOL = 1e-4;
const ATOL = 1e-5;

interface StepResult {
  output: number[];
  input_grad: number[];
  weight_grad: number[];
  bias_grad: number[];
  running_mean: number[];
  running_var: number[];
  num_batches_tracked: number;
}
type StepFixture = Record<string, FixtureTensor[]> & Record<string, FixtureTensor | number>;

const close = (a: number[], e: FixtureTensor, label: string) => assertClose(a, e.data, RTOL, ATOL, label);
const sum = (xs: number[][]) => xs[0].map((_, i) => xs.reduce((s, x) => s + x[i], 0));

/** Each rank's step against the fixture's step over the ranks `ranks` of `got` (in order). */
function checkStep(got: StepResult[], want: StepFixture, label: string): void {
  for (const [i, r] of got.entries()) {
    close(r.output, (want.output as FixtureTensor[])[i], `${label}: rank ${i} output`);
    close(r.input_grad, (want.input_grad as FixtureTensor[])[i], `${label}: rank ${i} input gradient`);
    close(r.running_mean, want.running_mean as FixtureTensor, `${label}: rank ${i} running mean`);
    close(r.running_var, want.running_var as FixtureTensor, `${label}: rank ${i} running var`);
    assert.equal(r.num_batches_tracked, want.num_batches_tracked, `${label}: rank ${i} num_batches_tracked`);
  }
  // Each rank's affine gradients are its images' share; their sum is the global batch's.
  close(sum(got.map((r) => r.weight_grad)), want.weight_grad as FixtureTensor, `${label}: weight gradient`);
  close(sum(got.map((r) => r.bias_grad)), want.bias_grad as FixtureTensor, `${label}: bias gradient`);
}

describe('nn.SyncBatchNorm equals BatchNorm over the global batch', () => {
  for (const [name, worldSize] of [
    ['world2', 2],
    ['world3', 3],
  ] as const) {
    test(`world ${worldSize}, batches of ${fx[name].sizes.join(', ')}: two training steps, then eval`, async () => {
      const rs = okResults(
        await runJob<{ steps: StepResult[]; eval: number[] }>('sync-batchnorm', {
          worldSize,
          config: { name },
        }),
      );
      for (const [k, want] of (fx[name].steps as StepFixture[]).entries())
        checkStep(
          rs.map((r) => r.steps[k]),
          want,
          `step ${k + 1}`,
        );
      for (const [i, r] of rs.entries()) close(r.eval, fx[name].eval_output[i], `rank ${i} eval output`);
    });
  }

  test('subgroups [0, 2] and [1]: each normalises over its own ranks', async () => {
    const rs = okResults(
      await runJob<{ step: StepResult; eval: number[] }>('sync-batchnorm', {
        worldSize: 3,
        config: { name: 'subgroups' },
      }),
    );
    const c = fx.subgroups;
    checkStep([rs[0].step, rs[2].step], c.group02, 'group [0, 2]');
    checkStep([rs[1].step], c.group1, 'group [1]');
    for (const [i, r] of rs.entries()) close(r.eval, c.eval_output[i], `rank ${i} eval output`);
  });

  test('convertSyncBatchnorm under DDP: two SGD steps give one process’s training on the global batch', async () => {
    const rs = okResults(
      await runJob<{ converted: [string, string][]; after: Record<string, number[]> }>('sync-batchnorm', {
        worldSize: 2,
        config: { name: 'ddp' },
      }),
    );
    assert.deepEqual(
      rs[0].converted.map(([, cls]) => cls),
      ['Sequential', 'Conv2d', 'SyncBatchNorm', 'ReLU', 'Flatten', 'Linear'],
    );
    for (const [i, r] of rs.entries())
      for (const [k, want] of Object.entries(fx.ddp.after as Record<string, FixtureTensor>))
        assertClose(r.after[k], want.data, 1e-4, 2e-5, `rank ${i} ${k}`);
  });
});

describe('nn.SyncBatchNorm in one process', () => {
  test('without a process group it is BatchNorm (training and eval)', () => {
    const x = t.randn([4, 3, 2, 2]);
    const a = new t.nn.SyncBatchNorm(3);
    const b = new t.nn.BatchNorm2d(3);
    assert.deepEqual(a.forward(x).toArray(), b.forward(x).toArray());
    assert.deepEqual(a.runningVar?.toArray(), b.runningVar?.toArray());
    a.eval();
    b.eval();
    assert.deepEqual(a.forward(x).toArray(), b.forward(x).toArray());
  });

  test('convertSyncBatchnorm replaces every BatchNorm, sharing parameters and buffers', () => {
    const model = new t.nn.Sequential(
      new t.nn.Conv2d(3, 4, 1),
      new t.nn.BatchNorm2d(4),
      new t.nn.Sequential(new t.nn.BatchNorm1d(4)),
    );
    const bn = model.get(1) as t.nn.BatchNorm2d;
    model.eval();
    const converted = t.nn.SyncBatchNorm.convertSyncBatchnorm(model);
    assert.equal(converted, model);
    const sync = model.get(1) as t.nn.SyncBatchNorm;
    assert.ok(sync instanceof t.nn.SyncBatchNorm);
    assert.equal(sync.weight, bn.weight);
    assert.equal(sync.runningMean, bn.runningMean);
    assert.equal(sync.training, false);
    assert.ok((model.get(2) as t.nn.Sequential).get(0) instanceof t.nn.SyncBatchNorm);
    assert.deepEqual(
      model.namedParameters().map(([n]) => n),
      ['0.weight', '0.bias', '1.weight', '1.bias', '2.0.weight', '2.0.bias'],
    );
    assert.ok(t.nn.SyncBatchNorm.convertSyncBatchnorm(new t.nn.BatchNorm1d(2)) instanceof t.nn.SyncBatchNorm);
  });

  test('refuses a 1-D input', () => {
    assert.throws(
      () => new t.nn.SyncBatchNorm(3).forward(t.zeros([3])),
      /expected at least 2D input \(got 1D input\)/,
    );
  });
});

describe('tsddp train --sync-bn', () => {
  test('trains a ResNet whose BatchNorms are SyncBatchNorms, on 2 ranks', () => {
    const r = spawnSync(
      process.execPath,
      [
        ...['bin/tsddp.mjs', 'train', '--sync-bn', '--nproc-per-node', '2', '--model', 'resnet18'],
        ...['--width-multiplier', '0.125', '--image-size', '16', '--train-size', '32', '--val-size', '8'],
        ...['--batch-size', '4', '--epochs', '1', '--workers', '0', '--eval-every', '0'],
      ],
      { encoding: 'utf8', timeout: 120_000, env: { ...process.env, OMP_NUM_THREADS: '1' } },
    );
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /world 2 x batch 4 .*amp off, SyncBatchNorm;/);
  });

  test('is refused for a ViT, which has no BatchNorm', () => {
    assert.throws(
      () => parseConfig({ model: 'vit_tiny', syncBn: true }),
      /--sync-bn.*vit_tiny has no BatchNorm to synchronize/s,
    );
  });
});

// `tsddp train` options: the schema's defaults (the classic recipe), the linear scaling
// rule, flag parsing, config files, and errors that name the option and its allowed values.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseTrainArgs, trainHelp } from '../src/cli/train-flags.ts';
import { flagOf, OPTIONS } from '../src/train/config.ts';
import {
  ConfigError,
  lrOf,
  parseConfig,
  planRun,
  resolveStem,
  resolveWarmupEpochs,
} from '../src/train/index.ts';
import { launchedPlan, withOptions } from '../src/train/plan.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-train-config-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${(e as Error).stack}`);
    return e.problems;
  }
  assert.fail('expected a ConfigError');
}

test('defaults are the classic ResNet-50 DDP recipe', () => {
  const c = parseConfig({});
  assert.equal(c.model, 'resnet50');
  assert.equal(c.momentum, 0.9);
  assert.equal(c.weightDecay, 1e-4);
  assert.equal(c.schedule, 'cosine');
  assert.equal(c.epochs, 90);
  assert.equal(resolveWarmupEpochs(c), 5);
  assert.equal(resolveWarmupEpochs({ ...c, epochs: 20 }), 2); // at most a tenth of a short run
  assert.equal(resolveWarmupEpochs({ ...c, epochs: 20, warmupEpochs: 4 }), 4);
  assert.equal(c.bucketCapMb, 25);
  assert.equal(c.amp, 'off');
  assert.equal(c.gradAccum, 1);
  assert.equal(c.resume, 'none');
  assert.equal(c.lr, undefined);
  // Linear scaling rule: 0.1 per 256 images of global batch.
  assert.equal(lrOf(planRun(c), 8), 0.1); // 8 ranks x 32 = 256
  assert.equal(lrOf(planRun({ ...c, batchSize: 64, gradAccum: 2 }), 4), 0.2); // 512 images
  assert.equal(lrOf(planRun({ ...c, lr: 0.05 }), 8), 0.05); // absolute wins
  assert.equal(lrOf(planRun({ ...c, baseLr: 0.2, baseBatch: 512 }), 8), 0.1);
  assert.equal(resolveStem(c), 'cifar'); // Shapes 32x32
  assert.equal(resolveStem({ ...c, dataset: 'fake' }), 'imagenet'); // 224x224
});

test('every option has the kebab-case flag torchrun users expect', () => {
  for (const [name, flag] of [
    ['batchSize', '--batch-size'],
    ['gradAccum', '--grad-accum'],
    ['bucketCapMb', '--bucket-cap-mb'],
    ['checkpointDir', '--checkpoint-dir'],
    ['checkpointEvery', '--checkpoint-every'],
    ['metricsFile', '--metrics-file'],
    ['gradientAsBucketView', '--gradient-as-bucket-view'],
  ]) {
    assert.ok(name in OPTIONS, name);
    assert.equal(flagOf(name), flag);
  }
  const help = trainHelp();
  for (const f of [
    '--data',
    '--model',
    '--stem',
    '--epochs',
    '--lr',
    '--amp',
    '--resume',
    '--dashboard',
    '--nproc-per-node',
    '--max-restarts',
  ]) {
    assert.ok(help.includes(f), `--help lists ${f}`);
  }
});

test('an invalid value names the option, its flag and the allowed values', () => {
  const [amp] = problems(() => parseConfig({ amp: 'fp8' }));
  assert.match(amp, /'fp8'/);
  assert.match(amp, /option amp \(--amp\)/);
  assert.match(amp, /allowed: one of off, bf16, fp16/);
  const [model] = problems(() => parseConfig({ model: 'resnet99' }));
  assert.match(model, /--model.*one of resnet18, resnet34, resnet50, resnet101, resnet152/);
  const [epochs] = problems(() => parseConfig({ epochs: 0 }));
  assert.match(epochs, /option epochs \(--epochs\); allowed: an integer >= 1/);
  const [smooth] = problems(() => parseConfig({ labelSmoothing: 1 }));
  assert.match(smooth, /--label-smoothing.*a number >= 0 and < 1/);
  const [data] = problems(() => parseConfig({ dataset: 'imagefolder' }));
  assert.match(data, /missing option data \(--data\): dataset imagefolder needs a data folder/);
  const [warm] = problems(() => parseConfig({ epochs: 3, warmupEpochs: 3 }));
  assert.match(warm, /--warmup-epochs\): warm-up \(3 epochs\) must be shorter than the run \(3 epochs\)/);
  const [resume] = problems(() => parseConfig({ resume: 'auto' }));
  assert.match(resume, /--resume.*needs a checkpoint folder/);
  // Every problem at once.
  assert.equal(problems(() => parseConfig({ amp: 'x', schedule: 'linear', workers: -1 })).length, 3);
});

test('an unknown option is named, with a suggestion and the allowed options', () => {
  const p = problems(() => parseTrainArgs(['--bach-size', '8', '--frobnicate', '--epochs', 'x']));
  assert.match(p[0], /unknown option --bach-size \(did you mean --batch-size\?\)/);
  assert.match(p[1], /unknown option --frobnicate$/);
  assert.match(p[2], /invalid value 'x' for option epochs \(--epochs\); allowed: an integer >= 1/);
  assert.match(p[3], /^allowed options: --model, --stem, .*--batch-size.*--nproc-per-node/);
  const q = problems(() => parseConfig({ ampp: 'bf16' }));
  assert.match(q[0], /unknown option 'ampp' \(did you mean amp\?\)/);
  assert.match(q[1], /^allowed options: model, stem/);
});

test('flags: values, =, booleans, --no-, bare values, launcher flags kept apart', () => {
  const a = parseTrainArgs([
    '--model',
    'resnet18',
    '--lr=0.2',
    '--batch-size',
    '64',
    '--channels-last',
    '--no-pin-memory',
    '--static-graph',
    'false',
    '--amp',
    'bf16',
    '--nproc-per-node',
    '2',
    '--standalone',
    '--max-restarts=3',
    '--weight-decay',
    '5e-4',
  ]);
  assert.equal(a.plan.options.model, 'resnet18');
  assert.equal(a.plan.options.lr, 0.2);
  assert.equal(a.plan.options.batchSize, 64);
  assert.equal(a.plan.options.channelsLast, true);
  assert.equal(a.plan.options.pinMemory, false);
  assert.equal(a.plan.options.staticGraph, false);
  assert.equal(a.plan.options.amp, 'bf16');
  assert.equal(a.plan.options.weightDecay, 5e-4);
  assert.deepEqual(a.launch, { nprocPerNode: '2', standalone: true, maxRestarts: '3' });
  // Workers that `tsddp train --nproc-per-node` starts get its resolved plan as JSON
  // (PLAN_ENV): their whole configuration, taken as it is; flags beside it are refused.
  const w = parseTrainArgs([], JSON.parse(JSON.stringify(a.plan)));
  assert.deepEqual(w.plan, JSON.parse(JSON.stringify(a.plan)));
  assert.deepEqual(w.launch, {});
  assert.match(
    problems(() => parseTrainArgs(['--epochs', '2'], a.plan))[0],
    /TSDDP_TRAIN_PLAN gives this worker its run plan, and a worker takes no flags beside it \(got --epochs 2\)/,
  );
  assert.match(
    problems(() => parseTrainArgs(['--epochs']))[0],
    /option --epochs needs a value \(an integer >= 1\)/,
  );
  // A bare --dashboard is a free port, a bare --skip-bad-samples 100; values may be negative numbers.
  const bare = parseTrainArgs(['--dashboard', '--skip-bad-samples']).plan.options;
  assert.deepEqual([bare.dashboard, bare.skipBadSamples], [0, 100]);
  assert.match(problems(() => parseTrainArgs(['--lr', '-1']))[0], /invalid value -1 for option lr \(--lr\)/);
  assert.match(problems(() => parseTrainArgs(['stray']))[0], /unexpected argument 'stray'/);
  assert.match(
    problems(() => parseTrainArgs(['--batchSize', '8']))[0],
    /unknown option --batchSize \(did you mean --batch-size\?\)/,
  );
});

test('a JSON or YAML config file (camelCase or kebab-case keys), overridden by flags', () => {
  const file = join(tmp, 'c.json');
  writeFileSync(file, JSON.stringify({ model: 'resnet34', 'batch-size': 16, epochs: 7, nprocPerNode: 4 }));
  const a = parseTrainArgs(['--config', file, '--epochs', '3']);
  assert.equal(a.plan.options.model, 'resnet34');
  assert.equal(a.plan.options.batchSize, 16);
  assert.equal(a.plan.options.epochs, 3);
  assert.equal(a.launch.nprocPerNode, '4');
  writeFileSync(file, JSON.stringify({ amp: 'fp32' }));
  assert.match(problems(() => parseTrainArgs(['--config', file]))[0], /'fp32' for option amp \(--amp\)/);
  const yaml = join(tmp, 'c.yaml');
  writeFileSync(
    yaml,
    '# the recipe\nmodel: resnet18\nbatch-size: 64\nchannelsLast: true\nnproc-per-node: 2\n',
  );
  const y = parseTrainArgs(['--config', yaml, '--batch-size', '8']);
  assert.equal(y.plan.options.model, 'resnet18');
  assert.equal(y.plan.options.batchSize, 8);
  assert.equal(y.plan.options.channelsLast, true);
  assert.equal(y.launch.nprocPerNode, '2');
  writeFileSync(yaml, 'model: [resnet18\n');
  assert.match(problems(() => parseTrainArgs(['--config', yaml]))[0], /c\.yaml is not valid YAML/);
  writeFileSync(yaml, '- resnet18\n');
  assert.match(problems(() => parseTrainArgs(['--config', yaml]))[0], /must hold a YAML mapping of options/);
  writeFileSync(yaml, 'modle: resnet18\n');
  assert.match(problems(() => parseTrainArgs(['--config', yaml])).join('\n'), /modle/);
  writeFileSync(file, '{ "model": ');
  assert.match(problems(() => parseTrainArgs(['--config', file]))[0], /not valid JSON/);
});

test('tsddp train exits 2 with the message for a bad option', () => {
  let err: { status?: number; stderr?: string } = {};
  try {
    execFileSync(process.execPath, ['bin/tsddp.mjs', 'train', '--amp', 'fp8'], {
      cwd: root,
      env: { ...process.env, OMP_NUM_THREADS: '1' },
      encoding: 'utf8',
      stdio: 'pipe',
    });
  } catch (e) {
    err = e as typeof err;
  }
  assert.equal(err.status, 2);
  assert.match(
    String(err.stderr),
    /invalid value 'fp8' for option amp \(--amp\); allowed: one of off, bf16, fp16/,
  );
});

test('the fault-tolerance options refuse bad values by name', () => {
  assert.match(problems(() => parseConfig({ timeout: 0 }))[0], /--timeout/);
  assert.match(problems(() => parseConfig({ skipBadSamples: -1 }))[0], /--skip-bad-samples/);
  const [both] = problems(() => parseConfig({ overwrite: true, resume: 'auto', checkpointDir: 'ck' }));
  assert.match(both, /--overwrite.*--resume auto/);
});

test('no upper bounds: --threads 1e9, --workers 100000 and --prefetch 1e6 are refused by name, not run out of memory', () => {
  const [threads] = problems(() => parseTrainArgs(['--threads', '1e9']));
  assert.match(
    threads,
    /invalid value 1000000000 for option threads \(--threads\); allowed: an integer from 1 to 1024/,
  );
  const [workers] = problems(() => parseConfig({ workers: 100000 }));
  assert.match(workers, /option workers \(--workers\); allowed: an integer from 0 to 256/);
  const [prefetch] = problems(() => parseConfig({ prefetch: 1e6 }));
  assert.match(prefetch, /option prefetch \(--prefetch\); allowed: an integer from 1 to 64/);
  const c = parseConfig({ threads: 1024, workers: 256, prefetch: 64 });
  assert.deepEqual([c.threads, c.workers, c.prefetch], [1024, 256, 64], 'the bounds themselves are allowed');
  assert.match(trainHelp(), /--threads.*an integer from 1 to 1024/s);
});

test('the run plan: options resolved once into sections, with every derived value computed', () => {
  const p = planRun({ dataset: 'fake', optimizer: 'adamw', betas: '0.9,0.95', amp: 'bf16', epochs: 20 });
  assert.equal(p.model.arch, 'resnet50');
  assert.equal(p.model.stem, 'imagenet'); // 'auto' resolved: FakeData is 224x224
  assert.equal(p.data.imageSize, 224);
  assert.equal(p.data.evalBatchSize, 64); // twice the training batch
  assert.deepEqual(p.optim.betas, [0.9, 0.95]);
  assert.equal(p.optim.schedule.warmupEpochs, 2); // at most a tenth of a 20-epoch run
  assert.deepEqual([p.amp.dtype, p.amp.scaler], ['bfloat16', false]);
  assert.equal(planRun({ amp: 'fp16' }).amp.scaler, true);
  assert.deepEqual([p.ddp.commHook, p.ddp.powerSGD], [undefined, undefined]);
  const psgd = planRun({ commHook: 'powerSGD', powersgdRank: 2 }).ddp;
  assert.deepEqual(psgd.powerSGD, { matrixApproximationRank: 2, startPowerSGDIter: 1000 });
  assert.equal(planRun({ checkpointDir: 'ck' }).launch.tuneFile, join(process.cwd(), 'ck', 'tune.json'));
  assert.equal(p.options.betas, '0.9,0.95', 'the options as given stay beside the sections');
  // withOptions validates the change and resolves the plan again.
  assert.equal(withOptions(p, { imageSize: 32 }).model.stem, 'cifar');
  assert.match(problems(() => withOptions(p, { batchSize: 0 }))[0], /option batchSize \(--batch-size\)/);
});

test('a worker takes the plan its launcher gave (TSDDP_TRAIN_PLAN), and refuses one that is not a plan', () => {
  const plan = planRun({ model: 'resnet18', epochs: 3 });
  assert.equal(launchedPlan({}), null);
  assert.deepEqual(
    launchedPlan({ TSDDP_TRAIN_PLAN: JSON.stringify(plan) }),
    JSON.parse(JSON.stringify(plan)),
  );
  assert.match(
    problems(() => launchedPlan({ TSDDP_TRAIN_PLAN: '{"epochs": 3' }))[0],
    /TSDDP_TRAIN_PLAN is not valid JSON/,
  );
  assert.match(
    problems(() => launchedPlan({ TSDDP_TRAIN_PLAN: JSON.stringify({ epochs: 3 }) }))[0],
    /TSDDP_TRAIN_PLAN holds no run plan of this tsddp/,
  );
  assert.match(
    problems(() => launchedPlan({ TSDDP_TRAIN_PLAN: JSON.stringify({ ...plan, version: 0 }) }))[0],
    /holds no run plan of this tsddp \(version 2, got 0\)/,
  );
  const { ddp: _ddp, io: _io, ...partial } = plan;
  assert.match(
    problems(() => launchedPlan({ TSDDP_TRAIN_PLAN: JSON.stringify(partial) }))[0],
    /TSDDP_TRAIN_PLAN is not a whole run plan: no ddp, io/,
  );
});

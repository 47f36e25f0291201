// The argument rule beyond nn (src/core/options.ts): an option a callable does not take
// is refused with a TypeError naming it and the nearest names, never ignored. Each case
// here ran silently with the default before: a new user's port of pytorch/examples'
// minGPT-ddp and dcgan kept PyTorch's spelling (`batch_size`, `weight_decay`) or its
// positional form (`GradScaler('cpu')`, `zeroGrad(false)`) and trained with defaults.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  CIFAR10,
  DataLoader,
  DistributedEvalSampler,
  DistributedSampler,
  FakeData,
  ImageFolder,
  MNIST,
  RandomSampler,
  Shapes,
  WeightedRandomSampler,
} from '../src/data/index.ts';
import * as t from '../src/index.ts';

const unknown = (fn: string, key: string, mean?: string) =>
  new RegExp(
    `^TypeError: ${fn.replace(/[_$]/g, '\\$&')}\\(\\): unknown option '${key}'${mean ? ` \\(did you mean '${mean}'\\?\\)` : ''}; ${fn.replace(/[_$]/g, '\\$&')} takes `,
  );
const refuses = (f: () => unknown, re: RegExp) => assert.throws(f, (e: unknown) => re.test(String(e)));

test('DataLoader refuses PyTorch spellings, unknown options and a positional batch size', () => {
  const ds = { length: 4, get: (i: number) => ({ x: i }) };
  refuses(
    () => new DataLoader(ds, { batch_size: 8 } as never),
    unknown('DataLoader', 'batch_size', 'batchSize'),
  );
  refuses(
    () => new DataLoader(ds, { collate_fn: () => 0 } as never),
    unknown('DataLoader', 'collate_fn', 'collate'),
  );
  refuses(() => new DataLoader(ds, { bogus: 1 } as never), unknown('DataLoader', 'bogus'));
  refuses(
    () => new DataLoader(ds, 8 as never),
    /^TypeError: DataLoader\(\): its options are given by name in an object \(\{ batchSize, shuffle, .*\}\), got 8$/,
  );
  // What it takes still works, and an option given as undefined counts as not given.
  assert.equal(new DataLoader(ds, { batchSize: 2, sampler: undefined }).batchSize, 2);
  assert.equal(new DataLoader(ds).batchSize, 1);
});

test('samplers and datasets refuse options they do not take', () => {
  const ds = { length: 8 };
  refuses(
    () => new DistributedSampler(ds, { num_replicas: 2, rank: 0 } as never),
    unknown('DistributedSampler', 'num_replicas', 'numReplicas'),
  );
  assert.equal(new DistributedSampler(ds, { numReplicas: 2, rank: 1 }).length, 4);
  refuses(
    () => new RandomSampler(ds, { num_samples: 3 } as never),
    unknown('RandomSampler', 'num_samples', 'numSamples'),
  );
  refuses(
    () => new WeightedRandomSampler([1, 2], 2, { replacment: false } as never),
    unknown('WeightedRandomSampler', 'replacment', 'replacement'),
  );
  refuses(
    () => new FakeData({ image_size: [3, 8, 8] } as never),
    unknown('FakeData', 'image_size', 'imageSize'),
  );
  refuses(() => new FakeData(8 as never), /^TypeError: FakeData\(\): its options are given by name/);
  assert.deepEqual(new FakeData({ size: 2, imageSize: [1, 4, 4] }).get(0).image.shape, [4, 4, 1]);
  refuses(() => new Shapes({ image_size: 16 } as never), unknown('Shapes', 'image_size', 'imageSize'));
  refuses(
    () => new ImageFolder({ root: '/nonexistent', allow_empty: true } as never),
    unknown('ImageFolder', 'allow_empty', 'allowEmpty'),
  );
  refuses(
    () => new MNIST({ root: '/nonexistent', target_transform: null } as never),
    unknown('MNIST', 'target_transform'),
  );
  refuses(
    () => new CIFAR10({ root: '/nonexistent', download: true } as never),
    /CIFAR10: the constructor does not download .*CIFAR10\.create\(\{ root, download: true \}\)/,
  );
});

test('every optimizer refuses an unknown option, naming itself and the nearest name', () => {
  const p = () => [t.zeros([2]).requiresGrad_()];
  const { optim } = t;
  const ctors: [string, new (params: t.Tensor[], o: object) => unknown][] = [
    ['SGD', optim.SGD],
    ['Adam', optim.Adam],
    ['AdamW', optim.AdamW],
    ['Adadelta', optim.Adadelta],
    ['Adafactor', optim.Adafactor],
    ['Adagrad', optim.Adagrad],
    ['Adamax', optim.Adamax],
    ['ASGD', optim.ASGD],
    ['NAdam', optim.NAdam],
    ['RAdam', optim.RAdam],
    ['RMSprop', optim.RMSprop],
    ['Rprop', optim.Rprop],
    ['SparseAdam', optim.SparseAdam],
    ['LBFGS', optim.LBFGS],
    ['Muon', optim.Muon],
  ];
  for (const [name, Ctor] of ctors) refuses(() => new Ctor(p(), { bogus: 1 }), unknown(name, 'bogus'));
  refuses(
    () => new optim.SGD(p(), { lr: 0.1, weight_decay: 1e-4 } as never),
    unknown('SGD', 'weight_decay', 'weightDecay'),
  );
  refuses(
    () => new optim.AdamW(p(), { weight_decay: 0.1 } as never),
    unknown('AdamW', 'weight_decay', 'weightDecay'),
  );
  // AdamW decouples by definition: decoupledWeightDecay is Adam's option, not AdamW's.
  refuses(
    () => new optim.AdamW(p(), { decoupledWeightDecay: false } as never),
    unknown('AdamW', 'decoupledWeightDecay'),
  );
  assert.equal(new optim.AdamW(p(), { lr: 0.5, weightDecay: 0.1 }).paramGroups[0].weightDecay, 0.1);
});

test("a param group with PyTorch's spelling of a hyperparameter is refused; its own keys are kept", () => {
  const [a, b] = [t.zeros([2]).requiresGrad_(), t.zeros([2]).requiresGrad_()];
  // minGPT's groups: {"params": decay, "weight_decay": 0.1} and {..., "weight_decay": 0.0}.
  refuses(
    () => new t.optim.AdamW([{ params: [a], weight_decay: 0.1 } as never, { params: [b] }]),
    /^TypeError: AdamW param group: 'weight_decay' is PyTorch's spelling of the hyperparameter 'weightDecay'; use 'weightDecay'/,
  );
  const opt = new t.optim.AdamW([
    { params: [a], weightDecay: 0.1, name: 'decay' } as never,
    { params: [b], weightDecay: 0 },
  ]);
  assert.deepEqual(
    opt.paramGroups.map((g) => [g.weightDecay, g.name]),
    [
      [0.1, 'decay'],
      [0, undefined],
    ],
  );
  // A state dict in PyTorch's layout is named as such, not as a group-count mismatch.
  refuses(
    () => opt.loadStateDict({ state: {}, param_groups: [] } as never),
    /^TypeError: loadStateDict: this state dict is in PyTorch's layout \(param_groups, snake_case\); convert it with optimizerStateDictFromPyTorch first$/,
  );
});

test("zeroGrad takes PyTorch's positional setToNone; clipGradNorm_, getTotalNorm and autocast refuse unknown options", () => {
  using _scope = t.scope();
  const lin = new t.nn.Linear(2, 1);
  const opt = new t.optim.SGD(lin.parameters(), { lr: 0.1 });
  const step = () =>
    lin
      .forward(t.ones([1, 2]))
      .sum()
      .backward();
  step();
  opt.zeroGrad(false);
  assert.deepEqual(lin.weight.grad?.toArray(), [[0, 0]]);
  lin.zeroGrad(false);
  assert.deepEqual(lin.weight.grad?.toArray(), [[0, 0]]);
  opt.zeroGrad(true);
  assert.equal(lin.weight.grad, null);
  step();
  lin.zeroGrad();
  assert.equal(lin.weight.grad, null);
  refuses(
    () => opt.zeroGrad({ set_to_none: false } as never),
    unknown('zeroGrad', 'set_to_none', 'setToNone'),
  );
  refuses(
    () => lin.zeroGrad({ setToNone: 0 } as never),
    /^TypeError: zeroGrad\(\): setToNone must be a boolean, got 0$/,
  );

  step();
  const params = lin.parameters();
  refuses(
    () => t.optim.clipGradNorm_(params, 1, 2, { error_if_nonfinite: true } as never),
    unknown('clipGradNorm_', 'error_if_nonfinite', 'errorIfNonfinite'),
  );
  refuses(
    () => t.optim.clipGradNorm_(params, 1, 2, { foreach: true } as never),
    unknown('clipGradNorm_', 'foreach'),
  );
  refuses(
    () => t.optim.getTotalNorm([t.ones([2])], 2, { bogus: 1 } as never),
    unknown('getTotalNorm', 'bogus'),
  );
  assert.ok(t.optim.clipGradNorm_(params, 1, 2, { errorIfNonfinite: true }).item() > 0);

  refuses(
    () => t.autocast({ deviceType: 'cpu', cache_enabled: false } as never, () => 0),
    unknown('autocast', 'cache_enabled'),
  );
  assert.equal(
    t.autocast(
      { deviceType: 'cpu', dtype: 'bfloat16' },
      () => t.nn.functional.linear(t.ones([1, 2]), lin.weight).dtype,
    ),
    'bfloat16',
  );
});

test("GradScaler takes PyTorch's positional device, and refuses unknown options", () => {
  const cpu = new t.GradScaler('cpu', { initScale: 8 });
  assert.equal(cpu.isEnabled(), true);
  assert.equal(cpu.getScale(), 8);
  assert.equal(new t.GradScaler({ device: 'cpu' }).isEnabled(), true);
  refuses(() => new t.GradScaler({ deviceType: 'cpu' } as never), unknown('GradScaler', 'deviceType'));
  refuses(
    () => new t.GradScaler('cpu', { init_scale: 8 } as never),
    unknown('GradScaler', 'init_scale', 'initScale'),
  );
  refuses(
    () => new (t.GradScaler as new (...a: unknown[]) => unknown)({ device: 'cpu' }, { initScale: 8 }),
    /^TypeError: GradScaler\(\): options come once, after the device$/,
  );
});

test('DistributedDataParallel refuses unknown options, a positional device list, and deviceIds on the CPU', () => {
  const model = new t.nn.Linear(2, 1);
  const DDP = t.DistributedDataParallel;
  // Refused before any process group is needed.
  refuses(
    () => new DDP(model, { device_ids: [0] } as never),
    unknown('DistributedDataParallel', 'device_ids', 'deviceIds'),
  );
  refuses(
    () => new DDP(model, [0] as never),
    /^TypeError: DistributedDataParallel\(\): its options are given by name/,
  );
  const tmp = mkdtempSync(join(tmpdir(), 'tsddp-options-'));
  try {
    using _pg = t.distributed.initProcessGroup({
      backend: 'gloo',
      initMethod: `file://${join(tmp, 'store')}`,
      rank: 0,
      worldSize: 1,
    });
    refuses(
      () => new DDP(model, { deviceIds: [0] }),
      /^TypeError: DistributedDataParallel: deviceIds only work with modules on a GPU, but got deviceIds \[0\] and module parameters on the CPU/,
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("t.load takes torch.load's mapLocation 'cpu' and weightsOnly true, and refuses what it cannot do", async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'tsddp-options-'));
  try {
    const path = join(tmp, 'x.pt');
    await t.save({ w: t.arange(3) }, path);
    const loaded = await t.load<{ w: t.Tensor }>(path, { mapLocation: 'cpu', weightsOnly: true });
    assert.deepEqual(loaded.w.toArray(), [0, 1, 2]);
    await assert.rejects(
      t.load(path, { mapLocation: 'cuda' } as never),
      /mapLocation "cuda" is not supported: tensors load on the CPU/,
    );
    await assert.rejects(
      t.load(path, { weightsOnly: false } as never),
      /weightsOnly false is not supported: tsddp loads data only/,
    );
    await assert.rejects(
      t.load(path, { map_location: 'cpu' } as never),
      unknown('load', 'map_location', 'mapLocation'),
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('what PyTorch writes out at its default runs; the unit of a renamed option is said', () => {
  const p = () => [t.zeros([2]).requiresGrad_()];
  // capturable/differentiable at PyTorch's default (false) are what tsddp does.
  assert.equal(
    new t.optim.Adam(p(), { capturable: false, differentiable: false } as never).paramGroups.length,
    1,
  );
  refuses(
    () => new t.optim.Adam(p(), { capturable: true } as never),
    /^TypeError: Adam\(\): capturable=true is not supported by tsddp \(only false, PyTorch's default\)$/,
  );
  refuses(
    () => new DataLoader({ length: 1, get: () => ({ x: 0 }) }, { timeout: 5 } as never),
    /^TypeError: DataLoader\(\): unknown option 'timeout' \(tsddp's is timeoutMs, in milliseconds; PyTorch's timeout is in seconds\); DataLoader takes /,
  );
  // download: false is what the constructor does; only true is refused (it cannot wait).
  for (const make of [
    () => new CIFAR10({ root: '/nonexistent', download: false } as never),
    () => new MNIST({ root: '/nonexistent', download: false } as never),
  ])
    assert.throws(
      make,
      (e: unknown) => !/does not download|unknown option/.test(String(e)) && /nonexistent/.test(String(e)),
    );
  refuses(
    () => new CIFAR10({ root: '/nonexistent', transforms: null } as never),
    unknown('CIFAR10', 'transforms', 'transform'),
  );
  refuses(
    () => t.serialization.loads(new Uint8Array(4), { nam: 'x' } as never),
    unknown('loads', 'nam', 'name'),
  );
  // A class instance or a function in the options' place is named as such.
  refuses(
    () => new t.optim.SGD(p(), new t.Generator() as never),
    /^TypeError: SGD\(\): its options are given by name in an object .*, got a Generator$/,
  );
});

test('models, initProcessGroup, autograd, init, unique, cdist, crossEntropy and SWALR refuse unknown options', () => {
  const { models } = t;
  refuses(
    () => models.resnet18({ num_classes: 10 } as never),
    unknown('ResNet', 'num_classes', 'numClasses'),
  );
  refuses(
    () => models.vitTiny({ num_classes: 10 } as never),
    unknown('VisionTransformer', 'num_classes', 'numClasses'),
  );
  refuses(() => models.gpt({ block_size: 8 } as never), unknown('GPT', 'block_size', 'blockSize'));
  refuses(
    () => models.gpt({}, { activation_checkpointing: true } as never),
    unknown('GPT', 'activation_checkpointing', 'activationCheckpointing'),
  );
  refuses(
    () => t.distributed.initProcessGroup({ init_method: 'env://' } as never),
    unknown('initProcessGroup', 'init_method', 'initMethod'),
  );
  refuses(
    () => t.distributed.initProcessGroup({ timeout: 5 } as never),
    /^TypeError: initProcessGroup\(\): unknown option 'timeout' \(tsddp's is timeoutMs, in milliseconds; PyTorch's timeout is a timedelta\)/,
  );
  using _scope = t.scope();
  const w = t.ones([2]).requiresGrad_();
  refuses(
    () =>
      w
        .mul(w)
        .sum()
        .backward({ retain_graph: true } as never),
    unknown('backward', 'retain_graph', 'retainGraph'),
  );
  refuses(
    () => t.autograd.grad(w.mul(w).sum(), w, { create_graph: true } as never),
    unknown('grad', 'create_graph', 'createGraph'),
  );
  // loss.backward(retain_graph=True) as `loss.backward({ retainGraph: true })`: the graph stays for a second backward.
  const loss = w.mul(w).sum();
  loss.backward({ retainGraph: true });
  loss.backward();
  assert.deepEqual(w.grad?.toArray(), [4, 4]);
  refuses(
    () => loss.backward({ retainGraph: true } as never, {}),
    /^TypeError: backward\(\): the first argument is the gradient/,
  );

  refuses(
    () => t.nn.init.kaimingNormal_(t.empty([2, 2]), { mode: 'fan_out', non_linearity: 'relu' } as never),
    unknown('kaimingNormal_', 'non_linearity', 'nonlinearity'),
  );
  refuses(() => t.nn.init.normal_(t.empty([2]), 0, 1, { gen: null } as never), unknown('normal_', 'gen'));
  refuses(
    () => t.unique(t.arange(3), { return_inverse: true } as never),
    unknown('unique', 'return_inverse', 'returnInverse'),
  );
  refuses(
    () => t.cdist(t.ones([1, 2]), t.ones([1, 2]), { compute_mode: 'x' } as never),
    unknown('cdist', 'compute_mode', 'computeMode'),
  );
  refuses(
    () => t.crossEntropy(t.ones([1, 2]), t.zeros([1], { dtype: 'int64' }), { label_smoothing: 0.1 } as never),
    unknown('crossEntropy', 'label_smoothing', 'labelSmoothing'),
  );
  const opt = new t.optim.SGD([t.zeros([1]).requiresGrad_()], { lr: 0.1 });
  refuses(
    () => new t.optim.swaUtils.SWALR(opt, 0.05, { anneal_epochs: 5 } as never),
    unknown('SWALR', 'anneal_epochs', 'annealEpochs'),
  );
});

test('safetensors, downloads, DistributedEvalSampler, updateBn and ZeroRedundancyOptimizer refuse unknown options', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'tsddp-options-'));
  try {
    const path = join(tmp, 'x.safetensors');
    await t.safetensors.saveFile({ w: t.arange(2) }, path);
    // safetensors.torch.load_file(path, device='cpu') runs as written.
    assert.deepEqual((await t.safetensors.loadFile(path, { device: 'cpu' } as never)).w.toArray(), [0, 1]);
    await assert.rejects(
      t.safetensors.loadFile(path, { device: 'cuda' } as never),
      /^TypeError: readSafetensors\(\): device='cuda' is not supported by tsddp \(only 'cpu', PyTorch's default\)$/,
    );
    refuses(() => t.safetensors.save({}, { metadat: {} } as never), unknown('save', 'metadat', 'metadata'));
    await assert.rejects(
      t.safetensors.saveFile({}, join(tmp, 'y.safetensors'), { metdata: {} } as never),
      unknown('saveFile', 'metdata', 'metadata'),
    );
    // Refused before anything is fetched.
    await assert.rejects(
      CIFAR10.download(tmp, { URL: 'x' } as never),
      unknown('CIFAR10.download', 'URL', 'url'),
    );
    await assert.rejects(
      MNIST.download(tmp, { mirror: ['x'] } as never),
      unknown('MNIST.download', 'mirror', 'mirrors'),
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  refuses(
    () => new DistributedEvalSampler({ length: 4 }, { num_replicas: 2 } as never),
    unknown('DistributedEvalSampler', 'num_replicas', 'numReplicas'),
  );
  await assert.rejects(
    t.optim.swaUtils.updateBn([], new t.nn.Linear(1, 1), { dev: 'cpu' } as never),
    unknown('updateBn', 'dev'),
  );
  refuses(
    () =>
      new t.distributed.optim.ZeroRedundancyOptimizer([t.zeros([1]).requiresGrad_()], {
        optimizerClass: t.optim.SGD,
        parameters_as_bucket_view: true,
      } as never),
    unknown('ZeroRedundancyOptimizer', 'parameters_as_bucket_view', 'parametersAsBucketView'),
  );
});

// Activation checkpointing (src/utils/checkpoint.ts, native/src/checkpoint.cc): a
// checkpointed region gives exactly the plain run's loss and gradients — dropout included,
// its RNG state replayed, and the RNG after backward where the plain run leaves it — for
// checkpoint() and checkpointSequential(), with several outputs and non-tensor arguments;
// PyTorch's reentrant rules with useReentrant: true; what it cannot do is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';

const { checkpoint, checkpointSequential, keptRegions } = t.utils.checkpoint;

function mlp(): t.nn.Sequential {
  t.manualSeed(0);
  return new t.nn.Sequential(
    new t.nn.Linear(8, 16),
    new t.nn.ReLU(),
    new t.nn.Dropout(0.5),
    new t.nn.Linear(16, 16),
    new t.nn.GELU(),
    new t.nn.Dropout(0.3),
    new t.nn.Linear(16, 4),
  );
}

const flat = (x: t.Tensor | null) => (x === null ? null : Array.from(x.toTypedArray() as Float32Array));

/** The loss, every gradient (parameters and input), and the next random draws, of one step. */
function step(m: t.nn.Module, x: t.Tensor, forward: (x: t.Tensor) => t.Tensor) {
  return t.tidy(() => {
    for (const p of m.parameters()) p.grad = null;
    x.grad = null;
    t.manualSeed(7);
    const loss = forward(x).pow(2).sum();
    loss.backward();
    return {
      loss: loss.item(),
      grads: m.parameters().map((p) => flat(p.grad)),
      inputGrad: x.requiresGrad ? flat(x.grad) : null,
      after: flat(t.rand([4])),
    };
  });
}

for (const useReentrant of [false, true]) {
  test(`checkpoint(useReentrant: ${useReentrant}) gives the plain run's loss, gradients and RNG, dropout included`, () => {
    const m = mlp();
    const x = t.randn([5, 8], { requiresGrad: true });
    const plain = step(m, x, (z) => m.forward(z));
    const ck = step(m, x, (z) => checkpoint((y: t.Tensor) => m.forward(y), z, { useReentrant }));
    assert.deepEqual(ck, plain);
    assert.ok(plain.grads.every((g) => g !== null));
    assert.equal(keptRegions(), 0, 'the region is forgotten once its graph is gone');
  });
}

test('a region’s input gradient lives as long as autograd needs it, not to the end of the caller’s scope', () => {
  t.tidy(() => {
    const x = t.randn([256, 1024], { requiresGrad: true });
    const y = x.mul(2); // not a leaf: the region's input gradient flows on through mul's backward
    const loss = checkpoint((z: t.Tensor) => z.relu().sum(), y, { useReentrant: false });
    const before = t.memory();
    loss.backward();
    // Kept by the caller's scope, the 1 MiB gradient would still be held here.
    assert.deepEqual(t.memory(), before);
    assert.equal(x.grad?.shape.join(), '256,1024');
  });
});

test('checkpointSequential: 3 segments of a Sequential give the plain run', () => {
  const m = mlp();
  const x = t.randn([5, 8], { requiresGrad: true });
  const plain = step(m, x, (z) => m.forward(z));
  const ck = step(m, x, (z) => checkpointSequential(m, 3, z, { useReentrant: false }));
  assert.deepEqual(ck, plain);
});

test('several outputs, a non-tensor argument, an input without grad (useReentrant: false)', () => {
  const m = mlp();
  const x = t.randn([5, 8]);
  const region = (z: t.Tensor, scale: number) => {
    const h = m.forward(z);
    return [h.mul(scale), h.sum(1), 'label'] as const;
  };
  const run = (ck: boolean) =>
    step(m, x, (z) => {
      const [a, b, label] = ck ? checkpoint(region, z, 3, { useReentrant: false }) : region(z, 3);
      assert.equal(label, 'label');
      return a.sum(1).add(b);
    });
  const plain = run(false);
  assert.deepEqual(run(true), plain);
  assert.ok(
    plain.grads.every((g) => g !== null),
    'the parameters get gradients though the input has none',
  );
});

test('useReentrant: true with no input requiring grad: PyTorch’s warning, and no gradients', () => {
  const m = mlp();
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);
  process.on('warning', onWarning);
  const y = checkpoint((z: t.Tensor) => m.forward(z), t.randn([2, 8]), { useReentrant: true });
  assert.equal(y.requiresGrad, false);
  // Warnings are emitted on a later tick.
  return new Promise<void>((resolve) =>
    setImmediate(() => {
      process.off('warning', onWarning);
      assert.ok(
        warnings.some((w) => /None of the inputs have requires_grad=True/.test(w)),
        warnings.join('; '),
      );
      resolve();
    }),
  );
});

test('autograd.grad through a region, and a region whose recomputation changes shape, are errors', () => {
  const m = mlp();
  const x = t.randn([3, 8], { requiresGrad: true });
  const y = checkpoint((z: t.Tensor) => m.forward(z), x, { useReentrant: false });
  assert.throws(() => t.autograd.grad(y.sum(), [x]), /incompatible with\s+autograd\.grad\(\)/);
  let calls = 0;
  const shifty = (z: t.Tensor) => (calls++ === 0 ? z.mul(2) : z.mul(2).sum(0));
  const w = checkpoint(shifty, x, { useReentrant: false });
  assert.throws(() => w.sum().backward(), /different metadata than during the forward pass/);
});

test('outside grad mode, or with bad options, checkpoint runs the function or refuses', () => {
  const x = t.randn([2, 2], { requiresGrad: true });
  const y = t.noGrad(() => checkpoint((z: t.Tensor) => z.mul(2), x, { useReentrant: false }));
  assert.equal(y.requiresGrad, false);
  assert.throws(
    () => checkpoint((z: t.Tensor) => z, x, { useReentrant: false, determinismCheck: 'strict' as never }),
    /determinismCheck must be 'default' or 'none'/,
  );
  assert.throws(
    () => checkpointSequential([], 0, x, { useReentrant: false }),
    /segments must be a positive integer/,
  );
});

/** Loss and parameter gradients of one training step of `m` on `forward`, from seed 3. */
function modelStep(m: t.nn.Module, forward: () => t.Tensor) {
  return t.tidy(() => {
    for (const p of m.parameters()) p.grad = null;
    t.manualSeed(3);
    const loss = forward();
    loss.backward();
    return { loss: loss.item(), grads: m.parameters().map((p) => flat(p.grad)) };
  });
}

test('activationCheckpointing on GPT, ViT and ResNet gives the plain run’s loss and gradients', () => {
  t.manualSeed(0);
  const gpt = new t.models.GPT({ vocabSize: 32, blockSize: 8, nLayer: 2, nHead: 2, nEmbd: 16, dropout: 0.1 });
  const idx = t.randint(0, 32, [2, 8]);
  const gptLoss = () => gpt.forward(idx, idx).loss as t.Tensor;
  t.manualSeed(0);
  const vit = t.models.vitTiny({ imageSize: 8, numClasses: 3, dropout: 0.1 });
  t.manualSeed(0);
  const resnet = t.models.resnet18({ numClasses: 3, stem: 'cifar', widthMultiplier: 0.125 });
  const images = t.randn([2, 3, 8, 8]);
  const target = t.tensor(BigInt64Array.of(0n, 2n));
  const classify = (m: t.nn.Module) => () =>
    t.nn.functional.crossEntropy(m.forward(images) as t.Tensor, target);
  const cases: [string, t.nn.Module & { activationCheckpointing: boolean }, () => t.Tensor][] = [
    ['GPT', gpt, gptLoss],
    ['ViT', vit, classify(vit)],
    ['ResNet', resnet, classify(resnet)],
  ];
  for (const [name, m, forward] of cases) {
    m.activationCheckpointing = false;
    const plain = modelStep(m, forward);
    m.activationCheckpointing = true;
    assert.deepEqual(modelStep(m, forward), plain, name);
    // The regions were really there: one per block (and GPT's loss), while the graph lives.
    const before = keptRegions();
    const regions = t.tidy(() => {
      forward();
      return keptRegions() - before;
    });
    assert.equal(regions, { GPT: 3, ViT: 6, ResNet: 8 }[name], `${name}: checkpointed blocks`);
  }
  assert.equal(
    new t.models.GPT(
      { nLayer: 1, nHead: 1, nEmbd: 4, vocabSize: 8, blockSize: 4 },
      { activationCheckpointing: true },
    ).activationCheckpointing,
    true,
  );
});

// The values tsddp saves for PyTorch to read (test/pt-save.test.ts, and
// test/fixtures/pt/make_from_tsddp.ts, which commits what PyTorch read of them). Every
// number in them is exact on any CPU (small dyadic fractions, set rather than computed),
// so the committed description of what PyTorch read holds wherever the test runs.
import * as t from '../../src/index.ts';

/** Exact float32 values: multiples of 1/64 in [-0.75, 0.75], varied by `seed`. */
function dyadic(n: number, seed: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => (((i * 37 + seed * 11) % 97) - 48) / 64);
}

/** Fills every tensor of a state dict in place with exact values (variances 1/4 up, int64 counters 2). */
function fill(sd: Record<string, t.Tensor>): void {
  Object.entries(sd).forEach(([name, x], k) => {
    const values = dyadic(x.numel(), k);
    if (name.endsWith('running_var'))
      for (let i = 0; i < values.length; i++) values[i] = Math.abs(values[i]) + 0.25;
    const src =
      x.dtype === 'int64'
        ? t.tensor(
            BigInt64Array.from({ length: x.numel() }, () => 2n),
            { shape: x.shape },
          )
        : t.tensor(values, { shape: x.shape });
    x.copy_(src);
    src.dispose();
  });
}

/**
 * imagenet/main.py's checkpoint from tsddp: a ResNet-18 in torchvision's layout (1/16
 * width, 10 classes), SGD with momentum buffers and a StepLR three epochs in, with
 * PyTorch's key names (optimizerStateDictToPyTorch, schedulerStateDictToPyTorch).
 */
export function tsddpCheckpoint(): Record<string, unknown> {
  const model = t.models.resnet18({ widthMultiplier: 1 / 16, numClasses: 10 });
  fill(model.stateDict());
  const params = model.parameters();
  const opt = new t.optim.SGD(params, { lr: 0.1, momentum: 0.9, weightDecay: 1e-4 });
  const sched = new t.optim.lrScheduler.StepLR(opt, { stepSize: 30, gamma: 0.1 });
  const state: Record<number, { momentum_buffer: t.Tensor }> = {};
  params.forEach((p, i) => {
    state[i] = { momentum_buffer: t.tensor(dyadic(p.numel(), 100 + i), { shape: p.shape }) };
  });
  opt.loadStateDict({ state, paramGroups: opt.stateDict().paramGroups });
  for (let epoch = 0; epoch < 3; epoch++) sched.step();
  return {
    epoch: 3,
    arch: 'resnet18',
    state_dict: model.stateDict(),
    best_acc1: t.tensor(12.5),
    optimizer: t.optim.optimizerStateDictToPyTorch(opt.stateDict()),
    scheduler: t.optim.schedulerStateDictToPyTorch(sched.stateDict()),
  };
}

/** Every kind of value t.save writes: each dtype, views, tied and repeated tensors, numbers, keys of each kind. */
export function tsddpValues(): Record<string, unknown> {
  const base = t.tensor(Float32Array.from({ length: 12 }, (_, i) => i / 8 - 0.5));
  const grid = base.view([3, 4]);
  const weight = t.tensor(dyadic(6, 1), { shape: [2, 3] });
  const same = t.tensor([4.25, -1]);
  const f = [0, -0, 1.5, -2.25, Infinity, -Infinity, NaN, 2 ** -20, 1024];
  const dtypes: Record<string, t.Tensor> = {
    float32: t.tensor(Float32Array.from(f)),
    float64: t.tensor(Float64Array.from([...f, 5e-324, 1.7e308])),
    float16: t.tensor(Float32Array.from(f), { dtype: 'float16' }),
    bfloat16: t.tensor(Float32Array.from(f), { dtype: 'bfloat16' }),
    int64: t.tensor(BigInt64Array.from([-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n])),
    int32: t.tensor(Int32Array.from([-(2 ** 31), 2 ** 31 - 1, -1])),
    int16: t.tensor(Int16Array.from([-(2 ** 15), 2 ** 15 - 1, -1])),
    int8: t.tensor(Int8Array.from([-128, 127, -1])),
    uint8: t.tensor(Uint8Array.from([0, 255, 7])),
    bool: t.tensor([true, false, true]),
  };
  const keyed = new Map<t.serialization.PtKey, unknown>([
    ['0', 'an index-like str'],
    [1.5, 'a float'],
    [true, 'a bool'],
    [null, 'None'],
    [-1, 'a negative int'],
    [2n ** 70n, 'a big int'],
  ]);
  return {
    dtypes,
    views: {
      base,
      slice: base.narrow(0, 3, 4),
      grid,
      transposed: grid.t(),
      strided: base.asStrided([4], [3], 1),
      expanded: t.tensor([1.5]).expand([4, 3]),
      tail: t.arange(6).narrow(0, 4, 2),
    },
    tied: { 'embed.weight': weight, 'head.weight': weight.detach() },
    same_object: [same, same],
    scalar: t.tensor(2.5),
    empty: t.zeros([0, 3]),
    requires_grad: t.tensor([0.5, -0.75]).requiresGrad_(true),
    ints: [
      0,
      1,
      -1,
      255,
      256,
      65535,
      65536,
      2 ** 31 - 1,
      -(2 ** 31),
      2 ** 31,
      Number.MAX_SAFE_INTEGER,
      2n ** 100n,
      -(2n ** 100n),
    ],
    floats: [0.5, -0, 1e-300, 1.5e300, Infinity, -Infinity, NaN, 0.1, 2 ** 60],
    strings: ['', 'ascii', 'ünïcödé ✓', '\u{1f600}', 'a\nb'],
    bools: [true, false],
    none: null,
    tuple: Object.freeze([1, 'two', Object.freeze([3.5, null]), Object.freeze([])]),
    nested: [[[]], { a: [{ b: Object.freeze([]) }] }],
    int_keys: { 0: 'a', 1: 'b', 7: 'c' },
    map_keys: keyed,
    ['__proto__' as string]: { x: 'a key named __proto__' },
    odict: t.serialization.orderedDict({ b: 1, a: 2 }),
    odict_attrs: t.serialization.orderedDict({ x: 0.25 }, { note: 'attrs are kept' }),
    long_list: Array.from({ length: 2500 }, (_, i) => i),
    big_dict: Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`k${i}`, i])),
  };
}

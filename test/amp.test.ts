// AMP: autocast regions (op dtypes per libtorch's CPU lists, nesting, restore on throw,
// async form, a conv+linear net against PyTorch) and GradScaler (skip on inf/NaN,
// backoff and growth, a scripted sequence against torch.amp.GradScaler, stateDict,
// misuse errors, the disabled pass-through). Fixtures: test/fixtures/amp/amp.py.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  autocast,
  autocastAsync,
  GradScaler,
  getAutocastDtype,
  isAutocastEnabled,
} from '../src/amp/index.ts';
import * as t from '../src/index.ts';
import { assertClose, type FixtureTensor, toTensor, values } from './helpers/fixtures.ts';

interface AmpFixture {
  autocast_ops: Record<string, Record<string, string>>;
  autocast_net: Record<string, FixtureTensor & { dtype: string }> & { hidden_dtype: string };
  grad_scaler: {
    init: { growth_interval: number; lr: number };
    p0: number[];
    c: number[];
    steps: {
      kind: 'good' | 'inf' | 'nan' | 'unscale';
      scaled_loss: number;
      grad_scaled: number[];
      scale: number;
      growth_tracker: number;
      params: number[];
    }[];
    state_dict: Record<string, number>;
  };
}

const fixture = JSON.parse(
  readFileSync(new URL('./fixtures/amp/amp.json', import.meta.url), 'utf8'),
) as AmpFixture;

const CPU_BF16 = { deviceType: 'cpu', dtype: 'bfloat16' } as const;

/** Same values as seq() in amp.py: sin(0.7 i + offset) * scale (values only need to be valid inputs). */
function seq(shape: number[], scale = 0.5, offset = 0, dtype: t.DType = 'float32'): t.Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return t.arange(n, { dtype: 'float32' }).mul(0.7).add(offset).sin().mul(scale).reshape(shape).to(dtype);
}
const probs = (shape: number[], dtype: t.DType) => seq(shape, 2).sigmoid().to(dtype);

/** The TypeScript side of each op case in amp.py (same aten op, same input dtypes). */
function opCases(low: t.DType): Record<string, () => t.Tensor> {
  const f = 'float32';
  const x = (shape: number[], dtype: t.DType, offset = 0) => seq(shape, 0.5, offset, dtype);
  const tgt = () => t.tensor([0, 2, 1, 3], { dtype: 'int64' });
  return {
    linear_f32: () => t.linear(x([4, 5], f), x([3, 5], f, 1), x([3], f, 2)),
    matmul_f32: () => t.matmul(x([4, 4], f), x([4, 4], f, 1)),
    mm_f32: () => t.mm(x([4, 3], f), x([3, 2], f, 1)),
    bmm_f32: () => t.bmm(x([2, 4, 3], f), x([2, 3, 2], f, 1)),
    addmm_f32: () => t.addmm(x([4, 2], f), x([4, 3], f, 1), x([3, 2], f, 2)),
    baddbmm_f32: () => t.baddbmm(x([2, 4, 2], f), x([2, 4, 3], f, 1), x([2, 3, 2], f, 2)),
    conv1d_f32: () => t.conv1d(x([1, 2, 6], f), x([3, 2, 3], f, 1)),
    conv2d_f32: () => t.conv2d(x([1, 2, 5, 5], f), x([3, 2, 3, 3], f, 1), x([3], f, 2)),
    conv3d_f32: () => t.conv3d(x([1, 2, 3, 3, 3], f), x([2, 2, 2, 2, 2], f, 1)),
    conv_transpose2d_f32: () => t.convTranspose2d(x([1, 2, 3, 3], f), x([2, 3, 2, 2], f, 1)),
    softmax_f32: () => t.softmax(x([4, 4], f), 1),
    log_softmax_f32: () => t.logSoftmax(x([4, 4], f), 1),
    relu_f32: () => t.relu(x([4, 4], f)),
    sum_f32: () => x([4, 4], f).sum(),
    layer_norm_f32: () => t.layerNorm(x([4, 4], f), [4]),
    max_pool2d_f32: () => t.maxPool2d(x([1, 2, 4, 4], f), 2),
    mse_loss_low: () => t.mseLoss(x([4, 4], low), x([4, 4], low, 1)),
    l1_loss_low: () => t.l1Loss(x([4, 4], low), x([4, 4], low, 1)),
    smooth_l1_loss_low: () => t.smoothL1Loss(x([4, 4], low), x([4, 4], low, 1)),
    huber_loss_low: () => t.huberLoss(x([4, 4], low), x([4, 4], low, 1)),
    cross_entropy_low: () => t.crossEntropy(x([4, 4], low), tgt()),
    nll_loss_low: () => t.nll(x([4, 4], low), tgt()),
    binary_cross_entropy_low: () => t.binaryCrossEntropy(probs([4, 4], low), probs([4, 4], low)),
    binary_cross_entropy_with_logits_low: () =>
      t.binaryCrossEntropyWithLogits(x([4, 4], low), probs([4, 4], low)),
    kl_div_low: () => t.klDiv(x([4, 4], low), probs([4, 4], low), t.reductionCode('sum')),
    prod_low: () => x([4], low, 1).prod(),
    softmax_low: () => t.softmax(x([4, 4], low), 1),
    log_softmax_low: () => t.logSoftmax(x([4, 4], low), 1),
    relu_low: () => t.relu(x([4, 4], low)),
    sum_low: () => x([4, 4], low).sum(),
    cumsum_low: () => t.cumsum(x([4, 4], low), 1),
    layer_norm_low: () => t.layerNorm(x([4, 4], low), [4]),
    add_low_f32: () => x([4, 4], low).add(x([4, 4], f, 1)),
  };
}

// --- autocast ---------------------------------------------------------------------------

for (const low of ['bfloat16', 'float16'] as const) {
  test(`CPU ${low} autocast: every op's output dtype matches PyTorch's`, () => {
    const expected = fixture.autocast_ops[low];
    const cases = opCases(low);
    const names = Object.keys(expected).filter((k) => !k.startsWith('outside_'));
    // Every fixture case has a TypeScript counterpart and vice versa: nothing skipped.
    assert.deepEqual(Object.keys(cases).sort(), names.sort());
    t.tidy(() => {
      autocast({ deviceType: 'cpu', dtype: low }, () => {
        assert.equal(isAutocastEnabled('cpu'), true);
        assert.equal(getAutocastDtype('cpu'), low);
        for (const name of names) assert.equal(cases[name]().dtype, expected[name], `${name} under ${low}`);
      });
      assert.equal(cases.linear_f32().dtype, expected.outside_linear_f32, 'linear outside the region');
    });
  });
}

test('autocast restores the previous state, nests, and an inner enabled:false region disables', () => {
  t.tidy(() => {
    const a = seq([4, 5]);
    const w = seq([3, 5], 0.5, 1);
    const before = getAutocastDtype('cpu');
    assert.equal(isAutocastEnabled('cpu'), false);
    assert.equal(t.linear(a, w).dtype, 'float32');
    const r = autocast(CPU_BF16, () => {
      assert.equal(t.linear(a, w).dtype, 'bfloat16');
      autocast({ deviceType: 'cpu', enabled: false }, () => {
        assert.equal(isAutocastEnabled('cpu'), false);
        assert.equal(t.linear(a, w).dtype, 'float32');
        assert.equal(t.matmul(a, w.t()).dtype, 'float32');
      });
      assert.equal(isAutocastEnabled('cpu'), true, 're-enabled after the inner region');
      autocast({ deviceType: 'cpu', dtype: 'float16' }, () => {
        assert.equal(t.linear(a, w).dtype, 'float16');
      });
      assert.equal(getAutocastDtype('cpu'), 'bfloat16', 'outer dtype restored');
      return t.linear(a, w);
    });
    assert.equal(r.dtype, 'bfloat16', 'the return value passes through');
    assert.equal(isAutocastEnabled('cpu'), false);
    assert.equal(getAutocastDtype('cpu'), before);
    assert.equal(t.linear(a, w).dtype, 'float32');
  });
});

test('autocast restores the state after a throw', () => {
  const err = new Error('boom');
  assert.throws(
    () =>
      autocast(CPU_BF16, () =>
        autocast({ deviceType: 'cpu', dtype: 'float16' }, () => {
          throw err;
        }),
      ),
    (e) => e === err,
  );
  assert.equal(isAutocastEnabled('cpu'), false);
  assert.equal(getAutocastDtype('cpu'), 'bfloat16');
  t.tidy(() => assert.equal(t.linear(seq([2, 3]), seq([2, 3])).dtype, 'float32'));
});

test('autocast validates its options', () => {
  assert.throws(() => autocast({ deviceType: 'tpu' as 'cpu' }, () => 0), TypeError);
  assert.throws(
    () => autocast({ deviceType: 'cpu', dtype: 'float32' }, () => 0),
    /supports dtypes bfloat16, float16/,
  );
  assert.throws(() => autocast({ deviceType: 'cpu', dtype: 'int8' }, () => 0), TypeError);
  assert.throws(
    () => autocast({ deviceType: 'cpu', dtype: 'nope' as t.DType }, () => 0),
    /autocast\(\): dtype: unknown dtype 'nope'/,
  );
  // PyTorch's alias: torch.half is float16.
  assert.equal(
    autocast({ deviceType: 'cpu', dtype: 'half' as t.DType }, () => getAutocastDtype('cpu')),
    'float16',
  );
  // An async function in the sync form is refused, and the state is still restored.
  assert.throws(() => autocast(CPU_BF16, async () => 0), /use autocastAsync/);
  assert.equal(isAutocastEnabled('cpu'), false);
});

test('CUDA autocast follows CUDA availability, as torch.autocast does', () => {
  const available = t.cuda.isAvailable();
  autocast({ deviceType: 'cuda' }, () => {
    // Without CUDA, PyTorch warns and runs the region with CUDA autocast off.
    assert.equal(isAutocastEnabled('cuda'), available);
    assert.equal(getAutocastDtype('cuda'), 'float16', 'CUDA default dtype');
    assert.equal(isAutocastEnabled('cpu'), false, 'the CPU state is separate');
  });
  assert.equal(isAutocastEnabled('cuda'), false);
});

test('autocastAsync keeps the region across awaits and restores on settle or rejection', async () => {
  const a = seq([4, 5]).keep();
  const w = seq([3, 5], 0.5, 1).keep();
  const dtype = await autocastAsync(CPU_BF16, async () => {
    await new Promise((r) => setTimeout(r, 5));
    return t.tidy(() => t.linear(a, w).dtype);
  });
  assert.equal(dtype, 'bfloat16');
  assert.equal(isAutocastEnabled('cpu'), false);
  await assert.rejects(
    autocastAsync(CPU_BF16, async () => {
      await Promise.resolve();
      throw new Error('late');
    }),
    /late/,
  );
  assert.equal(isAutocastEnabled('cpu'), false);
  a.dispose();
  w.dispose();
});

test('conv+linear net under CPU bf16 autocast matches PyTorch (output, loss, float32 grads)', () => {
  const n = fixture.autocast_net;
  t.tidy(() => {
    const x = toTensor(n.x);
    const target = toTensor(n.target);
    const [convW, convB, fcW, fcB] = [n.conv_w, n.conv_b, n.fc_w, n.fc_b].map((p) =>
      toTensor(p, { requiresGrad: true }),
    );
    const { h, out, loss } = autocast(CPU_BF16, () => {
      let h = t.conv2d(x, convW, convB, 1, 1);
      h = t.maxPool2d(t.relu(h), 2);
      const out = t.linear(h.flatten(1), fcW, fcB);
      return { h, out, loss: t.crossEntropy(out, target) };
    });
    assert.equal(h.dtype, n.hidden_dtype);
    assert.equal(out.dtype, 'bfloat16');
    assert.deepEqual(out.shape, n.out.shape);
    // bf16 has an 8-bit mantissa: relative spacing 2^-8 ~ 3.9e-3.
    assertClose(values(out), n.out.data, 1e-2, 1e-3, 'output');
    assert.equal(loss.dtype, 'float32', 'cross_entropy runs in float32 under autocast');
    assertClose(values(loss), n.loss.data, 1e-2, 1e-3, 'loss');
    loss.backward();
    const params = { conv_w: convW, conv_b: convB, fc_w: fcW, fc_b: fcB };
    for (const [name, p] of Object.entries(params)) {
      const g = p.grad!;
      assert.equal(g.dtype, 'float32', `grad of ${name} has the parameter's dtype`);
      const ref = n[`grad_${name}`];
      const scale = Math.max(...ref.data.map(Math.abs));
      assertClose(values(g), ref.data, 1e-2, 1e-2 * scale, `grad ${name}`);
    }
  });
});

// --- GradScaler ---------------------------------------------------------------------------

/** The fake optimizer: p -= lr * grad, like TinySGD in amp.py. Counts its steps. */
class TinySGD {
  readonly paramGroups: { params: t.Tensor[] }[];
  steps = 0;
  constructor(
    params: t.Tensor[],
    readonly lr: number,
  ) {
    this.paramGroups = [{ params }];
  }
  step(): number {
    this.steps++;
    t.tidy(() =>
      t.noGrad(() => {
        for (const p of this.paramGroups[0].params) {
          const g = p.grad;
          if (g !== null) p.sub_(g.mul(this.lr));
        }
      }),
    );
    return this.steps;
  }
}

const f32 = (a: number[]) => Array.from(Float32Array.from(a));

/** One iteration: loss = sum(p * c), scaled backward, optional injected inf/NaN at `inject`. */
function iteration(
  scaler: GradScaler,
  opt: TinySGD,
  p: t.Tensor,
  c: t.Tensor,
  opts: { inject?: [number, number]; unscale?: boolean } = {},
): { scaled: number; gradScaled: number[]; ret: number | undefined } {
  return t.tidy(() => {
    p.grad = null;
    const scaled = scaler.scale(p.mul(c).sum());
    scaled.backward();
    const gradScaled = values(p.grad!);
    if (opts.inject) t.noGrad(() => p.grad!.select(0, opts.inject![0]).fill_(opts.inject![1]));
    if (opts.unscale) scaler.unscale_(opt);
    const ret = scaler.step(opt);
    scaler.update();
    return { scaled: scaled.item(), gradScaled, ret };
  });
}

test('GradScaler: an injected inf skips the step, leaves params unchanged and halves the scale', () => {
  const p = t.tensor([1, -2, 0.5, 3], { requiresGrad: true });
  const c = t.tensor([0.5, -1.5, 2, 0.25]);
  const opt = new TinySGD([p], 0.125);
  const scaler = new GradScaler({ device: 'cpu' });
  assert.equal(scaler.getScale(), 65536, 'default init scale 2^16');
  const before = p.toBytes();
  const r = iteration(scaler, opt, p, c, { inject: [1, Infinity] });
  assert.equal(r.ret, undefined, 'step() returns undefined when skipped');
  assert.equal(opt.steps, 0, 'optimizer.step() was not called');
  assert.deepEqual(p.toBytes(), before, 'parameters bitwise unchanged');
  assert.equal(scaler.getScale(), 32768, 'scale halved (backoff 0.5)');
  assert.equal(scaler.stateDict()._growth_tracker, 0);
  // The next good iteration steps with the halved scale.
  const r2 = iteration(scaler, opt, p, c);
  assert.equal(r2.ret, 1, "step() returns optimizer.step()'s value");
  assert.deepEqual(
    r2.gradScaled,
    [0.5, -1.5, 2, 0.25].map((v) => v * 32768),
  );
  assert.deepEqual(values(p), f32([1 - 0.0625, -2 + 0.1875, 0.5 - 0.25, 3 - 0.03125]));
});

test('GradScaler: the scale grows by growthFactor after growthInterval good steps', () => {
  const p = t.tensor([1, 2], { requiresGrad: true });
  const c = t.tensor([1, 1]);
  const opt = new TinySGD([p], 0.01);
  const scaler = new GradScaler({ device: 'cpu', initScale: 8, growthInterval: 3 });
  const seen: [number, number][] = [];
  for (let i = 0; i < 7; i++) {
    iteration(scaler, opt, p, c);
    seen.push([scaler.getScale(), scaler.stateDict()._growth_tracker as number]);
  }
  assert.deepEqual(seen, [
    [8, 1],
    [8, 2],
    [16, 0],
    [16, 1],
    [16, 2],
    [32, 0],
    [32, 1],
  ]);
  assert.equal(opt.steps, 7);
});

test('GradScaler replays torch.amp.GradScaler on a scripted good/inf/NaN/unscale_ sequence', () => {
  const gs = fixture.grad_scaler;
  const p = t.tensor(gs.p0, { requiresGrad: true });
  const c = t.tensor(gs.c);
  const opt = new TinySGD([p], gs.init.lr);
  const scaler = new GradScaler({ device: 'cpu', growthInterval: gs.init.growth_interval });
  gs.steps.forEach((s, i) => {
    const inject: [number, number] | undefined =
      s.kind === 'inf' ? [1, Infinity] : s.kind === 'nan' ? [2, Number.NaN] : undefined;
    const r = iteration(scaler, opt, p, c, { inject, unscale: s.kind === 'unscale' });
    const at = `step ${i} (${s.kind})`;
    assert.equal(r.scaled, s.scaled_loss, `${at}: scaled loss`);
    assert.deepEqual(r.gradScaled, s.grad_scaled, `${at}: scaled grads`);
    assert.equal(scaler.getScale(), s.scale, `${at}: scale`);
    assert.equal(scaler.stateDict()._growth_tracker, s.growth_tracker, `${at}: growth tracker`);
    assert.deepEqual(values(p), s.params, `${at}: params`);
  });
  assert.deepEqual(scaler.stateDict(), gs.state_dict);
});

test('GradScaler stateDict round trip (PyTorch keys) and loadStateDict into a live scaler', () => {
  const c = t.tensor([0.5, -1.5, 2, 0.25]);
  const a = t.tensor([1, -2, 0.5, 3], { requiresGrad: true });
  const optA = new TinySGD([a], 0.125);
  const scalerA = new GradScaler({
    device: 'cpu',
    initScale: 1024,
    growthFactor: 4,
    backoffFactor: 0.25,
    growthInterval: 3,
  });
  iteration(scalerA, optA, a, c);
  iteration(scalerA, optA, a, c, { inject: [0, Infinity] });
  iteration(scalerA, optA, a, c);
  const sd = scalerA.stateDict();
  assert.deepEqual(Object.keys(sd).sort(), [
    '_growth_tracker',
    'backoff_factor',
    'growth_factor',
    'growth_interval',
    'scale',
  ]);
  assert.deepEqual(sd, {
    scale: 256,
    growth_factor: 4,
    backoff_factor: 0.25,
    growth_interval: 3,
    _growth_tracker: 1,
  });
  const json = JSON.parse(JSON.stringify(sd));

  // A fresh scaler (no scale tensor yet) and one that already has one both take the state.
  const b = t.tensor(values(a), { requiresGrad: true });
  const optB = new TinySGD([b], 0.125);
  const scalerB = new GradScaler({ device: 'cpu' });
  scalerB.loadStateDict(json);
  assert.deepEqual(scalerB.stateDict(), sd);
  const live = new GradScaler({ device: 'cpu' });
  const q = t.tensor([1], { requiresGrad: true });
  iteration(live, new TinySGD([q], 0.1), q, t.tensor([1]));
  assert.deepEqual(live.stateDict()._growth_tracker, 1);
  live.loadStateDict(json);
  assert.deepEqual(live.stateDict(), sd);

  // Continuing from the loaded state matches continuing the original.
  for (let i = 0; i < 3; i++) {
    iteration(scalerA, optA, a, c);
    iteration(scalerB, optB, b, c);
  }
  assert.deepEqual(scalerB.stateDict(), scalerA.stateDict());
  assert.equal(scalerA.getScale(), 1024, 'grew by 4 after three good steps');
  assert.deepEqual(values(b), values(a));

  assert.throws(() => scalerB.loadStateDict({}), /source state dict is empty/);
  assert.throws(() => scalerB.loadStateDict({ ...sd, scale: undefined }), TypeError);
});

test('GradScaler: unscale_ leaves true gradients for clipping; misuse raises PyTorch errors', () => {
  const p = t.tensor([1, -2, 0.5, 3], { requiresGrad: true });
  const c = t.tensor([0.5, -1.5, 2, 0.25]);
  const opt = new TinySGD([p], 0.125);
  const scaler = new GradScaler({ device: 'cpu' });
  assert.throws(() => scaler.step(opt), /Attempted step but _scale is None/);
  t.tidy(() => {
    scaler.scale(p.mul(c).sum()).backward();
    scaler.unscale_(opt);
    assert.deepEqual(values(p.grad!), [0.5, -1.5, 2, 0.25], 'grads divided by the scale');
    assert.throws(() => scaler.unscale_(opt), /unscale_\(\) has already been called/);
    scaler.step(opt);
    assert.throws(() => scaler.unscale_(opt), /unscale_\(\) is being called after step\(\)/);
    assert.throws(() => scaler.step(opt), /step\(\) has already been called/);
    scaler.update();
    assert.throws(() => scaler.update(), /No inf checks were recorded prior to update/);
  });
  // An optimizer none of whose parameters has a gradient records no inf check (as in PyTorch).
  const idle = new TinySGD([t.tensor([1], { requiresGrad: true })], 0.1);
  assert.throws(() => scaler.step(idle), /No inf checks were recorded for this optimizer/);
  assert.equal(idle.steps, 0);
  assert.throws(() => new GradScaler({ device: 'cpu', growthFactor: 1 }), /growth factor must be > 1.0/);
  assert.throws(() => new GradScaler({ device: 'cpu', backoffFactor: 1 }), /backoff factor must be < 1.0/);
});

test('GradScaler: inf in one optimizer skips only that one; the scale backs off once', () => {
  const p1 = t.tensor([1, 2], { requiresGrad: true });
  const p2 = t.tensor([3, 4], { requiresGrad: true });
  const o1 = new TinySGD([p1], 0.5);
  const o2 = new TinySGD([p2], 0.5);
  const scaler = new GradScaler({ device: 'cpu', initScale: 16 });
  t.tidy(() => {
    scaler.scale(p1.sum().add(p2.sum())).backward();
    t.noGrad(() => p2.grad!.select(0, 0).fill_(Number.NaN));
    scaler.step(o1);
    scaler.step(o2);
    scaler.update();
  });
  assert.equal(o1.steps, 1);
  assert.equal(o2.steps, 0);
  assert.deepEqual(values(p1), [0.5, 1.5]);
  assert.deepEqual(values(p2), [3, 4]);
  assert.equal(scaler.getScale(), 8, 'halved once, not once per optimizer');
});

test('GradScaler: float16 grads are refused; bfloat16 grads are unscaled', () => {
  const scaler = new GradScaler({ device: 'cpu', initScale: 4 });
  const h = t.tensor([1, 2], { dtype: 'float16', requiresGrad: true });
  t.tidy(() => scaler.scale(h.sum()).backward());
  assert.throws(() => scaler.unscale_(new TinySGD([h], 1)), /Attempting to unscale FP16 gradients/);
  const scaler2 = new GradScaler({ device: 'cpu', initScale: 4 });
  const b = t.tensor([1, 2], { dtype: 'bfloat16', requiresGrad: true });
  const opt = new TinySGD([b], 1);
  t.tidy(() => {
    const scaled = scaler2.scale(b.mul(3).sum());
    scaled.backward();
    assert.deepEqual(values(b.grad!), [12, 12]);
    scaler2.unscale_(opt);
    assert.equal(b.grad!.dtype, 'bfloat16');
    assert.deepEqual(values(b.grad!), [3, 3]);
  });
});

test('GradScaler.update(newScale) sets the scale from a number or a 0-dim tensor', () => {
  const p = t.tensor([1], { requiresGrad: true });
  const opt = new TinySGD([p], 0.1);
  const scaler = new GradScaler({ device: 'cpu' });
  iteration(scaler, opt, p, t.tensor([1]));
  scaler.update(100);
  assert.equal(scaler.getScale(), 100);
  scaler.update(t.full([], 7, { dtype: 'float32' }));
  assert.equal(scaler.getScale(), 7);
  assert.throws(() => scaler.update(t.tensor([1, 2])), /newScale should be/);
  assert.throws(
    () => scaler.update(t.full([], 1, { dtype: 'float32', requiresGrad: true })),
    /newScale should be/,
  );
  assert.deepEqual(values(t.tidy(() => scaler.scale(t.tensor([2, 3])))), [14, 21]);
});

test('GradScaler with enabled:false is a pass-through; default device cuda follows availability', () => {
  const p = t.tensor([1, 2], { requiresGrad: true });
  const opt = new TinySGD([p], 0.5);
  const scaler = new GradScaler({ device: 'cpu', enabled: false });
  assert.equal(scaler.isEnabled(), false);
  t.tidy(() => {
    const loss = p.sum();
    assert.equal(scaler.scale(loss), loss, 'scale() returns its input');
    loss.backward();
    scaler.unscale_(opt);
    assert.deepEqual(values(p.grad!), [1, 1], 'unscale_ is a no-op');
    t.noGrad(() => p.grad!.fill_(Number.POSITIVE_INFINITY));
    assert.equal(scaler.step(opt), 1, 'step() always calls optimizer.step()');
    scaler.update();
  });
  assert.equal(opt.steps, 1);
  assert.equal(scaler.getScale(), 1);
  assert.deepEqual(scaler.stateDict(), {});
  scaler.loadStateDict({});

  // PyTorch's default device is 'cuda', and a CUDA scaler without CUDA disables itself.
  assert.equal(new GradScaler().isEnabled(), t.cuda.isAvailable());
});

test('GradScaler: live tensors stay flat over iterations (autocast forward, scaled backward)', () => {
  const w = t.tensor([0.5, -0.25, 1, 2, 0.125, -1], { shape: [2, 3], requiresGrad: true });
  const x = t.tensor([1, 2, 3, 4, 5, 6], { shape: [2, 3] });
  const opt = new TinySGD([w], 0.01);
  const scaler = new GradScaler({ device: 'cpu', growthInterval: 2 });
  const step = (inject: boolean) =>
    t.tidy(() => {
      w.grad = null;
      const loss = autocast(CPU_BF16, () => t.mseLoss(t.linear(x, w), t.zeros([2, 2])));
      assert.equal(loss.dtype, 'float32');
      scaler.scale(loss).backward();
      if (inject) t.noGrad(() => w.grad!.select(0, 0).fill_(Number.POSITIVE_INFINITY));
      scaler.step(opt);
      scaler.update();
    });
  step(false);
  const live = t.memory().tensors;
  for (let i = 0; i < 6; i++) step(i === 3);
  assert.equal(t.memory().tensors, live);
  assert.equal(opt.steps, 6);
  assert.equal(w.grad!.dtype, 'float32');
});

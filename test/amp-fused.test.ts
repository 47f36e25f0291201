// GradScaler with fused optimizers and the edges of its options, against PyTorch 2.13,
// from test/fixtures/amp/fused_scaler.py (run live when .venv has torch, else its committed
// fused_scaler.json; test/helpers/live-fixture.ts): a fused SGD/AdamW
// gets the scale and the found-inf flag and unscales in its kernel, so a skipped step
// leaves the gradients scaled; update(newScale) refuses what PyTorch refuses;
// growthInterval 0 is accepted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GradScaler } from '../src/amp/index.ts';
import * as t from '../src/index.ts';
import { AdamW, type Optimizer, SGD } from '../src/optim/index.ts';
import { assertUlps, values } from './helpers/fixtures.ts';
import { fixtureJson } from './helpers/live-fixture.ts';

interface Step {
  kind: 'good' | 'inf' | 'nan' | 'unscale';
  params: number[];
  /** inf/NaN as the strings "inf", "-inf", "nan" (JSON has none). */
  grad: (number | string)[];
  state: Record<string, number | number[]>;
  scale: number;
  growth_tracker: number;
}
interface Fixture {
  p0: number[];
  c: number[];
  init_scale: number;
  growth_interval: number;
  runs: Record<'sgd' | 'adamw', { hyper: { lr: number; momentum?: number }; steps: Step[] }>;
  growth_interval_zero: { init_scale: number; steps: { scale: number; growth_tracker: number }[] };
  update_errors: Record<'shape_1' | 'two_elements' | 'requires_grad', { type: string; message: string }>;
  update_0dim_scale: number;
}
const { data: fx, live } = fixtureJson<Fixture>('amp/fused_scaler.py', 'amp/fused_scaler.json');

// float32 ulps allowed against the committed fixture (0 when PyTorch ran live on this
// CPU): no CPU tried moved a bit of the fused kernels (an AMD EPYC with ATen's AVX-512
// and AVX2 kernels, and the Intel Xeon whose non-fused float32 Adam is 1 ulp off).
const STORED_ULPS: Record<'sgd' | 'adamw', number> = { sgd: 0, adamw: 0 };

const num = (v: number | string): number =>
  v === 'nan'
    ? Number.NaN
    : v === 'inf'
      ? Number.POSITIVE_INFINITY
      : v === '-inf'
        ? Number.NEGATIVE_INFINITY
        : Number(v);

const makers: Record<'sgd' | 'adamw', (ps: t.Tensor[]) => Optimizer> = {
  sgd: (ps) => new SGD(ps, { ...fx.runs.sgd.hyper, fused: true }),
  adamw: (ps) => new AdamW(ps, { ...fx.runs.adamw.hyper, fused: true }),
};

for (const name of ['sgd', 'adamw'] as const) {
  test(`GradScaler + fused ${name}: parameters, gradients, state and scale equal PyTorch's at every step`, () => {
    const p = t.tensor(fx.p0, { requiresGrad: true });
    const c = t.tensor(fx.c);
    const opt = makers[name]([p]);
    const maxUlps = live ? 0 : STORED_ULPS[name];
    assert.equal(opt.stepSupportsAmpScaling, true);
    const scaler = new GradScaler({
      device: 'cpu',
      initScale: fx.init_scale,
      growthInterval: fx.growth_interval,
    });
    fx.runs[name].steps.forEach((s, k) => {
      const at = `step ${k + 1} (${s.kind})`;
      t.tidy(() => {
        opt.zeroGrad();
        scaler.scale(p.mul(p).mul(c).sum()).backward();
        const g = p.grad!;
        if (s.kind === 'inf') t.noGrad(() => g.select(0, 1).fill_(Number.POSITIVE_INFINITY));
        if (s.kind === 'nan') t.noGrad(() => g.select(0, 3).fill_(Number.NaN));
        if (s.kind === 'unscale') scaler.unscale_(opt);
        scaler.step(opt);
        scaler.update();
      });
      // A skipped step leaves the gradients as they were: still multiplied by the scale.
      assertUlps(values(p.grad!), s.grad.map(num), maxUlps, `${at}: gradients`);
      assertUlps(values(p), s.params, maxUlps, `${at}: parameters`);
      assert.equal(scaler.getScale(), s.scale, `${at}: scale`);
      assert.equal(scaler.stateDict()._growth_tracker, s.growth_tracker, `${at}: growth tracker`);
      const state = opt.state.get(p) ?? {};
      assert.deepEqual(Object.keys(state).sort(), Object.keys(s.state).sort(), `${at}: state keys`);
      for (const [key, v] of Object.entries(s.state)) {
        const ours = state[key];
        assert.ok(ours instanceof t.Tensor, `${at}: state ${key}`);
        const want = typeof v === 'number' ? [v] : v;
        assertUlps(
          typeof v === 'number' ? [ours.item()] : values(ours),
          want,
          maxUlps,
          `${at}: state ${key}`,
        );
      }
      assert.equal(opt.gradScale, null, `${at}: the scale is handed back`);
      assert.equal(opt.foundInf, null, `${at}: the flag is handed back`);
    });
  });
}

test('GradScaler + fused SGD: live tensors stay flat over good and skipped iterations', () => {
  const p = t.tensor(fx.p0, { requiresGrad: true });
  const c = t.tensor(fx.c);
  const opt = makers.sgd([p]);
  const scaler = new GradScaler({ device: 'cpu', growthInterval: 2 });
  const step = (inject: boolean) =>
    t.tidy(() => {
      opt.zeroGrad();
      scaler.scale(p.mul(c).sum()).backward();
      if (inject) t.noGrad(() => p.grad!.select(0, 0).fill_(Number.POSITIVE_INFINITY));
      scaler.step(opt);
      scaler.update();
    });
  step(false);
  opt.zeroGrad();
  const live = t.memory().tensors;
  for (let i = 0; i < 5; i++) {
    step(i === 2);
    opt.zeroGrad();
  }
  assert.equal(t.memory().tensors, live);
});

test('GradScaler: growthInterval 0 is accepted as in PyTorch (the scale never grows)', () => {
  const p = t.tensor([1, 2], { requiresGrad: true });
  const opt = new SGD([p], { lr: 0 });
  const z = fx.growth_interval_zero;
  const scaler = new GradScaler({ device: 'cpu', initScale: z.init_scale, growthInterval: 0 });
  assert.equal(scaler.getGrowthInterval(), 0);
  for (const s of z.steps) {
    t.tidy(() => {
      p.grad = null;
      scaler.scale(p.sum()).backward();
      scaler.step(opt);
      scaler.update();
    });
    assert.equal(scaler.getScale(), s.scale);
    assert.equal(scaler.stateDict()._growth_tracker, s.growth_tracker);
  }
  assert.throws(() => new GradScaler({ device: 'cpu', growthInterval: 1.5 }), TypeError);
});

test('GradScaler.update(newScale) refuses what PyTorch refuses, with its reasons', () => {
  const e = fx.update_errors;
  const fresh = () => {
    const s = new GradScaler({ device: 'cpu' });
    t.tidy(() => s.scale(t.ones([])));
    return s;
  };
  // PyTorch's copy_ into the 0-dim scale refuses a shape-[1] tensor; libtorch's own message.
  assert.equal(e.shape_1.type, 'RuntimeError');
  assert.throws(
    () => fresh().update(t.tensor([8])),
    (err: Error) => err instanceof t.TorchError && err.message.includes(e.shape_1.message),
  );
  // Its own check (an assertion there): more than one element, or requiring grad.
  assert.equal(e.two_elements.type, 'AssertionError');
  assert.match(e.two_elements.message, /1-element/);
  assert.throws(() => fresh().update(t.tensor([8, 4])), /newScale should be .*1-element/);
  assert.equal(e.requires_grad.type, 'AssertionError');
  assert.throws(
    () => fresh().update(t.full([], 8, { dtype: 'float32', requiresGrad: true })),
    /newScale should be .*1-element/,
  );
  const ok = fresh();
  ok.update(t.full([], 8, { dtype: 'float32' }));
  assert.equal(ok.getScale(), fx.update_0dim_scale);
});

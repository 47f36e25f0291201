// Adam/AdamW in float64 and clip_grad_value_ at its edges against PyTorch 2.13, from
// test/fixtures/optim/adam_float64.py (run live when .venv has torch, else its committed
// adam_float64.json; test/helpers/live-fixture.ts): the bias corrections use Python's
// float power (C's pow), and clipping to 0 gives PyTorch's -0.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { cPow } from '../src/optim/c-math.ts';
import { Adam, AdamW, clipGradValue_, fromPyTorchName } from '../src/optim/index.ts';
import { assertUlps, values } from './helpers/fixtures.ts';
import { fixtureJson } from './helpers/live-fixture.ts';

interface AdamCase {
  optimizer: 'Adam' | 'AdamW';
  hyper: Record<string, unknown>;
  shapes: number[][];
  params: number[][];
  grads: number[][][];
  runs: Record<'single' | 'foreach', number[][][]>;
}
interface ClipCase {
  clip_value: number;
  grads: { shape: number[]; data: number[] }[];
  clipped: number[][];
}
const { data: fx, live } = fixtureJson<{
  adam: Record<string, AdamCase>;
  clip_value: Record<string, ClipCase>;
  pow: [number, number, number][];
}>('optim/adam_float64.py', 'optim/adam_float64.json');

// float64 ulps allowed against the committed fixture (0 when PyTorch ran live on this
// CPU): no CPU tried moved a bit of these cases (an AMD EPYC with ATen's AVX-512 and AVX2
// kernels, and the Intel Xeon whose float32 Adam is 1 ulp off). pow is C's libm, and
// clipping only picks values, so those stay bitwise on any machine.
const STORED_ADAM_ULPS: Record<string, number> = { adam_default: 0, adamw_amsgrad: 0 };

const f64 = (data: number[], shape: number[]) => t.tensor(Float64Array.from(data), { shape });

for (const [name, c] of Object.entries(fx.adam)) {
  for (const [impl, flags] of [
    ['single', {}],
    ['foreach', { foreach: true }],
  ] as const) {
    test(`${name} float64 (${impl}): parameters equal PyTorch's bit for bit at every step`, () => {
      const maxUlps = live ? 0 : STORED_ADAM_ULPS[name];
      t.tidy(() => {
        const params = c.params.map((p, i) => f64(p, c.shapes[i]).requiresGrad_(true));
        const hyper = Object.fromEntries(Object.entries(c.hyper).map(([k, v]) => [fromPyTorchName(k), v]));
        const opts = { ...hyper, ...flags };
        const opt = c.optimizer === 'Adam' ? new Adam(params, opts) : new AdamW(params, opts);
        c.grads.forEach((row, k) => {
          t.tidy(() => {
            params.forEach((p, i) => {
              p.grad = f64(row[i], c.shapes[i]);
            });
            opt.step();
          });
          params.forEach((p, i) => {
            assertUlps(values(p), c.runs[impl][k][i], maxUlps, `step ${k + 1} param ${i}`, 'float64');
          });
        });
      });
    });
  }
}

test("cPow is Python's float power (C's pow), bit for bit", (ctx) => {
  let differsFromJs = 0;
  for (const [base, exp, expected] of fx.pow) {
    assert.equal(cPow(base, exp), expected, `${base} ** ${exp}`);
    if (base ** exp !== expected) differsFromJs++;
  }
  ctx.diagnostic(`JavaScript's ** differs from Python on ${differsFromJs} of ${fx.pow.length} cases`);
});

for (const [name, c] of Object.entries(fx.clip_value)) {
  test(`clipGradValue_ ${name} (${c.clip_value}) equals PyTorch, signed zeros included`, () => {
    t.tidy(() => {
      const params = c.grads.map((g) => t.zeros(g.shape).requiresGrad_(true));
      params.forEach((p, i) => {
        p.grad = t.tensor(Float32Array.from(c.grads[i].data), { shape: c.grads[i].shape });
      });
      clipGradValue_(params, c.clip_value);
      params.forEach((p, i) => {
        // deepStrictEqual tells -0 from 0.
        assert.deepEqual(values(p.grad!), c.clipped[i], `grad ${i}`);
      });
    });
  });
}

// Adam/AdamW in float64 and clip_grad_value_ at its edges against PyTorch 2.13, bit for
// bit, from test/fixtures/optim/adam_float64.json (made by adam_float64.py): the bias
// corrections use Python's float power (C's pow), and clipping to 0 gives PyTorch's -0.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { cPow } from '../src/optim/c-math.ts';
import { Adam, AdamW, clipGradValue_, fromPyTorchName } from '../src/optim/index.ts';
import { loadFixture, values } from './helpers/fixtures.ts';

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
const fx = loadFixture('optim/adam_float64.json') as unknown as {
  adam: Record<string, AdamCase>;
  clip_value: Record<string, ClipCase>;
  pow: [number, number, number][];
};

const f64 = (data: number[], shape: number[]) => t.tensor(Float64Array.from(data), { shape });

for (const [name, c] of Object.entries(fx.adam)) {
  for (const [impl, flags] of [
    ['single', {}],
    ['foreach', { foreach: true }],
  ] as const) {
    test(`${name} float64 (${impl}): parameters equal PyTorch's bit for bit at every step`, () => {
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
            assert.deepEqual(values(p), c.runs[impl][k][i], `step ${k + 1} param ${i}`);
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

// SGD and Adam(W) on float16 / bfloat16 parameters against PyTorch 2.13, bit for bit,
// from test/fixtures/optim/low_precision.py (run live when .venv has torch, else its
// committed low_precision.json; test/helpers/live-fixture.ts): the per-parameter paths (the CPU default) give the kernels doubles where PyTorch passes
// Python floats as tensor operands (`buf.mul_(momentum)`, `exp_avg_sq.mul_(beta2)`,
// `.add_(eps)`, ...); the foreach and fused paths follow PyTorch's own foreach and fused
// kernels, which round differently.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { Adam, AdamW, fromPyTorchName, type Optimizer, SGD } from '../src/optim/index.ts';
import { assertUlps, values } from './helpers/fixtures.ts';
import { fixtureJson } from './helpers/live-fixture.ts';

interface LowTensor {
  dtype: 'float16' | 'bfloat16' | 'float32';
  shape: number[];
  /** inf/NaN as the strings "inf", "-inf", "nan" (JSON has none). */
  data: (number | string)[];
}
interface Run {
  /** The parameters after each step. */
  params: LowTensor[][];
  /** The optimizer state after the last step. */
  state: Record<string, LowTensor>[];
}
interface Case {
  optimizer: 'SGD' | 'Adam' | 'AdamW';
  dtype: 'float16' | 'bfloat16';
  hyper: Record<string, unknown>;
  params: LowTensor[];
  grads: LowTensor[][];
  runs: Record<'single' | 'foreach' | 'fused', Run>;
}
const {
  data: { cases },
  live,
} = fixtureJson<{ cases: Record<string, Case> }>('optim/low_precision.py', 'optim/low_precision.json');

// Ulps of the tensor's own dtype allowed against the committed fixture, for every case (0
// when PyTorch ran live on this CPU): no CPU tried moved a bit of them (an AMD EPYC with
// ATen's AVX-512 and AVX2 kernels, and the Intel Xeon whose float32 Adam is 1 ulp off).
const STORED_ULPS = 0;
const MAX_ULPS = live ? 0 : STORED_ULPS;

const num = (v: number | string): number =>
  v === 'nan'
    ? Number.NaN
    : v === 'inf'
      ? Number.POSITIVE_INFINITY
      : v === '-inf'
        ? Number.NEGATIVE_INFINITY
        : Number(v);

/** The fixture's values (exact float32 numbers) in their real dtype. */
function lowTensor(x: LowTensor): t.Tensor {
  return t.tensor(Float32Array.from(x.data, num), { shape: x.shape }).to(x.dtype);
}

function make(c: Case, params: t.Tensor[], flags: object): Optimizer {
  const hyper = Object.fromEntries(Object.entries(c.hyper).map(([k, v]) => [fromPyTorchName(k), v]));
  const opts = { ...hyper, ...flags };
  if (c.optimizer === 'SGD') return new SGD(params, opts);
  return c.optimizer === 'Adam' ? new Adam(params, opts) : new AdamW(params, opts);
}

const IMPLS = [
  ['single', {}],
  ['foreach', { foreach: true }],
  ['fused', { fused: true }],
] as const;

for (const [name, c] of Object.entries(cases)) {
  for (const [impl, flags] of IMPLS) {
    test(`${name} (${impl}): parameters and state equal PyTorch's bit for bit`, () => {
      t.tidy(() => {
        const params = c.params.map((p) => lowTensor(p).requiresGrad_(true));
        const opt = make(c, params, flags);
        const run = c.runs[impl];
        c.grads.forEach((row, k) => {
          t.tidy(() => {
            params.forEach((p, i) => {
              p.grad = lowTensor(row[i]);
            });
            opt.step();
          });
          params.forEach((p, i) => {
            assert.equal(p.dtype, c.dtype);
            const want = run.params[k][i].data.map(num);
            assertUlps(values(p.float()), want, MAX_ULPS, `step ${k + 1} param ${i}`, c.dtype);
          });
        });
        params.forEach((p, i) => {
          const ours = opt.state.get(p) ?? {};
          assert.deepEqual(Object.keys(ours).sort(), Object.keys(run.state[i]).sort(), `state keys ${i}`);
          for (const [key, v] of Object.entries(run.state[i])) {
            const s = ours[key];
            assert.ok(s instanceof t.Tensor, `state ${key} of param ${i}`);
            assert.equal(s.dtype, v.dtype, `state ${key} dtype`);
            assertUlps(values(s.float()), v.data.map(num), MAX_ULPS, `state ${key} of param ${i}`, v.dtype);
          }
        });
      });
    });
  }
}

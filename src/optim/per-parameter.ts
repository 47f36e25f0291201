// What the optimizers that follow PyTorch's per-parameter loop (`foreach=False`, its CPU
// default) share: which parameters of a group step, the float32 `step` count PyTorch
// keeps on the CPU, typed access to a parameter's state tensors, the variant flags these
// optimizers refuse rather than ignore (architecture §1, "fail fast"), and the scalar
// operand rule below.
//
// Where PyTorch passes a Python float as the tensor operand of an op (`mul_(rho)`,
// `add(eps)`, `div(bias_correction)`), the kernel gets the double and rounds it to its
// compute type. tsddp's Scalar overloads do the same for float32 and float64, but for
// float16/bfloat16 `mul_.Scalar` rounds the number to the tensor's dtype first; a 0-dim
// float64 CPU tensor keeps the double there and, being 0-dim, leaves the result's dtype
// alone (as adam.ts and sgd.ts do).

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { flag, hyper, type ParamGroup, type ParamState } from './optimizer.ts';

/**
 * PyTorch's Python-float operand of an op on `x`: the number for float32/float64, a 0-dim
 * double for the 16-bit dtypes. A 0-dim `x` takes the number whatever its dtype: next to
 * it a 0-dim float64 tensor would promote the result to double.
 */
function operand(x: Tensor, v: number): Tensor | number {
  if (x.dtype === 'float32' || x.dtype === 'float64' || x.dim() === 0) return v;
  return t.full([], v, { dtype: 'float64' });
}

/** `x.mul_(v)` with PyTorch's Python-float operand. */
export function mulScalar_(x: Tensor, v: number): Tensor {
  const o = operand(x, v);
  return typeof o === 'number' ? x.mul_(o) : x.mul_(o);
}

/** `x.mul(v)` with PyTorch's Python-float operand. */
export function mulScalar(x: Tensor, v: number): Tensor {
  const o = operand(x, v);
  return typeof o === 'number' ? x.mul(o) : x.mul(o);
}

/** `x.add_(v)` with PyTorch's Python-float operand. */
export function addScalar_(x: Tensor, v: number): Tensor {
  const o = operand(x, v);
  return typeof o === 'number' ? x.add_(o) : x.add_(o);
}

/** `x.add(v)` with PyTorch's Python-float operand. */
export function addScalar(x: Tensor, v: number): Tensor {
  const o = operand(x, v);
  return typeof o === 'number' ? x.add(o) : x.add(o);
}

/** `x.div(v)` with PyTorch's Python-float operand. */
export function divScalar(x: Tensor, v: number): Tensor {
  const o = operand(x, v);
  return typeof o === 'number' ? x.div(o) : x.div(o);
}

/** The parameters of `group` that have a gradient, with their gradients. */
export function withGrads(group: ParamGroup): { params: Tensor[]; grads: Tensor[] } {
  const params: Tensor[] = [];
  const grads: Tensor[] = [];
  for (const p of group.params) {
    const g = p.grad;
    if (g === null) continue;
    params.push(p);
    grads.push(g);
  }
  return { params, grads };
}

/** A new `step` count: a 0-dim float32 tensor on the CPU (PyTorch's non-capturable default). */
export function newStep(): Tensor {
  return t.zeros([], { dtype: 'float32' }).keep();
}

/** The state tensor `key` of one parameter, checked. */
export function stateTensor(s: ParamState, key: string, optimizer: string): Tensor {
  const v = s[key];
  if (!(v instanceof t.Tensor)) throw new TypeError(`${optimizer} state '${key}' is missing or not a Tensor`);
  return v;
}

/**
 * Refuses the variant flags a per-parameter optimizer does not implement: `foreach:
 * true` (PyTorch's multi-tensor path, which rounds differently), `capturable` and
 * `differentiable`. Checked for every group added and again at each step, since
 * loadStateDict replaces the groups.
 */
export function checkLoopOnly(g: ParamGroup, optimizer: string): void {
  if (flag(g, 'foreach')) {
    throw new RangeError(
      `${optimizer} runs PyTorch's per-parameter loop (foreach: false) only; \`foreach: true\` is not supported`,
    );
  }
  if (flag(g, 'capturable')) throw new RangeError(`capturable ${optimizer} is not supported`);
  if (flag(g, 'differentiable')) throw new RangeError(`differentiable ${optimizer} is not supported`);
  if (flag(g, 'fused')) throw new RangeError(`fused ${optimizer} is not supported`);
}

/** A pair hyperparameter (`betas`, `etas`, `stepSizes`), checked. */
export function pairOf(g: ParamGroup, key: string): [number, number] {
  const b = g[key];
  if (!Array.isArray(b) || b.length !== 2 || typeof b[0] !== 'number' || typeof b[1] !== 'number') {
    throw new TypeError(`param group hyperparameter \`${key}\` must be two numbers`);
  }
  return [b[0], b[1]];
}

/**
 * A scalar state entry saved as a plain number (older PyTorch checkpoints: `step`,
 * ASGD's `eta`/`mu`, NAdam's `mu_product`) as the 0-dim float32 tensor PyTorch's
 * `__setstate__` makes of it.
 */
export function scalarState(value: number, device = 'cpu'): Tensor {
  return t.full([], value, { dtype: 'float32', device }).keep();
}

/** Python's max(a, b): a unless b > a (so a NaN b gives a, where Math.max gives NaN). */
export function pyMax(a: number, b: number): number {
  // biome-ignore lint/complexity/useMathMinMax: Math.max differs for NaN, which is the point here.
  return b > a ? b : a;
}

/** Python's min(a, b): a unless b < a. */
export function pyMin(a: number, b: number): number {
  // biome-ignore lint/complexity/useMathMinMax: Math.min differs for NaN, which is the point here.
  return b < a ? b : a;
}

/**
 * The checks the Adam family's constructors share, in PyTorch's order and words: lr,
 * eps and weight_decay >= 0, each beta in [0, 1).
 */
export function checkAdamHypers(g: ParamGroup): void {
  const lr = hyper(g, 'lr');
  const eps = hyper(g, 'eps');
  const [b1, b2] = pairOf(g, 'betas');
  const wd = hyper(g, 'weightDecay');
  if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
  if (!(eps >= 0)) throw new RangeError(`Invalid epsilon value: ${eps}`);
  if (!(b1 >= 0 && b1 < 1)) throw new RangeError(`Invalid beta parameter at index 0: ${b1}`);
  if (!(b2 >= 0 && b2 < 1)) throw new RangeError(`Invalid beta parameter at index 1: ${b2}`);
  if (!(wd >= 0)) throw new RangeError(`Invalid weight_decay value: ${wd}`);
}

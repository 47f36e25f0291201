// Python's float arithmetic where V8's differs: PyTorch's optimizers and schedulers
// compute bias corrections and learning rates in Python (`beta1 ** step`,
// `math.cos(math.pi * t / T)`), which is C's libm (pow, cos). V8's `**`, Math.pow and
// Math.cos are its own and round the last bit differently for about one input in ten
// (pow) or fifty (cos). libtorch's pow and cos on a one-element float64 CPU tensor run
// std::pow / std::cos, the same libm, so these give PyTorch's numbers bit for bit (a
// longer tensor would not: its vectorised kernels use SLEEF).
import * as t from '../core/index.ts';

/** base ** exp as Python computes it for floats (C's pow). */
export function cPow(base: number, exp: number): number {
  return t.tidy(() => t.pow(base, t.full([], exp, { dtype: 'float64' })).item());
}

/** Python's math.cos (C's cos). */
export function cCos(x: number): number {
  return t.tidy(() => t.full([], x, { dtype: 'float64' }).cos().item());
}

/** Python's math.log of one argument (C's log). */
export function cLog(x: number): number {
  return t.tidy(() => t.full([], x, { dtype: 'float64' }).log().item());
}

// gradcheck: analytic gradients (autograd) against central finite differences, in
// float64, as torch.autograd.gradcheck does (same default tolerances).
import { tidy } from '../core/scope.ts';
import type { Tensor } from '../core/tensor.ts';
import { grad } from './grad.ts';
import { noGrad } from './grad-mode.ts';

export interface GradcheckOptions {
  eps?: number;
  atol?: number;
  rtol?: number;
}

/**
 * Checks the gradients of `fn` at `inputs` (float64 tensors with requiresGrad). Returns
 * true, or throws an Error naming the input and element where they disagree.
 */
export function gradcheck(
  fn: (...xs: Tensor[]) => Tensor,
  inputs: Tensor[],
  opts: GradcheckOptions = {},
): boolean {
  const eps = opts.eps ?? 1e-6;
  const atol = opts.atol ?? 1e-5;
  const rtol = opts.rtol ?? 1e-3;
  for (const x of inputs) {
    if (x.dtype !== 'float64') throw new TypeError(`gradcheck(): inputs must be float64, got ${x.dtype}`);
  }
  return tidy(() => {
    const out = fn(...inputs);
    const nOut = out.numel();
    // Jacobian rows via one vector-Jacobian product per output element.
    const analytic = inputs.map((x) => new Float64Array(nOut * x.numel()));
    const outFlat = out.reshape([-1]);
    for (let j = 0; j < nOut; j++) {
      tidy(() => {
        const grads = grad([outFlat.select(0, j)], inputs, { retainGraph: true, allowUnused: true });
        grads.forEach((g, i) => {
          if (g === null) return;
          const v = g.toTypedArray() as Float64Array;
          analytic[i].set(v, j * v.length);
        });
      });
    }
    noGrad(() => {
      inputs.forEach((x, i) => {
        const n = x.numel();
        const flat = x.view([-1]);
        for (let k = 0; k < n; k++) {
          const orig = flat.select(0, k).item();
          flat.select(0, k).fill_(orig + eps);
          const plus = fn(...inputs)
            .reshape([-1])
            .toTypedArray() as Float64Array;
          flat.select(0, k).fill_(orig - eps);
          const minus = fn(...inputs)
            .reshape([-1])
            .toTypedArray() as Float64Array;
          flat.select(0, k).fill_(orig);
          for (let j = 0; j < nOut; j++) {
            const numeric = (plus[j] - minus[j]) / (2 * eps);
            const a = analytic[i][j * n + k];
            if (Math.abs(a - numeric) > atol + rtol * Math.abs(numeric)) {
              throw new Error(
                `gradcheck(): Jacobian mismatch for input ${i}, element ${k}, output ${j}: analytic ${a}, numerical ${numeric}`,
              );
            }
          }
        }
      });
    });
    return true;
  });
}

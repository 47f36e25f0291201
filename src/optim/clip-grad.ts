// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_: per-tensor
// norms with _foreach_norm, their norm as the total, then one _foreach_mul_ by the clip
// coefficient clamped to 1 (so gradients under the limit are multiplied by exactly 1).

import { noGrad } from '../autograd/index.ts';
import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { groupIndicesByDeviceAndDtype, pick } from './grouping.ts';

export interface ClipGradNormOptions {
  /** Throw when the total norm is NaN or infinite instead of scaling by it (default false). */
  errorIfNonfinite?: boolean;
}

const OPTIONS = optionNames<ClipGradNormOptions>({ errorIfNonfinite: true });

function gradsOf(params: Tensor | Tensor[]): Tensor[] {
  const list = params instanceof t.Tensor ? [params] : params;
  const grads: Tensor[] = [];
  for (const p of list) {
    const g = p.grad;
    if (g !== null) grads.push(g);
  }
  return grads;
}

/**
 * The norm of order `normType` of all `tensors` together (as if concatenated), as
 * torch.nn.utils.get_total_norm. A 0-dim tensor; 0 for an empty list.
 */
export function getTotalNorm(tensors: Tensor[], normType = 2, options?: ClipGradNormOptions): Tensor {
  const opts = checkOptions('getTotalNorm', options, OPTIONS);
  return noGrad(() =>
    t.tidy(() => {
      if (tensors.length === 0) return t.zeros([]);
      const firstDevice = tensors[0].device;
      const norms: Tensor[] = [];
      for (const idx of groupIndicesByDeviceAndDtype(tensors)) {
        for (const n of t._foreachNorm(pick(tensors, idx), normType)) norms.push(n.to(firstDevice));
      }
      const total = t.linalgVectorNorm(t.stack(norms), normType);
      if (opts.errorIfNonfinite && !t.isfinite(total).item()) {
        throw new RangeError(
          `The total norm of order ${normType} for gradients from \`parameters\` is non-finite, so it cannot ` +
            'be clipped. To disable this error and scale the gradients by the non-finite norm anyway, ' +
            'set `errorIfNonfinite: false`',
        );
      }
      return total;
    }),
  );
}

/** Scales the gradients of `params` in place so that their total norm is `totalNorm` clipped to `maxNorm`. */
export function clipGradsWithNorm_(params: Tensor | Tensor[], maxNorm: number, totalNorm: Tensor): void {
  noGrad(() =>
    t.tidy(() => {
      const grads = gradsOf(params);
      if (grads.length === 0) return;
      // PyTorch computes `max_norm / (total_norm + 1e-6)` as reciprocal() * max_norm.
      const coef = t.clamp(t.reciprocal(t.add(totalNorm, 1e-6)).mul(maxNorm), null, 1.0);
      for (const idx of groupIndicesByDeviceAndDtype(grads)) {
        const gs = pick(grads, idx);
        t._foreachMul_(gs, coef.to(gs[0].device));
      }
    }),
  );
}

/**
 * Clips the gradient norm of `params` in place, as torch.nn.utils.clip_grad_norm_:
 * the norm of order `normType` (Infinity for the max norm) is computed over all
 * gradients together; if it exceeds `maxNorm`, every gradient is scaled by
 * maxNorm / (norm + 1e-6). Returns the total norm before clipping (a 0-dim tensor
 * owned by the caller's scope).
 */
export function clipGradNorm_(
  params: Tensor | Tensor[],
  maxNorm: number,
  normType = 2,
  opts: ClipGradNormOptions = {},
): Tensor {
  return noGrad(() =>
    t.tidy(() => {
      const total = getTotalNorm(gradsOf(params), normType, checkOptions('clipGradNorm_', opts, OPTIONS));
      clipGradsWithNorm_(params, maxNorm, total);
      return total;
    }),
  );
}

/** Clamps every gradient of `params` to [-clipValue, clipValue] in place, as torch.nn.utils.clip_grad_value_. */
export function clipGradValue_(params: Tensor | Tensor[], clipValue: number): void {
  noGrad(() =>
    t.tidy(() => {
      const grads = gradsOf(params);
      for (const idx of groupIndicesByDeviceAndDtype(grads)) {
        const gs = pick(grads, idx);
        if (clipValue === 0) {
          // PyTorch clamps to [-0.0, 0.0] (a float), so negative gradients become -0.
          // A JS 0 or -0 reaches libtorch as the integer 0, which has no sign: the
          // bounds go as 0-dim float64 tensors instead (same kernel, per tensor).
          const device = gs[0].device;
          const bound = (v: number) => t.tensor(Float64Array.of(v)).reshape([]).to({ device });
          const lo = bound(-clipValue);
          const hi = bound(clipValue);
          t._foreachClampMin_(
            gs,
            gs.map(() => lo),
          );
          t._foreachClampMax_(
            gs,
            gs.map(() => hi),
          );
        } else {
          t._foreachClampMin_(gs, -clipValue);
          t._foreachClampMax_(gs, clipValue);
        }
      }
    }),
  );
}

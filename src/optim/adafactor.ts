// Adafactor, as torch.optim.Adafactor: PyTorch's _single_tensor_adafactor (its CPU
// default, foreach=False) op for op. A parameter of two or more dimensions keeps the
// second moment factored over its last two (row_var and col_var, each with that
// dimension reduced to 1); a vector keeps it whole (variance). The step's scalars (the
// relative step size, the clipping denominator) are Python floats in PyTorch, computed
// here in double precision with Python's float power (cPow). State per parameter: step
// (0-dim float32 on the CPU), row_var and col_var, or variance.

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { cPow } from './c-math.ts';
import { flag, hyper, Optimizer, optimizerOptions, type ParamGroup, type ParamsInput } from './optimizer.ts';
import { checkLoopOnly, mulScalar_, newStep, pyMax, pyMin, stateTensor, withGrads } from './per-parameter.ts';

export interface AdafactorOptions {
  /** Learning rate: the relative step size's cap (default 1e-2). */
  lr?: number;
  /** Decay rate of the second moment's coefficient, step^beta2Decay (PyTorch: beta2_decay; default -0.8). */
  beta2Decay?: number;
  /**
   * [eps1, eps2]: eps1 bounds the second moment below (null: the parameter dtype's
   * machine epsilon), eps2 the parameter scale (default [null, 1e-3]).
   */
  eps?: [number | null, number];
  /** Clipping threshold of the update's root mean square (default 1.0). */
  d?: number;
  /** Decoupled weight decay (PyTorch: weight_decay; default 0). */
  weightDecay?: number;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
}

const OPTIONS = optionNames<AdafactorOptions>({
  lr: true,
  beta2Decay: true,
  eps: true,
  d: true,
  weightDecay: true,
  maximize: true,
  foreach: true,
});

/** torch.finfo(dtype).eps. */
const MACHINE_EPS: Record<string, number> = {
  float32: 2 ** -23,
  float64: 2 ** -52,
  float16: 2 ** -10,
  bfloat16: 2 ** -7,
};

function epsOf(g: ParamGroup): [number | null, number] {
  const e = g.eps;
  if (
    !Array.isArray(e) ||
    e.length !== 2 ||
    !(e[0] === null || typeof e[0] === 'number') ||
    typeof e[1] !== 'number'
  ) {
    throw new TypeError('param group hyperparameter `eps` must be [number | null, number]');
  }
  return [e[0], e[1]];
}

export class Adafactor extends Optimizer {
  constructor(params: ParamsInput<AdafactorOptions>, options?: AdafactorOptions) {
    const opts = optimizerOptions('Adafactor', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-2,
      beta2Decay: opts.beta2Decay ?? -0.8,
      eps: opts.eps ? [...opts.eps] : [null, 1e-3],
      d: opts.d ?? 1.0,
      weightDecay: opts.weightDecay ?? 0.0,
      foreach: opts.foreach ?? null,
      maximize: opts.maximize ?? false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const beta2Decay = hyper(g, 'beta2Decay');
    const [eps1, eps2] = epsOf(g);
    const d = hyper(g, 'd');
    const wd = hyper(g, 'weightDecay');
    if (!(lr >= 0)) throw new RangeError(`Learning rate should be >= 0 but is: ${lr}`);
    if (!(beta2Decay <= 0)) throw new RangeError(`beta2_decay should be <= 0 but is: ${beta2Decay}`);
    if (eps1 !== null && !(eps1 >= 0)) throw new RangeError(`epsilon1 should be >= 0 but is: ${eps1}`);
    if (!(eps2 >= 0)) throw new RangeError(`epsilon2 should be >= 0 but is: ${eps2}`);
    if (!(d >= 1)) throw new RangeError(`Clipping threshold d should be >= 1 but is: ${d}`);
    if (!(wd >= 0)) throw new RangeError(`weight_decay should be >= 0 but is: ${wd}`);
    checkLoopOnly(g, 'Adafactor');
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'Adafactor');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const beta2Decay = hyper(group, 'beta2Decay');
    const d = hyper(group, 'd');
    const weightDecay = hyper(group, 'weightDecay');
    const maximize = flag(group, 'maximize');
    // As in PyTorch, an unset eps1 takes the first stepped parameter's machine epsilon,
    // which then holds for the rest of the group.
    let [eps1, eps2] = epsOf(group);
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      if (Object.keys(s).length === 0) {
        s.step = newStep();
        const g = grads[i];
        if (g.dim() > 1) {
          const rowShape = [...g.shape];
          rowShape[rowShape.length - 1] = 1;
          s.row_var = t.zeros(rowShape, { dtype: g.dtype, device: g.device }).keep();
          const colShape = [...g.shape];
          colShape[colShape.length - 2] = 1;
          s.col_var = t.zeros(colShape, { dtype: g.dtype, device: g.device }).keep();
        } else {
          s.variance = t.zerosLike(g).keep();
        }
      }
      const stepT = stateTensor(s, 'step', 'Adafactor');
      t.tidy(() => {
        const grad = maximize ? grads[i].neg() : grads[i];
        if (eps1 === null) {
          const e = MACHINE_EPS[param.dtype];
          if (e === undefined)
            throw new TypeError(`Adafactor needs floating point parameters, got ${param.dtype}`);
          eps1 = e;
        }
        stepT.add_(1);
        const stepFloat = stepT.item();
        const oneMinusBeta2T = cPow(stepFloat, beta2Decay);
        const r = 1 / cPow(stepFloat, 0.5);
        const rhoT = pyMin(lr, r);
        const scale = t.linalgVectorNorm(param, 2).item() / cPow(param.numel(), 0.5);
        const alpha = pyMax(eps2, scale) * rhoT;
        if (weightDecay !== 0) mulScalar_(param, 1 - lr * weightDecay);
        let varEstimate: Tensor;
        if (grad.dim() > 1) {
          const rowVar = stateTensor(s, 'row_var', 'Adafactor');
          const colVar = stateTensor(s, 'col_var', 'Adafactor');
          // (g * g).mean over the last dimension, then over the one before, without g * g.
          const n = grad.shape.length;
          const rowMean = t
            .linalgVectorNorm(grad, 2, [-1], true)
            .square()
            .div_(grad.shape[n - 1]);
          rowVar.lerp_(rowMean, oneMinusBeta2T);
          const colMean = t
            .linalgVectorNorm(grad, 2, [-2], true)
            .square()
            .div_(grad.shape[n - 2]);
          colVar.lerp_(colMean, oneMinusBeta2T);
          varEstimate = rowVar.matmul(colVar);
          varEstimate.div_(rowVar.mean([-2], true).clamp_({ min: eps1 }));
        } else {
          const variance = stateTensor(s, 'variance', 'Adafactor');
          variance.lerp_(grad.mul(grad), oneMinusBeta2T);
          varEstimate = variance.clone();
        }
        // eps1 squared: the square root comes after.
        // (Out of place where PyTorch works in place: the same kernels, the same bits.)
        const update = varEstimate.clamp_({ min: eps1 * eps1 }).rsqrt();
        update.mul_(grad);
        const rms = t.linalgVectorNorm(update, 2).item() / (cPow(update.numel(), 0.5) * d);
        const denom = pyMax(1.0, rms);
        param.add_(update, { alpha: -alpha / denom });
      });
    });
  }
}

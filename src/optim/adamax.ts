// Adamax, as torch.optim.Adamax (Adam with the infinity norm): PyTorch's
// _single_tensor_adamax (its CPU default, foreach=False) op for op, non-capturable:
// the bias correction comes from each parameter's step count with Python's float power
// (cPow). State per parameter: step (0-dim float32 on the CPU), exp_avg, exp_inf.

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { cPow } from './c-math.ts';
import { flag, hyper, Optimizer, optimizerOptions, type ParamGroup, type ParamsInput } from './optimizer.ts';
import {
  addScalar_,
  checkAdamHypers,
  checkLoopOnly,
  mulScalar_,
  newStep,
  pairOf,
  stateTensor,
  withGrads,
} from './per-parameter.ts';

export interface AdamaxOptions {
  /** Learning rate (default 2e-3). */
  lr?: number;
  /** Coefficients of the running average of the gradient and of the infinity norm (default [0.9, 0.999]). */
  betas?: [number, number];
  /** Added to |gradient| before the infinity norm's maximum (default 1e-8). */
  eps?: number;
  /** L2 penalty added to the gradient (PyTorch: weight_decay; default 0). */
  weightDecay?: number;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
}

const OPTIONS = optionNames<AdamaxOptions>({
  lr: true,
  betas: true,
  eps: true,
  weightDecay: true,
  maximize: true,
  foreach: true,
});

export class Adamax extends Optimizer {
  constructor(params: ParamsInput<AdamaxOptions>, options?: AdamaxOptions) {
    const opts = optimizerOptions('Adamax', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 2e-3,
      betas: opts.betas ? [...opts.betas] : [0.9, 0.999],
      eps: opts.eps ?? 1e-8,
      weightDecay: opts.weightDecay ?? 0,
      foreach: opts.foreach ?? null,
      maximize: opts.maximize ?? false,
      differentiable: false,
      capturable: false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    checkAdamHypers(g);
    checkLoopOnly(g, 'Adamax');
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'Adamax');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const [beta1, beta2] = pairOf(group, 'betas');
    const eps = hyper(group, 'eps');
    const weightDecay = hyper(group, 'weightDecay');
    const maximize = flag(group, 'maximize');
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      if (Object.keys(s).length === 0) {
        s.step = newStep();
        s.exp_avg = t.zerosLike(param).keep();
        s.exp_inf = t.zerosLike(param).keep();
      }
      const expAvg = stateTensor(s, 'exp_avg', 'Adamax');
      const expInf = stateTensor(s, 'exp_inf', 'Adamax');
      const stepT = stateTensor(s, 'step', 'Adamax');
      stepT.add_(1);
      const step = stepT.item();
      t.tidy(() => {
        let grad: Tensor = maximize ? grads[i].neg() : grads[i];
        if (weightDecay !== 0) grad = grad.add(param, { alpha: weightDecay });
        expAvg.lerp_(grad, 1 - beta1);
        // torch.maximum(exp_inf.mul_(beta2), |grad| + eps, out=exp_inf): exact, so a copy
        // gives the same bits.
        const normBuf = addScalar_(grad.abs(), eps);
        expInf.copy_(t.maximum(mulScalar_(expInf, beta2), normBuf));
        const clr = lr / (1 - cPow(beta1, step));
        param.addcdiv_(expAvg, expInf, { value: -clr });
      });
    });
  }
}

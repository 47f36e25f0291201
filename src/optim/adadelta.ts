// Adadelta, as torch.optim.Adadelta: PyTorch's _single_tensor_adadelta (its CPU default,
// foreach=False) op for op. State per parameter: step (0-dim float32 on the CPU),
// square_avg, acc_delta.

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { flag, hyper, Optimizer, optimizerOptions, type ParamGroup, type ParamsInput } from './optimizer.ts';
import { addScalar, checkLoopOnly, mulScalar_, newStep, stateTensor, withGrads } from './per-parameter.ts';

export interface AdadeltaOptions {
  /** Coefficient that scales the delta before it is applied (default 1.0). */
  lr?: number;
  /** Coefficient of the running averages of squared gradients and deltas (default 0.9). */
  rho?: number;
  /** Added to the averages before their square roots (default 1e-6). */
  eps?: number;
  /** L2 penalty added to the gradient (PyTorch: weight_decay; default 0). */
  weightDecay?: number;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
}

const OPTIONS = optionNames<AdadeltaOptions>({
  lr: true,
  rho: true,
  eps: true,
  weightDecay: true,
  maximize: true,
  foreach: true,
});

export class Adadelta extends Optimizer {
  constructor(params: ParamsInput<AdadeltaOptions>, options?: AdadeltaOptions) {
    const opts = optimizerOptions('Adadelta', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1.0,
      rho: opts.rho ?? 0.9,
      eps: opts.eps ?? 1e-6,
      weightDecay: opts.weightDecay ?? 0,
      maximize: opts.maximize ?? false,
      capturable: false,
      foreach: opts.foreach ?? null,
      differentiable: false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const rho = hyper(g, 'rho');
    const eps = hyper(g, 'eps');
    const wd = hyper(g, 'weightDecay');
    if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    if (!(rho >= 0 && rho <= 1)) throw new RangeError(`Invalid rho value: ${rho}`);
    if (!(eps >= 0)) throw new RangeError(`Invalid epsilon value: ${eps}`);
    if (!(wd >= 0)) throw new RangeError(`Invalid weight_decay value: ${wd}`);
    checkLoopOnly(g, 'Adadelta');
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'Adadelta');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const rho = hyper(group, 'rho');
    const eps = hyper(group, 'eps');
    const weightDecay = hyper(group, 'weightDecay');
    const maximize = flag(group, 'maximize');
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      if (Object.keys(s).length === 0) {
        s.step = newStep();
        s.square_avg = t.zerosLike(param).keep();
        s.acc_delta = t.zerosLike(param).keep();
      }
      const squareAvg = stateTensor(s, 'square_avg', 'Adadelta');
      const accDelta = stateTensor(s, 'acc_delta', 'Adadelta');
      stateTensor(s, 'step', 'Adadelta').add_(1);
      t.tidy(() => {
        let grad: Tensor = maximize ? grads[i].neg() : grads[i];
        if (weightDecay !== 0) grad = grad.add(param, { alpha: weightDecay });
        mulScalar_(squareAvg, rho).addcmul_(grad, grad, { value: 1 - rho });
        const std = addScalar(squareAvg, eps).sqrt_();
        const delta = addScalar(accDelta, eps).sqrt_();
        delta.div_(std).mul_(grad);
        mulScalar_(accDelta, rho).addcmul_(delta, delta, { value: 1 - rho });
        param.add_(delta, { alpha: -lr });
      });
    });
  }
}

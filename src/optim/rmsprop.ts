// RMSprop, as torch.optim.RMSprop: PyTorch's _single_tensor_rmsprop (its CPU default,
// foreach=False) op for op, with its `centered` (normalise by the estimated variance)
// and `momentum` variants. State per parameter: step (0-dim float32 on the CPU),
// square_avg, momentum_buffer (momentum > 0) and grad_avg (centered), made at the
// parameter's first gradient.

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { flag, hyper, Optimizer, optimizerOptions, type ParamGroup, type ParamsInput } from './optimizer.ts';
import { addScalar_, checkLoopOnly, mulScalar_, newStep, stateTensor, withGrads } from './per-parameter.ts';

export interface RMSpropOptions {
  /** Learning rate (default 1e-2). */
  lr?: number;
  /** Smoothing constant of the running average of squared gradients (default 0.99). */
  alpha?: number;
  /** Added to the denominator (default 1e-8). */
  eps?: number;
  /** L2 penalty added to the gradient (PyTorch: weight_decay; default 0). */
  weightDecay?: number;
  /** Momentum factor (default 0). */
  momentum?: number;
  /** Normalise the gradient by an estimate of its variance (default false). */
  centered?: boolean;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
}

const OPTIONS = optionNames<RMSpropOptions>({
  lr: true,
  alpha: true,
  eps: true,
  weightDecay: true,
  momentum: true,
  centered: true,
  maximize: true,
  foreach: true,
});

export class RMSprop extends Optimizer {
  constructor(params: ParamsInput<RMSpropOptions>, options?: RMSpropOptions) {
    const opts = optimizerOptions('RMSprop', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-2,
      momentum: opts.momentum ?? 0,
      alpha: opts.alpha ?? 0.99,
      eps: opts.eps ?? 1e-8,
      centered: opts.centered ?? false,
      weightDecay: opts.weightDecay ?? 0,
      capturable: false,
      foreach: opts.foreach ?? null,
      maximize: opts.maximize ?? false,
      differentiable: false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const eps = hyper(g, 'eps');
    const momentum = hyper(g, 'momentum');
    const wd = hyper(g, 'weightDecay');
    const alpha = hyper(g, 'alpha');
    if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    if (!(eps >= 0)) throw new RangeError(`Invalid epsilon value: ${eps}`);
    if (!(momentum >= 0)) throw new RangeError(`Invalid momentum value: ${momentum}`);
    if (!(wd >= 0)) throw new RangeError(`Invalid weight_decay value: ${wd}`);
    if (!(alpha >= 0)) throw new RangeError(`Invalid alpha value: ${alpha}`);
    checkLoopOnly(g, 'RMSprop');
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'RMSprop');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const alpha = hyper(group, 'alpha');
    const eps = hyper(group, 'eps');
    const weightDecay = hyper(group, 'weightDecay');
    const momentum = hyper(group, 'momentum');
    const centered = flag(group, 'centered');
    const maximize = flag(group, 'maximize');
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      if (Object.keys(s).length === 0) {
        s.step = newStep();
        s.square_avg = t.zerosLike(param).keep();
        if (momentum > 0) s.momentum_buffer = t.zerosLike(param).keep();
        if (centered) s.grad_avg = t.zerosLike(param).keep();
      }
      const squareAvg = stateTensor(s, 'square_avg', 'RMSprop');
      const stepT = stateTensor(s, 'step', 'RMSprop');
      t.tidy(() => {
        let grad: Tensor = maximize ? grads[i].neg() : grads[i];
        stepT.add_(1);
        if (weightDecay !== 0) grad = grad.add(param, { alpha: weightDecay });
        mulScalar_(squareAvg, alpha).addcmul_(grad, grad, { value: 1 - alpha });
        let avg: Tensor;
        if (centered) {
          const gradAvg = stateTensor(s, 'grad_avg', 'RMSprop');
          gradAvg.lerp_(grad, 1 - alpha);
          avg = squareAvg.addcmul(gradAvg, gradAvg, { value: -1 }).sqrt_();
        } else {
          avg = squareAvg.sqrt();
        }
        addScalar_(avg, eps);
        if (momentum > 0) {
          const buf = stateTensor(s, 'momentum_buffer', 'RMSprop');
          mulScalar_(buf, momentum).addcdiv_(grad, avg);
          param.add_(buf, { alpha: -lr });
        } else {
          param.addcdiv_(grad, avg, { value: -lr });
        }
      });
    });
  }
}

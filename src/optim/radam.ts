// RAdam, as torch.optim.RAdam (Adam with a rectified adaptive learning rate):
// PyTorch's _single_tensor_radam (its CPU default, foreach=False) op for op,
// non-capturable, with the L2 (default) or decoupled (`decoupledWeightDecay`, RAdamW)
// weight decay. The bias corrections and the rectification term are computed in double
// precision from each parameter's step count with Python's float power (cPow); the
// rectified update starts once the approximated SMA length exceeds 5. State per
// parameter: step (0-dim float32 on the CPU), exp_avg, exp_avg_sq.

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { cPow } from './c-math.ts';
import { flag, hyper, Optimizer, optimizerOptions, type ParamGroup, type ParamsInput } from './optimizer.ts';
import {
  addScalar_,
  checkAdamHypers,
  checkLoopOnly,
  divScalar,
  mulScalar,
  mulScalar_,
  newStep,
  pairOf,
  stateTensor,
  withGrads,
} from './per-parameter.ts';

export interface RAdamOptions {
  /** Learning rate (default 1e-3). */
  lr?: number;
  /** Coefficients of the running averages of the gradient and its square (default [0.9, 0.999]). */
  betas?: [number, number];
  /** Added to the denominator (default 1e-8). */
  eps?: number;
  /** Weight decay (PyTorch: weight_decay; default 0): an L2 term, or decoupled with `decoupledWeightDecay`. */
  weightDecay?: number;
  /** Decay the weights directly (RAdamW) instead of adding an L2 term (PyTorch: decoupled_weight_decay). */
  decoupledWeightDecay?: boolean;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
}

const OPTIONS = optionNames<RAdamOptions>({
  lr: true,
  betas: true,
  eps: true,
  weightDecay: true,
  decoupledWeightDecay: true,
  maximize: true,
  foreach: true,
});

export class RAdam extends Optimizer {
  constructor(params: ParamsInput<RAdamOptions>, options?: RAdamOptions) {
    const opts = optimizerOptions('RAdam', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-3,
      betas: opts.betas ? [...opts.betas] : [0.9, 0.999],
      eps: opts.eps ?? 1e-8,
      weightDecay: opts.weightDecay ?? 0,
      maximize: opts.maximize ?? false,
      foreach: opts.foreach ?? null,
      capturable: false,
      decoupledWeightDecay: opts.decoupledWeightDecay ?? false,
      differentiable: false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    checkAdamHypers(g);
    checkLoopOnly(g, 'RAdam');
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'RAdam');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const [beta1, beta2] = pairOf(group, 'betas');
    const eps = hyper(group, 'eps');
    const weightDecay = hyper(group, 'weightDecay');
    const decoupled = flag(group, 'decoupledWeightDecay');
    const maximize = flag(group, 'maximize');
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      if (Object.keys(s).length === 0) {
        s.step = newStep();
        s.exp_avg = t.zerosLike(param).keep();
        s.exp_avg_sq = t.zerosLike(param).keep();
      }
      const expAvg = stateTensor(s, 'exp_avg', 'RAdam');
      const expAvgSq = stateTensor(s, 'exp_avg_sq', 'RAdam');
      const stepT = stateTensor(s, 'step', 'RAdam');
      t.tidy(() => {
        let grad: Tensor = maximize ? grads[i].neg() : grads[i];
        stepT.add_(1);
        const step = stepT.item();
        if (weightDecay !== 0) {
          if (decoupled) mulScalar_(param, 1 - lr * weightDecay);
          else grad = grad.add(param, { alpha: weightDecay });
        }
        expAvg.lerp_(grad, 1 - beta1);
        mulScalar_(expAvgSq, beta2).addcmul_(grad, grad, { value: 1 - beta2 });
        const biasCorrection1 = 1 - cPow(beta1, step);
        const biasCorrection2 = 1 - cPow(beta2, step);
        const biasCorrectedExpAvg = divScalar(expAvg, biasCorrection1);
        // The maximum and the current length of the approximated SMA.
        const rhoInf = 2 / (1 - beta2) - 1;
        const rhoT = rhoInf - (2 * step * cPow(beta2, step)) / biasCorrection2;
        let update = mulScalar(biasCorrectedExpAvg, lr);
        if (rhoT > 5.0) {
          const rect = cPow(((rhoT - 4) * (rhoT - 2) * rhoInf) / ((rhoInf - 4) * (rhoInf - 2) * rhoT), 0.5);
          const sqrt = expAvgSq.sqrt();
          addScalar_(sqrt, eps);
          // Python's `float / tensor` is tensor.reciprocal() * float.
          const adaptiveLr = mulScalar(sqrt.reciprocal(), cPow(biasCorrection2, 0.5));
          update = update.mul(adaptiveLr);
          update = mulScalar(update, rect);
        }
        param.add_(update, { alpha: -1.0 });
      });
    });
  }
}

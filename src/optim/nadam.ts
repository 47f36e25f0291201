// NAdam, as torch.optim.NAdam (Adam with Nesterov momentum): PyTorch's
// _single_tensor_nadam (its CPU default, foreach=False) op for op, non-capturable, with
// the L2 (default) or decoupled (`decoupledWeightDecay`, NAdamW) weight decay. The
// momentum schedule mu_t = beta1 (1 - 0.5 * 0.96^(t * momentumDecay)) is computed in
// double precision with Python's float power (cPow); the running product of the mu_t is
// a 0-dim float32 tensor, as PyTorch keeps it. State per parameter: step, mu_product
// (0-dim float32 on the CPU), exp_avg, exp_avg_sq.

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { cPow } from './c-math.ts';
import {
  flag,
  hyper,
  Optimizer,
  optimizerOptions,
  type ParamGroup,
  type ParamsInput,
  type StateValue,
} from './optimizer.ts';
import {
  addScalar_,
  checkAdamHypers,
  checkLoopOnly,
  divScalar,
  mulScalar_,
  newStep,
  pairOf,
  scalarState,
  stateTensor,
  withGrads,
} from './per-parameter.ts';

export interface NAdamOptions {
  /** Learning rate (default 2e-3). */
  lr?: number;
  /** Coefficients of the running averages of the gradient and its square (default [0.9, 0.999]). */
  betas?: [number, number];
  /** Added to the denominator (default 1e-8). */
  eps?: number;
  /** Weight decay (PyTorch: weight_decay; default 0): an L2 term, or decoupled with `decoupledWeightDecay`. */
  weightDecay?: number;
  /** Momentum decay psi of the mu_t schedule (PyTorch: momentum_decay; default 4e-3). */
  momentumDecay?: number;
  /** Decay the weights directly (NAdamW) instead of adding an L2 term (PyTorch: decoupled_weight_decay). */
  decoupledWeightDecay?: boolean;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
}

const OPTIONS = optionNames<NAdamOptions>({
  lr: true,
  betas: true,
  eps: true,
  weightDecay: true,
  momentumDecay: true,
  decoupledWeightDecay: true,
  maximize: true,
  foreach: true,
});

export class NAdam extends Optimizer {
  constructor(params: ParamsInput<NAdamOptions>, options?: NAdamOptions) {
    const opts = optimizerOptions('NAdam', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 2e-3,
      betas: opts.betas ? [...opts.betas] : [0.9, 0.999],
      eps: opts.eps ?? 1e-8,
      weightDecay: opts.weightDecay ?? 0,
      momentumDecay: opts.momentumDecay ?? 4e-3,
      decoupledWeightDecay: opts.decoupledWeightDecay ?? false,
      maximize: opts.maximize ?? false,
      foreach: opts.foreach ?? null,
      capturable: false,
      differentiable: false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    checkAdamHypers(g);
    const md = hyper(g, 'momentumDecay');
    if (!(md >= 0)) throw new RangeError(`Invalid momentum_decay value: ${md}`);
    checkLoopOnly(g, 'NAdam');
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'NAdam');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const [beta1, beta2] = pairOf(group, 'betas');
    const eps = hyper(group, 'eps');
    const weightDecay = hyper(group, 'weightDecay');
    const momentumDecay = hyper(group, 'momentumDecay');
    const decoupled = flag(group, 'decoupledWeightDecay');
    const maximize = flag(group, 'maximize');
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      if (Object.keys(s).length === 0) {
        s.step = newStep();
        s.mu_product = scalarState(1);
        s.exp_avg = t.zerosLike(param).keep();
        s.exp_avg_sq = t.zerosLike(param).keep();
      }
      const expAvg = stateTensor(s, 'exp_avg', 'NAdam');
      const expAvgSq = stateTensor(s, 'exp_avg_sq', 'NAdam');
      const muProduct = stateTensor(s, 'mu_product', 'NAdam');
      const stepT = stateTensor(s, 'step', 'NAdam');
      t.tidy(() => {
        let grad: Tensor = maximize ? grads[i].neg() : grads[i];
        stepT.add_(1);
        const step = stepT.item();
        const biasCorrection2 = 1 - cPow(beta2, step);
        if (weightDecay !== 0) {
          if (decoupled) mulScalar_(param, 1 - lr * weightDecay);
          else grad = grad.add(param, { alpha: weightDecay });
        }
        const mu = beta1 * (1.0 - 0.5 * cPow(0.96, step * momentumDecay));
        const muNext = beta1 * (1.0 - 0.5 * cPow(0.96, (step + 1) * momentumDecay));
        // A 0-dim tensor times a Python float: the number (a Scalar) keeps the tensor's
        // dtype, where a 0-dim float64 operand would promote the product to double.
        muProduct.mul_(mu);
        expAvg.lerp_(grad, 1 - beta1);
        mulScalar_(expAvgSq, beta2).addcmul_(grad, grad, { value: 1 - beta2 });
        const denom = divScalar(expAvgSq, biasCorrection2).sqrt();
        const muProductValue = muProduct.item();
        const muProductNext = muProductValue * muNext;
        addScalar_(denom, eps);
        param.addcdiv_(grad, denom, { value: (-lr * (1.0 - mu)) / (1.0 - muProductValue) });
        param.addcdiv_(expAvg, denom, { value: (-lr * muNext) / (1.0 - muProductNext) });
      });
    });
  }

  /** Loads `mu_product` saved as a plain number (older PyTorch checkpoints) as a tensor. */
  protected override castState(
    param: Tensor,
    key: string,
    value: StateValue,
    group: Record<string, unknown>,
  ): StateValue {
    if (key === 'mu_product' && typeof value === 'number') return scalarState(value);
    return super.castState(param, key, value, group);
  }
}

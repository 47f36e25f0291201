// Adagrad, as torch.optim.Adagrad: PyTorch's _single_tensor_adagrad (its CPU default,
// foreach=False) op for op, dense gradients. State per parameter: step (0-dim float32 on
// the CPU) and sum, made for every parameter when the optimizer is built, as PyTorch
// does, so a state dict has an entry for a parameter that never had a gradient.

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { flag, hyper, Optimizer, optimizerOptions, type ParamGroup, type ParamsInput } from './optimizer.ts';
import { addScalar_, checkLoopOnly, newStep, stateTensor, withGrads } from './per-parameter.ts';

export interface AdagradOptions {
  /** Learning rate (default 1e-2). */
  lr?: number;
  /** The learning rate at step t is lr / (1 + (t - 1) * lrDecay) (PyTorch: lr_decay; default 0). */
  lrDecay?: number;
  /** L2 penalty added to the gradient (PyTorch: weight_decay; default 0). */
  weightDecay?: number;
  /**
   * What the sums of squared gradients start at (PyTorch: initial_accumulator_value;
   * default 0). As in PyTorch, the constructor's value fills every accumulator; a
   * group's own value is kept in the group but not used.
   */
  initialAccumulatorValue?: number;
  /** Added to the square root of the sum (default 1e-10). */
  eps?: number;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
  /** PyTorch's fused kernel: not implemented (null or false). */
  fused?: boolean | null;
}

const OPTIONS = optionNames<AdagradOptions>({
  lr: true,
  lrDecay: true,
  weightDecay: true,
  initialAccumulatorValue: true,
  eps: true,
  maximize: true,
  foreach: true,
  fused: true,
});

export class Adagrad extends Optimizer {
  constructor(params: ParamsInput<AdagradOptions>, options?: AdagradOptions) {
    const opts = optimizerOptions('Adagrad', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-2,
      lrDecay: opts.lrDecay ?? 0,
      eps: opts.eps ?? 1e-10,
      weightDecay: opts.weightDecay ?? 0,
      initialAccumulatorValue: opts.initialAccumulatorValue ?? 0,
      foreach: opts.foreach ?? null,
      maximize: opts.maximize ?? false,
      differentiable: false,
      fused: opts.fused ?? null,
    });
    t.tidy(() => {
      for (const g of this.paramGroups) for (const p of g.params) this.initState(p);
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const lrDecay = hyper(g, 'lrDecay');
    const wd = hyper(g, 'weightDecay');
    const init = hyper(g, 'initialAccumulatorValue');
    const eps = hyper(g, 'eps');
    if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    if (!(lrDecay >= 0)) throw new RangeError(`Invalid lr_decay value: ${lrDecay}`);
    if (!(wd >= 0)) throw new RangeError(`Invalid weight_decay value: ${wd}`);
    if (!(init >= 0)) throw new RangeError(`Invalid initial_accumulator_value value: ${init}`);
    if (!(eps >= 0)) throw new RangeError(`Invalid epsilon value: ${eps}`);
    checkLoopOnly(g, 'Adagrad');
  }

  /**
   * step 0 and the accumulator, filled with the constructor's initialAccumulatorValue
   * (PyTorch's _init_group reads `self.defaults`, not the group). A group added later
   * gets its state at its first gradient, as there.
   */
  private initState(p: Tensor): void {
    const s = this.stateOf(p);
    if (Object.keys(s).length !== 0) return;
    s.step = newStep();
    s.sum = t.fullLike(p, this.defaults.initialAccumulatorValue as number).keep();
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'Adagrad');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const lrDecay = hyper(group, 'lrDecay');
    const eps = hyper(group, 'eps');
    const weightDecay = hyper(group, 'weightDecay');
    const maximize = flag(group, 'maximize');
    params.forEach((param, i) => {
      this.initState(param);
      const s = this.stateOf(param);
      const stateSum = stateTensor(s, 'sum', 'Adagrad');
      const stepT = stateTensor(s, 'step', 'Adagrad');
      stepT.add_(1);
      const step = stepT.item();
      t.tidy(() => {
        let grad: Tensor = maximize ? grads[i].neg() : grads[i];
        if (weightDecay !== 0) grad = grad.add(param, { alpha: weightDecay });
        const clr = lr / (1 + (step - 1) * lrDecay);
        stateSum.addcmul_(grad, grad, { value: 1 });
        const std = addScalar_(stateSum.sqrt(), eps);
        param.addcdiv_(grad, std, { value: -clr });
      });
    });
  }
}

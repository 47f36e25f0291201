// ASGD (averaged SGD), as torch.optim.ASGD: PyTorch's _single_tensor_asgd (its CPU
// default, foreach=False) op for op, non-capturable. State per parameter: step (0-dim
// float32 on the CPU), eta and mu (0-dim float32 on the parameter's device: the current
// learning rate and averaging coefficient, computed in double precision and stored
// rounded, as PyTorch's `torch.as_tensor(python_float)`), and ax, the averaged parameter.

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
  checkLoopOnly,
  mulScalar_,
  newStep,
  pyMax,
  scalarState,
  stateTensor,
  withGrads,
} from './per-parameter.ts';

export interface ASGDOptions {
  /** Learning rate (default 1e-2). */
  lr?: number;
  /** Decay term (default 1e-4). */
  lambd?: number;
  /** Power of the eta update (default 0.75). */
  alpha?: number;
  /** The step at which averaging starts (default 1e6). */
  t0?: number;
  /** L2 penalty added to the gradient (PyTorch: weight_decay; default 0). */
  weightDecay?: number;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
}

const OPTIONS = optionNames<ASGDOptions>({
  lr: true,
  lambd: true,
  alpha: true,
  t0: true,
  weightDecay: true,
  maximize: true,
  foreach: true,
});

export class ASGD extends Optimizer {
  constructor(params: ParamsInput<ASGDOptions>, options?: ASGDOptions) {
    const opts = optimizerOptions('ASGD', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-2,
      lambd: opts.lambd ?? 1e-4,
      alpha: opts.alpha ?? 0.75,
      t0: opts.t0 ?? 1e6,
      weightDecay: opts.weightDecay ?? 0,
      foreach: opts.foreach ?? null,
      maximize: opts.maximize ?? false,
      differentiable: false,
      capturable: false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const wd = hyper(g, 'weightDecay');
    hyper(g, 'lambd');
    hyper(g, 'alpha');
    hyper(g, 't0');
    if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    if (!(wd >= 0)) throw new RangeError(`Invalid weight_decay value: ${wd}`);
    checkLoopOnly(g, 'ASGD');
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'ASGD');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const lambd = hyper(group, 'lambd');
    const alpha = hyper(group, 'alpha');
    const t0 = hyper(group, 't0');
    const weightDecay = hyper(group, 'weightDecay');
    const maximize = flag(group, 'maximize');
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      if (Object.keys(s).length === 0) {
        s.step = newStep();
        s.eta = scalarState(lr, param.device);
        s.mu = scalarState(1, param.device);
        s.ax = t.zerosLike(param).keep();
      }
      const ax = stateTensor(s, 'ax', 'ASGD');
      const eta = stateTensor(s, 'eta', 'ASGD');
      const mu = stateTensor(s, 'mu', 'ASGD');
      const stepT = stateTensor(s, 'step', 'ASGD');
      t.tidy(() => {
        let grad: Tensor = maximize ? grads[i].neg() : grads[i];
        stepT.add_(1);
        if (weightDecay !== 0) grad = grad.add(param, { alpha: weightDecay });
        const etaValue = eta.item();
        mulScalar_(param, 1 - lambd * etaValue);
        param.add_(grad, { alpha: -etaValue });
        if (mu.item() !== 1) ax.add_(param.sub(ax).mul_(mu));
        else ax.copy_(param);
        const step = stepT.item();
        eta.fill_(lr / cPow(1 + lambd * lr * step, alpha));
        mu.fill_(1 / pyMax(1, step - t0));
      });
    });
  }

  /** Loads `eta` and `mu` saved as plain numbers (older PyTorch checkpoints) as tensors. */
  protected override castState(
    param: Tensor,
    key: string,
    value: StateValue,
    group: Record<string, unknown>,
  ): StateValue {
    if ((key === 'eta' || key === 'mu') && typeof value === 'number') return scalarState(value, param.device);
    return super.castState(param, key, value, group);
  }
}

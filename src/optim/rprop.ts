// Rprop (resilient backpropagation), as torch.optim.Rprop: PyTorch's
// _single_tensor_rprop (its CPU default, foreach=False) op for op, non-capturable. Each
// element's step size grows by etas[1] while its gradient keeps its sign, shrinks by
// etas[0] when the sign flips (and that element's gradient counts as 0 for this step),
// within stepSizes. State per parameter: step (0-dim float32 on the CPU), prev (the
// last gradient used) and step_size (starting at lr).

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { flag, hyper, Optimizer, optimizerOptions, type ParamGroup, type ParamsInput } from './optimizer.ts';
import { checkLoopOnly, newStep, pairOf, stateTensor, withGrads } from './per-parameter.ts';

export interface RpropOptions {
  /** Learning rate: every element's first step size (default 1e-2). */
  lr?: number;
  /** [etaminus, etaplus]: the step size's factors on a sign flip and on a kept sign (default [0.5, 1.2]). */
  etas?: [number, number];
  /** [min, max] step size (PyTorch: step_sizes; default [1e-6, 50]). */
  stepSizes?: [number, number];
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /** PyTorch's multi-tensor path: not implemented (null or false runs the per-parameter loop). */
  foreach?: boolean | null;
}

const OPTIONS = optionNames<RpropOptions>({
  lr: true,
  etas: true,
  stepSizes: true,
  maximize: true,
  foreach: true,
});

export class Rprop extends Optimizer {
  constructor(params: ParamsInput<RpropOptions>, options?: RpropOptions) {
    const opts = optimizerOptions('Rprop', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-2,
      etas: opts.etas ? [...opts.etas] : [0.5, 1.2],
      stepSizes: opts.stepSizes ? [...opts.stepSizes] : [1e-6, 50],
      foreach: opts.foreach ?? null,
      maximize: opts.maximize ?? false,
      differentiable: false,
      capturable: false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const [etaminus, etaplus] = pairOf(g, 'etas');
    pairOf(g, 'stepSizes');
    if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    if (!(etaminus > 0 && etaminus < 1 && etaplus > 1)) {
      throw new RangeError(`Invalid eta values: ${etaminus}, ${etaplus}`);
    }
    checkLoopOnly(g, 'Rprop');
  }

  protected stepGroup(group: ParamGroup): void {
    checkLoopOnly(group, 'Rprop');
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const [etaminus, etaplus] = pairOf(group, 'etas');
    const [stepSizeMin, stepSizeMax] = pairOf(group, 'stepSizes');
    const maximize = flag(group, 'maximize');
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      if (Object.keys(s).length === 0) {
        s.step = newStep();
        s.prev = t.zerosLike(param).keep();
        s.step_size = t.fullLike(grads[i], lr).keep();
      }
      const prev = stateTensor(s, 'prev', 'Rprop');
      const stepSize = stateTensor(s, 'step_size', 'Rprop');
      const stepT = stateTensor(s, 'step', 'Rprop');
      t.tidy(() => {
        let grad: Tensor = maximize ? grads[i].neg() : grads[i];
        stepT.add_(1);
        const sign = grad.mul(prev).sign();
        // PyTorch's sign[sign.gt(0)] = etaplus, ... in that order: each masked write sees
        // the previous one's result.
        sign.maskedFill_(sign.gt(0), etaplus);
        sign.maskedFill_(sign.lt(0), etaminus);
        sign.maskedFill_(sign.eq(0), 1);
        stepSize.mul_(sign).clamp_(stepSizeMin, stepSizeMax);
        // Where the sign flipped the gradient counts as 0 (and is remembered so).
        grad = grad.clone();
        grad.maskedFill_(sign.eq(etaminus), 0);
        param.addcmul_(grad.sign(), stepSize, { value: -1 });
        prev.copy_(grad);
      });
    });
  }
}

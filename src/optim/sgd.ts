// SGD with momentum, dampening, Nesterov, weight decay and maximize, as
// torch.optim.SGD. The update runs as multi-tensor (_foreach_*) kernels, following
// PyTorch's _multi_tensor_sgd op for op, or as libtorch's fused kernel (_fused_sgd_)
// with `fused: true`. On CPU PyTorch defaults to a per-parameter loop, which is
// followed op for op too: its results equal the multi-tensor ones in float32/float64,
// but not in float16/bfloat16 (the fixtures check all three paths).

import { isFloatingPoint } from '../core/dtype.ts';
import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { defaultForeach, groupIndicesByDeviceAndDtype, pick } from './grouping.ts';
import {
  checkNoAmpScaling,
  flag,
  hyper,
  Optimizer,
  optimizerOptions,
  type ParamGroup,
  type ParamsInput,
} from './optimizer.ts';

export interface SGDOptions {
  /** Learning rate (default 1e-3). */
  lr?: number;
  momentum?: number;
  dampening?: number;
  /** L2 penalty added to the gradient (PyTorch: weight_decay). */
  weightDecay?: number;
  nesterov?: boolean;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
  /**
   * Multi-tensor (`_foreach_*`) kernels. Unset: on CUDA, yes (as in PyTorch); on CPU, yes
   * for float32/float64 parameters, where they give the per-parameter loop's numbers
   * exactly and save its per-parameter calls (resnet18: 7.5 against 8.1 ms a step; a
   * ViT's 152 parameters under DDP: 4.7 against 7.5 ms), and the loop for float16/bfloat16,
   * where PyTorch's CPU default is the loop and the two differ. `fused` takes 12-14 ms
   * against 30-37 for ResNet-50 on 2 cores, with its own (PyTorch's fused) numbers.
   */
  foreach?: boolean | null;
  /** libtorch's fused SGD kernel (one kernel per device and dtype). */
  fused?: boolean | null;
}

const OPTIONS = optionNames<SGDOptions>({
  lr: true,
  momentum: true,
  dampening: true,
  weightDecay: true,
  nesterov: true,
  maximize: true,
  foreach: true,
  fused: true,
});

export class SGD extends Optimizer {
  constructor(params: ParamsInput<SGDOptions>, options?: SGDOptions) {
    const opts = optimizerOptions('SGD', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-3,
      momentum: opts.momentum ?? 0,
      dampening: opts.dampening ?? 0,
      weightDecay: opts.weightDecay ?? 0,
      nesterov: opts.nesterov ?? false,
      maximize: opts.maximize ?? false,
      foreach: opts.foreach ?? null,
      differentiable: false,
      fused: opts.fused ?? null,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const momentum = hyper(g, 'momentum');
    const weightDecay = hyper(g, 'weightDecay');
    if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    if (!(momentum >= 0)) throw new RangeError(`Invalid momentum value: ${momentum}`);
    if (!(weightDecay >= 0)) throw new RangeError(`Invalid weight_decay value: ${weightDecay}`);
    if (flag(g, 'nesterov') && (momentum <= 0 || hyper(g, 'dampening') !== 0)) {
      throw new RangeError('Nesterov momentum requires a momentum and zero dampening');
    }
    if (flag(g, 'fused') && flag(g, 'foreach')) {
      throw new RangeError('`fused` and `foreach` cannot be `true` together.');
    }
    if (flag(g, 'differentiable')) throw new RangeError('differentiable SGD is not supported');
    if (flag(g, 'fused')) {
      for (const p of g.params) {
        if (!isFloatingPoint(p.dtype)) {
          throw new TypeError(`\`fused: true\` requires floating point parameters, got ${p.dtype}`);
        }
      }
    }
  }

  protected stepGroup(group: ParamGroup): void {
    const params: Tensor[] = [];
    const grads: Tensor[] = [];
    for (const p of group.params) {
      const g = p.grad;
      if (g === null) continue;
      params.push(p);
      grads.push(g);
    }
    if (params.length === 0) return;
    for (const idx of groupIndicesByDeviceAndDtype(params)) {
      const ps = pick(params, idx);
      const gs = pick(grads, idx);
      const foreach = group.foreach ?? defaultForeach(ps[0]);
      if (flag(group, 'fused')) this.fused(group, ps, gs);
      else if (foreach) this.multiTensor(group, ps, gs);
      else this.singleTensor(group, ps, gs);
    }
  }

  /** PyTorch's _single_tensor_sgd: one parameter at a time, temporaries freed as it goes. */
  private singleTensor(group: ParamGroup, params: Tensor[], grads: Tensor[]): void {
    checkNoAmpScaling(this);
    const lr = hyper(group, 'lr');
    const momentum = hyper(group, 'momentum');
    const dampening = hyper(group, 'dampening');
    const weightDecay = hyper(group, 'weightDecay');
    const maximize = flag(group, 'maximize');
    const nesterov = flag(group, 'nesterov');
    // PyTorch's `buf.mul_(momentum)` passes a Python float, which reaches the kernel as
    // a double; mul_.Scalar would round it to the buffer's dtype first (float16 and
    // bfloat16 then drift from PyTorch). A 0-dim float64 CPU tensor keeps the double
    // and, being 0-dim, does not change the in-place result's dtype.
    using momentumScalar = t.full([], momentum, { dtype: 'float64' });
    params.forEach((p, i) => {
      t.tidy(() => {
        let grad = maximize ? grads[i].neg() : grads[i];
        if (weightDecay !== 0) grad = grad.add(p, { alpha: weightDecay });
        if (momentum !== 0) {
          const state = this.stateOf(p);
          let buf = state.momentum_buffer;
          if (buf instanceof t.Tensor) buf.mul_(momentumScalar).add_(grad, { alpha: 1 - dampening });
          else {
            buf = grad.detach().clone().keep();
            state.momentum_buffer = buf;
          }
          grad = nesterov ? grad.add(buf, { alpha: momentum }) : buf;
        }
        p.add_(grad, { alpha: -lr });
      });
    });
  }

  /** PyTorch's _multi_tensor_sgd for one device and dtype. */
  private multiTensor(group: ParamGroup, params: Tensor[], gradsIn: Tensor[]): void {
    checkNoAmpScaling(this);
    const lr = hyper(group, 'lr');
    const momentum = hyper(group, 'momentum');
    const dampening = hyper(group, 'dampening');
    const weightDecay = hyper(group, 'weightDecay');
    const maximize = flag(group, 'maximize');
    let grads = gradsIn;
    // True once `grads` holds temporaries rather than the parameters' own .grad.
    let owned = false;
    if (maximize) {
      grads = t._foreachNeg(grads);
      owned = true;
    }
    if (weightDecay !== 0) {
      if (owned) t._foreachAdd_(grads, params, { alpha: weightDecay });
      else grads = t._foreachAdd(grads, params, { alpha: weightDecay });
      owned = true;
    }
    if (momentum !== 0) {
      const bufs: Tensor[] = [];
      const existing: number[] = [];
      params.forEach((p, i) => {
        const state = this.stateOf(p);
        const buf = state.momentum_buffer;
        if (buf instanceof t.Tensor) {
          bufs.push(buf);
          existing.push(i);
        } else {
          // First step for this parameter: the buffer is the gradient itself (no dampening).
          const fresh = grads[i].detach().clone().keep();
          state.momentum_buffer = fresh;
          bufs.push(fresh);
        }
      });
      if (existing.length > 0) {
        const old = pick(bufs, existing);
        t._foreachMul_(old, momentum);
        t._foreachAdd_(old, pick(grads, existing), { alpha: 1 - dampening });
      }
      if (flag(group, 'nesterov')) {
        // PyTorch updates in place here, which writes into p.grad when no temporary
        // exists yet; an out-of-place add gives the same numbers and leaves p.grad alone.
        if (owned) t._foreachAdd_(grads, bufs, { alpha: momentum });
        else grads = t._foreachAdd(grads, bufs, { alpha: momentum });
      } else {
        grads = bufs;
      }
    }
    t._foreachAdd_(params, grads, { alpha: -lr });
  }

  /** libtorch's _fused_sgd_ for one device and dtype. */
  private fused(group: ParamGroup, params: Tensor[], grads: Tensor[]): void {
    const momentum = hyper(group, 'momentum');
    const opts = {
      weightDecay: hyper(group, 'weightDecay'),
      momentum,
      lr: hyper(group, 'lr'),
      dampening: hyper(group, 'dampening'),
      nesterov: flag(group, 'nesterov'),
      maximize: flag(group, 'maximize'),
      gradScale: this.gradScale === null ? null : this.gradScale.to(params[0].device),
      foundInf: this.foundInf === null ? null : this.foundInf.to(params[0].device),
    };
    if (momentum === 0) {
      t._fusedSgd_(params, grads, [], { ...opts, isFirstStep: false });
      return;
    }
    // The kernel initialises buffers itself on a first step (is_first_step). PyTorch
    // requires all buffers of a group to be new or all to exist; parameters that got
    // their first gradient later are run as a separate first-step call instead.
    const fresh: number[] = [];
    const existing: number[] = [];
    const bufs = params.map((p, i) => {
      const state = this.stateOf(p);
      let buf = state.momentum_buffer;
      if (buf instanceof t.Tensor) {
        existing.push(i);
      } else {
        // Zeros rather than empty: a step skipped for inf/NaN (foundInf) leaves the
        // buffer as it was, and PyTorch's empty_like would leave garbage there.
        buf = t.zerosLike(grads[i]).keep();
        state.momentum_buffer = buf;
        fresh.push(i);
      }
      return buf;
    });
    if (existing.length > 0) {
      t._fusedSgd_(pick(params, existing), pick(grads, existing), pick(bufs, existing), {
        ...opts,
        isFirstStep: false,
      });
    }
    if (fresh.length > 0) {
      t._fusedSgd_(pick(params, fresh), pick(grads, fresh), pick(bufs, fresh), {
        ...opts,
        isFirstStep: true,
      });
    }
  }
}

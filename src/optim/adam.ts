// Adam and AdamW, as torch.optim.Adam / torch.optim.AdamW (AdamW is Adam with
// decoupled weight decay). The update follows PyTorch's _single_tensor_adam or
// _multi_tensor_adam (`foreach`, the default for float32/float64) op for op
// (non-capturable branch: bias corrections computed from each parameter's step count
// with Python's float power), or calls libtorch's fused kernels (_fused_adam_ /
// _fused_adamw_) with `fused: true`.
// The per-parameter `step` is a float32 scalar tensor, as in PyTorch.

import { isFloatingPoint } from '../core/dtype.ts';
import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { cPow } from './c-math.ts';
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

export interface AdamOptions {
  /** Learning rate (default 1e-3). */
  lr?: number;
  /** Coefficients of the running averages of the gradient and its square (default [0.9, 0.999]). */
  betas?: [number, number];
  eps?: number;
  /** Default 0 for Adam (an L2 penalty on the gradient), 1e-2 for AdamW (decoupled). PyTorch: weight_decay. */
  weightDecay?: number;
  amsgrad?: boolean;
  maximize?: boolean;
  /**
   * Multi-tensor kernels. Unset: on CUDA, yes (as in PyTorch); on CPU, yes for
   * float32/float64 parameters, where PyTorch's own two paths give the same numbers to the
   * bit and the multi-tensor one saves the loop's calls from JavaScript (AdamW on
   * vit_tiny's parameters: 6.3 against 7.3 ms, PyTorch's loop 6.9), and the loop for
   * float16/bfloat16, where PyTorch's CPU default is the loop and the two differ in the
   * last bit. Each path gives PyTorch's numbers for that path.
   */
  foreach?: boolean | null;
  /** libtorch's fused Adam(W) kernel. */
  fused?: boolean | null;
  /** Adam only: decay the weights directly (AdamW) instead of adding an L2 term. */
  decoupledWeightDecay?: boolean;
}

const OPTIONS = optionNames<AdamOptions>({
  lr: true,
  betas: true,
  eps: true,
  weightDecay: true,
  amsgrad: true,
  maximize: true,
  foreach: true,
  fused: true,
  decoupledWeightDecay: true,
});

export class Adam extends Optimizer {
  constructor(params: ParamsInput<AdamOptions>, options?: AdamOptions) {
    const opts = optimizerOptions('Adam', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-3,
      betas: opts.betas ? [...opts.betas] : [0.9, 0.999],
      eps: opts.eps ?? 1e-8,
      weightDecay: opts.weightDecay ?? 0,
      amsgrad: opts.amsgrad ?? false,
      maximize: opts.maximize ?? false,
      foreach: opts.foreach ?? null,
      capturable: false,
      differentiable: false,
      fused: opts.fused ?? null,
      decoupledWeightDecay: opts.decoupledWeightDecay ?? false,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const eps = hyper(g, 'eps');
    const wd = hyper(g, 'weightDecay');
    const [b1, b2] = betasOf(g);
    if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    if (!(eps >= 0)) throw new RangeError(`Invalid epsilon value: ${eps}`);
    if (!(b1 >= 0 && b1 < 1)) throw new RangeError(`Invalid beta parameter at index 0: ${b1}`);
    if (!(b2 >= 0 && b2 < 1)) throw new RangeError(`Invalid beta parameter at index 1: ${b2}`);
    if (!(wd >= 0)) throw new RangeError(`Invalid weight_decay value: ${wd}`);
    if (flag(g, 'fused') && flag(g, 'foreach')) {
      throw new RangeError('`fused` and `foreach` cannot be `true` together.');
    }
    if (flag(g, 'differentiable')) throw new RangeError('differentiable Adam is not supported');
    if (flag(g, 'capturable')) throw new RangeError('capturable Adam is not supported');
  }

  protected stepGroup(group: ParamGroup): void {
    const fused = flag(group, 'fused');
    const amsgrad = flag(group, 'amsgrad');
    const params: Tensor[] = [];
    const grads: Tensor[] = [];
    for (const p of group.params) {
      const g = p.grad;
      if (g === null) continue;
      params.push(p);
      grads.push(g);
      const s = this.stateOf(p);
      if (Object.keys(s).length === 0) {
        if (fused && !isFloatingPoint(p.dtype)) {
          throw new TypeError(`\`fused: true\` requires floating point parameters, got ${p.dtype}`);
        }
        // PyTorch keeps a non-fused step on the CPU and a fused one on the parameter's device.
        s.step = t.zeros([], { dtype: 'float32', device: fused ? p.device : 'cpu' }).keep();
        s.exp_avg = t.zerosLike(p).keep();
        s.exp_avg_sq = t.zerosLike(p).keep();
        if (amsgrad) s.max_exp_avg_sq = t.zerosLike(p).keep();
      }
    }
    if (params.length === 0) return;
    for (const idx of groupIndicesByDeviceAndDtype(params)) {
      const ps = pick(params, idx);
      const gs = pick(grads, idx);
      const states = ps.map((p) => this.stateOf(p));
      const tensorsOf = (key: string): Tensor[] =>
        states.map((s) => {
          const v = s[key];
          if (!(v instanceof t.Tensor)) throw new TypeError(`Adam state '${key}' is missing or not a Tensor`);
          return v;
        });
      const st = {
        expAvgs: tensorsOf('exp_avg'),
        expAvgSqs: tensorsOf('exp_avg_sq'),
        maxExpAvgSqs: amsgrad ? tensorsOf('max_exp_avg_sq') : [],
        steps: tensorsOf('step'),
      };
      const foreach = group.foreach ?? defaultForeach(ps[0]);
      if (fused) this.fused(group, ps, gs, st);
      else if (foreach) this.multiTensor(group, ps, gs, st);
      else this.singleTensor(group, ps, gs, st);
    }
  }

  /**
   * PyTorch's _single_tensor_adam (capturable = false): one parameter at a time.
   * Where PyTorch passes a Python float as a tensor operand (`mul_(beta2)`, `/
   * bias_correction2_sqrt`, `add_(eps)`, `mul_(1 - lr * weight_decay)`), the kernel
   * gets a double; a Scalar overload would round it to the parameter's dtype first, so
   * these go as 0-dim float64 tensors (which do not change the result's dtype).
   */
  private singleTensor(group: ParamGroup, params: Tensor[], grads: Tensor[], st: AdamTensors): void {
    checkNoAmpScaling(this);
    const lr = hyper(group, 'lr');
    const [beta1, beta2] = betasOf(group);
    const weightDecay = hyper(group, 'weightDecay');
    const eps = hyper(group, 'eps');
    const maximize = flag(group, 'maximize');
    const amsgrad = flag(group, 'amsgrad');
    const decoupled = flag(group, 'decoupledWeightDecay');
    const double = (v: number) => t.full([], v, { dtype: 'float64' });
    using beta2T = double(beta2);
    using epsT = double(eps);
    using decayT = double(1 - lr * weightDecay);
    // lr / bias_correction1 and sqrt(bias_correction2), once per distinct step count.
    const byStep = new Map<number, [number, number]>();
    const corrections = (step: number): [number, number] => {
      let c = byStep.get(step);
      if (c === undefined) {
        c = [lr / (1 - cPow(beta1, step)), cPow(1 - cPow(beta2, step), 0.5)];
        byStep.set(step, c);
      }
      return c;
    };
    params.forEach((param, i) => {
      t.tidy(() => {
        let grad = maximize ? grads[i].neg() : grads[i];
        const expAvg = st.expAvgs[i];
        const expAvgSq = st.expAvgSqs[i];
        const stepT = st.steps[i];
        stepT.add_(1);
        if (weightDecay !== 0) {
          if (decoupled) param.mul_(decayT);
          else grad = grad.add(param, { alpha: weightDecay });
        }
        expAvg.lerp_(grad, 1 - beta1);
        expAvgSq.mul_(beta2T).addcmul_(grad, grad, { value: 1 - beta2 });
        const [stepSize, bc2Sqrt] = corrections(stepT.item());
        let sq = expAvgSq;
        if (amsgrad) {
          const max = st.maxExpAvgSqs[i];
          // torch.maximum(max, exp_avg_sq, out=max): exact, so a copy gives the same bits.
          max.copy_(t.maximum(max, expAvgSq));
          sq = max;
        }
        const denom = sq.sqrt().div(double(bc2Sqrt)).add_(epsT);
        param.addcdiv_(expAvg, denom, { value: -stepSize });
      });
    });
  }

  /** PyTorch's _multi_tensor_adam (capturable = false) for one device and dtype. */
  private multiTensor(group: ParamGroup, params: Tensor[], gradsIn: Tensor[], st: AdamTensors): void {
    checkNoAmpScaling(this);
    const lr = hyper(group, 'lr');
    const [beta1, beta2] = betasOf(group);
    const weightDecay = hyper(group, 'weightDecay');
    const eps = hyper(group, 'eps');
    const maximize = flag(group, 'maximize');
    let grads = gradsIn;
    if (maximize) grads = t._foreachNeg(grads);
    t._foreachAdd_(st.steps, 1);
    if (weightDecay !== 0) {
      if (flag(group, 'decoupledWeightDecay')) t._foreachMul_(params, 1 - lr * weightDecay);
      else if (maximize) t._foreachAdd_(grads, params, { alpha: weightDecay });
      else grads = t._foreachAdd(grads, params, { alpha: weightDecay });
    }
    t._foreachLerp_(st.expAvgs, grads, 1 - beta1);
    t._foreachMul_(st.expAvgSqs, beta2);
    t._foreachAddcmul_(st.expAvgSqs, grads, grads, 1 - beta2);
    // Bias corrections in double precision from each parameter's own step count, with
    // Python's float power (cPow), computed once per distinct step.
    const stepSize: number[] = [];
    const bc2Sqrt: number[] = [];
    const byStep = new Map<number, [number, number]>();
    for (const s of st.steps) {
      const step = s.item();
      let c = byStep.get(step);
      if (c === undefined) {
        c = [(lr / (1 - cPow(beta1, step))) * -1, cPow(1 - cPow(beta2, step), 0.5)];
        byStep.set(step, c);
      }
      stepSize.push(c[0]);
      bc2Sqrt.push(c[1]);
    }
    let denom: Tensor[];
    if (flag(group, 'amsgrad')) {
      t._foreachMaximum_(st.maxExpAvgSqs, st.expAvgSqs);
      denom = t._foreachSqrt(st.maxExpAvgSqs);
    } else {
      denom = t._foreachSqrt(st.expAvgSqs);
    }
    t._foreachDiv_(denom, bc2Sqrt);
    t._foreachAdd_(denom, eps);
    t._foreachAddcdiv_(params, st.expAvgs, denom, stepSize);
  }

  /** libtorch's _fused_adam_ / _fused_adamw_ for one device and dtype. */
  private fused(group: ParamGroup, params: Tensor[], grads: Tensor[], st: AdamTensors): void {
    const [beta1, beta2] = betasOf(group);
    const device = params[0].device;
    const foundInf = this.foundInf === null ? null : this.foundInf.to(device);
    t._foreachAdd_(st.steps, 1);
    const kernel = flag(group, 'decoupledWeightDecay') ? t._fusedAdamw_ : t._fusedAdam_;
    kernel(params, grads, st.expAvgs, st.expAvgSqs, st.maxExpAvgSqs, st.steps, {
      lr: hyper(group, 'lr'),
      beta1,
      beta2,
      weightDecay: hyper(group, 'weightDecay'),
      eps: hyper(group, 'eps'),
      amsgrad: flag(group, 'amsgrad'),
      maximize: flag(group, 'maximize'),
      gradScale: this.gradScale === null ? null : this.gradScale.to(device),
      foundInf,
    });
    // A skipped step (inf/NaN found) gives its step count back, as PyTorch does.
    if (foundInf !== null)
      t._foreachSub_(
        st.steps,
        st.steps.map(() => foundInf),
      );
  }
}

interface AdamTensors {
  expAvgs: Tensor[];
  expAvgSqs: Tensor[];
  maxExpAvgSqs: Tensor[];
  steps: Tensor[];
}

function betasOf(g: ParamGroup): [number, number] {
  const b = g.betas;
  if (!Array.isArray(b) || b.length !== 2 || typeof b[0] !== 'number' || typeof b[1] !== 'number') {
    throw new TypeError('param group hyperparameter `betas` must be two numbers');
  }
  return [b[0], b[1]];
}

const ADAMW_OPTIONS = OPTIONS.filter((k) => k !== 'decoupledWeightDecay');

/** AdamW: Adam with decoupled weight decay (default 1e-2), as torch.optim.AdamW. */
export class AdamW extends Adam {
  constructor(
    params: ParamsInput<Omit<AdamOptions, 'decoupledWeightDecay'>>,
    options?: Omit<AdamOptions, 'decoupledWeightDecay'>,
  ) {
    const opts = optimizerOptions('AdamW', options, ADAMW_OPTIONS);
    super(params, { ...opts, weightDecay: opts.weightDecay ?? 1e-2, decoupledWeightDecay: true });
  }

  override loadStateDict(sd: Parameters<Adam['loadStateDict']>[0]): void {
    super.loadStateDict(sd);
    // As PyTorch's AdamW.__setstate__: an AdamW stays decoupled whatever the checkpoint says.
    for (const g of this.paramGroups) g.decoupledWeightDecay = true;
  }
}

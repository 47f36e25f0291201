// SparseAdam, as torch.optim.SparseAdam: Adam for sparse COO gradients (what an
// Embedding with sparse gradients makes), updating the moments and the parameter only
// at the gradient's indices; PyTorch's torch.optim._functional.sparse_adam op for op.
// Dense gradients are refused, as there. tsddp's own layers make no sparse gradients
// (nn.functional.embedding refuses `sparse: true`); a sparse gradient built through the
// dispatcher (`t.ops.call('aten::_sparse_coo_tensor_unsafe', ...)`) steps as in PyTorch.
// State per parameter: step (a plain number, as PyTorch keeps it here), exp_avg,
// exp_avg_sq.

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
import { addScalar_, mulScalar, mulScalar_, pairOf, stateTensor, withGrads } from './per-parameter.ts';

export interface SparseAdamOptions {
  /** Learning rate (default 1e-3). */
  lr?: number;
  /** Coefficients of the running averages of the gradient and its square (default [0.9, 0.999]). */
  betas?: [number, number];
  /** Added to the denominator (default 1e-8). */
  eps?: number;
  /** Maximize the objective instead of minimizing it. */
  maximize?: boolean;
}

const OPTIONS = optionNames<SparseAdamOptions>({ lr: true, betas: true, eps: true, maximize: true });

/**
 * Whether `x` has a sparse COO layout (Tensor.is_sparse). tsddp's Tensor has no layout
 * accessor; libtorch's _has_compatible_shallow_copy_type answers whether two tensors'
 * implementations are of one kind (dense, sparse COO, compressed), so `x` is asked
 * against a sparse COO tensor.
 */
function isSparse(x: Tensor): boolean {
  return t.tidy(() => {
    const ref = t.ops.call(
      'aten::_sparse_coo_tensor_unsafe',
      t.zeros([1, 0], { dtype: 'int64' }),
      t.zeros([0]),
      [1],
    );
    return t.ops.call('aten::_has_compatible_shallow_copy_type', x, ref) === true;
  });
}

const call = (op: string, ...args: unknown[]): Tensor => t.ops.call(op, ...args) as Tensor;

export class SparseAdam extends Optimizer {
  constructor(params: ParamsInput<SparseAdamOptions>, options?: SparseAdamOptions) {
    const opts = optimizerOptions('SparseAdam', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-3,
      betas: opts.betas ? [...opts.betas] : [0.9, 0.999],
      eps: opts.eps ?? 1e-8,
      maximize: opts.maximize ?? false,
    });
    const sparse: string[] = [];
    this.paramGroups.forEach((g, gi) => {
      g.params.forEach((p, pi) => {
        if (isSparse(p)) sparse.push(`[${gi}, ${pi}]`);
      });
    });
    if (sparse.length > 0) {
      throw new RangeError(
        `Sparse params at indices [${sparse.join(', ')}]: SparseAdam requires dense parameter tensors`,
      );
    }
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const eps = hyper(g, 'eps');
    const [b1, b2] = pairOf(g, 'betas');
    if (!(lr > 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    if (!(eps > 0)) throw new RangeError(`Invalid epsilon value: ${eps}`);
    if (!(b1 >= 0 && b1 < 1)) throw new RangeError(`Invalid beta parameter at index 0: ${b1}`);
    if (!(b2 >= 0 && b2 < 1)) throw new RangeError(`Invalid beta parameter at index 1: ${b2}`);
  }

  protected stepGroup(group: ParamGroup): void {
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const [beta1, beta2] = pairOf(group, 'betas');
    const eps = hyper(group, 'eps');
    const maximize = flag(group, 'maximize');
    // PyTorch counts every parameter's step and checks every gradient before updating any.
    const steps = params.map((p, i) => {
      if (!isSparse(grads[i])) {
        throw new TypeError('SparseAdam does not support dense gradients, please consider Adam instead');
      }
      const s = this.stateOf(p);
      if (Object.keys(s).length === 0) {
        s.step = 0;
        s.exp_avg = t.zerosLike(p).keep();
        s.exp_avg_sq = t.zerosLike(p).keep();
      }
      s.step = (s.step as number) + 1;
      return s.step;
    });
    params.forEach((param, i) => {
      const s = this.stateOf(param);
      const expAvg = stateTensor(s, 'exp_avg', 'SparseAdam');
      const expAvgSq = stateTensor(s, 'exp_avg_sq', 'SparseAdam');
      t.tidy(() => {
        // The update is non-linear, so the indices must be unique: coalesce.
        const grad = call('aten::coalesce', maximize ? grads[i].neg() : grads[i]);
        const indices = call('aten::_indices', grad);
        const values = call('aten::_values', grad);
        if (values.numel() === 0) return;
        const size = grad.shape;
        const makeSparse = (v: Tensor): Tensor => call('aten::_sparse_coo_tensor_unsafe', indices, v, size);
        // old <- b * old + (1 - b) * new  <=>  old += (1 - b) * (new - old)
        const oldExpAvgValues = call('aten::_values', call('aten::sparse_mask', expAvg, grad));
        const expAvgUpdateValues = mulScalar_(values.sub(oldExpAvgValues), 1 - beta1);
        expAvg.add_(makeSparse(expAvgUpdateValues));
        const oldExpAvgSqValues = call('aten::_values', call('aten::sparse_mask', expAvgSq, grad));
        const expAvgSqUpdateValues = mulScalar_(values.pow(2).sub_(oldExpAvgSqValues), 1 - beta2);
        expAvgSq.add_(makeSparse(expAvgSqUpdateValues));
        // Dense additions again, as PyTorch (no second sparse_mask).
        const numer = expAvgUpdateValues.add_(oldExpAvgValues);
        expAvgSqUpdateValues.add_(oldExpAvgSqValues);
        const denom = addScalar_(expAvgSqUpdateValues.sqrt_(), eps);
        const biasCorrection1 = 1 - cPow(beta1, steps[i]);
        const biasCorrection2 = 1 - cPow(beta2, steps[i]);
        const stepSize = (lr * Math.sqrt(biasCorrection2)) / biasCorrection1;
        param.add_(makeSparse(mulScalar(numer.div_(denom), -stepSize)));
      });
    });
  }

  /** `step` is a plain number in SparseAdam's state, as in PyTorch's. */
  protected override castState(
    param: Tensor,
    key: string,
    value: StateValue,
    group: Record<string, unknown>,
  ): StateValue {
    if (key === 'step') return value instanceof t.Tensor ? value.item() : value;
    return super.castState(param, key, value, group);
  }
}

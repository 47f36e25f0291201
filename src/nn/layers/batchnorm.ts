// torch.nn.modules.batchnorm: _NormBase (the state BatchNorm and InstanceNorm share, with
// PyTorch's names: `weight`, `bias`, `running_mean`, `running_var`, `num_batches_tracked`),
// BatchNorm1d/2d/3d over one class whose subclasses only check the input's rank, and
// LazyBatchNorm1d/2d/3d, whose numFeatures comes from the first input.
import { noGrad } from '../../autograd/index.ts';
import * as t from '../../core/index.ts';
import { type Args, bind, type Signature, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module, pyFloat } from '../module.ts';
import {
  isUninitialized,
  LazyModuleMixin,
  type LazySpec,
  materialize,
  ownTensors,
  setInferredSize,
} from './lazy.ts';
import type { FactoryOptions } from './linear.ts';
import { registerAffine, resetAffine } from './normalization.ts';

export interface BatchNormOptions extends FactoryOptions {
  eps?: number;
  /** Weight of each batch in the running averages; null for a cumulative (equal-weight) average. Default 0.1. */
  momentum?: number | null;
  /** Learnable per-channel weight and bias. Default true. */
  affine?: boolean;
  /** Keep running mean/var (used in eval mode). Default true. */
  trackRunningStats?: boolean;
  /** With affine: learn the bias too (keyword-only, as in PyTorch). Default true. */
  bias?: boolean;
}

// PyTorch's signatures of the batch and instance norms (_NormBase's), and of their lazy
// forms without num_features.
const NORM_OPTIONAL = ['eps', 'momentum', 'affine', 'trackRunningStats', 'device', 'dtype'] as const;
const NORM = signature(['BatchNorm', 'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d'], {
  required: ['numFeatures'],
  optional: NORM_OPTIONAL,
  keywordOnly: ['bias'],
});
const LAZY_NORM_SIG = signature(['LazyBatchNorm1d', 'LazyBatchNorm2d', 'LazyBatchNorm3d'], {
  optional: NORM_OPTIONAL,
  keywordOnly: ['bias'],
});
export type NormArgs<O> = Args<typeof NORM, { numFeatures: number } & O>;
export type LazyNormArgs<O> = Args<typeof LAZY_NORM_SIG, O>;

/**
 * torch's _NormBase: per-channel affine weight (ones) and bias (zeros) and the running
 * statistics (mean 0, var 1, an int64 batch count), each only when asked for; the
 * buffers are read through camelCase getters. `defaults` are the family's own defaults
 * of `affine` and `trackRunningStats` (BatchNorm: true, InstanceNorm: false).
 */
export abstract class _NormBase extends Module {
  readonly numFeatures: number;
  readonly eps: number;
  momentum: number | null;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  weight: t.Tensor | null;
  bias: t.Tensor | null;

  /** Binds `args` (PyTorch's arguments of `cls`) by `sig`; `defaults` as above. */
  constructor(sig: Signature, args: ArrayLike<unknown>, cls: string, defaults: boolean) {
    super();
    const opts = bind<{ numFeatures: number } & BatchNormOptions>(sig, args, cls);
    const numFeatures = opts.numFeatures;
    this.numFeatures = numFeatures;
    this.eps = opts.eps ?? 1e-5;
    this.momentum = opts.momentum === undefined ? 0.1 : opts.momentum;
    this.affine = opts.affine ?? defaults;
    this.trackRunningStats = opts.trackRunningStats ?? defaults;
    const factory = { dtype: opts.dtype, device: opts.device };
    [this.weight, this.bias] = registerAffine(this, [numFeatures], this.affine, opts);
    const track = this.trackRunningStats;
    this.registerBuffer('running_mean', track ? t.zeros([numFeatures], factory) : null);
    this.registerBuffer('running_var', track ? t.ones([numFeatures], factory) : null);
    this.registerBuffer(
      'num_batches_tracked',
      track ? t.zeros([], { dtype: 'int64', device: opts.device }) : null,
    );
    this.resetParameters();
  }

  get runningMean(): t.Tensor | null {
    return this._buffers.get('running_mean') ?? null;
  }
  get runningVar(): t.Tensor | null {
    return this._buffers.get('running_var') ?? null;
  }

  resetRunningStats(): void {
    if (!this.trackRunningStats) return;
    noGrad(() => {
      this.runningMean?.zero_();
      this.runningVar?.fill_(1);
      this._buffers.get('num_batches_tracked')?.zero_();
    });
  }

  resetParameters(): void {
    this.resetRunningStats();
    resetAffine(this.weight, this.bias);
  }

  /**
   * A state dict from before PyTorch 0.4.1 has no `num_batches_tracked`; as PyTorch's
   * _load_from_state_dict does for a dict without version metadata, the module's own
   * count stands in for it (0 when there is none), so such checkpoints load strictly.
   */
  protected override upgradeStateDict(stateDict: Map<string, t.Tensor>, prefix: string): void {
    if (!this.trackRunningStats) return;
    const key = `${prefix}num_batches_tracked`;
    if (stateDict.has(key)) return;
    stateDict.set(key, this._buffers.get('num_batches_tracked') ?? t.zeros([], { dtype: 'int64' }));
  }

  /**
   * What one forward passes to batch_norm, decided as torch's _BatchNorm.forward does: the
   * batch counted in training, the running-average factor (1 / batches with momentum
   * null), whether batch statistics are used, and the running statistics handed over (none
   * in training without tracking).
   */
  protected batchNormArgs(): {
    factor: number;
    useBatchStats: boolean;
    runningMean: t.Tensor | null;
    runningVar: t.Tensor | null;
  } {
    let factor = this.momentum ?? 0;
    const nbt = this._buffers.get('num_batches_tracked') ?? null;
    if (this.training && this.trackRunningStats && nbt !== null) {
      nbt.add_(1);
      factor = this.momentum === null ? 1 / nbt.item() : this.momentum;
    }
    const runningMean = this.runningMean;
    const runningVar = this.runningVar;
    // Batch statistics in training, and in eval when there are no running statistics.
    const useBatchStats = this.training || (runningMean === null && runningVar === null);
    const passStats = !this.training || this.trackRunningStats;
    return {
      factor,
      useBatchStats,
      runningMean: passStats ? runningMean : null,
      runningVar: passStats ? runningVar : null,
    };
  }

  /** batch_norm of `input` with this module's affine parameters and eps, as `args` decided. */
  protected batchNorm(input: t.Tensor, args: ReturnType<_NormBase['batchNormArgs']>): t.Tensor {
    return F.batchNorm(input, args.runningMean, args.runningVar, {
      weight: this.weight,
      bias: this.bias,
      training: args.useBatchStats,
      momentum: args.factor,
      eps: this.eps,
    });
  }

  override extraRepr(): string {
    const m = this.momentum === null ? 'None' : pyFloat(this.momentum);
    const b = (x: boolean) => (x ? 'True' : 'False');
    return `${this.numFeatures}, eps=${pyFloat(this.eps)}, momentum=${m}, affine=${b(this.affine)}, bias=${b(this.bias !== null)}, track_running_stats=${b(this.trackRunningStats)}`;
  }
}

/**
 * Batch normalisation over channel dim 1 (torch's _BatchNorm). In training mode the
 * kernel updates the running statistics in place and `num_batches_tracked` counts the
 * batches.
 */
export abstract class BatchNorm extends _NormBase {
  constructor(...args: NormArgs<BatchNormOptions>) {
    super(NORM, args, new.target.name, true);
  }

  /** The int64 0-d count of training batches seen (a tensor, like PyTorch's buffer). */
  get numBatchesTracked(): t.Tensor | null {
    return this._buffers.get('num_batches_tracked') ?? null;
  }

  /** Throws a RangeError unless the input has the rank this variant normalises. */
  protected abstract checkInputDim(input: t.Tensor): void;

  override forward(input: t.Tensor): t.Tensor {
    this.checkInputDim(input);
    return this.batchNorm(input, this.batchNormArgs());
  }
}

/** Throws PyTorch's RangeError unless `input` has one of the ranks `dims`. */
function expectRank(input: t.Tensor, dims: number[]): void {
  if (!dims.includes(input.ndim)) {
    throw new RangeError(
      `expected ${dims.map((d) => `${d}D`).join(' or ')} input (got ${input.ndim}D input)`,
    );
  }
}

/** BatchNorm over [N, C] or [N, C, L] input (torch.nn.BatchNorm1d). */
export class BatchNorm1d extends BatchNorm {
  protected override checkInputDim(input: t.Tensor): void {
    expectRank(input, [2, 3]);
  }
}

/** BatchNorm over [N, C, H, W] input (torch.nn.BatchNorm2d). */
export class BatchNorm2d extends BatchNorm {
  protected override checkInputDim(input: t.Tensor): void {
    expectRank(input, [4]);
  }
}

/** BatchNorm over [N, C, D, H, W] input (torch.nn.BatchNorm3d). */
export class BatchNorm3d extends BatchNorm {
  protected override checkInputDim(input: t.Tensor): void {
    expectRank(input, [5]);
  }
}

/**
 * PyTorch's _LazyNormBase, for the batch and instance norms: numFeatures is input.shape[1]
 * of the first input; the affine parameters and running statistics wait for it.
 */
export const LAZY_NORM: LazySpec<_NormBase> = {
  size: (m) => m.numFeatures,
  placeholders: ['weight', 'bias', 'running_mean', 'running_var'],
  initialize(m, input) {
    const n = input.shape[1];
    setInferredSize(m, 'numFeatures', n);
    for (const [, v] of ownTensors(m)) if (isUninitialized(v)) materialize(v, [n]);
  },
};

/** BatchNorm1d whose numFeatures comes from the first input (torch.nn.LazyBatchNorm1d). */
export class LazyBatchNorm1d extends LazyModuleMixin(BatchNorm1d, LAZY_NORM) {
  constructor(...args: LazyNormArgs<BatchNormOptions>) {
    super(0, bind<BatchNormOptions>(LAZY_NORM_SIG, args, 'LazyBatchNorm1d'));
  }
}

/** BatchNorm2d whose numFeatures comes from the first input (torch.nn.LazyBatchNorm2d). */
export class LazyBatchNorm2d extends LazyModuleMixin(BatchNorm2d, LAZY_NORM) {
  constructor(...args: LazyNormArgs<BatchNormOptions>) {
    super(0, bind<BatchNormOptions>(LAZY_NORM_SIG, args, 'LazyBatchNorm2d'));
  }
}

/** BatchNorm3d whose numFeatures comes from the first input (torch.nn.LazyBatchNorm3d). */
export class LazyBatchNorm3d extends LazyModuleMixin(BatchNorm3d, LAZY_NORM) {
  constructor(...args: LazyNormArgs<BatchNormOptions>) {
    super(0, bind<BatchNormOptions>(LAZY_NORM_SIG, args, 'LazyBatchNorm3d'));
  }
}

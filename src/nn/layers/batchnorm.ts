// BatchNorm1d/2d/3d with PyTorch's running-statistics semantics (torch's
// _BatchNorm: one class, each subclass only checks its input's rank).
import { noGrad } from '../../autograd/index.ts';
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

export interface BatchNormOptions extends FactoryOptions {
  eps?: number;
  /** Weight of each batch in the running averages; null for a cumulative (equal-weight) average. Default 0.1. */
  momentum?: number | null;
  /** Learnable per-channel weight and bias. Default true. */
  affine?: boolean;
  /** Keep running mean/var (used in eval mode). Default true. */
  trackRunningStats?: boolean;
}

/**
 * Batch normalisation over channel dim 1. State names match PyTorch's (`weight`, `bias`,
 * `running_mean`, `running_var`, `num_batches_tracked`); the buffers are read through
 * camelCase getters. In training mode the kernel updates the running statistics in
 * place and `num_batches_tracked` counts the batches.
 */
export abstract class BatchNorm extends Module {
  readonly numFeatures: number;
  readonly eps: number;
  momentum: number | null;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  weight: t.Tensor | null;
  bias: t.Tensor | null;

  constructor(numFeatures: number, opts: BatchNormOptions = {}) {
    super();
    this.numFeatures = numFeatures;
    this.eps = opts.eps ?? 1e-5;
    this.momentum = opts.momentum === undefined ? 0.1 : opts.momentum;
    this.affine = opts.affine ?? true;
    this.trackRunningStats = opts.trackRunningStats ?? true;
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter(
      'weight',
      this.affine ? Parameter(t.empty([numFeatures], factory)) : null,
    );
    this.bias = this.registerParameter(
      'bias',
      this.affine ? Parameter(t.empty([numFeatures], factory)) : null,
    );
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
  /** The int64 0-d count of training batches seen (a tensor, like PyTorch's buffer). */
  get numBatchesTracked(): t.Tensor | null {
    return this._buffers.get('num_batches_tracked') ?? null;
  }

  resetRunningStats(): void {
    if (!this.trackRunningStats) return;
    noGrad(() => {
      this.runningMean?.zero_();
      this.runningVar?.fill_(1);
      this.numBatchesTracked?.zero_();
    });
  }

  resetParameters(): void {
    this.resetRunningStats();
    if (this.weight !== null) init.ones_(this.weight);
    if (this.bias !== null) init.zeros_(this.bias);
  }

  /** Throws a RangeError unless the input has the rank this variant normalises. */
  protected abstract checkInputDim(input: t.Tensor): void;

  /**
   * A state dict from before PyTorch 0.4.1 has no `num_batches_tracked`; as PyTorch's
   * _load_from_state_dict does for a dict without version metadata, the module's own
   * count stands in for it (0 when there is none), so such checkpoints load strictly.
   */
  protected override upgradeStateDict(stateDict: Map<string, t.Tensor>, prefix: string): void {
    if (!this.trackRunningStats) return;
    const key = `${prefix}num_batches_tracked`;
    if (stateDict.has(key)) return;
    stateDict.set(key, this.numBatchesTracked ?? t.zeros([], { dtype: 'int64' }));
  }

  override forward(input: t.Tensor): t.Tensor {
    this.checkInputDim(input);
    let factor = this.momentum ?? 0;
    const nbt = this.numBatchesTracked;
    if (this.training && this.trackRunningStats && nbt !== null) {
      nbt.add_(1);
      factor = this.momentum === null ? 1 / nbt.item() : this.momentum;
    }
    const runningMean = this.runningMean;
    const runningVar = this.runningVar;
    // Batch statistics in training, and in eval when there are no running statistics.
    const useBatchStats = this.training || (runningMean === null && runningVar === null);
    const passStats = !this.training || this.trackRunningStats;
    return F.batchNorm(input, passStats ? runningMean : null, passStats ? runningVar : null, {
      weight: this.weight,
      bias: this.bias,
      training: useBatchStats,
      momentum: factor,
      eps: this.eps,
    });
  }

  override extraRepr(): string {
    const m = this.momentum === null ? 'None' : String(this.momentum);
    const b = (x: boolean) => (x ? 'True' : 'False');
    return `${this.numFeatures}, eps=${this.eps}, momentum=${m}, affine=${b(this.affine)}, track_running_stats=${b(this.trackRunningStats)}`;
  }
}

/** BatchNorm over [N, C] or [N, C, L] input (torch.nn.BatchNorm1d). */
export class BatchNorm1d extends BatchNorm {
  protected override checkInputDim(input: t.Tensor): void {
    const dim = input.ndim;
    if (dim !== 2 && dim !== 3) throw new RangeError(`expected 2D or 3D input (got ${dim}D input)`);
  }
}

/** BatchNorm over [N, C, H, W] input (torch.nn.BatchNorm2d). */
export class BatchNorm2d extends BatchNorm {
  protected override checkInputDim(input: t.Tensor): void {
    const dim = input.ndim;
    if (dim !== 4) throw new RangeError(`expected 4D input (got ${dim}D input)`);
  }
}

/** BatchNorm over [N, C, D, H, W] input (torch.nn.BatchNorm3d). */
export class BatchNorm3d extends BatchNorm {
  protected override checkInputDim(input: t.Tensor): void {
    const dim = input.ndim;
    if (dim !== 5) throw new RangeError(`expected 5D input (got ${dim}D input)`);
  }
}

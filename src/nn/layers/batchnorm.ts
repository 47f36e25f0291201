// BatchNorm2d with PyTorch's running-statistics semantics.
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
 * Batch normalisation over [N, C, H, W]. State names match PyTorch's (`weight`, `bias`,
 * `running_mean`, `running_var`, `num_batches_tracked`); the buffers are read through
 * camelCase getters. In training mode the kernel updates the running statistics in
 * place and `num_batches_tracked` counts the batches.
 */
export class BatchNorm2d extends Module {
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

  override forward(input: t.Tensor): t.Tensor {
    const dim = input.ndim;
    if (dim !== 4) throw new RangeError(`expected 4D input (got ${dim}D input)`);
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

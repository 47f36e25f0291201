// LayerNorm, RMSNorm, InstanceNorm1d/2d/3d and LocalResponseNorm (torch.nn.modules.normalization
// and instancenorm), with PyTorch's parameter and buffer names.
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

export interface LayerNormOptions extends FactoryOptions {
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Learnable weight (ones) and bias (zeros) of the normalised shape. Default true. */
  elementwiseAffine?: boolean;
  /** With elementwiseAffine: learn a bias too. Default true. */
  bias?: boolean;
}

/** Normalises over the last dims (`normalizedShape`), per sample (torch.nn.LayerNorm). */
export class LayerNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number;
  readonly elementwiseAffine: boolean;
  weight: t.Tensor | null;
  bias: t.Tensor | null;

  constructor(normalizedShape: number | number[], opts: LayerNormOptions = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
    this.eps = opts.eps ?? 1e-5;
    this.elementwiseAffine = opts.elementwiseAffine ?? true;
    const factory = { dtype: opts.dtype, device: opts.device };
    const affine = this.elementwiseAffine;
    this.weight = this.registerParameter(
      'weight',
      affine ? Parameter(t.empty(this.normalizedShape, factory)) : null,
    );
    this.bias = this.registerParameter(
      'bias',
      affine && opts.bias !== false ? Parameter(t.empty(this.normalizedShape, factory)) : null,
    );
    this.resetParameters();
  }

  resetParameters(): void {
    if (this.weight !== null) init.ones_(this.weight);
    if (this.bias !== null) init.zeros_(this.bias);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.layerNorm(input, this.normalizedShape, { weight: this.weight, bias: this.bias, eps: this.eps });
  }

  override extraRepr(): string {
    return `(${this.normalizedShape.join(', ')}${this.normalizedShape.length === 1 ? ',' : ''}), eps=${this.eps}, elementwise_affine=${this.elementwiseAffine ? 'True' : 'False'}`;
  }
}

export interface RMSNormOptions extends FactoryOptions {
  /** Default: the dtype's machine epsilon. */
  eps?: number | null;
  /** Learnable weight (ones). Default true. */
  elementwiseAffine?: boolean;
}

/** Root-mean-square normalisation over the last dims (torch.nn.RMSNorm). */
export class RMSNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number | null;
  readonly elementwiseAffine: boolean;
  weight: t.Tensor | null;

  constructor(normalizedShape: number | number[], opts: RMSNormOptions = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
    this.eps = opts.eps ?? null;
    this.elementwiseAffine = opts.elementwiseAffine ?? true;
    this.weight = this.registerParameter(
      'weight',
      this.elementwiseAffine
        ? Parameter(t.empty(this.normalizedShape, { dtype: opts.dtype, device: opts.device }))
        : null,
    );
    this.resetParameters();
  }

  resetParameters(): void {
    if (this.weight !== null) init.ones_(this.weight);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.rmsNorm(input, this.normalizedShape, { weight: this.weight, eps: this.eps });
  }
}

export interface InstanceNormOptions extends FactoryOptions {
  eps?: number;
  /** Default 0.1. */
  momentum?: number | null;
  /** Learnable per-channel weight and bias. Default false (unlike BatchNorm). */
  affine?: boolean;
  /** Keep running statistics (used in eval). Default false (unlike BatchNorm). */
  trackRunningStats?: boolean;
}

/** Instance normalisation (torch's _InstanceNorm); subclasses fix the input rank. */
export abstract class InstanceNorm extends Module {
  readonly numFeatures: number;
  readonly eps: number;
  readonly momentum: number | null;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  weight: t.Tensor | null;
  bias: t.Tensor | null;

  constructor(numFeatures: number, opts: InstanceNormOptions = {}) {
    super();
    this.numFeatures = numFeatures;
    this.eps = opts.eps ?? 1e-5;
    this.momentum = opts.momentum === undefined ? 0.1 : opts.momentum;
    this.affine = opts.affine ?? false;
    this.trackRunningStats = opts.trackRunningStats ?? false;
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter(
      'weight',
      this.affine ? Parameter(t.ones([numFeatures], factory)) : null,
    );
    this.bias = this.registerParameter(
      'bias',
      this.affine ? Parameter(t.zeros([numFeatures], factory)) : null,
    );
    const track = this.trackRunningStats;
    this.registerBuffer('running_mean', track ? t.zeros([numFeatures], factory) : null);
    this.registerBuffer('running_var', track ? t.ones([numFeatures], factory) : null);
    this.registerBuffer(
      'num_batches_tracked',
      track ? t.zeros([], { dtype: 'int64', device: opts.device }) : null,
    );
  }

  /** The rank of batched input ([N, C, *spatial]); one less is unbatched. */
  protected abstract readonly batchedDims: number;

  get runningMean(): t.Tensor | null {
    return this._buffers.get('running_mean') ?? null;
  }
  get runningVar(): t.Tensor | null {
    return this._buffers.get('running_var') ?? null;
  }

  override forward(input: t.Tensor): t.Tensor {
    const want = this.batchedDims;
    if (input.ndim !== want && input.ndim !== want - 1) {
      throw new RangeError(`expected ${want - 1}D or ${want}D input (got ${input.ndim}D input)`);
    }
    const featureDim = input.ndim - (want - 1);
    if (input.shape[featureDim] !== this.numFeatures && this.affine) {
      throw new RangeError(
        `expected input's size at dim=${featureDim} to match numFeatures (${this.numFeatures}), but got: ${input.shape[featureDim]}.`,
      );
    }
    const run = (x: t.Tensor) =>
      F.instanceNorm(x, {
        runningMean: this.runningMean,
        runningVar: this.runningVar,
        weight: this.weight,
        bias: this.bias,
        useInputStats: this.training || !this.trackRunningStats,
        momentum: this.momentum ?? 0,
        eps: this.eps,
      });
    if (input.ndim === want) return run(input);
    return t.tidy(() => t.squeeze(run(t.unsqueeze(input, 0)), 0));
  }

  /** A checkpoint without num_batches_tracked loads as for BatchNorm (PyTorch shares the rule). */
  protected override upgradeStateDict(stateDict: Map<string, t.Tensor>, prefix: string): void {
    if (!this.trackRunningStats) return;
    const key = `${prefix}num_batches_tracked`;
    if (!stateDict.has(key)) {
      const own = this._buffers.get('num_batches_tracked');
      stateDict.set(key, own ?? t.zeros([], { dtype: 'int64' }));
    }
  }

  override extraRepr(): string {
    const b = (x: boolean) => (x ? 'True' : 'False');
    return `${this.numFeatures}, eps=${this.eps}, momentum=${this.momentum ?? 'None'}, affine=${b(this.affine)}, track_running_stats=${b(this.trackRunningStats)}`;
  }
}

/** InstanceNorm over [N, C, L] or [C, L] input. */
export class InstanceNorm1d extends InstanceNorm {
  protected readonly batchedDims = 3;
}

/** InstanceNorm over [N, C, H, W] or [C, H, W] input. */
export class InstanceNorm2d extends InstanceNorm {
  protected readonly batchedDims = 4;
}

/** Local response normalisation across channels (torch.nn.LocalResponseNorm). */
export class LocalResponseNorm extends Module {
  constructor(
    readonly size: number,
    readonly alpha = 1e-4,
    readonly beta = 0.75,
    readonly k = 1,
  ) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.localResponseNorm(input, this.size, { alpha: this.alpha, beta: this.beta, k: this.k });
  }

  override extraRepr(): string {
    return `${this.size}, alpha=${this.alpha}, beta=${this.beta}, k=${this.k}`;
  }
}

/** InstanceNorm over [N, C, D, H, W] or [C, D, H, W] input. */
export class InstanceNorm3d extends InstanceNorm {
  protected readonly batchedDims = 5;
}

// torch.nn.modules.normalization: LayerNorm, RMSNorm, GroupNorm and LocalResponseNorm,
// with PyTorch's parameter names and init (weight ones, bias zeros). The batch and
// instance norms are in batchnorm.ts and instancenorm.ts, as in PyTorch.
import * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module, pyFloat } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

/** The ones-initialised weight and zeros-initialised bias of every normalisation layer. */
export function resetAffine(weight: t.Tensor | null, bias: t.Tensor | null): void {
  if (weight !== null) init.ones_(weight);
  if (bias !== null) init.zeros_(bias);
}

/** A learnable tensor of `shape` when `present`, else null (left to resetAffine to fill). */
function affineParameter(present: boolean, shape: number[], opts: FactoryOptions): t.Tensor | null {
  return present ? Parameter(t.empty(shape, { dtype: opts.dtype, device: opts.device })) : null;
}

/**
 * Registers `weight` and `bias` of `shape` on `m`: with `affine`, parameters left to
 * resetAffine to fill (the bias only unless `opts.bias` is false), else null. The affine
 * parameters of LayerNorm, GroupNorm and the batch and instance norms (_NormBase).
 */
export function registerAffine(
  m: Module,
  shape: number[],
  affine: boolean,
  opts: { bias?: boolean } & FactoryOptions,
): [t.Tensor | null, t.Tensor | null] {
  return [
    m.registerParameter('weight', affineParameter(affine, shape, opts)),
    m.registerParameter('bias', affineParameter(affine && opts.bias !== false, shape, opts)),
  ];
}

const shapeOf = (s: number | number[]): number[] => (typeof s === 'number' ? [s] : [...s]);

export interface LayerNormOptions extends FactoryOptions {
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Learnable weight (ones) and bias (zeros) of the normalised shape. Default true. */
  elementwiseAffine?: boolean;
  /** With elementwiseAffine: learn a bias too. Default true. */
  bias?: boolean;
}

const LAYER_NORM = signature('LayerNorm', {
  required: ['normalizedShape'],
  optional: ['eps', 'elementwiseAffine', 'bias', 'device', 'dtype'],
});
type LayerNormParams = { normalizedShape: number | number[] } & LayerNormOptions;

/** Normalises over the last dims (`normalizedShape`), per sample (torch.nn.LayerNorm). */
export class LayerNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number;
  readonly elementwiseAffine: boolean;
  weight: t.Tensor | null;
  bias: t.Tensor | null;

  constructor(...args: Args<typeof LAYER_NORM, LayerNormParams>) {
    super();
    const opts = bind<LayerNormParams>(LAYER_NORM, args, 'LayerNorm');
    this.normalizedShape = shapeOf(opts.normalizedShape);
    this.eps = opts.eps ?? 1e-5;
    this.elementwiseAffine = opts.elementwiseAffine ?? true;
    [this.weight, this.bias] = registerAffine(this, this.normalizedShape, this.elementwiseAffine, opts);
    this.resetParameters();
  }

  resetParameters(): void {
    resetAffine(this.weight, this.bias);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.layerNorm(input, this.normalizedShape, { weight: this.weight, bias: this.bias, eps: this.eps });
  }

  override extraRepr(): string {
    return `(${this.normalizedShape.join(', ')}${this.normalizedShape.length === 1 ? ',' : ''}), eps=${pyFloat(this.eps)}, elementwise_affine=${this.elementwiseAffine ? 'True' : 'False'}, bias=${this.bias !== null ? 'True' : 'False'}`;
  }
}

export interface RMSNormOptions extends FactoryOptions {
  /** Default: the dtype's machine epsilon. */
  eps?: number | null;
  /** Learnable weight (ones). Default true. */
  elementwiseAffine?: boolean;
}

const RMS_NORM = signature('RMSNorm', {
  required: ['normalizedShape'],
  optional: ['eps', 'elementwiseAffine', 'device', 'dtype'],
});
type RMSNormParams = { normalizedShape: number | number[] } & RMSNormOptions;

/** Root-mean-square normalisation over the last dims (torch.nn.RMSNorm). */
export class RMSNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number | null;
  readonly elementwiseAffine: boolean;
  weight: t.Tensor | null;

  constructor(...args: Args<typeof RMS_NORM, RMSNormParams>) {
    super();
    const opts = bind<RMSNormParams>(RMS_NORM, args, 'RMSNorm');
    this.normalizedShape = shapeOf(opts.normalizedShape);
    this.eps = opts.eps ?? null;
    this.elementwiseAffine = opts.elementwiseAffine ?? true;
    this.weight = this.registerParameter(
      'weight',
      affineParameter(this.elementwiseAffine, this.normalizedShape, opts),
    );
    this.resetParameters();
  }

  resetParameters(): void {
    resetAffine(this.weight, null);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.rmsNorm(input, this.normalizedShape, { weight: this.weight, eps: this.eps });
  }

  override extraRepr(): string {
    const shape = `(${this.normalizedShape.join(', ')}${this.normalizedShape.length === 1 ? ',' : ''})`;
    const eps = this.eps === null ? 'None' : pyFloat(this.eps);
    return `${shape}, eps=${eps}, elementwise_affine=${this.elementwiseAffine ? 'True' : 'False'}`;
  }
}

export interface GroupNormOptions extends FactoryOptions {
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Learnable per-channel weight (ones) and bias (zeros). Default true. */
  affine?: boolean;
  /** With affine: learn the bias too (keyword-only, as in PyTorch). Default true. */
  bias?: boolean;
}

const GROUP_NORM = signature('GroupNorm', {
  required: ['numGroups', 'numChannels'],
  optional: ['eps', 'affine', 'device', 'dtype'],
  keywordOnly: ['bias'],
});
type GroupNormParams = { numGroups: number; numChannels: number } & GroupNormOptions;

/** Normalises each of `numGroups` groups of channels of [N, C, *] input, per sample (torch.nn.GroupNorm). */
export class GroupNorm extends Module {
  readonly numGroups: number;
  readonly numChannels: number;
  readonly eps: number;
  readonly affine: boolean;
  weight: t.Tensor | null;
  bias: t.Tensor | null;

  constructor(...args: Args<typeof GROUP_NORM, GroupNormParams>) {
    super();
    const opts = bind<GroupNormParams>(GROUP_NORM, args, 'GroupNorm');
    const { numGroups, numChannels } = opts;
    if (!Number.isInteger(numGroups) || numGroups <= 0) {
      throw new RangeError(`GroupNorm: numGroups must be a positive integer, got ${numGroups}`);
    }
    if (numChannels % numGroups !== 0) {
      throw new RangeError(
        `GroupNorm: numChannels (${numChannels}) must be divisible by numGroups (${numGroups})`,
      );
    }
    this.numGroups = numGroups;
    this.numChannels = numChannels;
    this.eps = opts.eps ?? 1e-5;
    this.affine = opts.affine ?? true;
    [this.weight, this.bias] = registerAffine(this, [numChannels], this.affine, opts);
    this.resetParameters();
  }

  resetParameters(): void {
    resetAffine(this.weight, this.bias);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.groupNorm(input, this.numGroups, { weight: this.weight, bias: this.bias, eps: this.eps });
  }

  override extraRepr(): string {
    return `${this.numGroups}, ${this.numChannels}, eps=${pyFloat(this.eps)}, affine=${this.affine ? 'True' : 'False'}, bias=${this.bias !== null ? 'True' : 'False'}`;
  }
}

const LRN = signature('LocalResponseNorm', { required: ['size'], optional: ['alpha', 'beta', 'k'] });
type LRNParams = { size: number; alpha?: number; beta?: number; k?: number };

/** Local response normalisation across channels (torch.nn.LocalResponseNorm). */
export class LocalResponseNorm extends Module {
  readonly size: number;
  readonly alpha: number;
  readonly beta: number;
  readonly k: number;

  constructor(...args: Args<typeof LRN, LRNParams>) {
    super();
    const a = bind<LRNParams>(LRN, args, 'LocalResponseNorm');
    this.size = a.size;
    this.alpha = a.alpha ?? 1e-4;
    this.beta = a.beta ?? 0.75;
    this.k = a.k ?? 1;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.localResponseNorm(input, this.size, { alpha: this.alpha, beta: this.beta, k: this.k });
  }

  override extraRepr(): string {
    return `${this.size}, alpha=${pyFloat(this.alpha)}, beta=${pyFloat(this.beta)}, k=${pyFloat(this.k)}`;
  }
}

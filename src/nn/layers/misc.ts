// Embedding, PixelShuffle/PixelUnshuffle, Unflatten, CosineSimilarity, PairwiseDistance,
// channel Dropout1d/2d/3d and the padding modules (ZeroPad2d, ConstantPad*, ReflectionPad*,
// ReplicationPad*), with PyTorch's names and state-dict keys.
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

export interface EmbeddingOptions extends FactoryOptions {
  /** Row that gets no gradient (and is zero-initialised); negative counts from the end. */
  paddingIdx?: number | null;
  maxNorm?: number | null;
  normType?: number;
  scaleGradByFreq?: boolean;
  /** An initial weight [numEmbeddings, embeddingDim] (used as the parameter). */
  weight?: t.Tensor | null;
  /** With `weight`: do not train it. Default false. */
  freeze?: boolean;
}

/** A lookup table of `numEmbeddings` vectors of size `embeddingDim` (parameter `weight`, N(0, 1)). */
export class Embedding extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly paddingIdx: number | null;
  readonly maxNorm: number | null;
  readonly normType: number;
  readonly scaleGradByFreq: boolean;
  weight: t.Tensor;

  constructor(numEmbeddings: number, embeddingDim: number, opts: EmbeddingOptions = {}) {
    super();
    this.numEmbeddings = numEmbeddings;
    this.embeddingDim = embeddingDim;
    let pad = opts.paddingIdx ?? null;
    if (pad !== null) {
      if (pad >= numEmbeddings || pad < -numEmbeddings) {
        throw new RangeError(`Embedding: paddingIdx ${pad} must be within numEmbeddings (${numEmbeddings})`);
      }
      if (pad < 0) pad += numEmbeddings;
    }
    this.paddingIdx = pad;
    this.maxNorm = opts.maxNorm ?? null;
    this.normType = opts.normType ?? 2;
    this.scaleGradByFreq = opts.scaleGradByFreq ?? false;
    const given = opts.weight ?? null;
    if (given !== null) {
      if (given.ndim !== 2 || given.shape[0] !== numEmbeddings || given.shape[1] !== embeddingDim) {
        throw new RangeError(
          `Embedding: weight must be [${numEmbeddings}, ${embeddingDim}], got [${given.shape.join(', ')}]`,
        );
      }
      this.weight = this.registerParameter('weight', Parameter(given, !(opts.freeze ?? false)));
    } else {
      const w = t.empty([numEmbeddings, embeddingDim], { dtype: opts.dtype, device: opts.device });
      this.weight = this.registerParameter('weight', Parameter(w));
      this.resetParameters();
    }
  }

  /** An Embedding holding `embeddings` ([num, dim]) as its weight, frozen unless `freeze: false`. */
  static fromPretrained(
    embeddings: t.Tensor,
    opts: Omit<EmbeddingOptions, 'weight' | 'dtype' | 'device'> = {},
  ): Embedding {
    if (embeddings.ndim !== 2) throw new RangeError('Embeddings parameter is expected to be 2-dimensional');
    const [rows, cols] = embeddings.shape;
    return new Embedding(rows, cols, { ...opts, weight: embeddings, freeze: opts.freeze ?? true });
  }

  /** N(0, 1), with the padding row zeroed, as torch.nn.Embedding. */
  resetParameters(): void {
    init.normal_(this.weight);
    if (this.paddingIdx !== null) {
      const idx = this.paddingIdx;
      t.tidy(() => {
        t.select(this.weight.detach(), 0, idx).fill_(0);
      });
    }
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.embedding(input, this.weight, {
      paddingIdx: this.paddingIdx,
      maxNorm: this.maxNorm,
      normType: this.normType,
      scaleGradByFreq: this.scaleGradByFreq,
    });
  }

  override extraRepr(): string {
    let s = `${this.numEmbeddings}, ${this.embeddingDim}`;
    if (this.paddingIdx !== null) s += `, padding_idx=${this.paddingIdx}`;
    if (this.maxNorm !== null) s += `, max_norm=${this.maxNorm}`;
    return s;
  }
}

export class PixelShuffle extends Module {
  constructor(readonly upscaleFactor: number) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.pixelShuffle(input, this.upscaleFactor);
  }
  override extraRepr(): string {
    return `upscale_factor=${this.upscaleFactor}`;
  }
}

export class PixelUnshuffle extends Module {
  constructor(readonly downscaleFactor: number) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.pixelUnshuffle(input, this.downscaleFactor);
  }
  override extraRepr(): string {
    return `downscale_factor=${this.downscaleFactor}`;
  }
}

export class ChannelShuffle extends Module {
  constructor(readonly groups: number) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.channelShuffle(input, this.groups);
  }
  override extraRepr(): string {
    return `groups=${this.groups}`;
  }
}

/** Splits dim `dim` into `unflattenedSize` (nn.Flatten's inverse). */
export class Unflatten extends Module {
  constructor(
    readonly dim: number,
    readonly unflattenedSize: number[],
  ) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return t.unflatten(input, this.dim, this.unflattenedSize);
  }
  override extraRepr(): string {
    return `dim=${this.dim}, unflattened_size=(${this.unflattenedSize.join(', ')})`;
  }
}

export class CosineSimilarity extends Module {
  readonly dim: number;
  readonly eps: number;
  constructor(opts: { dim?: number; eps?: number } = {}) {
    super();
    this.dim = opts.dim ?? 1;
    this.eps = opts.eps ?? 1e-8;
  }
  override forward(x1: t.Tensor, x2: t.Tensor): t.Tensor {
    return F.cosineSimilarity(x1, x2, { dim: this.dim, eps: this.eps });
  }
}

export class PairwiseDistance extends Module {
  readonly p: number;
  readonly eps: number;
  readonly keepdim: boolean;
  constructor(opts: { p?: number; eps?: number; keepdim?: boolean } = {}) {
    super();
    this.p = opts.p ?? 2;
    this.eps = opts.eps ?? 1e-6;
    this.keepdim = opts.keepdim ?? false;
  }
  override forward(x1: t.Tensor, x2: t.Tensor): t.Tensor {
    return F.pairwiseDistance(x1, x2, { p: this.p, eps: this.eps, keepdim: this.keepdim });
  }
}

// The factories name their return type: the package's .d.ts cannot describe an anonymous class.
function dropoutModule(
  name: string,
  fn: (x: t.Tensor, opts: F.DropoutOptions) => t.Tensor,
): new (
  p?: number,
  opts?: { inplace?: boolean },
) => Module & { readonly p: number; readonly inplace: boolean } {
  const C = class extends Module {
    readonly p: number;
    readonly inplace: boolean;
    constructor(p = 0.5, opts: { inplace?: boolean } = {}) {
      super();
      if (!(p >= 0 && p <= 1))
        throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
      this.p = p;
      this.inplace = opts.inplace ?? false;
    }
    override forward(input: t.Tensor): t.Tensor {
      return fn(input, { p: this.p, training: this.training, inplace: this.inplace });
    }
    override extraRepr(): string {
      return `p=${this.p}, inplace=${this.inplace ? 'True' : 'False'}`;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

/** Zeroes whole channels in training mode. */
export const Dropout1d = dropoutModule('Dropout1d', F.dropout1d);
export type Dropout1d = InstanceType<typeof Dropout1d>;
export const Dropout2d = dropoutModule('Dropout2d', F.dropout2d);
export type Dropout2d = InstanceType<typeof Dropout2d>;
export const Dropout3d = dropoutModule('Dropout3d', F.dropout3d);
export type Dropout3d = InstanceType<typeof Dropout3d>;
export const AlphaDropout = dropoutModule('AlphaDropout', F.alphaDropout);
export type AlphaDropout = InstanceType<typeof AlphaDropout>;
export const FeatureAlphaDropout = dropoutModule('FeatureAlphaDropout', F.featureAlphaDropout);
export type FeatureAlphaDropout = InstanceType<typeof FeatureAlphaDropout>;

// Padding modules: an int pads every side of the last `dims` dims; a list is F.pad's.
function padModule(
  name: string,
  dims: number,
  mode: F.PadMode,
  constant: boolean,
): new (
  padding: number | number[],
  value?: number,
) => Module & { readonly padding: number[]; readonly value: number } {
  const C = class extends Module {
    readonly padding: number[];
    readonly value: number;
    constructor(padding: number | number[], value = 0) {
      super();
      this.padding =
        typeof padding === 'number' ? Array.from({ length: 2 * dims }, () => padding) : [...padding];
      if (this.padding.length !== 2 * dims) {
        throw new RangeError(
          `${name}: padding must be an int or ${2 * dims} ints, got ${JSON.stringify(padding)}`,
        );
      }
      this.value = constant ? value : 0;
    }
    override forward(input: t.Tensor): t.Tensor {
      return F.pad(input, this.padding, mode === 'constant' ? { mode, value: this.value } : { mode });
    }
    override extraRepr(): string {
      return `(${this.padding.join(', ')})${constant && name.startsWith('Constant') ? `, value=${this.value}` : ''}`;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

/** ZeroPadNd(padding); ConstantPadNd(padding, value); ReflectionPadNd / ReplicationPadNd / CircularPadNd(padding). */
export const ZeroPad1d = padModule('ZeroPad1d', 1, 'constant', false);
export const ZeroPad2d = padModule('ZeroPad2d', 2, 'constant', false);
export const ZeroPad3d = padModule('ZeroPad3d', 3, 'constant', false);
export const ConstantPad1d = padModule('ConstantPad1d', 1, 'constant', true);
export const ConstantPad2d = padModule('ConstantPad2d', 2, 'constant', true);
export const ConstantPad3d = padModule('ConstantPad3d', 3, 'constant', true);
export const ReflectionPad1d = padModule('ReflectionPad1d', 1, 'reflect', false);
export const ReflectionPad2d = padModule('ReflectionPad2d', 2, 'reflect', false);
export const ReflectionPad3d = padModule('ReflectionPad3d', 3, 'reflect', false);
export const ReplicationPad1d = padModule('ReplicationPad1d', 1, 'replicate', false);
export const ReplicationPad2d = padModule('ReplicationPad2d', 2, 'replicate', false);
export const ReplicationPad3d = padModule('ReplicationPad3d', 3, 'replicate', false);
export const CircularPad1d = padModule('CircularPad1d', 1, 'circular', false);
export const CircularPad2d = padModule('CircularPad2d', 2, 'circular', false);
export const CircularPad3d = padModule('CircularPad3d', 3, 'circular', false);

/** y = x1ᵀ·A·x2 + b (torch.nn.Bilinear): weight [out, in1, in2], bias [out], U(±1/√in1). */
export class Bilinear extends Module {
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(
    readonly in1Features: number,
    readonly in2Features: number,
    readonly outFeatures: number,
    opts: { bias?: boolean } & FactoryOptions = {},
  ) {
    super();
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter(
      'weight',
      Parameter(t.empty([outFeatures, in1Features, in2Features], factory)),
    );
    this.bias = this.registerParameter(
      'bias',
      opts.bias === false ? null : Parameter(t.empty([outFeatures], factory)),
    );
    this.resetParameters();
  }

  resetParameters(): void {
    const bound = 1 / Math.sqrt(this.weight.shape[1]);
    init.uniform_(this.weight, -bound, bound);
    if (this.bias !== null) init.uniform_(this.bias, -bound, bound);
  }

  override forward(input1: t.Tensor, input2: t.Tensor): t.Tensor {
    return F.bilinear(input1, input2, this.weight, this.bias);
  }

  override extraRepr(): string {
    return `in1_features=${this.in1Features}, in2_features=${this.in2Features}, out_features=${this.outFeatures}, bias=${this.bias !== null ? 'True' : 'False'}`;
  }
}

/** Sliding local blocks as columns (torch.nn.Unfold). */
export class Unfold extends Module {
  constructor(
    readonly kernelSize: number | [number, number],
    readonly opts: F.UnfoldOptions = {},
  ) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.unfold(input, this.kernelSize, this.opts);
  }
}

/** Columns summed back into an image (torch.nn.Fold). */
export class Fold extends Module {
  constructor(
    readonly outputSize: number | [number, number],
    readonly kernelSize: number | [number, number],
    readonly opts: F.UnfoldOptions = {},
  ) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.fold(input, this.outputSize, this.kernelSize, this.opts);
  }
}

export interface EmbeddingBagModuleOptions extends FactoryOptions {
  maxNorm?: number | null;
  normType?: number;
  scaleGradByFreq?: boolean;
  /** Default 'mean'. */
  mode?: 'sum' | 'mean' | 'max';
  includeLastOffset?: boolean;
  /** Row left out of every bag (and zero-initialised); negative counts from the end. */
  paddingIdx?: number | null;
}

/** Bags of embedding rows reduced by sum/mean/max (torch.nn.EmbeddingBag; parameter `weight`, N(0, 1)). */
export class EmbeddingBag extends Module {
  readonly maxNorm: number | null;
  readonly normType: number;
  readonly scaleGradByFreq: boolean;
  readonly mode: 'sum' | 'mean' | 'max';
  readonly includeLastOffset: boolean;
  readonly paddingIdx: number | null;
  weight: t.Tensor;

  constructor(
    readonly numEmbeddings: number,
    readonly embeddingDim: number,
    opts: EmbeddingBagModuleOptions = {},
  ) {
    super();
    this.maxNorm = opts.maxNorm ?? null;
    this.normType = opts.normType ?? 2;
    this.scaleGradByFreq = opts.scaleGradByFreq ?? false;
    this.mode = opts.mode ?? 'mean';
    this.includeLastOffset = opts.includeLastOffset ?? false;
    let pad = opts.paddingIdx ?? null;
    if (pad !== null) {
      if (pad >= numEmbeddings || pad < -numEmbeddings) {
        throw new RangeError(
          `EmbeddingBag: paddingIdx ${pad} must be within numEmbeddings (${numEmbeddings})`,
        );
      }
      if (pad < 0) pad += numEmbeddings;
    }
    this.paddingIdx = pad;
    const w = t.empty([numEmbeddings, embeddingDim], { dtype: opts.dtype, device: opts.device });
    this.weight = this.registerParameter('weight', Parameter(w));
    this.resetParameters();
  }

  resetParameters(): void {
    init.normal_(this.weight);
    if (this.paddingIdx !== null) {
      const idx = this.paddingIdx;
      t.tidy(() => {
        t.select(this.weight.detach(), 0, idx).fill_(0);
      });
    }
  }

  override forward(
    input: t.Tensor,
    offsets: t.Tensor | null = null,
    perSampleWeights: t.Tensor | null = null,
  ): t.Tensor {
    return F.embeddingBag(input, this.weight, {
      offsets,
      maxNorm: this.maxNorm,
      normType: this.normType,
      scaleGradByFreq: this.scaleGradByFreq,
      mode: this.mode,
      perSampleWeights,
      includeLastOffset: this.includeLastOffset,
      paddingIdx: this.paddingIdx,
    });
  }

  override extraRepr(): string {
    let s = `${this.numEmbeddings}, ${this.embeddingDim}`;
    if (this.maxNorm !== null) s += `, max_norm=${this.maxNorm}`;
    s += `, mode='${this.mode}'`;
    if (this.paddingIdx !== null) s += `, padding_idx=${this.paddingIdx}`;
    return s;
  }
}

// torch.nn.modules.sparse: Embedding and EmbeddingBag, lookup tables whose parameter
// `weight` is N(0, 1) with the padding row, if any, zeroed.
import * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

/** `paddingIdx` as a row index (a negative one counts from the end), or a RangeError naming `cls`. */
function paddingRow(cls: string, paddingIdx: number | null, numEmbeddings: number): number | null {
  if (paddingIdx === null) return null;
  if (paddingIdx >= numEmbeddings || paddingIdx < -numEmbeddings) {
    throw new RangeError(`${cls}: paddingIdx ${paddingIdx} must be within numEmbeddings (${numEmbeddings})`);
  }
  return paddingIdx < 0 ? paddingIdx + numEmbeddings : paddingIdx;
}

/** N(0, 1), with the padding row zeroed, as torch.nn.Embedding and EmbeddingBag. */
function resetEmbedding(weight: t.Tensor, paddingIdx: number | null): void {
  init.normal_(weight);
  if (paddingIdx !== null) {
    t.tidy(() => {
      t.select(weight.detach(), 0, paddingIdx).fill_(0);
    });
  }
}

export interface EmbeddingOptions extends FactoryOptions {
  /** Row that gets no gradient (and is zero-initialised); negative counts from the end. */
  paddingIdx?: number | null;
  maxNorm?: number | null;
  normType?: number;
  scaleGradByFreq?: boolean;
  /** Sparse gradients are not supported by tsddp: false only. */
  sparse?: boolean;
  /** An initial weight [numEmbeddings, embeddingDim] (used as the parameter); PyTorch's `_weight`. */
  weight?: t.Tensor | null;
  /** PyTorch's name of weight. */
  _weight?: t.Tensor | null;
  /** With `weight`: do not train it. Default false. PyTorch's `_freeze`. */
  freeze?: boolean;
  /** PyTorch's name of freeze. */
  _freeze?: boolean;
}

const NO_SPARSE = {
  unsupported: { sparse: false },
  hints: { sparse: 'sparse gradients are not supported by tsddp' },
} as const;
const EMBEDDING = signature('Embedding', {
  required: ['numEmbeddings', 'embeddingDim'],
  optional: [
    'paddingIdx',
    'maxNorm',
    'normType',
    'scaleGradByFreq',
    'sparse',
    '_weight',
    '_freeze',
    'device',
    'dtype',
  ],
  aliases: { weight: '_weight', freeze: '_freeze' },
  ...NO_SPARSE,
});
type EmbeddingParams = { numEmbeddings: number; embeddingDim: number } & EmbeddingOptions;
const FROM_PRETRAINED = signature('Embedding.fromPretrained', {
  required: ['embeddings'],
  optional: ['freeze', 'paddingIdx', 'maxNorm', 'normType', 'scaleGradByFreq', 'sparse'],
  ...NO_SPARSE,
});
type FromPretrainedParams = { embeddings: t.Tensor } & Omit<
  EmbeddingOptions,
  'weight' | '_weight' | '_freeze' | 'dtype' | 'device'
>;

/** A lookup table of `numEmbeddings` vectors of size `embeddingDim` (parameter `weight`, N(0, 1)). */
export class Embedding extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly paddingIdx: number | null;
  readonly maxNorm: number | null;
  readonly normType: number;
  readonly scaleGradByFreq: boolean;
  weight: t.Tensor;

  constructor(...args: Args<typeof EMBEDDING, EmbeddingParams>) {
    super();
    const opts = bind<EmbeddingParams>(EMBEDDING, args, 'Embedding');
    const { numEmbeddings, embeddingDim } = opts;
    this.numEmbeddings = numEmbeddings;
    this.embeddingDim = embeddingDim;
    this.paddingIdx = paddingRow('Embedding', opts.paddingIdx ?? null, numEmbeddings);
    this.maxNorm = opts.maxNorm ?? null;
    this.normType = opts.normType ?? 2;
    this.scaleGradByFreq = opts.scaleGradByFreq ?? false;
    const given = opts._weight ?? null;
    if (given !== null) {
      checkWeight('Embedding', given, numEmbeddings, embeddingDim);
      this.weight = this.registerParameter('weight', Parameter(given, !(opts._freeze ?? false)));
    } else {
      const w = t.empty([numEmbeddings, embeddingDim], { dtype: opts.dtype, device: opts.device });
      this.weight = this.registerParameter('weight', Parameter(w));
      this.resetParameters();
    }
  }

  /**
   * An Embedding holding `embeddings` ([num, dim]) as its weight, frozen unless `freeze`
   * is false: PyTorch's from_pretrained(embeddings, freeze, padding_idx, max_norm,
   * norm_type, scale_grad_by_freq, sparse), positional or by name.
   */
  static fromPretrained(...args: Args<typeof FROM_PRETRAINED, FromPretrainedParams>): Embedding {
    const { embeddings, ...opts } = bind<FromPretrainedParams>(
      FROM_PRETRAINED,
      args,
      'Embedding.fromPretrained',
    );
    if (embeddings.ndim !== 2) throw new RangeError('Embeddings parameter is expected to be 2-dimensional');
    const [rows, cols] = embeddings.shape;
    return new Embedding(rows, cols, { ...opts, weight: embeddings, freeze: opts.freeze ?? true });
  }

  /** N(0, 1), with the padding row zeroed, as torch.nn.Embedding. */
  resetParameters(): void {
    resetEmbedding(this.weight, this.paddingIdx);
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

/** A given weight must be [numEmbeddings, embeddingDim]. */
function checkWeight(cls: string, weight: t.Tensor, numEmbeddings: number, embeddingDim: number): void {
  if (weight.ndim !== 2 || weight.shape[0] !== numEmbeddings || weight.shape[1] !== embeddingDim) {
    throw new RangeError(
      `${cls}: weight must be [${numEmbeddings}, ${embeddingDim}], got [${weight.shape.join(', ')}]`,
    );
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
  /** Sparse gradients are not supported by tsddp: false only. */
  sparse?: boolean;
  /** An initial weight [numEmbeddings, embeddingDim] (used as the parameter); PyTorch's `_weight`. */
  weight?: t.Tensor | null;
  /** PyTorch's name of weight. */
  _weight?: t.Tensor | null;
}

const EMBEDDING_BAG = signature('EmbeddingBag', {
  required: ['numEmbeddings', 'embeddingDim'],
  optional: [
    'maxNorm',
    'normType',
    'scaleGradByFreq',
    'mode',
    'sparse',
    '_weight',
    'includeLastOffset',
    'paddingIdx',
    'device',
    'dtype',
  ],
  aliases: { weight: '_weight' },
  ...NO_SPARSE,
});
type EmbeddingBagParams = { numEmbeddings: number; embeddingDim: number } & EmbeddingBagModuleOptions;

/** Bags of embedding rows reduced by sum/mean/max (torch.nn.EmbeddingBag; parameter `weight`, N(0, 1)). */
export class EmbeddingBag extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly maxNorm: number | null;
  readonly normType: number;
  readonly scaleGradByFreq: boolean;
  readonly mode: 'sum' | 'mean' | 'max';
  readonly includeLastOffset: boolean;
  readonly paddingIdx: number | null;
  weight: t.Tensor;

  constructor(...args: Args<typeof EMBEDDING_BAG, EmbeddingBagParams>) {
    super();
    const opts = bind<EmbeddingBagParams>(EMBEDDING_BAG, args, 'EmbeddingBag');
    const { numEmbeddings, embeddingDim } = opts;
    this.numEmbeddings = numEmbeddings;
    this.embeddingDim = embeddingDim;
    this.maxNorm = opts.maxNorm ?? null;
    this.normType = opts.normType ?? 2;
    this.scaleGradByFreq = opts.scaleGradByFreq ?? false;
    this.mode = opts.mode ?? 'mean';
    this.includeLastOffset = opts.includeLastOffset ?? false;
    this.paddingIdx = paddingRow('EmbeddingBag', opts.paddingIdx ?? null, numEmbeddings);
    const given = opts._weight ?? null;
    if (given !== null) {
      // As PyTorch's _weight: the tensor becomes the parameter, not re-initialized.
      checkWeight('EmbeddingBag', given, numEmbeddings, embeddingDim);
      this.weight = this.registerParameter('weight', Parameter(given));
    } else {
      const w = t.empty([numEmbeddings, embeddingDim], { dtype: opts.dtype, device: opts.device });
      this.weight = this.registerParameter('weight', Parameter(w));
      this.resetParameters();
    }
  }

  resetParameters(): void {
    resetEmbedding(this.weight, this.paddingIdx);
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

// torch.nn.modules.sparse: Embedding and EmbeddingBag, lookup tables whose parameter
// `weight` is N(0, 1) with the padding row, if any, zeroed; the table, its lookup options
// and its weight are one base of both (_EmbeddingTable).
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

/** A given weight must be [numEmbeddings, embeddingDim]. */
function checkWeight(cls: string, weight: t.Tensor, numEmbeddings: number, embeddingDim: number): void {
  if (weight.ndim !== 2 || weight.shape[0] !== numEmbeddings || weight.shape[1] !== embeddingDim) {
    throw new RangeError(
      `${cls}: weight must be [${numEmbeddings}, ${embeddingDim}], got [${weight.shape.join(', ')}]`,
    );
  }
}

/** The options Embedding and EmbeddingBag share. */
interface TableOptions extends FactoryOptions {
  /**
   * Row that gets no gradient (EmbeddingBag: is left out of every bag), zero-initialised;
   * negative counts from the end.
   */
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
}
type TableParams = { numEmbeddings: number; embeddingDim: number } & TableOptions;

export interface EmbeddingOptions extends TableOptions {
  /** With `weight`: do not train it. Default false. PyTorch's `_freeze`. */
  freeze?: boolean;
  /** PyTorch's name of freeze. */
  _freeze?: boolean;
}

export interface EmbeddingBagModuleOptions extends TableOptions {
  /** Default 'mean'. */
  mode?: 'sum' | 'mean' | 'max';
  includeLastOffset?: boolean;
}

// The lookup's renormalisation options, in the same order in all three signatures.
const LOOKUP = ['maxNorm', 'normType', 'scaleGradByFreq'] as const;
const NO_SPARSE = {
  unsupported: { sparse: false },
  hints: { sparse: 'sparse gradients are not supported by tsddp' },
} as const;
const EMBEDDING = signature('Embedding', {
  required: ['numEmbeddings', 'embeddingDim'],
  optional: ['paddingIdx', ...LOOKUP, 'sparse', '_weight', '_freeze', 'device', 'dtype'],
  aliases: { weight: '_weight', freeze: '_freeze' },
  ...NO_SPARSE,
});
type EmbeddingParams = { numEmbeddings: number; embeddingDim: number } & EmbeddingOptions;
const FROM_PRETRAINED = signature('Embedding.fromPretrained', {
  required: ['embeddings'],
  optional: ['freeze', 'paddingIdx', ...LOOKUP, 'sparse'],
  ...NO_SPARSE,
});
type FromPretrainedParams = { embeddings: t.Tensor } & Omit<
  EmbeddingOptions,
  'weight' | '_weight' | '_freeze' | 'dtype' | 'device'
>;
const EMBEDDING_BAG = signature('EmbeddingBag', {
  required: ['numEmbeddings', 'embeddingDim'],
  optional: [...LOOKUP, 'mode', 'sparse', '_weight', 'includeLastOffset', 'paddingIdx', 'device', 'dtype'],
  aliases: { weight: '_weight' },
  ...NO_SPARSE,
});
type EmbeddingBagParams = { numEmbeddings: number; embeddingDim: number } & EmbeddingBagModuleOptions;

/**
 * What Embedding and EmbeddingBag share: the table's size, the lookup's options, and the
 * parameter `weight`, a given one (PyTorch's `_weight`, used as it is) or N(0, 1) with the
 * padding row, if any, zeroed.
 */
export abstract class _EmbeddingTable extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly paddingIdx: number | null;
  readonly maxNorm: number | null;
  readonly normType: number;
  readonly scaleGradByFreq: boolean;
  weight: t.Tensor;

  /** `opts`: the subclass `cls`'s bound arguments; `trainable`: whether a given weight requires grad. */
  constructor(cls: string, opts: TableParams, trainable: boolean) {
    super();
    const { numEmbeddings, embeddingDim } = opts;
    this.numEmbeddings = numEmbeddings;
    this.embeddingDim = embeddingDim;
    this.paddingIdx = paddingRow(cls, opts.paddingIdx ?? null, numEmbeddings);
    this.maxNorm = opts.maxNorm ?? null;
    this.normType = opts.normType ?? 2;
    this.scaleGradByFreq = opts.scaleGradByFreq ?? false;
    const given = opts._weight ?? null;
    if (given !== null) {
      // As PyTorch's _weight: the tensor becomes the parameter, not re-initialized.
      checkWeight(cls, given, numEmbeddings, embeddingDim);
      this.weight = this.registerParameter('weight', Parameter(given, trainable));
    } else {
      const w = t.empty([numEmbeddings, embeddingDim], { dtype: opts.dtype, device: opts.device });
      this.weight = this.registerParameter('weight', Parameter(w));
      this.resetParameters();
    }
  }

  /** N(0, 1), with the padding row zeroed, as torch.nn.Embedding and EmbeddingBag. */
  resetParameters(): void {
    init.normal_(this.weight);
    if (this.paddingIdx !== null) {
      const row = this.paddingIdx;
      t.tidy(() => {
        t.select(this.weight.detach(), 0, row).fill_(0);
      });
    }
  }
}

/** A lookup table of `numEmbeddings` vectors of size `embeddingDim` (parameter `weight`, N(0, 1)). */
export class Embedding extends _EmbeddingTable {
  constructor(...args: Args<typeof EMBEDDING, EmbeddingParams>) {
    const opts = bind<EmbeddingParams>(EMBEDDING, args, 'Embedding');
    super('Embedding', opts, !(opts._freeze ?? false));
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

/** Bags of embedding rows reduced by sum/mean/max (torch.nn.EmbeddingBag; parameter `weight`, N(0, 1)). */
export class EmbeddingBag extends _EmbeddingTable {
  readonly mode: 'sum' | 'mean' | 'max';
  readonly includeLastOffset: boolean;

  constructor(...args: Args<typeof EMBEDDING_BAG, EmbeddingBagParams>) {
    const opts = bind<EmbeddingBagParams>(EMBEDDING_BAG, args, 'EmbeddingBag');
    super('EmbeddingBag', opts, true);
    this.mode = opts.mode ?? 'mean';
    this.includeLastOffset = opts.includeLastOffset ?? false;
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

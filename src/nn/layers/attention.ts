// MultiheadAttention (torch.nn.MultiheadAttention) with PyTorch's parameter names
// (in_proj_weight, in_proj_bias, out_proj.*, or q/k/v_proj_weight when the key/value
// dims differ; bias_k/bias_v), init, and its non-fast-path computation.
import * as t from '../../core/index.ts';
import { type Args, bind, forwardOptions, signature } from '../args.ts';
import type { AttentionResult } from '../functional/attention.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import { type FactoryOptions, Linear } from './linear.ts';

export interface MultiheadAttentionOptions extends FactoryOptions {
  /** Dropout on the attention weights, in training. Default 0. */
  dropout?: number;
  /** Biases on the input and output projections. Default true. */
  bias?: boolean;
  /** Learned bias key and value appended to the key/value sequences. Default false. */
  addBiasKv?: boolean;
  /** tsddp's first spelling of addBiasKv. */
  addBiasKV?: boolean;
  /** A zero key and value appended to the sequences. Default false. */
  addZeroAttn?: boolean;
  /** Features of the key. Default embedDim. */
  kdim?: number | null;
  /** Features of the value. Default embedDim. */
  vdim?: number | null;
  /** Input and output are [N, L, E] instead of [L, N, E]. Default false. */
  batchFirst?: boolean;
}

/** MultiheadAttentionForwardOptions' names, PyTorch's optional forward arguments. */
const MHA_FORWARD_OPTIONS = ['keyPaddingMask', 'needWeights', 'attnMask', 'averageAttnWeights', 'isCausal'];

export interface MultiheadAttentionForwardOptions {
  /** [N, S] (or [S]); bool true or float -inf marks padded keys. */
  keyPaddingMask?: t.Tensor | null;
  /** Also return the attention weights. Default true. */
  needWeights?: boolean;
  /** [L, S] or [N·numHeads, L, S]; bool true = not allowed to attend, or float added to the scores. */
  attnMask?: t.Tensor | null;
  /** Average the returned weights over heads. Default true. */
  averageAttnWeights?: boolean;
  /** A hint that attnMask is the causal mask. Default false. */
  isCausal?: boolean;
}

const MHA = signature('MultiheadAttention', {
  required: ['embedDim', 'numHeads'],
  optional: ['dropout', 'bias', 'addBiasKv', 'addZeroAttn', 'kdim', 'vdim', 'batchFirst', 'device', 'dtype'],
  aliases: { addBiasKV: 'addBiasKv' },
});
type MhaParams = { embedDim: number; numHeads: number } & MultiheadAttentionOptions;

/** Attention over `numHeads` heads of size embedDim/numHeads (torch.nn.MultiheadAttention). */
export class MultiheadAttention extends Module {
  readonly embedDim: number;
  readonly kdim: number;
  readonly vdim: number;
  readonly numHeads: number;
  readonly headDim: number;
  readonly dropout: number;
  readonly batchFirst: boolean;
  readonly addZeroAttn: boolean;
  /** Whether key and value have embedDim features (then the projections are packed in in_proj_weight). */
  readonly qkvSameEmbedDim: boolean;

  constructor(...args: Args<typeof MHA, MhaParams>) {
    // The sizes are checked before Module's constructor runs, as in PyTorch.
    const opts = bind<MhaParams>(MHA, args, 'MultiheadAttention');
    const { embedDim, numHeads } = opts;
    if (!(embedDim > 0) || !(numHeads > 0)) {
      throw new RangeError(
        `embed_dim and num_heads must be greater than 0, got embed_dim=${embedDim} and num_heads=${numHeads} instead`,
      );
    }
    super();
    const factory = { dtype: opts.dtype, device: opts.device };
    this.embedDim = embedDim;
    this.kdim = opts.kdim ?? embedDim;
    this.vdim = opts.vdim ?? embedDim;
    this.qkvSameEmbedDim = this.kdim === embedDim && this.vdim === embedDim;
    this.numHeads = numHeads;
    this.dropout = opts.dropout ?? 0;
    this.batchFirst = opts.batchFirst ?? false;
    this.headDim = Math.trunc(embedDim / numHeads);
    if (this.headDim * numHeads !== embedDim)
      throw new RangeError('embed_dim must be divisible by num_heads');
    const param = (shape: number[]) => Parameter(t.empty(shape, factory));
    // Registration order is PyTorch's, so state-dict keys come in its order.
    if (!this.qkvSameEmbedDim) {
      this.registerParameter('q_proj_weight', param([embedDim, embedDim]));
      this.registerParameter('k_proj_weight', param([embedDim, this.kdim]));
      this.registerParameter('v_proj_weight', param([embedDim, this.vdim]));
      this.registerParameter('in_proj_weight', null);
    } else {
      this.registerParameter('in_proj_weight', param([3 * embedDim, embedDim]));
      this.registerParameter('q_proj_weight', null);
      this.registerParameter('k_proj_weight', null);
      this.registerParameter('v_proj_weight', null);
    }
    const bias = opts.bias ?? true;
    this.registerParameter('in_proj_bias', bias ? param([3 * embedDim]) : null);
    // PyTorch's NonDynamicallyQuantizableLinear: a Linear (its own init runs here, as in PyTorch).
    this.registerModule('out_proj', new Linear(embedDim, embedDim, { bias, ...factory }));
    const kv = opts.addBiasKv ?? false;
    this.registerParameter('bias_k', kv ? param([1, 1, embedDim]) : null);
    this.registerParameter('bias_v', kv ? param([1, 1, embedDim]) : null);
    this.addZeroAttn = opts.addZeroAttn ?? false;
    this.resetParameters();
  }

  get inProjWeight(): t.Tensor | null {
    return this._parameters.get('in_proj_weight') ?? null;
  }
  get inProjBias(): t.Tensor | null {
    return this._parameters.get('in_proj_bias') ?? null;
  }
  get qProjWeight(): t.Tensor | null {
    return this._parameters.get('q_proj_weight') ?? null;
  }
  get kProjWeight(): t.Tensor | null {
    return this._parameters.get('k_proj_weight') ?? null;
  }
  get vProjWeight(): t.Tensor | null {
    return this._parameters.get('v_proj_weight') ?? null;
  }
  get biasK(): t.Tensor | null {
    return this._parameters.get('bias_k') ?? null;
  }
  get biasV(): t.Tensor | null {
    return this._parameters.get('bias_v') ?? null;
  }
  get outProj(): Linear {
    return this._modules.get('out_proj') as Linear;
  }

  /** xavier_uniform_ projections, zero biases (out_proj's too), xavier_normal_ bias_k/bias_v, as PyTorch. */
  resetParameters(): void {
    if (this.qkvSameEmbedDim) init.xavierUniform_(this.inProjWeight as t.Tensor);
    else
      for (const w of [this.qProjWeight, this.kProjWeight, this.vProjWeight])
        init.xavierUniform_(w as t.Tensor);
    if (this.inProjBias !== null) {
      init.constant_(this.inProjBias, 0);
      if (this.outProj.bias !== null) init.constant_(this.outProj.bias, 0);
    }
    if (this.biasK !== null) init.xavierNormal_(this.biasK);
    if (this.biasV !== null) init.xavierNormal_(this.biasV);
  }

  /**
   * The attention output ([L, N, E], or [N, L, E] with batchFirst) and, with needWeights,
   * the weights [N, L, S] (per head [N, H, L, S] without averaging). PyTorch's fused
   * inference fast path is not taken. Batch-first self-attention without masks or
   * weights stays batch-first (F.selfAttentionBatchFirst: same values, fewer copies);
   * everything else follows PyTorch's general computation op for op.
   */
  override forward(
    query: t.Tensor,
    key: t.Tensor,
    value: t.Tensor,
    options?: MultiheadAttentionForwardOptions,
  ): AttentionResult {
    const opts = forwardOptions(options, 'MultiheadAttention.forward', MHA_FORWARD_OPTIONS);
    return t.tidy(() => {
      const keyPaddingMask = F.canonicalMask(opts.keyPaddingMask ?? null, 'key_padding_mask', query.dtype);
      const attnMask = F.canonicalMask(opts.attnMask ?? null, 'attn_mask', query.dtype);
      const transpose = this.batchFirst && query.ndim === 3;
      // Batch-first self-attention without masks or weights: the same result without the
      // round trip through sequence-first (F.selfAttentionBatchFirst).
      if (
        transpose &&
        query === key &&
        key === value &&
        this.qkvSameEmbedDim &&
        query.shape[2] === this.embedDim &&
        this.biasK === null &&
        this.biasV === null &&
        !this.addZeroAttn &&
        !(opts.needWeights ?? true) &&
        keyPaddingMask === null &&
        attnMask === null &&
        !(opts.isCausal ?? false)
      ) {
        const out = F.selfAttentionBatchFirst(
          query,
          this.numHeads,
          this.inProjWeight as t.Tensor,
          this.inProjBias,
          this.outProj.weight,
          this.outProj.bias,
          this.training ? this.dropout : 0,
        );
        return [out, null] as AttentionResult;
      }
      if (transpose) {
        // Keep the identities (self-attention, key === value) that select the packed projection.
        const q = t.transpose(query, 1, 0);
        const k = key === query ? q : t.transpose(key, 1, 0);
        const v = value === key ? k : t.transpose(value, 1, 0);
        [query, key, value] = [q, k, v];
      }
      const separate = !this.qkvSameEmbedDim;
      const [out, weights] = F.multiHeadAttentionForward(
        query,
        key,
        value,
        this.embedDim,
        this.numHeads,
        this.inProjWeight,
        this.inProjBias,
        this.biasK,
        this.biasV,
        this.addZeroAttn,
        this.dropout,
        this.outProj.weight,
        this.outProj.bias,
        {
          training: this.training,
          keyPaddingMask,
          needWeights: opts.needWeights ?? true,
          attnMask,
          useSeparateProjWeight: separate,
          qProjWeight: this.qProjWeight,
          kProjWeight: this.kProjWeight,
          vProjWeight: this.vProjWeight,
          averageAttnWeights: opts.averageAttnWeights ?? true,
          isCausal: opts.isCausal ?? false,
        },
      );
      return [transpose ? t.transpose(out, 1, 0) : out, weights] as AttentionResult;
    });
  }
}

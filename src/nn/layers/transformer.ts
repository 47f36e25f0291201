// Transformer, TransformerEncoder/Decoder and their layers (torch.nn.modules.transformer),
// with PyTorch's submodule names (layers.0.self_attn.in_proj_weight, linear1, norm1, ...),
// init and computation. PyTorch's inference fast paths (fused encoder layer, nested
// tensors) are not taken: the general computation always runs.
import * as t from '../../core/index.ts';
import { type Args, bind, forwardOptions, signature } from '../args.ts';
import { deepCopyModule } from '../copy.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { MultiheadAttention } from './attention.ts';
import { ModuleList } from './container.ts';
import { Dropout } from './dropout.ts';
import { type FactoryOptions, Linear } from './linear.ts';
import { LayerNorm } from './normalization.ts';

/** The feed-forward activation: 'relu', 'gelu', a function or a module. */
export type TransformerActivation = 'relu' | 'gelu' | ((x: t.Tensor) => t.Tensor) | Module;

export interface TransformerLayerOptions extends FactoryOptions {
  /** Width of the feed-forward network. Default 2048. */
  dimFeedforward?: number;
  /** Default 0.1. */
  dropout?: number;
  /** Default 'relu'. */
  activation?: TransformerActivation;
  /** Default 1e-5. */
  layerNormEps?: number;
  /** Input and output are [N, L, E] instead of [L, N, E]. Default false. */
  batchFirst?: boolean;
  /** LayerNorm before attention and feed-forward (pre-norm) instead of after. Default false. */
  normFirst?: boolean;
  /** Biases in the Linear and LayerNorm layers. Default true. */
  bias?: boolean;
}

// PyTorch's signatures of the layers, the stacks and the Transformer. The Transformer's
// takes the layers' options (it passes them on), with its customEncoder/customDecoder
// between the feed-forward ones and the rest.
const FEEDFORWARD = ['dimFeedforward', 'dropout', 'activation'] as const;
const LAYER_REST = ['layerNormEps', 'batchFirst', 'normFirst', 'bias', 'device', 'dtype'] as const;
const LAYER = signature(['TransformerEncoderLayer', 'TransformerDecoderLayer'], {
  required: ['dModel', 'nhead'],
  optional: [...FEEDFORWARD, ...LAYER_REST],
});
type LayerParams = { dModel: number; nhead: number } & TransformerLayerOptions;
const ENCODER = signature('TransformerEncoder', {
  required: ['encoderLayer', 'numLayers'],
  optional: ['norm', 'enableNestedTensor', 'maskCheck'],
  inert: ['enableNestedTensor', 'maskCheck'],
});
const DECODER = signature('TransformerDecoder', {
  required: ['decoderLayer', 'numLayers'],
  optional: ['norm'],
});
const TRANSFORMER = signature('Transformer', {
  optional: [
    'dModel',
    'nhead',
    'numEncoderLayers',
    'numDecoderLayers',
    ...FEEDFORWARD,
    'customEncoder',
    'customDecoder',
    ...LAYER_REST,
  ],
});

/** A mask of -inf above the diagonal: position i attends to positions ≤ i (Transformer.generate_square_subsequent_mask). */
export function generateSquareSubsequentMask(
  sz: number,
  opts: { dtype?: t.DTypeName; device?: t.DeviceLike } = {},
): t.Tensor {
  return t.tidy(() =>
    t.triu(
      t.full([sz, sz], Number.NEGATIVE_INFINITY, { dtype: opts.dtype ?? 'float32', device: opts.device }),
      1,
    ),
  );
}

/** An nn.Module activation, or the function to apply (PyTorch's _get_activation_fn). */
function activationOf(a: TransformerActivation): ((x: t.Tensor) => t.Tensor) | Module {
  if (a === 'relu') return (x) => F.relu(x);
  if (a === 'gelu') return (x) => F.gelu(x);
  if (typeof a === 'string') throw new RangeError(`activation should be relu/gelu, not ${a}`);
  return a;
}

function applyActivation(a: ((x: t.Tensor) => t.Tensor) | Module, x: t.Tensor): t.Tensor {
  return a instanceof Module ? a.forward(x) : a(x);
}

/**
 * PyTorch's `_detect_is_causal_mask`: an explicit hint wins; without one, whether `mask`
 * equals the causal mask of `size`.
 */
function detectIsCausalMask(
  mask: t.Tensor | null,
  isCausal: boolean | null | undefined,
  size: number,
): boolean {
  if (isCausal !== null && isCausal !== undefined) return isCausal;
  if (mask === null) return false;
  return t.tidy(() => {
    const causal = t.triu(
      t.full([size, size], Number.NEGATIVE_INFINITY, { dtype: mask.dtype, device: mask.device }),
      1,
    );
    return (
      mask.shape.length === 2 && mask.shape[0] === size && mask.shape[1] === size && t.equal(mask, causal)
    );
  });
}

/** The sequence length of [L, N, E] ([N, L, E] batch-first) or unbatched [L, E] input. */
function seqLen(x: t.Tensor, batchFirst: boolean): number {
  return x.ndim === 2 ? x.shape[0] : x.shape[batchFirst ? 1 : 0];
}

/**
 * What TransformerEncoderLayer and TransformerDecoderLayer share: their submodules,
 * registered in PyTorch's order (hence its state-dict keys and initial draws), the
 * activation, and the self-attention and feed-forward blocks.
 */
export abstract class _TransformerLayer extends Module {
  readonly normFirst: boolean;
  activation: ((x: t.Tensor) => t.Tensor) | Module;

  /**
   * Registers the attentions named `attentions`, the feed-forward network (linear1,
   * dropout, linear2), then one LayerNorm and one dropout per residual block
   * (norm1..normN, dropout1..dropoutN for `blocks` = N). `opts`: the subclass's
   * arguments, bound (nn/args.ts).
   */
  constructor(opts: LayerParams, attentions: string[], blocks: number) {
    super();
    const { dModel, nhead } = opts;
    const factory = { dtype: opts.dtype, device: opts.device };
    const dropout = opts.dropout ?? 0.1;
    const bias = opts.bias ?? true;
    const ff = opts.dimFeedforward ?? 2048;
    const eps = opts.layerNormEps ?? 1e-5;
    const attn = { dropout, bias, batchFirst: opts.batchFirst ?? false, ...factory };
    for (const name of attentions) this.registerModule(name, new MultiheadAttention(dModel, nhead, attn));
    this.registerModule('linear1', new Linear(dModel, ff, { bias, ...factory }));
    this.registerModule('dropout', new Dropout(dropout));
    this.registerModule('linear2', new Linear(ff, dModel, { bias, ...factory }));
    this.normFirst = opts.normFirst ?? false;
    for (let i = 1; i <= blocks; i++) {
      this.registerModule(`norm${i}`, new LayerNorm(dModel, { eps, bias, ...factory }));
    }
    for (let i = 1; i <= blocks; i++) this.registerModule(`dropout${i}`, new Dropout(dropout));
    // A module activation becomes a submodule named `activation`, as in PyTorch.
    this.activation = activationOf(opts.activation ?? 'relu');
  }

  get selfAttn(): MultiheadAttention {
    return this._modules.get('self_attn') as MultiheadAttention;
  }

  protected sub<M extends Module>(name: string): M {
    return this._modules.get(name) as M;
  }

  /** Self-attention over `x`, then dropout1. */
  protected saBlock(
    x: t.Tensor,
    attnMask: t.Tensor | null,
    kpm: t.Tensor | null,
    isCausal: boolean,
  ): t.Tensor {
    const [y] = this.selfAttn.forward(x, x, x, {
      attnMask,
      keyPaddingMask: kpm,
      needWeights: false,
      isCausal,
    });
    return this.sub<Dropout>('dropout1').forward(y);
  }

  /** The feed-forward network, then the last block's dropout (`outDropout`). */
  protected ffBlock(x: t.Tensor, outDropout: string): t.Tensor {
    const h = applyActivation(this.activation, this.sub<Linear>('linear1').forward(x));
    const y = this.sub<Linear>('linear2').forward(this.sub<Dropout>('dropout').forward(h));
    return this.sub<Dropout>(outDropout).forward(y);
  }
}

/** Self-attention and a feed-forward network, each with a residual and LayerNorm (torch.nn.TransformerEncoderLayer). */
export class TransformerEncoderLayer extends _TransformerLayer {
  constructor(...args: Args<typeof LAYER, LayerParams>) {
    super(bind<LayerParams>(LAYER, args, 'TransformerEncoderLayer'), ['self_attn'], 2);
  }

  /** src [L, N, E] ([N, L, E] batch-first, or [L, E]); srcMask [L, L] or [N·nhead, L, L]; srcKeyPaddingMask [N, L]. */
  override forward(
    src: t.Tensor,
    options?: { srcMask?: t.Tensor | null; srcKeyPaddingMask?: t.Tensor | null; isCausal?: boolean },
  ): t.Tensor {
    const opts = forwardOptions(options, 'TransformerEncoderLayer.forward', [
      'srcMask',
      'srcKeyPaddingMask',
      'isCausal',
    ]);
    return t.tidy(() => {
      const kpm = F.canonicalMask(opts.srcKeyPaddingMask ?? null, 'src_key_padding_mask', src.dtype);
      const mask = F.canonicalMask(opts.srcMask ?? null, 'src_mask', src.dtype);
      const isCausal = opts.isCausal ?? false;
      const [norm1, norm2] = [this.sub<LayerNorm>('norm1'), this.sub<LayerNorm>('norm2')];
      let x = src;
      if (this.normFirst) {
        x = t.add(x, this.saBlock(norm1.forward(x), mask, kpm, isCausal));
        x = t.add(x, this.ffBlock(norm2.forward(x), 'dropout2'));
      } else {
        x = norm1.forward(t.add(x, this.saBlock(x, mask, kpm, isCausal)));
        x = norm2.forward(t.add(x, this.ffBlock(x, 'dropout2')));
      }
      return x;
    });
  }
}

/** Self-attention, attention over the encoder's output (memory) and a feed-forward network (torch.nn.TransformerDecoderLayer). */
export class TransformerDecoderLayer extends _TransformerLayer {
  constructor(...args: Args<typeof LAYER, LayerParams>) {
    super(bind<LayerParams>(LAYER, args, 'TransformerDecoderLayer'), ['self_attn', 'multihead_attn'], 3);
  }

  get multiheadAttn(): MultiheadAttention {
    return this._modules.get('multihead_attn') as MultiheadAttention;
  }

  /** tgt [T, N, E] and memory [S, N, E] (batch-first [N, T, E], [N, S, E]); masks as MultiheadAttention's. */
  override forward(tgt: t.Tensor, memory: t.Tensor, options?: TransformerDecoderForwardOptions): t.Tensor {
    const opts = forwardOptions(options, 'TransformerDecoderLayer.forward', DECODER_FORWARD_OPTIONS);
    return t.tidy(() => {
      const tgtMask = opts.tgtMask ?? null;
      const tgtKpm = opts.tgtKeyPaddingMask ?? null;
      const memMask = opts.memoryMask ?? null;
      const memKpm = opts.memoryKeyPaddingMask ?? null;
      const tgtCausal = opts.tgtIsCausal ?? false;
      const memCausal = opts.memoryIsCausal ?? false;
      const norm = (i: number, x: t.Tensor) => this.sub<LayerNorm>(`norm${i}`).forward(x);
      let x = tgt;
      if (this.normFirst) {
        x = t.add(x, this.saBlock(norm(1, x), tgtMask, tgtKpm, tgtCausal));
        x = t.add(x, this.mhaBlock(norm(2, x), memory, memMask, memKpm, memCausal));
        x = t.add(x, this.ffBlock(norm(3, x), 'dropout3'));
      } else {
        x = norm(1, t.add(x, this.saBlock(x, tgtMask, tgtKpm, tgtCausal)));
        x = norm(2, t.add(x, this.mhaBlock(x, memory, memMask, memKpm, memCausal)));
        x = norm(3, t.add(x, this.ffBlock(x, 'dropout3')));
      }
      return x;
    });
  }

  /** Attention over the encoder's output, then dropout2. */
  private mhaBlock(
    x: t.Tensor,
    mem: t.Tensor,
    attnMask: t.Tensor | null,
    kpm: t.Tensor | null,
    isCausal: boolean,
  ): t.Tensor {
    const opts = { attnMask, keyPaddingMask: kpm, isCausal, needWeights: false };
    const [y] = this.multiheadAttn.forward(x, mem, mem, opts);
    return this.sub<Dropout>('dropout2').forward(y);
  }
}

/** TransformerDecoderForwardOptions' names, PyTorch's optional forward arguments. */
const DECODER_FORWARD_OPTIONS = [
  'tgtMask',
  'memoryMask',
  'tgtKeyPaddingMask',
  'memoryKeyPaddingMask',
  'tgtIsCausal',
  'memoryIsCausal',
];

export interface TransformerDecoderForwardOptions {
  tgtMask?: t.Tensor | null;
  memoryMask?: t.Tensor | null;
  tgtKeyPaddingMask?: t.Tensor | null;
  memoryKeyPaddingMask?: t.Tensor | null;
  /** A hint that tgtMask is causal; in TransformerDecoder, default: detected from tgtMask. */
  tgtIsCausal?: boolean | null;
  memoryIsCausal?: boolean;
}

export interface TransformerEncoderOptions {
  /** A final normalisation (LayerNorm) after the layers. Default none. */
  norm?: Module | null;
  /**
   * Accepted for PyTorch's signature; nested tensors are not used. (In inference with a
   * padding mask PyTorch's nested path returns 0 at padded positions, before `norm`;
   * tsddp computes them like every other position.)
   */
  enableNestedTensor?: boolean;
  /** Accepted for PyTorch's signature (it checks masks for the nested-tensor path). */
  maskCheck?: boolean;
}

export interface TransformerEncoderForwardOptions {
  mask?: t.Tensor | null;
  srcKeyPaddingMask?: t.Tensor | null;
  /** A hint that mask is causal. Default: detected by comparing mask with the causal mask. */
  isCausal?: boolean | null;
}

type EncoderParams = { encoderLayer: TransformerEncoderLayer; numLayers: number } & TransformerEncoderOptions;

/**
 * What TransformerEncoder and TransformerDecoder share: `numLayers` copies of one layer
 * (deep copies with the same initial values, PyTorch's _get_clones) and an optional norm
 * after the last.
 */
export abstract class _TransformerStack extends Module {
  readonly numLayers: number;
  readonly layers: ModuleList;
  norm: Module | null;

  constructor(layer: Module, numLayers: number, norm: Module | null) {
    super();
    this.layers = new ModuleList(Array.from({ length: numLayers }, () => deepCopyModule(layer)));
    this.numLayers = numLayers;
    this.norm = this.registerModule('norm', norm);
  }

  /** The last layer's output through the norm, if there is one. */
  protected normed(out: t.Tensor): t.Tensor {
    return this.norm === null ? out : this.norm.forward(out);
  }
}

/** `numLayers` copies of `encoderLayer` and an optional norm (torch.nn.TransformerEncoder). */
export class TransformerEncoder extends _TransformerStack {
  constructor(...args: Args<typeof ENCODER, EncoderParams>) {
    const opts = bind<EncoderParams>(ENCODER, args, 'TransformerEncoder');
    super(opts.encoderLayer, opts.numLayers, opts.norm ?? null);
  }

  override forward(src: t.Tensor, options?: TransformerEncoderForwardOptions): t.Tensor {
    const opts = forwardOptions(options, 'TransformerEncoder.forward', [
      'mask',
      'srcKeyPaddingMask',
      'isCausal',
    ]);
    return t.tidy(() => {
      const kpm = F.canonicalMask(opts.srcKeyPaddingMask ?? null, 'src_key_padding_mask', src.dtype);
      const mask = F.canonicalMask(opts.mask ?? null, 'mask', src.dtype);
      const first = this.layers.get(0) as TransformerEncoderLayer;
      const isCausal = detectIsCausalMask(mask, opts.isCausal, seqLen(src, first.selfAttn.batchFirst));
      let out = src;
      for (const layer of this.layers) {
        out = (layer as TransformerEncoderLayer).forward(out, {
          srcMask: mask,
          isCausal,
          srcKeyPaddingMask: kpm,
        });
      }
      return this.normed(out);
    });
  }
}

type DecoderParams = { decoderLayer: TransformerDecoderLayer; numLayers: number; norm?: Module | null };

/** `numLayers` copies of `decoderLayer` and an optional norm (torch.nn.TransformerDecoder). */
export class TransformerDecoder extends _TransformerStack {
  constructor(...args: Args<typeof DECODER, DecoderParams>) {
    const opts = bind<DecoderParams>(DECODER, args, 'TransformerDecoder');
    super(opts.decoderLayer, opts.numLayers, opts.norm ?? null);
  }

  override forward(tgt: t.Tensor, memory: t.Tensor, options?: TransformerDecoderForwardOptions): t.Tensor {
    const opts = forwardOptions(options, 'TransformerDecoder.forward', DECODER_FORWARD_OPTIONS);
    return t.tidy(() => {
      const first = this.layers.get(0) as TransformerDecoderLayer;
      const tgtMask = opts.tgtMask ?? null;
      const tgtIsCausal = detectIsCausalMask(
        tgtMask,
        opts.tgtIsCausal,
        seqLen(tgt, first.selfAttn.batchFirst),
      );
      let out = tgt;
      for (const layer of this.layers) {
        out = (layer as TransformerDecoderLayer).forward(out, memory, { ...opts, tgtMask, tgtIsCausal });
      }
      return this.normed(out);
    });
  }
}

export interface TransformerOptions extends TransformerLayerOptions {
  /** Default 512. */
  dModel?: number;
  /** Default 8. */
  nhead?: number;
  /** Default 6. */
  numEncoderLayers?: number;
  /** Default 6. */
  numDecoderLayers?: number;
  /** Used instead of the built encoder; called as TransformerEncoder.forward is. */
  customEncoder?: Module | null;
  /** Used instead of the built decoder; called as TransformerDecoder.forward is. */
  customDecoder?: Module | null;
}

export interface TransformerForwardOptions {
  srcMask?: t.Tensor | null;
  tgtMask?: t.Tensor | null;
  memoryMask?: t.Tensor | null;
  srcKeyPaddingMask?: t.Tensor | null;
  tgtKeyPaddingMask?: t.Tensor | null;
  memoryKeyPaddingMask?: t.Tensor | null;
  srcIsCausal?: boolean | null;
  tgtIsCausal?: boolean | null;
  memoryIsCausal?: boolean;
}

/** An encoder-decoder Transformer (torch.nn.Transformer); matrices xavier_uniform_ after construction, as PyTorch. */
export class Transformer extends Module {
  readonly dModel: number;
  readonly nhead: number;
  readonly batchFirst: boolean;
  readonly encoder: Module;
  readonly decoder: Module;

  constructor(...args: Args<typeof TRANSFORMER, TransformerOptions>) {
    super();
    // What is left once the Transformer's own arguments are taken is the layers' options.
    const {
      dModel = 512,
      nhead = 8,
      numEncoderLayers = 6,
      numDecoderLayers = 6,
      customEncoder,
      customDecoder,
      ...layerOpts
    } = bind<TransformerOptions>(TRANSFORMER, args, 'Transformer');
    const factory = { dtype: layerOpts.dtype, device: layerOpts.device };
    const normOpts = { eps: layerOpts.layerNormEps ?? 1e-5, bias: layerOpts.bias ?? true, ...factory };
    this.encoder =
      customEncoder ??
      new TransformerEncoder(new TransformerEncoderLayer(dModel, nhead, layerOpts), numEncoderLayers, {
        norm: new LayerNorm(dModel, normOpts),
      });
    this.decoder =
      customDecoder ??
      new TransformerDecoder(new TransformerDecoderLayer(dModel, nhead, layerOpts), numDecoderLayers, {
        norm: new LayerNorm(dModel, normOpts),
      });
    this.resetParameters();
    this.dModel = dModel;
    this.nhead = nhead;
    this.batchFirst = layerOpts.batchFirst ?? false;
  }

  /** xavier_uniform_ on every parameter with more than one dim (PyTorch's _reset_parameters). */
  resetParameters(): void {
    for (const p of this.parameters()) if (p.ndim > 1) init.xavierUniform_(p);
  }

  /** src [S, N, E] and tgt [T, N, E] (batch-first [N, S, E], [N, T, E]) to the decoder's output [T, N, E]. */
  override forward(src: t.Tensor, tgt: t.Tensor, options?: TransformerForwardOptions): t.Tensor {
    const opts = forwardOptions(options, 'Transformer.forward', [
      'srcMask',
      'tgtMask',
      'memoryMask',
      'srcKeyPaddingMask',
      'tgtKeyPaddingMask',
      'memoryKeyPaddingMask',
      'srcIsCausal',
      'tgtIsCausal',
      'memoryIsCausal',
    ]);
    const batched = src.ndim === 3;
    const b = this.batchFirst ? 0 : 1;
    if (batched && src.shape[b] !== tgt.shape[b])
      throw new RangeError('the batch number of src and tgt must be equal');
    const e = (x: t.Tensor) => x.shape[x.ndim - 1];
    if (e(src) !== this.dModel || e(tgt) !== this.dModel) {
      throw new RangeError('the feature number of src and tgt must be equal to d_model');
    }
    return t.tidy(() => {
      const memory = this.encoder.forward(src, {
        mask: opts.srcMask,
        srcKeyPaddingMask: opts.srcKeyPaddingMask,
        isCausal: opts.srcIsCausal,
      }) as t.Tensor;
      return this.decoder.forward(tgt, memory, {
        tgtMask: opts.tgtMask,
        memoryMask: opts.memoryMask,
        tgtKeyPaddingMask: opts.tgtKeyPaddingMask,
        memoryKeyPaddingMask: opts.memoryKeyPaddingMask,
        tgtIsCausal: opts.tgtIsCausal,
        memoryIsCausal: opts.memoryIsCausal ?? false,
      }) as t.Tensor;
    });
  }

  /** Transformer.generate_square_subsequent_mask. */
  static generateSquareSubsequentMask(
    sz: number,
    opts: { dtype?: t.DTypeName; device?: t.DeviceLike } = {},
  ): t.Tensor {
    return generateSquareSubsequentMask(sz, opts);
  }
}

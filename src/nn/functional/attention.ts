// scaled_dot_product_attention and multi_head_attention_forward of torch.nn.functional.
// multiHeadAttentionForward follows PyTorch's Python code step by step (the same ops in
// the same order), so results match it to the last bits and dropout draws the same
// masks from the same seed. selfAttentionBatchFirst is the faster batch-first form
// MultiheadAttention takes for unmasked self-attention (architecture §2).
import * as t from '../../core/index.ts';
import { define } from '../args.ts';
import { sameShape } from './common.ts';
import { dropout } from './dropout.ts';
import { pad } from './vision.ts';

export interface ScaledDotProductAttentionOptions {
  /** Bool (true = take part in attention) or float (added to the scores); broadcast to [..., L, S]. */
  attnMask?: t.Tensor | null;
  /** Dropout on the attention weights; applied whenever > 0, as in PyTorch. Default 0. */
  dropoutP?: number;
  /** Attend only to earlier positions (a lower-triangular mask). Default false. */
  isCausal?: boolean;
  /** Default 1/√E (E = query's last dim). Keyword-only, as in PyTorch. */
  scale?: number | null;
  /** Grouped-query attention: key/value may have fewer heads (dim -3) than query. Default false. Keyword-only. */
  enableGqa?: boolean;
}

type QKV<O> = { query: t.Tensor; key: t.Tensor; value: t.Tensor } & O;

/** softmax(Q·Kᵀ·scale + mask)·V over libtorch's fused kernels (torch.nn.functional.scaled_dot_product_attention). */
export const scaledDotProductAttention = define(
  'scaledDotProductAttention',
  {
    required: ['query', 'key', 'value'],
    optional: ['attnMask', 'dropoutP', 'isCausal'],
    keywordOnly: ['scale', 'enableGqa'],
  },
  ({ query, key, value, ...opts }: QKV<ScaledDotProductAttentionOptions>): t.Tensor => {
    const p = opts.dropoutP ?? 0;
    if (!(p >= 0 && p <= 1)) throw new RangeError(`dropout_p must be between 0 and 1, got ${p}`);
    return t.scaledDotProductAttention(query, key, value, opts.attnMask ?? null, p, opts.isCausal ?? false, {
      scale: opts.scale ?? null,
      enableGqa: opts.enableGqa ?? false,
    });
  },
);

/**
 * PyTorch's `_canonical_mask`: a bool mask (true = masked out) becomes a float mask of
 * `dtype` with -inf where true; float masks pass unchanged; other dtypes are refused.
 */
export const canonicalMask = define(
  'canonicalMask',
  { required: ['mask', 'name', 'dtype'] },
  ({ mask, name, dtype }: { mask: t.Tensor | null; name: string; dtype: t.DTypeName }): t.Tensor | null =>
    floatMask(mask, name, dtype),
);

/** canonicalMask's work, for callers whose mask may be undefined (an option not given). */
function floatMask(mask: t.Tensor | null | undefined, name: string, dtype: t.DTypeName): t.Tensor | null {
  if (mask === null || mask === undefined) return null;
  if (mask.dtype === 'bool')
    return t.maskedFill_(t.zerosLike(mask, { dtype }), mask, Number.NEGATIVE_INFINITY);
  if (!mask.isFloatingPoint()) throw new TypeError(`only bool and floating types of ${name} are supported`);
  return mask;
}

export interface MultiHeadAttentionForwardOptions {
  /** Apply dropout (dropoutP) to the attention. Default true. */
  training?: boolean;
  /** [N, S] (or [S] unbatched); bool true or float -inf marks keys to ignore. */
  keyPaddingMask?: t.Tensor | null;
  /** Also return the attention weights (computed explicitly instead of by the fused kernel). Default true. */
  needWeights?: boolean;
  /** [L, S] or [N·numHeads, L, S]; bool true = not allowed to attend, or float added to the scores. */
  attnMask?: t.Tensor | null;
  /** Use qProjWeight/kProjWeight/vProjWeight (key/value dims differ from the embedding). Default false. */
  useSeparateProjWeight?: boolean;
  qProjWeight?: t.Tensor | null;
  kProjWeight?: t.Tensor | null;
  vProjWeight?: t.Tensor | null;
  /** Projected keys/values [N·numHeads, S, headDim] used as they are. */
  staticK?: t.Tensor | null;
  staticV?: t.Tensor | null;
  /** Average the returned weights over heads. Default true. */
  averageAttnWeights?: boolean;
  /** A hint that attnMask is the causal mask (it must still be given). Default false. */
  isCausal?: boolean;
}

/** The attention output [L, N, E] and, with needWeights, the weights [N, L, S] (or [N, H, L, S]). */
export type AttentionResult = [t.Tensor, t.Tensor | null];

/** multiHeadAttentionForward's parameters by name: its 13 required ones and the options. */
interface MhaParams extends MultiHeadAttentionForwardOptions {
  query: t.Tensor;
  key: t.Tensor;
  value: t.Tensor;
  embedDimToCheck: number;
  numHeads: number;
  inProjWeight: t.Tensor | null;
  inProjBias: t.Tensor | null;
  biasK: t.Tensor | null;
  biasV: t.Tensor | null;
  addZeroAttn: boolean;
  dropoutP: number;
  outProjWeight: t.Tensor;
  outProjBias: t.Tensor | null;
}

/**
 * torch.nn.functional.multi_head_attention_forward: query [L, N, E] (or [L, E]), key and
 * value [S, N, E_k/E_v], sequence-first. MultiheadAttention's computation, in PyTorch's
 * steps: the shape checks and masks, the in-projection (_in_projection_packed or
 * _in_projection), the heads (with bias_k/bias_v and zero attention), the key padding
 * merged into the attention mask, then the attention (explicit when the weights are
 * returned, libtorch's fused kernel otherwise) and the out-projection.
 */
export const multiHeadAttentionForward = define(
  'multiHeadAttentionForward',
  {
    required: [
      'query',
      'key',
      'value',
      'embedDimToCheck',
      'numHeads',
      'inProjWeight',
      'inProjBias',
      'biasK',
      'biasV',
      'addZeroAttn',
      'dropoutP',
      'outProjWeight',
      'outProjBias',
    ],
    optional: [
      'training',
      'keyPaddingMask',
      'needWeights',
      'attnMask',
      'useSeparateProjWeight',
      'qProjWeight',
      'kProjWeight',
      'vProjWeight',
      'staticK',
      'staticV',
      'averageAttnWeights',
      'isCausal',
    ],
  },
  mhaForward,
);

function mhaForward(opts: MhaParams): AttentionResult {
  let { query, key, value } = opts;
  const { embedDimToCheck, numHeads, inProjWeight, inProjBias, biasK, biasV } = opts;
  const { addZeroAttn, dropoutP, outProjWeight, outProjBias } = opts;
  return t.tidy(() => {
    const needWeights = opts.needWeights ?? true;
    const batched = mhaShapeCheck(query, key, value, opts, numHeads);
    // Unbatched input gets a batch dim of 1 for the computation, dropped at the end. Like
    // PyTorch, this makes three distinct tensors: the projection then takes the chunked path.
    if (!batched) [query, key, value] = [t.unsqueeze(query, 1), t.unsqueeze(key, 1), t.unsqueeze(value, 1)];
    const [tgtLen, bsz, embedDim] = query.shape;
    const masks = mhaMasks(opts, batched, needWeights, query.dtype);
    const headDim = mhaHeadDim(key, value, embedDim, embedDimToCheck, numHeads, opts);
    const [q, k, v] = mhaInProjection(query, key, value, inProjWeight, inProjBias, opts);
    const s: MhaState = { q, k, v, attnMask: masks.attnMask, keyPaddingMask: masks.keyPaddingMask };
    if (s.attnMask !== null) s.attnMask = attnMask3d(s.attnMask, tgtLen, key.shape[0], bsz * numHeads);
    addBiasKV(s, biasK, biasV, bsz, opts);
    // Heads into the batch: [N·H, L or S, headDim].
    s.q = t.transpose(t.view(s.q, [tgtLen, bsz * numHeads, headDim]), 0, 1);
    s.k = staticKV(opts.staticK, s.k, bsz * numHeads, headDim, 'static_k');
    s.v = staticKV(opts.staticV, s.v, bsz * numHeads, headDim, 'static_v');
    if (addZeroAttn) addZeroAttention(s, bsz * numHeads, headDim);
    mergeKeyPaddingMask(s, bsz, numHeads);
    const p = (opts.training ?? true) ? dropoutP : 0;
    const outProj = (x: t.Tensor) => t.view(t.linear(x, outProjWeight, outProjBias), [tgtLen, bsz, -1]);
    let out: t.Tensor;
    let weights: t.Tensor | null = null;
    if (needWeights) {
      let w: t.Tensor;
      [out, w] = attentionWithWeights(s, p, masks.isCausal, bsz, embedDim);
      out = outProj(out);
      weights = t.view(w, [bsz, numHeads, tgtLen, s.k.shape[1]]);
      if (opts.averageAttnWeights ?? true) weights = t.mean(weights, 1);
    } else {
      out = outProj(fusedAttention(s, p, masks.isCausal, bsz, numHeads, embedDim));
    }
    if (!batched) {
      out = t.squeeze(out, 1);
      if (weights !== null) weights = t.squeeze(weights, 0);
    }
    return [out, weights] as AttentionResult;
  });
}

/** The projected query, key and value, and the masks, as multiHeadAttentionForward's steps change them. */
interface MhaState {
  q: t.Tensor;
  k: t.Tensor;
  v: t.Tensor;
  attnMask: t.Tensor | null;
  keyPaddingMask: t.Tensor | null;
}

/**
 * The key padding mask (given the batch dim of unbatched input) and the attention mask as
 * float masks, and whether the causal hint still holds: with it and neither a padding
 * mask nor weights to return, the fused kernel applies the causal mask itself and
 * attn_mask is dropped; a merged padding mask is no longer causal.
 */
function mhaMasks(
  opts: MultiHeadAttentionForwardOptions,
  batched: boolean,
  needWeights: boolean,
  dtype: t.DTypeName,
): { keyPaddingMask: t.Tensor | null; attnMask: t.Tensor | null; isCausal: boolean } {
  let keyPaddingMask = opts.keyPaddingMask ?? null;
  if (!batched && keyPaddingMask !== null) keyPaddingMask = t.unsqueeze(keyPaddingMask, 0);
  keyPaddingMask = floatMask(keyPaddingMask, 'key_padding_mask', dtype);
  const attnMask = opts.attnMask ?? null;
  let isCausal = opts.isCausal ?? false;
  if (isCausal && attnMask === null) {
    throw new Error(
      'Need attn_mask if specifying the is_causal hint. You may use the Transformer module method ' +
        '`generateSquareSubsequentMask` to create this mask.',
    );
  }
  if (isCausal && keyPaddingMask === null && !needWeights)
    return { keyPaddingMask, attnMask: null, isCausal };
  if (keyPaddingMask !== null) isCausal = false;
  return { keyPaddingMask, attnMask: floatMask(attnMask, 'attn_mask', dtype), isCausal };
}

/** The head size, after PyTorch's checks of the embedding size and of key against value. */
function mhaHeadDim(
  key: t.Tensor,
  value: t.Tensor,
  embedDim: number,
  embedDimToCheck: number,
  numHeads: number,
  opts: MultiHeadAttentionForwardOptions,
): number {
  if (embedDim !== embedDimToCheck) {
    throw new RangeError(`was expecting embedding dimension of ${embedDimToCheck}, but got ${embedDim}`);
  }
  const headDim = Math.trunc(embedDim / numHeads);
  if (headDim * numHeads !== embedDim) {
    throw new RangeError(`embed_dim ${embedDim} not divisible by num_heads ${numHeads}`);
  }
  if (opts.useSeparateProjWeight ?? false) {
    if (key.shape[0] !== value.shape[0] || key.shape[1] !== value.shape[1]) {
      throw new RangeError(
        `key's sequence and batch dims [${key.shape.slice(0, 2)}] do not match value's [${value.shape.slice(0, 2)}]`,
      );
    }
  } else if (!sameShape(key.shape, value.shape)) {
    throw new RangeError(`key shape [${key.shape}] does not match value shape [${value.shape}]`);
  }
  return headDim;
}

/** q, k and v projected: by the packed in_proj_weight, or by q/k/v_proj_weight (PyTorch's _in_projection). */
function mhaInProjection(
  query: t.Tensor,
  key: t.Tensor,
  value: t.Tensor,
  inProjWeight: t.Tensor | null,
  inProjBias: t.Tensor | null,
  opts: MultiHeadAttentionForwardOptions,
): [t.Tensor, t.Tensor, t.Tensor] {
  if (!(opts.useSeparateProjWeight ?? false)) {
    if (inProjWeight === null) throw new TypeError('useSeparateProjWeight is false but inProjWeight is null');
    return inProjectionPacked(query, key, value, inProjWeight, inProjBias);
  }
  const [wq, wk, wv] = [opts.qProjWeight, opts.kProjWeight, opts.vProjWeight];
  if (!wq || !wk || !wv) {
    throw new TypeError('useSeparateProjWeight is true but qProjWeight, kProjWeight or vProjWeight is null');
  }
  const [bq, bk, bv] = inProjBias === null ? [null, null, null] : t.chunk(inProjBias, 3);
  return [t.linear(query, wq, bq), t.linear(key, wk, bk), t.linear(value, wv, bv)];
}

/** The attention mask as [1 or N·H, L, S], checked against the query and key lengths. */
function attnMask3d(attnMask: t.Tensor, tgtLen: number, srcLen: number, batchHeads: number): t.Tensor {
  if (attnMask.ndim === 2) {
    if (attnMask.shape[0] !== tgtLen || attnMask.shape[1] !== srcLen) {
      throw new RangeError(
        `The shape of the 2D attn_mask is [${attnMask.shape}], but should be [${tgtLen}, ${srcLen}].`,
      );
    }
    return t.unsqueeze(attnMask, 0);
  }
  if (!sameShape(attnMask.shape, [batchHeads, tgtLen, srcLen])) {
    throw new RangeError(
      `The shape of the 3D attn_mask is [${attnMask.shape}], but should be [${batchHeads}, ${tgtLen}, ${srcLen}].`,
    );
  }
  return attnMask;
}

/** The learned bias key and value appended along the sequence (the masks padded to match). */
function addBiasKV(
  s: MhaState,
  biasK: t.Tensor | null,
  biasV: t.Tensor | null,
  bsz: number,
  opts: MultiHeadAttentionForwardOptions,
): void {
  if (biasK !== null && biasV !== null) {
    if (opts.staticK || opts.staticV) throw new TypeError('bias cannot be added to static key or value.');
    s.k = t.cat([s.k, t.repeat(biasK, [1, bsz, 1])]);
    s.v = t.cat([s.v, t.repeat(biasV, [1, bsz, 1])]);
    padMasks(s);
  } else if (biasK !== null || biasV !== null) {
    throw new TypeError('biasK and biasV must be given together');
  }
}

/** A zero key and value appended to the [N·H, S, headDim] sequences (the masks padded to match). */
function addZeroAttention(s: MhaState, batchHeads: number, headDim: number): void {
  const zeros = t.zeros([batchHeads, 1, headDim], { dtype: s.k.dtype, device: s.k.device });
  s.k = t.cat([s.k, zeros], 1);
  s.v = t.cat([s.v, t.zeros([batchHeads, 1, headDim], { dtype: s.v.dtype, device: s.v.device })], 1);
  padMasks(s);
}

/** One more key position in both masks (not masked). */
function padMasks(s: MhaState): void {
  if (s.attnMask !== null) s.attnMask = pad(s.attnMask, [0, 1]);
  if (s.keyPaddingMask !== null) s.keyPaddingMask = pad(s.keyPaddingMask, [0, 1]);
}

/** The key padding mask [N, S] merged into the attention mask, as [N·H, 1 or L, S]. */
function mergeKeyPaddingMask(s: MhaState, bsz: number, numHeads: number): void {
  const kpm = s.keyPaddingMask;
  if (kpm === null) return;
  const srcLen = s.k.shape[1];
  if (kpm.shape[0] !== bsz || kpm.shape[1] !== srcLen) {
    throw new RangeError(`Expected key_padding_mask of shape [${bsz}, ${srcLen}], got [${kpm.shape}]`);
  }
  const perHead = t.reshape(t.expand(t.view(kpm, [bsz, 1, 1, srcLen]), [-1, numHeads, -1, -1]), [
    bsz * numHeads,
    1,
    srcLen,
  ]);
  s.attnMask = s.attnMask === null ? perHead : t.add(s.attnMask, perHead);
}

/**
 * The attention with its weights computed explicitly, as PyTorch does when they are
 * returned: [rows [L·N, E] for the out-projection, weights [N·H, L, S]].
 */
function attentionWithWeights(
  s: MhaState,
  p: number,
  isCausal: boolean,
  bsz: number,
  embedDim: number,
): [t.Tensor, t.Tensor] {
  const [, tgtLen, headDim] = s.q.shape;
  const qScaled = t.mul(s.q, Math.sqrt(1 / headDim));
  if (isCausal && s.attnMask === null) throw new Error('is_causal is not implemented for need_weights');
  const kt = t.transpose(s.k, -2, -1);
  let w = s.attnMask !== null ? t.baddbmm(s.attnMask, qScaled, kt) : t.bmm(qScaled, kt);
  w = t.softmax(w, -1);
  if (p > 0) w = dropout(w, { p });
  return [t.reshape(t.transpose(t.bmm(w, s.v), 0, 1), [tgtLen * bsz, embedDim]), w];
}

/** The attention by libtorch's fused scaled_dot_product_attention on [N, H, L, headDim]: rows [L·N, E]. */
function fusedAttention(
  s: MhaState,
  p: number,
  isCausal: boolean,
  bsz: number,
  numHeads: number,
  embedDim: number,
): t.Tensor {
  const [, tgtLen, headDim] = s.q.shape;
  const srcLen = s.k.shape[1];
  let attnMask = s.attnMask;
  if (attnMask !== null) {
    attnMask =
      attnMask.shape[0] === 1 && attnMask.ndim === 3
        ? t.unsqueeze(attnMask, 0)
        : t.view(attnMask, [bsz, numHeads, -1, srcLen]);
  }
  const a = t.scaledDotProductAttention(
    t.view(s.q, [bsz, numHeads, tgtLen, headDim]),
    t.view(s.k, [bsz, numHeads, srcLen, headDim]),
    t.view(s.v, [bsz, numHeads, srcLen, headDim]),
    attnMask,
    p,
    isCausal,
  );
  return t.reshape(t.permute(a, [2, 0, 1, 3]), [bsz * tgtLen, embedDim]);
}

/**
 * Self-attention on a batch-first [N, L, E] input without masks, weights or bias_k/bias_v:
 * multiHeadAttentionForward's linear, attention and linear without its detour on the way
 * in. PyTorch's training path copies the input to sequence-first, makes the packed
 * projection contiguous and takes q, k and v by `select` (whose backward zero-fills three
 * projection-sized gradients and sums them); here q, k and v are views of the batch-first
 * projection and their gradients are concatenated once. The output has the general path's
 * layout and values; the in-projection's weight gradient sums rows in another order, so it
 * differs by float rounding (architecture §2, "Where a module leaves PyTorch's op sequence").
 */
export const selfAttentionBatchFirst = define(
  'selfAttentionBatchFirst',
  { required: ['x', 'numHeads', 'inProjWeight', 'inProjBias', 'outProjWeight', 'outProjBias', 'dropoutP'] },
  selfAttention,
);

interface SelfAttentionParams {
  x: t.Tensor;
  numHeads: number;
  inProjWeight: t.Tensor;
  inProjBias: t.Tensor | null;
  outProjWeight: t.Tensor;
  outProjBias: t.Tensor | null;
  dropoutP: number;
}

function selfAttention(a: SelfAttentionParams): t.Tensor {
  const { x, numHeads, inProjWeight, inProjBias, outProjWeight, outProjBias, dropoutP } = a;
  return t.tidy(() => {
    if (x.ndim !== 3)
      throw new RangeError(`selfAttentionBatchFirst: expected x as [N, L, E], got [${x.shape}]`);
    const [n, l, e] = x.shape;
    const headDim = Math.trunc(e / numHeads);
    if (headDim * numHeads !== e)
      throw new RangeError(`embed_dim ${e} not divisible by num_heads ${numHeads}`);
    // [N, L, 3E] -> q, k, v as [N, H, L, headDim] views (last dim contiguous, as the fused kernel needs).
    const heads = (p: t.Tensor): t.Tensor => t.transpose(t.view(p, [n, l, numHeads, headDim]), 1, 2);
    const [q, k, v] = t.split(t.linear(x, inProjWeight, inProjBias), e, -1).map(heads);
    const a = t.scaledDotProductAttention(q, k, v, null, dropoutP, false);
    // The output projection as PyTorch runs it: sequence-major rows, returned as a
    // [N, L, E] view of [L, N, E]. What follows then sees PyTorch's layout, so a dropout
    // after it draws its mask in PyTorch's element order.
    const rows = t.reshape(t.permute(a, [2, 0, 1, 3]), [l * n, e]);
    return t.transpose(t.view(t.linear(rows, outProjWeight, outProjBias), [l, n, e]), 0, 1);
  });
}

/** PyTorch's `_in_projection_packed`: one matmul for self-attention, two when key === value. */
function inProjectionPacked(
  q: t.Tensor,
  k: t.Tensor,
  v: t.Tensor,
  w: t.Tensor,
  b: t.Tensor | null,
): [t.Tensor, t.Tensor, t.Tensor] {
  const E = q.shape[q.ndim - 1];
  // [..., n·E] -> [n, ..., E], contiguous, in chunk order.
  const unpack = (proj: t.Tensor, n: number): t.Tensor =>
    t.squeeze(t.transpose(t.unsqueeze(t.unflatten(proj, -1, [n, E]), 0), 0, -2), -2).contiguous();
  if (k === v) {
    if (q === k) {
      const proj = unpack(t.linear(q, w, b), 3);
      return [t.select(proj, 0, 0), t.select(proj, 0, 1), t.select(proj, 0, 2)];
    }
    const [wq, wkv] = t.split(w, [E, E * 2]);
    const [bq, bkv] = b === null ? [null, null] : t.split(b, [E, E * 2]);
    const kv = unpack(t.linear(k, wkv, bkv), 2);
    return [t.linear(q, wq, bq), t.select(kv, 0, 0), t.select(kv, 0, 1)];
  }
  const [wq, wk, wv] = t.chunk(w, 3);
  const [bq, bk, bv] = b === null ? [null, null, null] : t.chunk(b, 3);
  return [t.linear(q, wq, bq), t.linear(k, wk, bk), t.linear(v, wv, bv)];
}

/** A projected key/value as [N·H, S, headDim], or the given static one after its shape check. */
function staticKV(
  fixed: t.Tensor | null | undefined,
  x: t.Tensor,
  batchHeads: number,
  headDim: number,
  name: string,
): t.Tensor {
  if (fixed === null || fixed === undefined)
    return t.transpose(t.view(x, [x.shape[0], batchHeads, headDim]), 0, 1);
  if (fixed.shape[0] !== batchHeads || fixed.shape[2] !== headDim) {
    throw new RangeError(`expecting ${name} of shape [${batchHeads}, *, ${headDim}], got [${fixed.shape}]`);
  }
  return fixed;
}

/** PyTorch's `_mha_shape_check`: whether the input is batched (3-d) or not (2-d), with the masks' ranks. */
function mhaShapeCheck(
  query: t.Tensor,
  key: t.Tensor,
  value: t.Tensor,
  opts: MultiHeadAttentionForwardOptions,
  numHeads: number,
): boolean {
  const keyPaddingMask = opts.keyPaddingMask ?? null;
  const attnMask = opts.attnMask ?? null;
  const rank = query.ndim;
  if (rank !== 2 && rank !== 3) {
    throw new RangeError(
      `query should be unbatched 2D or batched 3D tensor but received ${rank}-D query tensor`,
    );
  }
  const kind = rank === 3 ? 'batched (3-D)' : 'unbatched (2-D)';
  if (key.ndim !== rank || value.ndim !== rank) {
    throw new RangeError(
      `For ${kind} \`query\`, expected \`key\` and \`value\` to be ${rank}-D but found ${key.ndim}-D and ${value.ndim}-D tensors respectively`,
    );
  }
  if (keyPaddingMask !== null && keyPaddingMask.ndim !== rank - 1) {
    throw new RangeError(
      `For ${kind} \`query\`, expected \`key_padding_mask\` to be null or ${rank - 1}-D but found ${keyPaddingMask.ndim}-D tensor instead`,
    );
  }
  if (attnMask !== null) {
    if (attnMask.ndim !== 2 && attnMask.ndim !== 3) {
      throw new RangeError(
        `For ${kind} \`query\`, expected \`attn_mask\` to be null, 2-D or 3-D but found ${attnMask.ndim}-D tensor instead`,
      );
    }
    if (rank === 2 && attnMask.ndim === 3) {
      const want = [numHeads, query.shape[0], key.shape[0]];
      if (!sameShape(attnMask.shape, want)) {
        throw new RangeError(`Expected \`attn_mask\` shape to be [${want}] but got [${attnMask.shape}]`);
      }
    }
  }
  return rank === 3;
}

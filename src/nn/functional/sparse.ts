// embedding, embedding_bag and one_hot of torch.nn.functional, with PyTorch's parameters
// positional or by name (nn/args.ts).
import { noGrad } from '../../autograd/index.ts';
import * as t from '../../core/index.ts';
import { define } from '../args.ts';
import { aten } from './common.ts';

const NO_SPARSE = {
  unsupported: { sparse: false },
  hints: { sparse: 'sparse gradients are not supported by tsddp' },
} as const;

/** What embedding and embeddingBag share: the renormalisation of the rows looked up, and `sparse`. */
interface LookupOptions {
  /** Rows looked up are first renormalised in place to at most this norm. */
  maxNorm?: number | null;
  /** The p of the maxNorm norm. Default 2. */
  normType?: number;
  /** Scale gradients by the inverse frequency of the words in the batch. Default false. */
  scaleGradByFreq?: boolean;
  /** Sparse gradients are not supported by tsddp: false only. */
  sparse?: boolean;
}
// (max_norm, norm_type, scale_grad_by_freq): one after the other in both signatures.
const LOOKUP = ['maxNorm', 'normType', 'scaleGradByFreq'] as const;

/** With maxNorm: the rows of `weight` that `indices` looks up, renormalised in place (outside autograd, as PyTorch). */
function renormRows(weight: t.Tensor, indices: t.Tensor, opts: LookupOptions): void {
  const maxNorm = opts.maxNorm ?? null;
  if (maxNorm === null) return;
  noGrad(() =>
    t.tidy(() => {
      aten('aten::embedding_renorm_', weight, t.contiguous(indices), maxNorm, opts.normType ?? 2);
    }),
  );
}

export interface EmbeddingOptions extends LookupOptions {
  /** Row whose gradient is always zero (negative counts from the end). */
  paddingIdx?: number | null;
}

/** Rows of `weight` at the indices in `input` (torch.nn.functional.embedding's argument order). */
export const embedding = define(
  'embedding',
  {
    required: ['input', 'weight'],
    optional: ['paddingIdx', ...LOOKUP, 'sparse'],
    ...NO_SPARSE,
  },
  ({ input, weight, ...opts }: { input: t.Tensor; weight: t.Tensor } & EmbeddingOptions): t.Tensor => {
    const rows = weight.shape[0];
    let paddingIdx = opts.paddingIdx ?? -1;
    if (opts.paddingIdx !== undefined && opts.paddingIdx !== null) {
      if (paddingIdx >= rows || paddingIdx < -rows) {
        throw new RangeError(`embedding(): paddingIdx ${paddingIdx} must be within numEmbeddings (${rows})`);
      }
      if (paddingIdx < 0) paddingIdx += rows;
    }
    renormRows(weight, input, opts);
    return t.embedding(weight, input, paddingIdx, opts.scaleGradByFreq ?? false, false);
  },
);

/** int64 one-hot rows of the class indices in `tensor`; numClasses -1 means max + 1. */
export const oneHot = define(
  'oneHot',
  { required: ['tensor'], optional: ['numClasses'] },
  ({ tensor, numClasses = -1 }: { tensor: t.Tensor; numClasses?: number }): t.Tensor =>
    t.oneHot(tensor, numClasses),
);

export interface EmbeddingBagOptions extends LookupOptions {
  /** Start of each bag in a 1-d `input`; must be omitted for 2-d input (one bag per row). */
  offsets?: t.Tensor | null;
  /** How a bag's rows are reduced. Default 'mean'. */
  mode?: 'sum' | 'mean' | 'max';
  /** A weight per index (mode 'sum' only), shaped like input. */
  perSampleWeights?: t.Tensor | null;
  /** `offsets` has one more entry: the end of the last bag. Default false. */
  includeLastOffset?: boolean;
  /** Index that is left out of every bag. */
  paddingIdx?: number | null;
}

const BAG_MODES = { sum: 0, mean: 1, max: 2 } as const;

/** Sums, means or maxes of bags of embedding rows, without building the rows (torch.nn.functional.embedding_bag). */
export const embeddingBag = define(
  'embeddingBag',
  {
    required: ['input', 'weight'],
    optional: ['offsets', ...LOOKUP, 'mode', 'sparse', 'perSampleWeights', 'includeLastOffset', 'paddingIdx'],
    ...NO_SPARSE,
  },
  ({ input, weight, ...opts }: { input: t.Tensor; weight: t.Tensor } & EmbeddingBagOptions): t.Tensor =>
    bag(input, weight, opts),
);

function bag(input: t.Tensor, weight: t.Tensor, opts: EmbeddingBagOptions): t.Tensor {
  const mode = opts.mode ?? 'mean';
  const modeEnum = BAG_MODES[mode];
  if (modeEnum === undefined)
    throw new TypeError(`embeddingBag(): mode must be 'sum', 'mean' or 'max', got ${JSON.stringify(mode)}`);
  if (mode === 'max' && opts.scaleGradByFreq) {
    throw new TypeError('embeddingBag(): max mode does not support scaling the gradient by the frequency');
  }
  const perSample = opts.perSampleWeights ?? null;
  if (perSample !== null) {
    if (perSample.shape.join() !== input.shape.join()) {
      throw new RangeError(
        `embeddingBag(): perSampleWeights [${perSample.shape.join(', ')}] must have the shape of input [${input.shape.join(', ')}]`,
      );
    }
    if (mode !== 'sum')
      throw new TypeError(
        `embeddingBag(): perSampleWeights is only supported for mode 'sum' (got '${mode}')`,
      );
  }
  if (weight.ndim !== 2) throw new RangeError(`embeddingBag(): weight has to be 2-d, got ${weight.ndim}-d`);
  return t.tidy(() => {
    let indices = input;
    let offsets = opts.offsets ?? null;
    let weights = perSample;
    let includeLastOffset = opts.includeLastOffset ?? false;
    if (input.ndim === 2) {
      if (offsets !== null)
        throw new TypeError('embeddingBag(): if input is 2-d, offsets has to be null (each row is a bag)');
      offsets = t.arange(0, input.numel(), input.shape[1], { dtype: input.dtype, device: input.device });
      includeLastOffset = false;
      indices = t.reshape(input, [-1]);
      if (weights !== null) weights = t.reshape(weights, [-1]);
    } else if (input.ndim === 1) {
      if (offsets === null || offsets.ndim !== 1)
        throw new TypeError('embeddingBag(): offsets has to be a 1-d tensor');
    } else {
      throw new RangeError(`embeddingBag(): input has to be 1-d or 2-d, got ${input.ndim}-d`);
    }
    renormRows(weight, indices, opts);
    const [out] = t.ops.call(
      'aten::embedding_bag.padding_idx',
      weight,
      indices,
      offsets,
      opts.scaleGradByFreq ?? false,
      modeEnum,
      false,
      weights,
      includeLastOffset,
      opts.paddingIdx ?? null,
    ) as t.Tensor[];
    return out;
  });
}

// Activation functions of torch.nn.functional, each one libtorch op (in-place variants
// where PyTorch offers `inplace`).
import * as t from '../../core/index.ts';
import { aten } from './common.ts';

interface Inplace {
  /** Overwrite the input and return it. Default false. */
  inplace?: boolean;
}

export function relu(input: t.Tensor, opts: Inplace = {}): t.Tensor {
  return opts.inplace ? input.relu_() : t.relu(input);
}

export function relu6(input: t.Tensor, opts: Inplace = {}): t.Tensor {
  return hardtanh(input, { minVal: 0, maxVal: 6, inplace: opts.inplace });
}

export function leakyRelu(input: t.Tensor, opts: { negativeSlope?: number } & Inplace = {}): t.Tensor {
  const slope = opts.negativeSlope ?? 0.01;
  return opts.inplace ? aten('aten::leaky_relu_', input, slope) : aten('aten::leaky_relu', input, slope);
}

export function elu(input: t.Tensor, opts: { alpha?: number } & Inplace = {}): t.Tensor {
  const alpha = opts.alpha ?? 1;
  return opts.inplace ? aten('aten::elu_', input, alpha) : aten('aten::elu', input, alpha);
}

export function hardtanh(
  input: t.Tensor,
  opts: { minVal?: number; maxVal?: number } & Inplace = {},
): t.Tensor {
  const lo = opts.minVal ?? -1;
  const hi = opts.maxVal ?? 1;
  return opts.inplace ? aten('aten::hardtanh_', input, lo, hi) : aten('aten::hardtanh', input, lo, hi);
}

/** Gaussian error linear unit; `approximate: 'tanh'` uses the tanh approximation. */
export function gelu(input: t.Tensor, opts: { approximate?: 'none' | 'tanh' } = {}): t.Tensor {
  const approximate = opts.approximate ?? 'none';
  if (approximate !== 'none' && approximate !== 'tanh') {
    throw new TypeError(`gelu(): approximate must be 'none' or 'tanh', got ${JSON.stringify(approximate)}`);
  }
  return aten('aten::gelu', input, approximate);
}

/** x·sigmoid(x) (swish). */
export function silu(input: t.Tensor, opts: Inplace = {}): t.Tensor {
  return opts.inplace ? aten('aten::silu_', input) : t.silu(input);
}

export function mish(input: t.Tensor, opts: Inplace = {}): t.Tensor {
  return opts.inplace ? aten('aten::mish_', input) : aten('aten::mish', input);
}

export function hardswish(input: t.Tensor, opts: Inplace = {}): t.Tensor {
  return opts.inplace ? aten('aten::hardswish_', input) : aten('aten::hardswish', input);
}

export function hardsigmoid(input: t.Tensor, opts: Inplace = {}): t.Tensor {
  return opts.inplace ? aten('aten::hardsigmoid_', input) : aten('aten::hardsigmoid', input);
}

export function sigmoid(input: t.Tensor): t.Tensor {
  return t.sigmoid(input);
}

export function tanh(input: t.Tensor): t.Tensor {
  return t.tanh(input);
}

/** log(sigmoid(x)), computed stably. */
export function logsigmoid(input: t.Tensor): t.Tensor {
  return aten('aten::log_sigmoid', input);
}

/** (1/beta)·log(1 + exp(beta·x)), linear above `threshold`. */
export function softplus(input: t.Tensor, opts: { beta?: number; threshold?: number } = {}): t.Tensor {
  return aten('aten::softplus', input, opts.beta ?? 1, opts.threshold ?? 20);
}

/** Gated linear unit: first half of `dim` times sigmoid of the second half. */
export function glu(input: t.Tensor, dim = -1): t.Tensor {
  if (input.ndim === 0)
    throw new RangeError('glu does not support scalars because halving size must be even');
  return aten('aten::glu', input, dim);
}

export interface SoftmaxOptions {
  /** Cast the input to this dtype before the operation (against overflow). */
  dtype?: t.DTypeName | null;
}

/**
 * The dim PyTorch picks when `dim` is None (deprecated there, kept for nn.Softmax()):
 * 0 for 0-, 1- and 3-d input, else 1.
 */
export function implicitSoftmaxDim(ndim: number): number {
  return ndim === 0 || ndim === 1 || ndim === 3 ? 0 : 1;
}

function softmaxDim(input: t.Tensor, dim: number | null, fn: string): number {
  if (dim === null) return implicitSoftmaxDim(input.ndim);
  if (!Number.isInteger(dim)) throw new TypeError(`${fn}(): dim must be an integer, got ${String(dim)}`);
  return dim;
}

export function softmax(input: t.Tensor, dim: number | null, opts: SoftmaxOptions = {}): t.Tensor {
  return t.softmax(input, softmaxDim(input, dim, 'softmax'), opts.dtype ?? null);
}

export function logSoftmax(input: t.Tensor, dim: number | null, opts: SoftmaxOptions = {}): t.Tensor {
  return t.logSoftmax(input, softmaxDim(input, dim, 'logSoftmax'), opts.dtype ?? null);
}

/** softmax(-x). */
export function softmin(input: t.Tensor, dim: number | null, opts: SoftmaxOptions = {}): t.Tensor {
  return t.softmax(t.neg(input), softmaxDim(input, dim, 'softmin'), opts.dtype ?? null);
}

/** Scaled ELU with PyTorch's fixed alpha and scale (self-normalising networks). */
export function selu(input: t.Tensor, opts: Inplace = {}): t.Tensor {
  return opts.inplace ? aten('aten::selu_', input) : aten('aten::selu', input);
}

/** max(0, x) + min(0, alpha·(exp(x/alpha) - 1)). */
export function celu(input: t.Tensor, opts: { alpha?: number } & Inplace = {}): t.Tensor {
  const alpha = opts.alpha ?? 1;
  return opts.inplace ? aten('aten::celu_', input, alpha) : aten('aten::celu', input, alpha);
}

/** x where x > threshold, else value. */
export function threshold(input: t.Tensor, threshold: number, value: number, opts: Inplace = {}): t.Tensor {
  return opts.inplace
    ? aten('aten::threshold_', input, threshold, value)
    : aten('aten::threshold', input, threshold, value);
}

/** x where |x| > lambd, else 0. */
export function hardshrink(input: t.Tensor, lambd = 0.5): t.Tensor {
  return aten('aten::hardshrink', input, lambd);
}

/** x - lambd·sign(x) where |x| > lambd, else 0. */
export function softshrink(input: t.Tensor, lambd = 0.5): t.Tensor {
  return aten('aten::softshrink', input, lambd);
}

/** x - tanh(x) (PyTorch's own composite). */
export function tanhshrink(input: t.Tensor): t.Tensor {
  return t.tidy(() => t.sub(input, t.tanh(input)));
}

/** x / (|x| + 1) (PyTorch's own composite). */
export function softsign(input: t.Tensor): t.Tensor {
  return t.tidy(() => t.div(input, t.add(t.abs(input), 1)));
}

/** max(0, x) + weight·min(0, x), with a learnt slope per channel (or one for all). */
export function prelu(input: t.Tensor, weight: t.Tensor): t.Tensor {
  return aten('aten::prelu', input, weight);
}

/**
 * Randomized leaky ReLU: in training the negative slope is drawn from U(lower, upper)
 * per element; otherwise it is (lower + upper) / 2.
 */
export function rrelu(
  input: t.Tensor,
  opts: { lower?: number; upper?: number; training?: boolean } & Inplace = {},
): t.Tensor {
  const lower = opts.lower ?? 1 / 8;
  const upper = opts.upper ?? 1 / 3;
  const training = opts.training ?? false;
  return opts.inplace
    ? aten('aten::rrelu_', input, lower, upper, training, null)
    : aten('aten::rrelu', input, lower, upper, training, null);
}

// The in-place forms torch.nn.functional also exports under their own names.
export function relu_(input: t.Tensor): t.Tensor {
  return relu(input, { inplace: true });
}
export function elu_(input: t.Tensor, opts: { alpha?: number } = {}): t.Tensor {
  return elu(input, { ...opts, inplace: true });
}
export function celu_(input: t.Tensor, opts: { alpha?: number } = {}): t.Tensor {
  return celu(input, { ...opts, inplace: true });
}
export function selu_(input: t.Tensor): t.Tensor {
  return selu(input, { inplace: true });
}
export function leakyRelu_(input: t.Tensor, opts: { negativeSlope?: number } = {}): t.Tensor {
  return leakyRelu(input, { ...opts, inplace: true });
}
export function hardtanh_(input: t.Tensor, opts: { minVal?: number; maxVal?: number } = {}): t.Tensor {
  return hardtanh(input, { ...opts, inplace: true });
}
export function rrelu_(
  input: t.Tensor,
  opts: { lower?: number; upper?: number; training?: boolean } = {},
): t.Tensor {
  return rrelu(input, { ...opts, inplace: true });
}
export function threshold_(input: t.Tensor, thresholdValue: number, value: number): t.Tensor {
  return threshold(input, thresholdValue, value, { inplace: true });
}

export interface GumbelSoftmaxOptions {
  /** Temperature. Default 1. */
  tau?: number;
  /** Return one-hot samples (with the soft samples' gradient, straight-through). Default false. */
  hard?: boolean;
  /** Default -1. */
  dim?: number;
}

/**
 * Samples from the Gumbel-softmax distribution over `logits`, as PyTorch composes it
 * (Gumbel noise from exponential_ on the default generator: the same draws as PyTorch
 * after the same manualSeed).
 */
export function gumbelSoftmax(logits: t.Tensor, opts: GumbelSoftmaxOptions = {}): t.Tensor {
  const tau = opts.tau ?? 1;
  const dim = opts.dim ?? -1;
  return t.tidy(() => {
    const noise = aten('aten::exponential_', t.emptyLike(logits), 1, null);
    const gumbels = t.div(t.add(logits, t.neg(t.log(noise))), tau);
    const ySoft = t.softmax(gumbels, dim);
    if (!opts.hard) return ySoft;
    const [, index] = t.ops.call('aten::max.dim', ySoft, dim, true) as [t.Tensor, t.Tensor];
    const yHard = aten('aten::scatter_.value', t.zerosLike(logits), dim, index, 1);
    // y_hard - y_soft.detach() + y_soft: one-hot values, the soft samples' gradient.
    return t.add(t.sub(yHard, ySoft.detach()), ySoft);
  });
}

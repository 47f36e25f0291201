// Activation functions of torch.nn.functional, each one libtorch op (in-place variants
// where PyTorch offers `inplace`), with PyTorch's parameters positional or by name
// (nn/args.ts).
import * as t from '../../core/index.ts';
import { define } from '../args.ts';
import { aten } from './common.ts';

interface Inplace {
  /** Overwrite the input and return it. Default false. */
  inplace?: boolean;
}

/** The parameters of a function of one tensor, `input`, and the options `O`. */
type In<O = unknown> = { input: t.Tensor } & O;

// The signatures most activations share: (input) and (input, inplace=False).
const INPUT = { required: ['input'] } as const;
const INPLACE = { required: ['input'], optional: ['inplace'] } as const;

/** aten's `op` of `input` and `args`, or with `inplace` its in-place form `op_` (which overwrites input). */
function atenInplace(
  op: string,
  inplace: boolean | undefined,
  input: t.Tensor,
  ...args: unknown[]
): t.Tensor {
  return aten(`aten::${op}${inplace ? '_' : ''}`, input, ...args);
}

/** The activations of (input, inplace=False) that are the aten op of their name. */
const atenActivation = (name: 'mish' | 'hardswish' | 'hardsigmoid' | 'selu') =>
  define(name, INPLACE, ({ input, inplace }: In<Inplace>): t.Tensor => atenInplace(name, inplace, input));

export const relu = define(
  'relu',
  INPLACE,
  ({ input, inplace }: In<Inplace>): t.Tensor => (inplace ? input.relu_() : t.relu(input)),
);

export const relu6 = define(
  'relu6',
  INPLACE,
  ({ input, inplace }: In<Inplace>): t.Tensor => hardtanh(input, { minVal: 0, maxVal: 6, inplace }),
);

export interface LeakyReluOptions extends Inplace {
  negativeSlope?: number;
}

export const leakyRelu = define(
  'leakyRelu',
  { required: ['input'], optional: ['negativeSlope', 'inplace'] },
  ({ input, negativeSlope = 0.01, inplace }: In<LeakyReluOptions>): t.Tensor =>
    atenInplace('leaky_relu', inplace, input, negativeSlope),
);

export interface AlphaOptions extends Inplace {
  alpha?: number;
}

// elu's and celu's signature: (input, alpha=1.0, inplace=False).
const ALPHA = { required: ['input'], optional: ['alpha', 'inplace'] } as const;

export const elu = define(
  'elu',
  ALPHA,
  ({ input, alpha = 1, inplace }: In<AlphaOptions>): t.Tensor => atenInplace('elu', inplace, input, alpha),
);

export interface HardtanhOptions extends Inplace {
  minVal?: number;
  maxVal?: number;
}

export const hardtanh = define(
  'hardtanh',
  { required: ['input'], optional: ['minVal', 'maxVal', 'inplace'] },
  ({ input, minVal = -1, maxVal = 1, inplace }: In<HardtanhOptions>): t.Tensor =>
    atenInplace('hardtanh', inplace, input, minVal, maxVal),
);

/** Gaussian error linear unit; `approximate: 'tanh'` uses the tanh approximation (keyword-only, as in PyTorch). */
export const gelu = define(
  'gelu',
  { required: ['input'], keywordOnly: ['approximate'] },
  ({ input, approximate = 'none' }: In<{ approximate?: 'none' | 'tanh' }>): t.Tensor => {
    if (approximate !== 'none' && approximate !== 'tanh') {
      throw new TypeError(`gelu(): approximate must be 'none' or 'tanh', got ${JSON.stringify(approximate)}`);
    }
    return aten('aten::gelu', input, approximate);
  },
);

/** x·sigmoid(x) (swish). */
export const silu = define(
  'silu',
  INPLACE,
  ({ input, inplace }: In<Inplace>): t.Tensor => (inplace ? aten('aten::silu_', input) : t.silu(input)),
);

export const mish = atenActivation('mish');

export const hardswish = atenActivation('hardswish');

export const hardsigmoid = atenActivation('hardsigmoid');

export const sigmoid = define('sigmoid', INPUT, ({ input }: In): t.Tensor => t.sigmoid(input));

export const tanh = define('tanh', INPUT, ({ input }: In): t.Tensor => t.tanh(input));

/** log(sigmoid(x)), computed stably. */
export const logsigmoid = define(
  'logsigmoid',
  INPUT,
  ({ input }: In): t.Tensor => aten('aten::log_sigmoid', input),
);

/** (1/beta)·log(1 + exp(beta·x)), linear above `threshold`. */
export const softplus = define(
  'softplus',
  { required: ['input'], optional: ['beta', 'threshold'] },
  ({ input, beta = 1, threshold = 20 }: In<{ beta?: number; threshold?: number }>): t.Tensor =>
    aten('aten::softplus', input, beta, threshold),
);

/** Gated linear unit: first half of `dim` times sigmoid of the second half. */
export const glu = define(
  'glu',
  { required: ['input'], optional: ['dim'] },
  ({ input, dim = -1 }: In<{ dim?: number }>): t.Tensor => {
    if (input.ndim === 0)
      throw new RangeError('glu does not support scalars because halving size must be even');
    return aten('aten::glu', input, dim);
  },
);

export interface SoftmaxOptions {
  /** The dim to normalise over; null (PyTorch's deprecated default) picks implicitSoftmaxDim's. */
  dim?: number | null;
  /** The stack level of PyTorch's implicit-dim warning: accepted, without effect (tsddp gives no warning). */
  _stacklevel?: number;
  /** Cast the input to this dtype before the operation (against overflow). */
  dtype?: t.DTypeName | null;
}

/**
 * The dim PyTorch picks when `dim` is None (deprecated there, kept for nn.Softmax()):
 * 0 for 0-, 1- and 3-d input, else 1.
 */
export const implicitSoftmaxDim = define(
  'implicitSoftmaxDim',
  { required: ['ndim'] },
  ({ ndim }: { ndim: number }): number => (ndim === 0 || ndim === 1 || ndim === 3 ? 0 : 1),
);

function softmaxDim(input: t.Tensor, dim: number | null, fn: string): number {
  if (dim === null) return implicitSoftmaxDim(input.ndim);
  if (!Number.isInteger(dim)) throw new TypeError(`${fn}(): dim must be an integer, got ${String(dim)}`);
  return dim;
}

// softmax, logSoftmax and softmin: (input, dim=None, _stacklevel=3, dtype=None).
const SOFTMAX = {
  required: ['input'],
  optional: ['dim', '_stacklevel', 'dtype'],
  inert: ['_stacklevel'],
} as const;

export const softmax = define('softmax', SOFTMAX, ({ input, dim = null, dtype = null }: In<SoftmaxOptions>) =>
  t.softmax(input, softmaxDim(input, dim, 'softmax'), dtype),
);

export const logSoftmax = define(
  'logSoftmax',
  SOFTMAX,
  ({ input, dim = null, dtype = null }: In<SoftmaxOptions>): t.Tensor =>
    t.logSoftmax(input, softmaxDim(input, dim, 'logSoftmax'), dtype),
);

/** softmax(-x). */
export const softmin = define(
  'softmin',
  SOFTMAX,
  ({ input, dim = null, dtype = null }: In<SoftmaxOptions>): t.Tensor =>
    t.softmax(t.neg(input), softmaxDim(input, dim, 'softmin'), dtype),
);

/** Scaled ELU with PyTorch's fixed alpha and scale (self-normalising networks). */
export const selu = atenActivation('selu');

/** max(0, x) + min(0, alpha·(exp(x/alpha) - 1)). */
export const celu = define(
  'celu',
  ALPHA,
  ({ input, alpha = 1, inplace }: In<AlphaOptions>): t.Tensor => atenInplace('celu', inplace, input, alpha),
);

/** x where x > threshold, else value. */
export const threshold = define(
  'threshold',
  { required: ['input', 'threshold', 'value'], optional: ['inplace'] },
  ({ input, threshold, value, inplace }: In<{ threshold: number; value: number } & Inplace>): t.Tensor =>
    atenInplace('threshold', inplace, input, threshold, value),
);

const LAMBD = { required: ['input'], optional: ['lambd'] } as const;

/** x where |x| > lambd, else 0. */
export const hardshrink = define('hardshrink', LAMBD, ({ input, lambd = 0.5 }: In<{ lambd?: number }>) =>
  aten('aten::hardshrink', input, lambd),
);

/** x - lambd·sign(x) where |x| > lambd, else 0. */
export const softshrink = define('softshrink', LAMBD, ({ input, lambd = 0.5 }: In<{ lambd?: number }>) =>
  aten('aten::softshrink', input, lambd),
);

/** x - tanh(x) (PyTorch's own composite). */
export const tanhshrink = define(
  'tanhshrink',
  INPUT,
  ({ input }: In): t.Tensor => t.tidy(() => t.sub(input, t.tanh(input))),
);

/** x / (|x| + 1) (PyTorch's own composite). */
export const softsign = define(
  'softsign',
  INPUT,
  ({ input }: In): t.Tensor => t.tidy(() => t.div(input, t.add(t.abs(input), 1))),
);

/** max(0, x) + weight·min(0, x), with a learnt slope per channel (or one for all). */
export const prelu = define(
  'prelu',
  { required: ['input', 'weight'] },
  ({ input, weight }: In<{ weight: t.Tensor }>): t.Tensor => aten('aten::prelu', input, weight),
);

export interface RreluOptions extends Inplace {
  lower?: number;
  upper?: number;
  /** Draw the slopes (else use their mean). Default false. */
  training?: boolean;
}

/**
 * Randomized leaky ReLU: in training the negative slope is drawn from U(lower, upper)
 * per element; otherwise it is (lower + upper) / 2.
 */
export const rrelu = define(
  'rrelu',
  { required: ['input'], optional: ['lower', 'upper', 'training', 'inplace'] },
  ({ input, lower = 1 / 8, upper = 1 / 3, training = false, inplace }: In<RreluOptions>): t.Tensor =>
    atenInplace('rrelu', inplace, input, lower, upper, training, null),
);

// The in-place forms torch.nn.functional also exports under their own names.
export const relu_ = define('relu_', INPUT, ({ input }: In): t.Tensor => relu(input, { inplace: true }));
export const elu_ = define(
  'elu_',
  { required: ['input'], optional: ['alpha'] },
  ({ input, alpha }: In<{ alpha?: number }>): t.Tensor => elu(input, { alpha, inplace: true }),
);
export const celu_ = define(
  'celu_',
  { required: ['input'], optional: ['alpha'] },
  ({ input, alpha }: In<{ alpha?: number }>): t.Tensor => celu(input, { alpha, inplace: true }),
);
export const selu_ = define('selu_', INPUT, ({ input }: In): t.Tensor => selu(input, { inplace: true }));
export const leakyRelu_ = define(
  'leakyRelu_',
  { required: ['input'], optional: ['negativeSlope'] },
  ({ input, negativeSlope }: In<{ negativeSlope?: number }>): t.Tensor =>
    leakyRelu(input, { negativeSlope, inplace: true }),
);
export const hardtanh_ = define(
  'hardtanh_',
  { required: ['input'], optional: ['minVal', 'maxVal'] },
  ({ input, minVal, maxVal }: In<{ minVal?: number; maxVal?: number }>): t.Tensor =>
    hardtanh(input, { minVal, maxVal, inplace: true }),
);
export const rrelu_ = define(
  'rrelu_',
  { required: ['input'], optional: ['lower', 'upper', 'training'] },
  ({ input, lower, upper, training }: In<Omit<RreluOptions, 'inplace'>>): t.Tensor =>
    rrelu(input, { lower, upper, training, inplace: true }),
);
export const threshold_ = define(
  'threshold_',
  { required: ['input', 'threshold', 'value'] },
  ({ input, threshold: th, value }: In<{ threshold: number; value: number }>): t.Tensor =>
    threshold(input, th, value, { inplace: true }),
);

export interface GumbelSoftmaxOptions {
  /** Temperature. Default 1. */
  tau?: number;
  /** Return one-hot samples (with the soft samples' gradient, straight-through). Default false. */
  hard?: boolean;
  /** Deprecated in PyTorch, where it has no effect: accepted, without effect. */
  eps?: number;
  /** Default -1. */
  dim?: number;
}

/**
 * Samples from the Gumbel-softmax distribution over `logits`, as PyTorch composes it
 * (Gumbel noise from exponential_ on the default generator: the same draws as PyTorch
 * after the same manualSeed).
 */
export const gumbelSoftmax = define(
  'gumbelSoftmax',
  { required: ['logits'], optional: ['tau', 'hard', 'eps', 'dim'], inert: ['eps'] },
  ({ logits, tau = 1, hard = false, dim = -1 }: { logits: t.Tensor } & GumbelSoftmaxOptions): t.Tensor =>
    t.tidy(() => {
      const noise = aten('aten::exponential_', t.emptyLike(logits), 1, null);
      const gumbels = t.div(t.add(logits, t.neg(t.log(noise))), tau);
      const ySoft = t.softmax(gumbels, dim);
      if (!hard) return ySoft;
      const [, index] = t.ops.call('aten::max.dim', ySoft, dim, true) as [t.Tensor, t.Tensor];
      const yHard = aten('aten::scatter_.value', t.zerosLike(logits), dim, index, 1);
      // y_hard - y_soft.detach() + y_soft: one-hot values, the soft samples' gradient.
      return t.add(t.sub(yHard, ySoft.detach()), ySoft);
    }),
);

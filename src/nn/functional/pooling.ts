// Pooling functions of torch.nn.functional, with PyTorch's parameters positional or by
// name (nn/args.ts). The functions without indices refuse return_indices=True (their
// WithIndices forms return them), so a call's result type does not depend on a flag.
import * as t from '../../core/index.ts';
import { define } from '../args.ts';
import { aten, type IntOrPair, withoutIndices } from './common.ts';

/** The max_pool functions' options; `S` is how a size is given for the rank. */
interface MaxPoolOptions<S> {
  /** Default: kernelSize. */
  stride?: S | null;
  padding?: S;
  dilation?: S;
  ceilMode?: boolean;
  /** Only false (the WithIndices form returns the indices; it ignores this, as PyTorch's does). */
  returnIndices?: boolean;
}
export type MaxPool2dOptions = MaxPoolOptions<IntOrPair>;
type MaxPoolNdOptions = MaxPoolOptions<number | number[]>;

/** The avg_pool functions' options; `S` is how a size is given for the rank. */
interface AvgPoolOptions<S> {
  /** Default: kernelSize. */
  stride?: S | null;
  padding?: S;
  ceilMode?: boolean;
  /** Count the zero padding in the average. Default true. */
  countIncludePad?: boolean;
}
/** The 2-d and 3-d avg_pool functions' options: with divisorOverride. */
interface AvgPoolDivisorOptions<S> extends AvgPoolOptions<S> {
  /** Divide by this instead of the window size. */
  divisorOverride?: number | null;
}
export type AvgPool2dOptions = AvgPoolDivisorOptions<IntOrPair>;
type AvgPoolNdOptions = AvgPoolDivisorOptions<number | number[]>;

type Pool<K, O> = { input: t.Tensor; kernelSize: K } & O;

/** The max_pool ops' arguments after the kernel size, with PyTorch's defaults (stride: the kernel size). */
function maxPoolArgs(kernelSize: number | number[], opts: MaxPoolNdOptions) {
  return [opts.stride ?? kernelSize, opts.padding ?? 0, opts.dilation ?? 1, opts.ceilMode ?? false] as const;
}

/** The avg_pool ops' arguments after the kernel size (the 2-d and 3-d ops add divisor_override). */
function avgPoolArgs(kernelSize: number | number[], opts: AvgPoolNdOptions) {
  return [
    opts.stride ?? kernelSize,
    opts.padding ?? 0,
    opts.ceilMode ?? false,
    opts.countIncludePad ?? true,
  ] as const;
}

function withIndices(name: string, ...args: unknown[]): [t.Tensor, t.Tensor] {
  return t.ops.call(name, ...args) as [t.Tensor, t.Tensor];
}

// max_pool{1,2,3}d and their WithIndices forms: (input, kernel_size, stride, padding,
// dilation, ceil_mode, return_indices).
const MAX_POOL = {
  required: ['input', 'kernelSize'],
  optional: ['stride', 'padding', 'dilation', 'ceilMode', 'returnIndices'],
} as const;
const noIndices = (fn: string) => ({
  unsupported: { returnIndices: false },
  hints: { returnIndices: `call ${fn}WithIndices for the indices` },
});
const MAX_POOL_1D = { ...MAX_POOL, ...noIndices('maxPool1d') } as const;
const MAX_POOL_2D = { ...MAX_POOL, ...noIndices('maxPool2d') } as const;
const MAX_POOL_3D = { ...MAX_POOL, ...noIndices('maxPool3d') } as const;
const MAX_POOL_INDICES = { ...MAX_POOL, inert: ['returnIndices'] } as const;

export const maxPool2d = define(
  'maxPool2d',
  MAX_POOL_2D,
  ({ input, kernelSize, ...opts }: Pool<IntOrPair, MaxPool2dOptions>): t.Tensor =>
    t.maxPool2d(input, kernelSize, ...maxPoolArgs(kernelSize, opts)),
);

/** max_pool2d with return_indices=True: [output, indices]. */
export const maxPool2dWithIndices = define(
  'maxPool2dWithIndices',
  MAX_POOL_INDICES,
  ({ input, kernelSize, ...opts }: Pool<IntOrPair, MaxPool2dOptions>): [t.Tensor, t.Tensor] =>
    t.maxPool2dWithIndices(input, kernelSize, ...maxPoolArgs(kernelSize, opts)),
);

const AVG_POOL_1D = {
  required: ['input', 'kernelSize'],
  optional: ['stride', 'padding', 'ceilMode', 'countIncludePad'],
} as const;
const AVG_POOL = { ...AVG_POOL_1D, optional: [...AVG_POOL_1D.optional, 'divisorOverride'] } as const;

export const avgPool2d = define(
  'avgPool2d',
  AVG_POOL,
  ({ input, kernelSize, ...opts }: Pool<IntOrPair, AvgPool2dOptions>): t.Tensor =>
    t.avgPool2d(input, kernelSize, ...avgPoolArgs(kernelSize, opts), opts.divisorOverride ?? null),
);

type Adaptive<S> = { input: t.Tensor; outputSize: S; returnIndices?: boolean };
const ADAPTIVE = { required: ['input', 'outputSize'] } as const;
const ADAPTIVE_MAX = { required: ['input', 'outputSize'], optional: ['returnIndices'] } as const;
const adaptiveMax = (fn: string) => ({ ...ADAPTIVE_MAX, ...noIndices(fn) });
const ADAPTIVE_MAX_INDICES = { ...ADAPTIVE_MAX, inert: ['returnIndices'] } as const;

export const adaptiveAvgPool2d = define(
  'adaptiveAvgPool2d',
  ADAPTIVE,
  ({ input, outputSize }: Adaptive<IntOrPair>): t.Tensor => t.adaptiveAvgPool2d(input, outputSize),
);

/** adaptive_max_pool2d without indices. */
export const adaptiveMaxPool2d = define(
  'adaptiveMaxPool2d',
  adaptiveMax('adaptiveMaxPool2d'),
  ({ input, outputSize }: Adaptive<IntOrPair>): t.Tensor =>
    withoutIndices(withIndices('aten::adaptive_max_pool2d', input, outputSize)),
);

/** average pooling over [N, C, L] input. */
export const avgPool1d = define(
  'avgPool1d',
  AVG_POOL_1D,
  ({ input, kernelSize, ...opts }: Pool<number | [number], AvgPoolOptions<number | [number]>>): t.Tensor =>
    aten('aten::avg_pool1d', input, kernelSize, ...avgPoolArgs(kernelSize, opts)),
);

/** max pooling over [N, C, L] input. */
export const maxPool1d = define(
  'maxPool1d',
  MAX_POOL_1D,
  ({ input, kernelSize, ...opts }: Pool<number | [number], MaxPoolOptions<number | [number]>>): t.Tensor =>
    aten('aten::max_pool1d', input, kernelSize, ...maxPoolArgs(kernelSize, opts)),
);

export const adaptiveAvgPool1d = define(
  'adaptiveAvgPool1d',
  ADAPTIVE,
  ({ input, outputSize }: Adaptive<number | [number]>): t.Tensor =>
    aten('aten::adaptive_avg_pool1d', input, outputSize),
);

/** adaptive_max_pool1d without indices. */
export const adaptiveMaxPool1d = define(
  'adaptiveMaxPool1d',
  adaptiveMax('adaptiveMaxPool1d'),
  ({ input, outputSize }: Adaptive<number | [number]>): t.Tensor =>
    withoutIndices(withIndices('aten::adaptive_max_pool1d', input, outputSize)),
);

export const avgPool3d = define(
  'avgPool3d',
  AVG_POOL,
  ({ input, kernelSize, ...opts }: Pool<number | number[], AvgPoolNdOptions>): t.Tensor =>
    aten(
      'aten::avg_pool3d',
      input,
      kernelSize,
      ...avgPoolArgs(kernelSize, opts),
      opts.divisorOverride ?? null,
    ),
);

export const maxPool3d = define(
  'maxPool3d',
  MAX_POOL_3D,
  ({ input, kernelSize, ...opts }: Pool<number | number[], MaxPoolNdOptions>): t.Tensor =>
    aten('aten::max_pool3d', input, kernelSize, ...maxPoolArgs(kernelSize, opts)),
);

export const adaptiveAvgPool3d = define(
  'adaptiveAvgPool3d',
  ADAPTIVE,
  ({ input, outputSize }: Adaptive<number | number[]>): t.Tensor =>
    aten('aten::adaptive_avg_pool3d', input, outputSize),
);

/** adaptive_max_pool3d without indices. */
export const adaptiveMaxPool3d = define(
  'adaptiveMaxPool3d',
  adaptiveMax('adaptiveMaxPool3d'),
  ({ input, outputSize }: Adaptive<number | number[]>): t.Tensor =>
    withoutIndices(withIndices('aten::adaptive_max_pool3d', input, outputSize)),
);

/** adaptive_max_pool1d with return_indices=True: [output, indices]. */
export const adaptiveMaxPool1dWithIndices = define(
  'adaptiveMaxPool1dWithIndices',
  ADAPTIVE_MAX_INDICES,
  ({ input, outputSize }: Adaptive<number | [number]>): [t.Tensor, t.Tensor] =>
    withIndices('aten::adaptive_max_pool1d', input, outputSize),
);

/** adaptive_max_pool2d with return_indices=True: [output, indices]. */
export const adaptiveMaxPool2dWithIndices = define(
  'adaptiveMaxPool2dWithIndices',
  ADAPTIVE_MAX_INDICES,
  ({ input, outputSize }: Adaptive<IntOrPair>): [t.Tensor, t.Tensor] =>
    withIndices('aten::adaptive_max_pool2d', input, outputSize),
);

/** adaptive_max_pool3d with return_indices=True: [output, indices]. */
export const adaptiveMaxPool3dWithIndices = define(
  'adaptiveMaxPool3dWithIndices',
  ADAPTIVE_MAX_INDICES,
  ({ input, outputSize }: Adaptive<number | number[]>): [t.Tensor, t.Tensor] =>
    withIndices('aten::adaptive_max_pool3d', input, outputSize),
);

/** max_pool1d with return_indices=True: [output, indices]. */
export const maxPool1dWithIndices = define(
  'maxPool1dWithIndices',
  MAX_POOL_INDICES,
  ({ input, kernelSize, ...opts }: Pool<number | [number], MaxPoolNdOptions>): [t.Tensor, t.Tensor] =>
    withIndices('aten::max_pool1d_with_indices', input, kernelSize, ...maxPoolArgs(kernelSize, opts)),
);

/** max_pool3d with return_indices=True: [output, indices]. */
export const maxPool3dWithIndices = define(
  'maxPool3dWithIndices',
  MAX_POOL_INDICES,
  ({ input, kernelSize, ...opts }: Pool<number | number[], MaxPoolNdOptions>): [t.Tensor, t.Tensor] =>
    withIndices('aten::max_pool3d_with_indices', input, kernelSize, ...maxPoolArgs(kernelSize, opts)),
);

function tupleOf(v: number | number[], n: number, what: string): number[] {
  const out = typeof v === 'number' ? Array.from({ length: n }, () => v) : v;
  if (out.length !== n) throw new RangeError(`${what} must be an int or ${n} ints, got ${JSON.stringify(v)}`);
  return out;
}

// PyTorch's _unpool_output_size: the size max pooling came from, or the given one checked.
function unpoolOutputSize(
  input: t.Tensor,
  kernel: number[],
  stride: number[],
  padding: number[],
  outputSize: number[] | null,
): number[] {
  const n = kernel.length;
  const inSize = input.shape;
  const defaults = kernel.map((k, d) => (inSize[inSize.length - n + d] - 1) * stride[d] + k - 2 * padding[d]);
  if (outputSize === null) return defaults;
  const size = outputSize.length === n + 2 ? outputSize.slice(2) : outputSize;
  if (size.length !== n) {
    throw new RangeError(`outputSize should have ${n} or ${n + 2} elements, but it has ${outputSize.length}`);
  }
  for (let d = 0; d < n; d++) {
    const lo = defaults[d] - stride[d];
    const hi = defaults[d] + stride[d];
    if (!(lo < size[d] && size[d] < hi)) {
      throw new RangeError(
        `invalid outputSize [${size.join(', ')}] (dim ${d} must be between ${lo} and ${hi})`,
      );
    }
  }
  return size;
}

export interface MaxUnpoolOptions {
  /** Default: kernelSize. */
  stride?: number | number[] | null;
  padding?: number | number[];
  /** The size before pooling (when it is ambiguous). */
  outputSize?: number[] | null;
}

type UnpoolParams<K> = { input: t.Tensor; indices: t.Tensor; kernelSize: K } & MaxUnpoolOptions;

// max_unpool{1,2,3}d: (input, indices, kernel_size, stride, padding, output_size).
const MAX_UNPOOL = {
  required: ['input', 'indices', 'kernelSize'],
  optional: ['stride', 'padding', 'outputSize'],
} as const;

function maxUnpool(
  n: 1 | 2 | 3,
  { input, indices, kernelSize, ...opts }: UnpoolParams<number | number[]>,
): t.Tensor {
  const what = `maxUnpool${n}d()`;
  const kernel = tupleOf(kernelSize, n, `${what}: kernelSize`);
  const stride =
    opts.stride === undefined || opts.stride === null ? kernel : tupleOf(opts.stride, n, `${what}: stride`);
  const padding = tupleOf(opts.padding ?? 0, n, `${what}: padding`);
  const size = unpoolOutputSize(input, kernel, stride, padding, opts.outputSize ?? null);
  if (n === 2) return aten('aten::max_unpool2d', input, indices, size);
  if (n === 3) return aten('aten::max_unpool3d', input, indices, size, stride, padding);
  // 1-d goes through max_unpool2d with a trailing unit dim, as PyTorch does.
  return t.tidy(() =>
    t.squeeze(aten('aten::max_unpool2d', t.unsqueeze(input, -1), t.unsqueeze(indices, -1), [...size, 1]), -1),
  );
}

/** Inverts maxPool1d given its indices (non-maxima become 0). */
export const maxUnpool1d = define(
  'maxUnpool1d',
  MAX_UNPOOL,
  (a: UnpoolParams<number | [number]>): t.Tensor => maxUnpool(1, a),
);

/** Inverts maxPool2d given its indices (non-maxima become 0). */
export const maxUnpool2d = define(
  'maxUnpool2d',
  MAX_UNPOOL,
  (a: UnpoolParams<IntOrPair>): t.Tensor => maxUnpool(2, a),
);

/** Inverts maxPool3d given its indices (non-maxima become 0). */
export const maxUnpool3d = define(
  'maxUnpool3d',
  MAX_UNPOOL,
  (a: UnpoolParams<number | number[]>): t.Tensor => maxUnpool(3, a),
);

export interface LpPoolOptions {
  /** Default: kernelSize. */
  stride?: number | number[] | null;
  ceilMode?: boolean;
}

type LpPoolParams<K> = { input: t.Tensor; normType: number; kernelSize: K } & LpPoolOptions;

// lp_pool{1,2,3}d: (input, norm_type, kernel_size, stride, ceil_mode).
const LP_POOL = { required: ['input', 'normType', 'kernelSize'], optional: ['stride', 'ceilMode'] } as const;

// PyTorch's lp_pool composite: (sum over the window of x^p)^(1/p), through avg pooling.
function lpPool(
  n: 1 | 2 | 3,
  { input, normType, kernelSize, ...opts }: LpPoolParams<number | number[]>,
): t.Tensor {
  const kernel = tupleOf(kernelSize, n, `lpPool${n}d(): kernelSize`);
  const stride = opts.stride ?? kernelSize;
  const ceilMode = opts.ceilMode ?? false;
  const maxPool = (x: t.Tensor) =>
    n === 1
      ? maxPool1d(x, kernelSize as number, { stride: stride as number, ceilMode })
      : n === 2
        ? maxPool2d(x, kernelSize, { stride, ceilMode })
        : maxPool3d(x, kernelSize, { stride, ceilMode });
  return t.tidy(() => {
    if (normType === Number.POSITIVE_INFINITY) return maxPool(t.abs(input));
    if (normType === Number.NEGATIVE_INFINITY) return t.neg(maxPool(t.neg(t.abs(input))));
    const powered = t.pow(input, normType);
    const out =
      n === 1
        ? avgPool1d(powered, kernelSize as number, { stride: stride as number, padding: 0, ceilMode })
        : n === 2
          ? avgPool2d(powered, kernelSize, { stride, padding: 0, ceilMode })
          : avgPool3d(powered, kernelSize, { stride, padding: 0, ceilMode });
    const windowSize = kernel.reduce((a, b) => a * b, 1);
    return t.pow(t.mul(t.mul(t.sign(out), t.relu(t.abs(out))), windowSize), 1 / normType);
  });
}

/** Power-average pooling over [N, C, L]: (Σ x^p)^(1/p) per window. */
export const lpPool1d = define('lpPool1d', LP_POOL, (a: LpPoolParams<number>): t.Tensor => lpPool(1, a));

/** Power-average pooling over [N, C, H, W]. */
export const lpPool2d = define('lpPool2d', LP_POOL, (a: LpPoolParams<IntOrPair>): t.Tensor => lpPool(2, a));

/** Power-average pooling over [N, C, D, H, W]. */
export const lpPool3d = define(
  'lpPool3d',
  LP_POOL,
  (a: LpPoolParams<number | number[]>): t.Tensor => lpPool(3, a),
);

// Pooling functions of torch.nn.functional.
import * as t from '../../core/index.ts';
import { aten, type IntOrPair, withoutIndices } from './common.ts';

export interface MaxPool2dOptions {
  /** Default: kernelSize. */
  stride?: IntOrPair | null;
  padding?: IntOrPair;
  dilation?: IntOrPair;
  ceilMode?: boolean;
}

interface MaxPoolNdOptions {
  stride?: number | number[] | null;
  padding?: number | number[];
  dilation?: number | number[];
  ceilMode?: boolean;
}

/** The max_pool ops' arguments after the kernel size, with PyTorch's defaults (stride: the kernel size). */
function maxPoolArgs(kernelSize: number | number[], opts: MaxPoolNdOptions) {
  return [opts.stride ?? kernelSize, opts.padding ?? 0, opts.dilation ?? 1, opts.ceilMode ?? false] as const;
}

/** The avg_pool ops' arguments after the kernel size (the 2-d and 3-d ops add divisor_override). */
function avgPoolArgs(kernelSize: number | number[], opts: AvgPool2dOptions) {
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

export function maxPool2d(input: t.Tensor, kernelSize: IntOrPair, opts: MaxPool2dOptions = {}): t.Tensor {
  return t.maxPool2d(input, kernelSize, ...maxPoolArgs(kernelSize, opts));
}

/** max_pool2d with return_indices=True: [output, indices]. */
export function maxPool2dWithIndices(
  input: t.Tensor,
  kernelSize: IntOrPair,
  opts: MaxPool2dOptions = {},
): [t.Tensor, t.Tensor] {
  return t.maxPool2dWithIndices(input, kernelSize, ...maxPoolArgs(kernelSize, opts));
}

export interface AvgPool2dOptions {
  /** Default: kernelSize. */
  stride?: IntOrPair | null;
  padding?: IntOrPair;
  ceilMode?: boolean;
  /** Count the zero padding in the average. Default true. */
  countIncludePad?: boolean;
  /** Divide by this instead of the window size. */
  divisorOverride?: number | null;
}

export function avgPool2d(input: t.Tensor, kernelSize: IntOrPair, opts: AvgPool2dOptions = {}): t.Tensor {
  return t.avgPool2d(input, kernelSize, ...avgPoolArgs(kernelSize, opts), opts.divisorOverride ?? null);
}

export function adaptiveAvgPool2d(input: t.Tensor, outputSize: IntOrPair): t.Tensor {
  return t.adaptiveAvgPool2d(input, outputSize);
}

/** adaptive_max_pool2d without indices. */
export function adaptiveMaxPool2d(input: t.Tensor, outputSize: IntOrPair): t.Tensor {
  return withoutIndices(withIndices('aten::adaptive_max_pool2d', input, outputSize));
}

/** average pooling over [N, C, L] input. */
export function avgPool1d(
  input: t.Tensor,
  kernelSize: number | [number],
  opts: {
    stride?: number | [number] | null;
    padding?: number | [number];
    ceilMode?: boolean;
    countIncludePad?: boolean;
  } = {},
): t.Tensor {
  return aten('aten::avg_pool1d', input, kernelSize, ...avgPoolArgs(kernelSize, opts));
}

/** max pooling over [N, C, L] input. */
export function maxPool1d(
  input: t.Tensor,
  kernelSize: number | [number],
  opts: {
    stride?: number | [number] | null;
    padding?: number | [number];
    dilation?: number | [number];
    ceilMode?: boolean;
  } = {},
): t.Tensor {
  return aten('aten::max_pool1d', input, kernelSize, ...maxPoolArgs(kernelSize, opts));
}

export function adaptiveAvgPool1d(input: t.Tensor, outputSize: number | [number]): t.Tensor {
  return aten('aten::adaptive_avg_pool1d', input, outputSize);
}

/** adaptive_max_pool1d without indices. */
export function adaptiveMaxPool1d(input: t.Tensor, outputSize: number | [number]): t.Tensor {
  return withoutIndices(withIndices('aten::adaptive_max_pool1d', input, outputSize));
}

export function avgPool3d(
  input: t.Tensor,
  kernelSize: number | number[],
  opts: {
    stride?: number | number[] | null;
    padding?: number | number[];
    ceilMode?: boolean;
    countIncludePad?: boolean;
    divisorOverride?: number | null;
  } = {},
): t.Tensor {
  const divisorOverride = opts.divisorOverride ?? null;
  return aten('aten::avg_pool3d', input, kernelSize, ...avgPoolArgs(kernelSize, opts), divisorOverride);
}

export function maxPool3d(
  input: t.Tensor,
  kernelSize: number | number[],
  opts: {
    stride?: number | number[] | null;
    padding?: number | number[];
    dilation?: number | number[];
    ceilMode?: boolean;
  } = {},
): t.Tensor {
  return aten('aten::max_pool3d', input, kernelSize, ...maxPoolArgs(kernelSize, opts));
}

export function adaptiveAvgPool3d(input: t.Tensor, outputSize: number | number[]): t.Tensor {
  return aten('aten::adaptive_avg_pool3d', input, outputSize);
}

/** adaptive_max_pool3d without indices. */
export function adaptiveMaxPool3d(input: t.Tensor, outputSize: number | number[]): t.Tensor {
  return withoutIndices(withIndices('aten::adaptive_max_pool3d', input, outputSize));
}

/** adaptive_max_pool1d with return_indices=True: [output, indices]. */
export function adaptiveMaxPool1dWithIndices(
  input: t.Tensor,
  outputSize: number | [number],
): [t.Tensor, t.Tensor] {
  return withIndices('aten::adaptive_max_pool1d', input, outputSize);
}

/** adaptive_max_pool2d with return_indices=True: [output, indices]. */
export function adaptiveMaxPool2dWithIndices(input: t.Tensor, outputSize: IntOrPair): [t.Tensor, t.Tensor] {
  return withIndices('aten::adaptive_max_pool2d', input, outputSize);
}

/** adaptive_max_pool3d with return_indices=True: [output, indices]. */
export function adaptiveMaxPool3dWithIndices(
  input: t.Tensor,
  outputSize: number | number[],
): [t.Tensor, t.Tensor] {
  return withIndices('aten::adaptive_max_pool3d', input, outputSize);
}

/** max_pool1d with return_indices=True: [output, indices]. */
export function maxPool1dWithIndices(
  input: t.Tensor,
  kernelSize: number | [number],
  opts: MaxPoolNdOptions = {},
): [t.Tensor, t.Tensor] {
  return withIndices('aten::max_pool1d_with_indices', input, kernelSize, ...maxPoolArgs(kernelSize, opts));
}

/** max_pool3d with return_indices=True: [output, indices]. */
export function maxPool3dWithIndices(
  input: t.Tensor,
  kernelSize: number | number[],
  opts: MaxPoolNdOptions = {},
): [t.Tensor, t.Tensor] {
  return withIndices('aten::max_pool3d_with_indices', input, kernelSize, ...maxPoolArgs(kernelSize, opts));
}

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

function maxUnpool(
  n: 1 | 2 | 3,
  input: t.Tensor,
  indices: t.Tensor,
  kernelSize: number | number[],
  opts: MaxUnpoolOptions,
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
export function maxUnpool1d(
  input: t.Tensor,
  indices: t.Tensor,
  kernelSize: number | [number],
  opts: MaxUnpoolOptions = {},
): t.Tensor {
  return maxUnpool(1, input, indices, kernelSize, opts);
}

/** Inverts maxPool2d given its indices (non-maxima become 0). */
export function maxUnpool2d(
  input: t.Tensor,
  indices: t.Tensor,
  kernelSize: IntOrPair,
  opts: MaxUnpoolOptions = {},
): t.Tensor {
  return maxUnpool(2, input, indices, kernelSize, opts);
}

/** Inverts maxPool3d given its indices (non-maxima become 0). */
export function maxUnpool3d(
  input: t.Tensor,
  indices: t.Tensor,
  kernelSize: number | number[],
  opts: MaxUnpoolOptions = {},
): t.Tensor {
  return maxUnpool(3, input, indices, kernelSize, opts);
}

export interface LpPoolOptions {
  /** Default: kernelSize. */
  stride?: number | number[] | null;
  ceilMode?: boolean;
}

// PyTorch's lp_pool composite: (sum over the window of x^p)^(1/p), through avg pooling.
function lpPool(
  n: 1 | 2 | 3,
  input: t.Tensor,
  normType: number,
  kernelSize: number | number[],
  opts: LpPoolOptions,
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
export function lpPool1d(
  input: t.Tensor,
  normType: number,
  kernelSize: number,
  opts: LpPoolOptions = {},
): t.Tensor {
  return lpPool(1, input, normType, kernelSize, opts);
}

/** Power-average pooling over [N, C, H, W]. */
export function lpPool2d(
  input: t.Tensor,
  normType: number,
  kernelSize: IntOrPair,
  opts: LpPoolOptions = {},
): t.Tensor {
  return lpPool(2, input, normType, kernelSize, opts);
}

/** Power-average pooling over [N, C, D, H, W]. */
export function lpPool3d(
  input: t.Tensor,
  normType: number,
  kernelSize: number | number[],
  opts: LpPoolOptions = {},
): t.Tensor {
  return lpPool(3, input, normType, kernelSize, opts);
}

// batch_norm, layer_norm, group_norm and normalize with torch.nn.functional's arguments,
// positional or by name (nn/args.ts).
import * as t from '../../core/index.ts';
import { define } from '../args.ts';
import { verifyBatchSize } from './common.ts';

export interface BatchNormOptions {
  weight?: t.Tensor | null;
  bias?: t.Tensor | null;
  /** Normalise with batch statistics (and update the running ones) instead of the running ones. Default false. */
  training?: boolean;
  /** Weight of the new batch statistic in the running average. Default 0.1. */
  momentum?: number;
  eps?: number;
}

/**
 * torch.nn.functional.batch_norm. In training mode the running statistics (when given)
 * are updated in place by the kernel: running = (1 - momentum)·running + momentum·batch,
 * with the unbiased batch variance.
 */
export const batchNorm = define(
  'batchNorm',
  {
    required: ['input', 'runningMean', 'runningVar'],
    optional: ['weight', 'bias', 'training', 'momentum', 'eps'],
  },
  (a: BatchNormParams): t.Tensor => {
    const training = a.training ?? false;
    if (training) verifyBatchSize(a.input.shape);
    const { input, runningMean, runningVar, weight = null, bias = null, momentum = 0.1, eps = 1e-5 } = a;
    return t.batchNorm(input, weight, bias, runningMean, runningVar, training, momentum, eps, true);
  },
);

interface BatchNormParams extends BatchNormOptions {
  input: t.Tensor;
  runningMean: t.Tensor | null;
  runningVar: t.Tensor | null;
}

export interface AffineNormOptions {
  weight?: t.Tensor | null;
  bias?: t.Tensor | null;
  /** Added to the variance. Default 1e-5. */
  eps?: number;
}

/** Normalises over the last `normalizedShape.length` dims. */
export const layerNorm = define(
  'layerNorm',
  { required: ['input', 'normalizedShape'], optional: ['weight', 'bias', 'eps'] },
  ({ input, normalizedShape, weight = null, bias = null, eps = 1e-5 }: ShapeNormParams): t.Tensor =>
    t.layerNorm(input, shapeOf(normalizedShape), weight, bias, eps, true),
);

type ShapeNormParams = AffineNormOptions & { input: t.Tensor; normalizedShape: number | number[] };
const shapeOf = (s: number | number[]): number[] => (typeof s === 'number' ? [s] : s);

/** Normalises each of `numGroups` channel groups of [N, C, *] input. */
export const groupNorm = define(
  'groupNorm',
  { required: ['input', 'numGroups'], optional: ['weight', 'bias', 'eps'] },
  ({ input, numGroups, ...opts }: AffineNormOptions & { input: t.Tensor; numGroups: number }): t.Tensor => {
    const size = input.shape;
    if (size.length < 2) {
      throw new RangeError(`Expected at least 2 dimensions for input tensor but received ${size.length}`);
    }
    if (!Number.isInteger(numGroups) || numGroups <= 0) {
      throw new RangeError(`groupNorm(): numGroups must be a positive integer, got ${numGroups}`);
    }
    verifyBatchSize([Math.floor((size[0] * size[1]) / numGroups), numGroups, ...size.slice(2)]);
    return t.groupNorm(input, numGroups, opts.weight ?? null, opts.bias ?? null, opts.eps ?? 1e-5, true);
  },
);

export interface NormalizeOptions {
  /** The norm's exponent. Default 2. */
  p?: number;
  /** Default 1. */
  dim?: number | number[];
  /** Lower bound of the norm (no division by zero). Default 1e-12. */
  eps?: number;
  /** PyTorch's output tensor: not supported by tsddp (null only). */
  out?: null;
}

/** input / max(‖input‖_p over dim, eps), as torch.nn.functional.normalize. */
export const normalize = define(
  'normalize',
  { required: ['input'], optional: ['p', 'dim', 'eps', 'out'], unsupported: { out: null } },
  ({ input, p = 2, dim = 1, eps = 1e-12 }: NormalizeOptions & { input: t.Tensor }): t.Tensor =>
    t.tidy(() => {
      // torch.norm with a numeric p is linalg.vector_norm.
      const norm = t.ops.call('aten::linalg_vector_norm', input, p, dim, true, null) as t.Tensor;
      return t.div(input, t.expandAs(t.clampMin(norm, eps), input));
    }),
);

export interface InstanceNormOptions extends AffineNormOptions {
  runningMean?: t.Tensor | null;
  runningVar?: t.Tensor | null;
  /** Normalise with each instance's statistics (else the running ones). Default true. */
  useInputStats?: boolean;
  /** Default 0.1. */
  momentum?: number;
}

/** Normalises each channel of each sample of [N, C, *] input over its spatial dims. */
export const instanceNorm = define(
  'instanceNorm',
  {
    required: ['input'],
    optional: ['runningMean', 'runningVar', 'weight', 'bias', 'useInputStats', 'momentum', 'eps'],
  },
  ({ input, ...opts }: InstanceNormOptions & { input: t.Tensor }): t.Tensor => {
    const useInputStats = opts.useInputStats ?? true;
    if (useInputStats) {
      const spatial = input.shape.slice(2).reduce((a, b) => a * b, 1);
      if (spatial === 1) {
        throw new RangeError(
          `Expected more than 1 spatial element when training, got input size [${input.shape.join(', ')}]`,
        );
      }
    }
    return t.ops.call(
      'aten::instance_norm',
      input,
      opts.weight ?? null,
      opts.bias ?? null,
      opts.runningMean ?? null,
      opts.runningVar ?? null,
      useInputStats,
      opts.momentum ?? 0.1,
      opts.eps ?? 1e-5,
      true,
    ) as t.Tensor;
  },
);

/** Root-mean-square normalisation over the last dims; eps defaults to the dtype's epsilon. */
export const rmsNorm = define(
  'rmsNorm',
  { required: ['input', 'normalizedShape'], optional: ['weight', 'eps'] },
  ({ input, normalizedShape, weight = null, eps = null }: RmsNormParams): t.Tensor =>
    t.ops.call('aten::rms_norm', input, shapeOf(normalizedShape), weight, eps) as t.Tensor,
);

interface RmsNormParams {
  input: t.Tensor;
  normalizedShape: number | number[];
  weight?: t.Tensor | null;
  /** Default: the dtype's machine epsilon. */
  eps?: number | null;
}

/**
 * Local response normalisation across channels, as PyTorch composes it: the input over
 * (k + alpha·mean of squares over `size` neighbouring channels)^beta.
 */
export const localResponseNorm = define(
  'localResponseNorm',
  { required: ['input', 'size'], optional: ['alpha', 'beta', 'k'] },
  (a: { input: t.Tensor; size: number; alpha?: number; beta?: number; k?: number }): t.Tensor =>
    lrn(a.input, a.size, a.alpha ?? 1e-4, a.beta ?? 0.75, a.k ?? 1),
);

function lrn(input: t.Tensor, size: number, alpha: number, beta: number, k: number): t.Tensor {
  const dim = input.ndim;
  if (dim < 3) throw new RangeError(`localResponseNorm(): expected 3-d or higher input, got ${dim}-d`);
  if (input.numel() === 0) return input;
  return t.tidy(() => {
    let div = t.mul(input, input);
    const lo = Math.floor(size / 2);
    const hi = Math.floor((size - 1) / 2);
    if (dim === 3) {
      div = t.unsqueeze(div, 1);
      div = t.ops.call('aten::pad', div, [0, 0, lo, hi], 'constant', null) as t.Tensor;
      div = t.squeeze(t.avgPool2d(div, [size, 1], 1), 1);
    } else {
      const sizes = input.shape;
      div = t.view(div, [sizes[0], 1, sizes[1], sizes[2], -1]);
      div = t.ops.call('aten::pad', div, [0, 0, 0, 0, lo, hi], 'constant', null) as t.Tensor;
      div = t.squeeze(t.ops.call('aten::avg_pool3d', div, [size, 1, 1], 1) as t.Tensor, 1);
      div = t.view(div, sizes);
    }
    div = t.pow(t.add(t.mul(div, alpha), k), beta);
    return t.div(input, div);
  });
}

// batch_norm, layer_norm, group_norm and normalize with torch.nn.functional's arguments.
import * as t from '../../core/index.ts';
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
export function batchNorm(
  input: t.Tensor,
  runningMean: t.Tensor | null,
  runningVar: t.Tensor | null,
  opts: BatchNormOptions = {},
): t.Tensor {
  const training = opts.training ?? false;
  if (training) verifyBatchSize(input.shape);
  return t.batchNorm(
    input,
    opts.weight ?? null,
    opts.bias ?? null,
    runningMean,
    runningVar,
    training,
    opts.momentum ?? 0.1,
    opts.eps ?? 1e-5,
    true,
  );
}

export interface AffineNormOptions {
  weight?: t.Tensor | null;
  bias?: t.Tensor | null;
  /** Added to the variance. Default 1e-5. */
  eps?: number;
}

/** Normalises over the last `normalizedShape.length` dims. */
export function layerNorm(
  input: t.Tensor,
  normalizedShape: number | number[],
  opts: AffineNormOptions = {},
): t.Tensor {
  const shape = typeof normalizedShape === 'number' ? [normalizedShape] : normalizedShape;
  return t.layerNorm(input, shape, opts.weight ?? null, opts.bias ?? null, opts.eps ?? 1e-5, true);
}

/** Normalises each of `numGroups` channel groups of [N, C, *] input. */
export function groupNorm(input: t.Tensor, numGroups: number, opts: AffineNormOptions = {}): t.Tensor {
  const size = input.shape;
  if (size.length < 2) {
    throw new RangeError(`Expected at least 2 dimensions for input tensor but received ${size.length}`);
  }
  if (!Number.isInteger(numGroups) || numGroups <= 0) {
    throw new RangeError(`groupNorm(): numGroups must be a positive integer, got ${numGroups}`);
  }
  verifyBatchSize([Math.floor((size[0] * size[1]) / numGroups), numGroups, ...size.slice(2)]);
  return t.groupNorm(input, numGroups, opts.weight ?? null, opts.bias ?? null, opts.eps ?? 1e-5, true);
}

export interface NormalizeOptions {
  /** The norm's exponent. Default 2. */
  p?: number;
  /** Default 1. */
  dim?: number | number[];
  /** Lower bound of the norm (no division by zero). Default 1e-12. */
  eps?: number;
}

/** input / max(‖input‖_p over dim, eps), as torch.nn.functional.normalize. */
export function normalize(input: t.Tensor, opts: NormalizeOptions = {}): t.Tensor {
  const p = opts.p ?? 2;
  const dim = opts.dim ?? 1;
  const eps = opts.eps ?? 1e-12;
  return t.tidy(() => {
    // torch.norm with a numeric p is linalg.vector_norm.
    const norm = t.ops.call('aten::linalg_vector_norm', input, p, dim, true, null) as t.Tensor;
    return t.div(input, t.expandAs(t.clampMin(norm, eps), input));
  });
}

export interface InstanceNormOptions extends AffineNormOptions {
  runningMean?: t.Tensor | null;
  runningVar?: t.Tensor | null;
  /** Normalise with each instance's statistics (else the running ones). Default true. */
  useInputStats?: boolean;
  /** Default 0.1. */
  momentum?: number;
}

/** Normalises each channel of each sample of [N, C, *] input over its spatial dims. */
export function instanceNorm(input: t.Tensor, opts: InstanceNormOptions = {}): t.Tensor {
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
}

/** Root-mean-square normalisation over the last dims; eps defaults to the dtype's epsilon. */
export function rmsNorm(
  input: t.Tensor,
  normalizedShape: number | number[],
  opts: { weight?: t.Tensor | null; eps?: number | null } = {},
): t.Tensor {
  const shape = typeof normalizedShape === 'number' ? [normalizedShape] : normalizedShape;
  return t.ops.call('aten::rms_norm', input, shape, opts.weight ?? null, opts.eps ?? null) as t.Tensor;
}

/**
 * Local response normalisation across channels, as PyTorch composes it: the input over
 * (k + alpha·mean of squares over `size` neighbouring channels)^beta.
 */
export function localResponseNorm(
  input: t.Tensor,
  size: number,
  opts: { alpha?: number; beta?: number; k?: number } = {},
): t.Tensor {
  const dim = input.ndim;
  if (dim < 3) throw new RangeError(`localResponseNorm(): expected 3-d or higher input, got ${dim}-d`);
  if (input.numel() === 0) return input;
  const alpha = opts.alpha ?? 1e-4;
  const beta = opts.beta ?? 0.75;
  const k = opts.k ?? 1;
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

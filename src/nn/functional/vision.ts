// pad, interpolate, pixel_shuffle and the other vision functions of torch.nn.functional,
// with PyTorch's parameters positional or by name (nn/args.ts).
import type * as t from '../../core/index.ts';
import { define } from '../args.ts';
import { aten } from './common.ts';

export type PadMode = 'constant' | 'reflect' | 'replicate' | 'circular';

/**
 * Pads the last dims: `pad` is [left, right] of the last dim, then [top, bottom] of the
 * one before, and so on (PyTorch's order). `value` fills 'constant' padding (default 0).
 */
export const pad = define(
  'pad',
  { required: ['input', 'pad'], optional: ['mode', 'value'] },
  ({ input, pad, ...opts }: PadParams): t.Tensor => {
    const mode = opts.mode ?? 'constant';
    if (!['constant', 'reflect', 'replicate', 'circular'].includes(mode)) {
      throw new TypeError(
        `pad(): mode must be 'constant', 'reflect', 'replicate' or 'circular', got ${JSON.stringify(mode)}`,
      );
    }
    if (!Array.isArray(pad) || pad.length % 2 !== 0 || !pad.every(Number.isInteger)) {
      throw new TypeError(`pad(): pad must be an even-length list of integers, got ${JSON.stringify(pad)}`);
    }
    return aten('aten::pad', input, pad, mode, opts.value ?? null);
  },
);

interface PadParams {
  input: t.Tensor;
  /** [left, right] of the last dim, then [top, bottom] of the one before, and so on. */
  pad: number[];
  /** Default 'constant'. */
  mode?: PadMode;
  /** The fill of 'constant' padding. Default 0. */
  value?: number | null;
}

export type InterpolateMode =
  | 'nearest'
  | 'nearest-exact'
  | 'linear'
  | 'bilinear'
  | 'bicubic'
  | 'trilinear'
  | 'area';

export interface InterpolateOptions {
  /** Output spatial size (one int for every spatial dim, or one per dim). Exactly one of size / scaleFactor. */
  size?: number | number[] | null;
  /** Multiplier of the spatial size (one or one per dim). */
  scaleFactor?: number | number[] | null;
  /** Default 'nearest'. */
  mode?: InterpolateMode;
  /** For linear modes only: align the corner pixels' centres. Default false. */
  alignCorners?: boolean | null;
  /** Compute the output size from scaleFactor and interpolate for that size, not by the factor. */
  recomputeScaleFactor?: boolean | null;
  /** Anti-aliasing when downsampling (bilinear/bicubic on 4-d input). Default false. */
  antialias?: boolean;
}

const LINEAR_DIMS: Record<string, number> = { linear: 1, bilinear: 2, bicubic: 2, trilinear: 3 };

const INTERPOLATE = {
  required: ['input'],
  optional: ['size', 'scaleFactor', 'mode', 'alignCorners', 'recomputeScaleFactor', 'antialias'],
} as const;

/** Resizes [N, C, *spatial] input, as torch.nn.functional.interpolate (one aten upsample op per mode). */
export const interpolate = define(
  'interpolate',
  INTERPOLATE,
  ({ input, ...opts }: { input: t.Tensor } & InterpolateOptions): t.Tensor => resize(input, opts),
);

function resize(input: t.Tensor, opts: InterpolateOptions): t.Tensor {
  const mode = opts.mode ?? 'nearest';
  const dim = input.ndim - 2;
  if (dim < 1 || dim > 3) {
    throw new RangeError(`interpolate(): input must be 3-, 4- or 5-d [N, C, *spatial], got ${input.ndim}-d`);
  }
  let alignCorners = opts.alignCorners ?? null;
  const linear = mode in LINEAR_DIMS;
  if (!linear) {
    if (alignCorners !== null) {
      throw new TypeError(
        'interpolate(): alignCorners can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear',
      );
    }
  } else if (alignCorners === null) alignCorners = false;
  const size = opts.size ?? null;
  const scale = opts.scaleFactor ?? null;
  if (size !== null && scale !== null)
    throw new TypeError('interpolate(): only one of size or scaleFactor should be defined');
  let outputSize: number[] | null = null;
  let scaleFactors: number[] | null = null;
  if (size !== null) {
    outputSize = perDim(size, dim, 'size');
    if (!outputSize.every(Number.isInteger))
      throw new TypeError(`interpolate(): size must be integers, got ${JSON.stringify(size)}`);
  } else if (scale !== null) {
    scaleFactors = perDim(scale, dim, 'scaleFactor');
  } else {
    throw new TypeError('interpolate(): either size or scaleFactor should be defined');
  }
  let recompute = opts.recomputeScaleFactor ?? null;
  if (recompute === true && size !== null) {
    throw new TypeError('interpolate(): recomputeScaleFactor is not meaningful with an explicit size');
  }
  // 'area' is adaptive average pooling, which takes an output size.
  if (mode === 'area' && outputSize === null) recompute = true;
  if (recompute === true && scaleFactors !== null) {
    const sf = scaleFactors;
    outputSize = sf.map((s, i) => Math.floor(input.shape[i + 2] * s));
    scaleFactors = null;
  }
  const antialias = opts.antialias ?? false;
  if (antialias && !((mode === 'bilinear' || mode === 'bicubic') && input.ndim === 4)) {
    throw new TypeError('interpolate(): antialias is restricted to bilinear and bicubic modes and 4-d input');
  }
  if (linear && LINEAR_DIMS[mode] !== dim) {
    throw new RangeError(
      `interpolate(): mode '${mode}' expects ${LINEAR_DIMS[mode] + 2}-d input, got ${input.ndim}-d`,
    );
  }
  switch (mode) {
    case 'nearest':
      return aten(`aten::upsample_nearest${dim}d.vec`, input, outputSize, scaleFactors);
    case 'nearest-exact':
      return aten(`aten::_upsample_nearest_exact${dim}d.vec`, input, outputSize, scaleFactors);
    case 'area':
      return aten(`aten::adaptive_avg_pool${dim}d`, input, outputSize);
    case 'linear':
      return aten('aten::upsample_linear1d.vec', input, outputSize, alignCorners, scaleFactors);
    case 'bilinear':
      return aten(
        antialias ? 'aten::_upsample_bilinear2d_aa.vec' : 'aten::upsample_bilinear2d.vec',
        input,
        outputSize,
        alignCorners,
        scaleFactors,
      );
    case 'bicubic':
      return aten(
        antialias ? 'aten::_upsample_bicubic2d_aa.vec' : 'aten::upsample_bicubic2d.vec',
        input,
        outputSize,
        alignCorners,
        scaleFactors,
      );
    case 'trilinear':
      return aten('aten::upsample_trilinear3d.vec', input, outputSize, alignCorners, scaleFactors);
    default:
      throw new TypeError(
        `interpolate(): mode must be one of nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area; got ${JSON.stringify(mode)}`,
      );
  }
}

function perDim(v: number | number[], dim: number, what: string): number[] {
  if (typeof v === 'number') return Array.from({ length: dim }, () => v);
  if (!Array.isArray(v) || v.length !== dim) {
    throw new RangeError(
      `interpolate(): ${what} must have one entry per spatial dim (${dim}), got ${JSON.stringify(v)}`,
    );
  }
  return v;
}

/** Rearranges [*, C·r², H, W] into [*, C, H·r, W·r]. */
export const pixelShuffle = define(
  'pixelShuffle',
  { required: ['input', 'upscaleFactor'] },
  ({ input, upscaleFactor }: { input: t.Tensor; upscaleFactor: number }): t.Tensor =>
    aten('aten::pixel_shuffle', input, upscaleFactor),
);

/** Rearranges [*, C, H·r, W·r] into [*, C·r², H, W] (pixelShuffle's inverse). */
export const pixelUnshuffle = define(
  'pixelUnshuffle',
  { required: ['input', 'downscaleFactor'] },
  ({ input, downscaleFactor }: { input: t.Tensor; downscaleFactor: number }): t.Tensor =>
    aten('aten::pixel_unshuffle', input, downscaleFactor),
);

type GroupsParams = { input: t.Tensor; groups: number };

/** Splits the channels into `groups` groups and interleaves them. */
export const channelShuffle = define(
  'channelShuffle',
  { required: ['input', 'groups'] },
  ({ input, groups }: GroupsParams): t.Tensor => aten('aten::channel_shuffle', input, groups),
);

export interface UnfoldOptions {
  dilation?: number | [number, number];
  padding?: number | [number, number];
  stride?: number | [number, number];
}

const pair = (v: number | number[]): number[] => (typeof v === 'number' ? [v, v] : v);

type Size2 = number | [number, number];

/** Sliding local blocks of [N, C, H, W] as columns [N, C·kH·kW, L] (im2col). */
export const unfold = define(
  'unfold',
  { required: ['input', 'kernelSize'], optional: ['dilation', 'padding', 'stride'] },
  ({ input, kernelSize, ...opts }: { input: t.Tensor; kernelSize: Size2 } & UnfoldOptions): t.Tensor =>
    aten(
      'aten::im2col',
      input,
      pair(kernelSize),
      pair(opts.dilation ?? 1),
      pair(opts.padding ?? 0),
      pair(opts.stride ?? 1),
    ),
);

/** Sums columns [N, C·kH·kW, L] back into [N, C, *outputSize] (col2im; unfold's adjoint). */
export const fold = define(
  'fold',
  { required: ['input', 'outputSize', 'kernelSize'], optional: ['dilation', 'padding', 'stride'] },
  ({ input, outputSize, kernelSize, ...opts }: FoldParams): t.Tensor =>
    aten(
      'aten::col2im',
      input,
      pair(outputSize),
      pair(kernelSize),
      pair(opts.dilation ?? 1),
      pair(opts.padding ?? 0),
      pair(opts.stride ?? 1),
    ),
);

type FoldParams = { input: t.Tensor; outputSize: Size2; kernelSize: Size2 } & UnfoldOptions;

const GRID_MODES = { bilinear: 0, nearest: 1, bicubic: 2 } as const;
const GRID_PADDING = { zeros: 0, border: 1, reflection: 2 } as const;

/** Samples `input` at the normalised [-1, 1] coordinates of `grid` ([N, H, W, 2] for 4-d input). */
export const gridSample = define(
  'gridSample',
  { required: ['input', 'grid'], optional: ['mode', 'paddingMode', 'alignCorners'] },
  ({ input, grid, ...opts }: GridSampleParams): t.Tensor => {
    const mode = GRID_MODES[opts.mode ?? 'bilinear'];
    if (mode === undefined) {
      throw new TypeError(
        `gridSample(): mode must be 'bilinear', 'nearest' or 'bicubic', got ${JSON.stringify(opts.mode)}`,
      );
    }
    const paddingMode = GRID_PADDING[opts.paddingMode ?? 'zeros'];
    if (paddingMode === undefined) {
      throw new TypeError(
        `gridSample(): paddingMode must be 'zeros', 'border' or 'reflection', got ${JSON.stringify(opts.paddingMode)}`,
      );
    }
    return aten('aten::grid_sampler', input, grid, mode, paddingMode, opts.alignCorners ?? false);
  },
);

interface GridSampleParams {
  input: t.Tensor;
  grid: t.Tensor;
  /** Default 'bilinear'. */
  mode?: keyof typeof GRID_MODES;
  /** Default 'zeros'. */
  paddingMode?: keyof typeof GRID_PADDING;
  alignCorners?: boolean | null;
}

/** The sampling grid of a batch of affine matrices theta ([N, 2, 3] for a 4-d size, [N, 3, 4] for 5-d). */
export const affineGrid = define(
  'affineGrid',
  { required: ['theta', 'size'], optional: ['alignCorners'] },
  ({ theta, size, alignCorners }: { theta: t.Tensor; size: number[]; alignCorners?: boolean | null }) => {
    if (!['float32', 'float64', 'float16', 'bfloat16'].includes(theta.dtype)) {
      throw new TypeError(`affineGrid(): expected theta to have a floating point dtype, got ${theta.dtype}`);
    }
    const [rows, cols] = size.length === 4 ? [2, 3] : size.length === 5 ? [3, 4] : [0, 0];
    if (rows === 0)
      throw new RangeError(`affineGrid(): size must have 4 or 5 entries, got ${JSON.stringify(size)}`);
    if (theta.ndim !== 3 || theta.shape[1] !== rows || theta.shape[2] !== cols) {
      throw new RangeError(
        `affineGrid(): expected a batch of affine matrices of shape Nx${rows}x${cols} for size [${size.join(', ')}], got [${theta.shape.join(', ')}]`,
      );
    }
    if (Math.min(...size) <= 0)
      throw new RangeError(
        `affineGrid(): expected non-zero, positive output size, got ${JSON.stringify(size)}`,
      );
    return aten('aten::affine_grid_generator', theta, size, alignCorners ?? false);
  },
);

/**
 * Deprecated in PyTorch in favour of interpolate, which it calls. recomputeScaleFactor is
 * tsddp's own option here (PyTorch's upsample lacks it), passed on to interpolate.
 */
export const upsample = define(
  'upsample',
  {
    required: ['input'],
    optional: ['size', 'scaleFactor', 'mode', 'alignCorners'],
    extra: ['recomputeScaleFactor'],
  },
  ({ input, ...opts }: { input: t.Tensor } & Omit<InterpolateOptions, 'antialias'>): t.Tensor =>
    resize(input, opts),
);

type FixedModeParams = {
  input: t.Tensor;
  size?: number | number[] | null;
  scaleFactor?: number | number[] | null;
};
const FIXED_MODE = { required: ['input'], optional: ['size', 'scaleFactor'] } as const;

/** Deprecated in PyTorch: interpolate(mode 'nearest'). */
export const upsampleNearest = define(
  'upsampleNearest',
  FIXED_MODE,
  ({ input, size, scaleFactor }: FixedModeParams): t.Tensor =>
    resize(input, { size, scaleFactor, mode: 'nearest' }),
);

/** Deprecated in PyTorch: interpolate(mode 'bilinear', alignCorners true). */
export const upsampleBilinear = define(
  'upsampleBilinear',
  FIXED_MODE,
  ({ input, size, scaleFactor }: FixedModeParams): t.Tensor =>
    resize(input, { size, scaleFactor, mode: 'bilinear', alignCorners: true }),
);

/** channel_shuffle's native kernel (the same result). */
export const nativeChannelShuffle = define(
  'nativeChannelShuffle',
  { required: ['input', 'groups'] },
  ({ input, groups }: GroupsParams): t.Tensor => aten('aten::native_channel_shuffle', input, groups),
);

// torch.nn.modules.pooling: max, average, adaptive, power-average (LP), fractional max
// pooling and max unpooling, each family over one base holding its options (torch's
// _MaxPoolNd, _AvgPoolNd, _AdaptiveAvgPoolNd/_AdaptiveMaxPoolNd as one _AdaptivePoolNd,
// _LPPoolNd, _MaxUnpoolNd and the fractional pools' common part), so each 1d/2d/3d class
// is its forward: the functional of its rank.
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

/** A window size: an int, or one per spatial dim. */
type Ints = number | number[];

/** A size as PyTorch's repr prints it: `2`, `(2, 3)` or `None`. */
const show = (v: Ints | null) =>
  v === null ? 'None' : typeof v === 'number' ? String(v) : `(${v.join(', ')})`;
const pyBool = (b: boolean) => (b ? 'True' : 'False');

/** MaxPool's options; `S` is how a size is given for the rank. */
interface MaxPoolOptions<S> {
  /** Default: kernelSize. */
  stride?: S | null;
  padding?: S;
  dilation?: S;
  ceilMode?: boolean;
}

/** torch's _MaxPoolNd: the window options of MaxPool1d/2d/3d. */
export abstract class _MaxPoolNd<S extends Ints> extends Module {
  readonly kernelSize: S;
  readonly stride: S;
  readonly padding: S;
  readonly dilation: S;
  readonly ceilMode: boolean;

  constructor(kernelSize: S, opts: MaxPoolOptions<S> = {}) {
    super();
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = (opts.padding ?? 0) as S;
    this.dilation = (opts.dilation ?? 1) as S;
    this.ceilMode = opts.ceilMode ?? false;
  }

  protected poolOptions(): Required<MaxPoolOptions<S>> {
    return { stride: this.stride, padding: this.padding, dilation: this.dilation, ceilMode: this.ceilMode };
  }

  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}, dilation=${show(this.dilation)}, ceil_mode=${pyBool(this.ceilMode)}`;
  }
}

/** Max pooling over [N, C, L] windows (torch.nn.MaxPool1d). */
export class MaxPool1d extends _MaxPoolNd<number | [number]> {
  override forward(input: t.Tensor): t.Tensor {
    return F.maxPool1d(input, this.kernelSize, this.poolOptions());
  }
}

/** Max pooling over [N, C, H, W] windows (torch.nn.MaxPool2d). */
export class MaxPool2d extends _MaxPoolNd<F.IntOrPair> {
  override forward(input: t.Tensor): t.Tensor {
    return F.maxPool2d(input, this.kernelSize, this.poolOptions());
  }
}

/** Max pooling over [N, C, D, H, W] windows (torch.nn.MaxPool3d). */
export class MaxPool3d extends _MaxPoolNd<Ints> {
  override forward(input: t.Tensor): t.Tensor {
    return F.maxPool3d(input, this.kernelSize, this.poolOptions());
  }
}

/** AvgPool's options; `S` is how a size is given for the rank. */
interface AvgPoolOptions<S> {
  /** Default: kernelSize. */
  stride?: S | null;
  padding?: S;
  ceilMode?: boolean;
  /** Count the zero padding in the average. Default true. */
  countIncludePad?: boolean;
}

/** torch's _AvgPoolNd: the window options of AvgPool1d/2d/3d (2d and 3d add divisorOverride). */
export abstract class _AvgPoolNd<S extends Ints> extends Module {
  readonly kernelSize: S;
  readonly stride: S;
  readonly padding: S;
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;

  constructor(kernelSize: S, opts: AvgPoolOptions<S> = {}) {
    super();
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = (opts.padding ?? 0) as S;
    this.ceilMode = opts.ceilMode ?? false;
    this.countIncludePad = opts.countIncludePad ?? true;
  }

  protected poolOptions(): Required<AvgPoolOptions<S>> {
    return {
      stride: this.stride,
      padding: this.padding,
      ceilMode: this.ceilMode,
      countIncludePad: this.countIncludePad,
    };
  }

  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}`;
  }
}

/** Average pooling over [N, C, L] windows (torch.nn.AvgPool1d). */
export class AvgPool1d extends _AvgPoolNd<number | [number]> {
  override forward(input: t.Tensor): t.Tensor {
    return F.avgPool1d(input, this.kernelSize, this.poolOptions());
  }
}

/** Average pooling over [N, C, H, W] windows (torch.nn.AvgPool2d). */
export class AvgPool2d extends _AvgPoolNd<F.IntOrPair> {
  /** Divide by this instead of the window size. */
  readonly divisorOverride: number | null;

  constructor(kernelSize: F.IntOrPair, opts: F.AvgPool2dOptions = {}) {
    super(kernelSize, opts);
    this.divisorOverride = opts.divisorOverride ?? null;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.avgPool2d(input, this.kernelSize, {
      ...this.poolOptions(),
      divisorOverride: this.divisorOverride,
    });
  }
}

/** Average pooling over [N, C, D, H, W] windows (torch.nn.AvgPool3d). */
export class AvgPool3d extends _AvgPoolNd<Ints> {
  /** Divide by this instead of the window size. */
  readonly divisorOverride: number | null;

  constructor(kernelSize: Ints, opts: AvgPoolOptions<Ints> & { divisorOverride?: number | null } = {}) {
    super(kernelSize, opts);
    this.divisorOverride = opts.divisorOverride ?? null;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.avgPool3d(input, this.kernelSize, {
      ...this.poolOptions(),
      divisorOverride: this.divisorOverride,
    });
  }
}

/** torch's _AdaptiveAvgPoolNd and _AdaptiveMaxPoolNd: pooling to a fixed output size. */
export abstract class _AdaptivePoolNd<S extends Ints> extends Module {
  constructor(readonly outputSize: S) {
    super();
  }

  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}

/** Average pooling of [N, C, L] to `outputSize` (torch.nn.AdaptiveAvgPool1d). */
export class AdaptiveAvgPool1d extends _AdaptivePoolNd<number | [number]> {
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveAvgPool1d(input, this.outputSize);
  }
}

/** Average pooling to a fixed output size, e.g. [1, 1] before a classifier (torch.nn.AdaptiveAvgPool2d). */
export class AdaptiveAvgPool2d extends _AdaptivePoolNd<F.IntOrPair> {
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveAvgPool2d(input, this.outputSize);
  }
}

/** Average pooling of [N, C, D, H, W] to `outputSize` (torch.nn.AdaptiveAvgPool3d). */
export class AdaptiveAvgPool3d extends _AdaptivePoolNd<Ints> {
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveAvgPool3d(input, this.outputSize);
  }
}

/** Max pooling of [N, C, L] to `outputSize` (torch.nn.AdaptiveMaxPool1d). */
export class AdaptiveMaxPool1d extends _AdaptivePoolNd<number | [number]> {
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveMaxPool1d(input, this.outputSize);
  }
}

/** Max pooling of [N, C, H, W] to `outputSize` (torch.nn.AdaptiveMaxPool2d). */
export class AdaptiveMaxPool2d extends _AdaptivePoolNd<F.IntOrPair> {
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveMaxPool2d(input, this.outputSize);
  }
}

/** Max pooling of [N, C, D, H, W] to `outputSize` (torch.nn.AdaptiveMaxPool3d). */
export class AdaptiveMaxPool3d extends _AdaptivePoolNd<Ints> {
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveMaxPool3d(input, this.outputSize);
  }
}

/**
 * torch's _LPPoolNd, power-average pooling: LPPool{1,2,3}d(normType, kernelSize,
 * { stride, ceilMode }) computes (Σ x^p)^(1/p) per window.
 */
export abstract class _LPPoolNd extends Module {
  readonly stride: Ints | null;
  readonly ceilMode: boolean;

  constructor(
    readonly normType: number,
    readonly kernelSize: Ints,
    opts: { stride?: Ints | null; ceilMode?: boolean } = {},
  ) {
    super();
    this.stride = opts.stride ?? null;
    this.ceilMode = opts.ceilMode ?? false;
  }

  protected poolOptions(): F.LpPoolOptions {
    return { stride: this.stride, ceilMode: this.ceilMode };
  }

  override extraRepr(): string {
    return `norm_type=${this.normType}, kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, ceil_mode=${pyBool(this.ceilMode)}`;
  }
}

/** Power-average pooling over [N, C, L] (torch.nn.LPPool1d). */
export class LPPool1d extends _LPPoolNd {
  override forward(input: t.Tensor): t.Tensor {
    // F.lpPool1d is typed with PyTorch's int kernel; a 1-element list pools the same.
    return F.lpPool1d(input, this.normType, this.kernelSize as number, this.poolOptions());
  }
}

/** Power-average pooling over [N, C, H, W] (torch.nn.LPPool2d). */
export class LPPool2d extends _LPPoolNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.lpPool2d(input, this.normType, this.kernelSize, this.poolOptions());
  }
}

/** Power-average pooling over [N, C, D, H, W] (torch.nn.LPPool3d). */
export class LPPool3d extends _LPPoolNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.lpPool3d(input, this.normType, this.kernelSize, this.poolOptions());
  }
}

/**
 * torch's _MaxUnpoolNd: MaxUnpool{1,2,3}d(kernelSize, { stride, padding }) inverts max
 * pooling given its indices; forward(input, indices, outputSize?).
 */
export abstract class _MaxUnpoolNd extends Module {
  readonly stride: Ints;
  readonly padding: Ints;

  constructor(
    readonly kernelSize: Ints,
    opts: { stride?: Ints | null; padding?: Ints } = {},
  ) {
    super();
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
  }

  protected unpoolOptions(outputSize: number[] | null): F.MaxUnpoolOptions {
    return { stride: this.stride, padding: this.padding, outputSize };
  }

  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}`;
  }
}

/** Max unpooling of [N, C, L] (torch.nn.MaxUnpool1d). */
export class MaxUnpool1d extends _MaxUnpoolNd {
  override forward(input: t.Tensor, indices: t.Tensor, outputSize: number[] | null = null): t.Tensor {
    // F.maxUnpool1d is typed with a 1-d kernel; a 1-element list unpools the same.
    const kernelSize = this.kernelSize as number | [number];
    return F.maxUnpool1d(input, indices, kernelSize, this.unpoolOptions(outputSize));
  }
}

/** Max unpooling of [N, C, H, W] (torch.nn.MaxUnpool2d). */
export class MaxUnpool2d extends _MaxUnpoolNd {
  override forward(input: t.Tensor, indices: t.Tensor, outputSize: number[] | null = null): t.Tensor {
    return F.maxUnpool2d(input, indices, this.kernelSize, this.unpoolOptions(outputSize));
  }
}

/** Max unpooling of [N, C, D, H, W] (torch.nn.MaxUnpool3d). */
export class MaxUnpool3d extends _MaxUnpoolNd {
  override forward(input: t.Tensor, indices: t.Tensor, outputSize: number[] | null = null): t.Tensor {
    return F.maxUnpool3d(input, indices, this.kernelSize, this.unpoolOptions(outputSize));
  }
}

/** FractionalMaxPool's options: exactly one of outputSize / outputRatio. */
interface FractionalMaxPoolModuleOptions {
  outputSize?: Ints | null;
  outputRatio?: Ints | null;
  /** The samples that place the regions (the buffer `_random_samples`); drawn per forward when not given. */
  randomSamples?: t.Tensor | null;
}

/**
 * The fractional max pools' common part: FractionalMaxPool{2,3}d(kernelSize,
 * { outputSize | outputRatio, randomSamples }).
 */
export abstract class _FractionalMaxPoolNd extends Module {
  readonly outputSize: Ints | null;
  readonly outputRatio: Ints | null;

  constructor(
    readonly kernelSize: Ints,
    opts: FractionalMaxPoolModuleOptions = {},
  ) {
    super();
    const name = new.target.name;
    this.outputSize = opts.outputSize ?? null;
    this.outputRatio = opts.outputRatio ?? null;
    if (this.outputSize === null && this.outputRatio === null) {
      throw new TypeError(`${name} requires specifying either an outputSize or an outputRatio`);
    }
    if (this.outputSize !== null && this.outputRatio !== null) {
      throw new TypeError('only one of outputSize and outputRatio may be specified');
    }
    const ratios = typeof this.outputRatio === 'number' ? [this.outputRatio] : (this.outputRatio ?? []);
    if (!ratios.every((r) => r > 0 && r < 1)) {
      throw new RangeError(
        `${name}: outputRatio must be between 0 and 1 (got ${JSON.stringify(this.outputRatio)})`,
      );
    }
    // PyTorch's buffer name; a null buffer is not part of the state dict.
    this.registerBuffer('_random_samples', opts.randomSamples ?? null);
  }

  protected poolOptions(): F.FractionalMaxPoolOptions {
    return {
      outputSize: this.outputSize,
      outputRatio: this.outputRatio,
      randomSamples: this._buffers.get('_random_samples') ?? null,
    };
  }
}

/** Max pooling of [N, C, H, W] over pseudo-random regions (torch.nn.FractionalMaxPool2d). */
export class FractionalMaxPool2d extends _FractionalMaxPoolNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.fractionalMaxPool2d(input, this.kernelSize, this.poolOptions());
  }
}

/** Max pooling of [N, C, D, H, W] over pseudo-random regions (torch.nn.FractionalMaxPool3d). */
export class FractionalMaxPool3d extends _FractionalMaxPoolNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.fractionalMaxPool3d(input, this.kernelSize, this.poolOptions());
  }
}

// torch.nn.modules.pooling: max, average, adaptive, power-average (LP), fractional max
// pooling and max unpooling, each family over one base holding its options (torch's
// _MaxPoolNd, _AvgPoolNd, _AdaptiveAvgPoolNd/_AdaptiveMaxPoolNd as one _AdaptivePoolNd,
// _LPPoolNd, _MaxUnpoolNd and the fractional pools' common part), so each 1d/2d/3d class
// is its forward: the functional of its rank.
import type * as t from '../../core/index.ts';
import { type Args, bind, type Signature, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

const ranks = (prefix: string) => [1, 2, 3].map((d) => `${prefix}${d}d`);
// The modules without indices refuse return_indices=True: F's WithIndices forms return them.
const NO_INDICES = {
  unsupported: { returnIndices: false },
  hints: { returnIndices: "call F's WithIndices form of the pooling for the indices" },
} as const;
const MAX_POOL = signature(ranks('MaxPool'), {
  required: ['kernelSize'],
  optional: ['stride', 'padding', 'dilation', 'returnIndices', 'ceilMode'],
  ...NO_INDICES,
});
const AVG_POOL_1D = signature('AvgPool1d', {
  required: ['kernelSize'],
  optional: ['stride', 'padding', 'ceilMode', 'countIncludePad'],
});
const AVG_POOL = signature(['AvgPool2d', 'AvgPool3d'], {
  required: ['kernelSize'],
  optional: ['stride', 'padding', 'ceilMode', 'countIncludePad', 'divisorOverride'],
});
const ADAPTIVE_AVG = signature(ranks('AdaptiveAvgPool'), { required: ['outputSize'] });
const ADAPTIVE_MAX = signature(ranks('AdaptiveMaxPool'), {
  required: ['outputSize'],
  optional: ['returnIndices'],
  ...NO_INDICES,
});
const LP_POOL = signature(ranks('LPPool'), {
  required: ['normType', 'kernelSize'],
  optional: ['stride', 'ceilMode'],
});
const MAX_UNPOOL = signature(ranks('MaxUnpool'), {
  required: ['kernelSize'],
  optional: ['stride', 'padding'],
});
const FRACTIONAL = signature(['FractionalMaxPool2d', 'FractionalMaxPool3d'], {
  required: ['kernelSize'],
  optional: ['outputSize', 'outputRatio', 'returnIndices', '_randomSamples'],
  aliases: { randomSamples: '_randomSamples' },
  ...NO_INDICES,
});

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
  /** Only false: F.maxPool{1,2,3}dWithIndices return the indices. */
  returnIndices?: false;
  ceilMode?: boolean;
}
type MaxPoolParams<S> = { kernelSize: S } & MaxPoolOptions<S>;

/** torch's _MaxPoolNd: the window options of MaxPool1d/2d/3d. */
export abstract class _MaxPoolNd<S extends Ints> extends Module {
  readonly kernelSize: S;
  readonly stride: S;
  readonly padding: S;
  readonly dilation: S;
  readonly ceilMode: boolean;

  constructor(...args: Args<typeof MAX_POOL, MaxPoolParams<S>>) {
    super();
    const opts = bind<MaxPoolParams<S>>(MAX_POOL, args, new.target.name);
    const kernelSize = opts.kernelSize;
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = (opts.padding ?? 0) as S;
    this.dilation = (opts.dilation ?? 1) as S;
    this.ceilMode = opts.ceilMode ?? false;
  }

  protected poolOptions(): Required<Omit<MaxPoolOptions<S>, 'returnIndices'>> {
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
type AvgPoolParams<S> = { kernelSize: S } & AvgPoolOptions<S>;
type AvgPool3dParams = AvgPoolParams<Ints> & { divisorOverride?: number | null };

/** torch's _AvgPoolNd: the window options of AvgPool1d/2d/3d (2d and 3d add divisorOverride). */
export abstract class _AvgPoolNd<S extends Ints> extends Module {
  readonly kernelSize: S;
  readonly stride: S;
  readonly padding: S;
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;

  /** `opts`: the subclass's arguments, bound by its signature. */
  constructor(opts: AvgPoolParams<S>) {
    super();
    const kernelSize = opts.kernelSize;
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
  constructor(...args: Args<typeof AVG_POOL_1D, AvgPoolParams<number | [number]>>) {
    super(bind<AvgPoolParams<number | [number]>>(AVG_POOL_1D, args, 'AvgPool1d'));
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.avgPool1d(input, this.kernelSize, this.poolOptions());
  }
}

/** Average pooling over [N, C, H, W] windows (torch.nn.AvgPool2d). */
export class AvgPool2d extends _AvgPoolNd<F.IntOrPair> {
  /** Divide by this instead of the window size. */
  readonly divisorOverride: number | null;

  constructor(...args: Args<typeof AVG_POOL, { kernelSize: F.IntOrPair } & F.AvgPool2dOptions>) {
    const opts = bind<{ kernelSize: F.IntOrPair } & F.AvgPool2dOptions>(AVG_POOL, args, 'AvgPool2d');
    super(opts);
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

  constructor(...args: Args<typeof AVG_POOL, AvgPool3dParams>) {
    const opts = bind<AvgPool3dParams>(AVG_POOL, args, 'AvgPool3d');
    super(opts);
    this.divisorOverride = opts.divisorOverride ?? null;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.avgPool3d(input, this.kernelSize, {
      ...this.poolOptions(),
      divisorOverride: this.divisorOverride,
    });
  }
}

type AdaptiveParams<S> = { outputSize: S; returnIndices?: false };

/** torch's _AdaptiveAvgPoolNd and _AdaptiveMaxPoolNd: pooling to a fixed output size. */
export abstract class _AdaptivePoolNd<S extends Ints> extends Module {
  /** The class's signature: AdaptiveMaxPool's (output_size, return_indices), or AdaptiveAvgPool's (output_size). */
  protected static readonly signature: Signature = ADAPTIVE_MAX;
  readonly outputSize: S;

  constructor(...args: Args<typeof ADAPTIVE_MAX, AdaptiveParams<S>>) {
    super();
    const { signature: sig, name } = new.target as unknown as { signature: Signature; name: string };
    this.outputSize = bind<AdaptiveParams<S>>(sig, args, name).outputSize;
  }

  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}

/** Average pooling of [N, C, L] to `outputSize` (torch.nn.AdaptiveAvgPool1d). */
export class AdaptiveAvgPool1d extends _AdaptivePoolNd<number | [number]> {
  protected static override readonly signature: Signature = ADAPTIVE_AVG;

  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveAvgPool1d(input, this.outputSize);
  }
}

/** Average pooling to a fixed output size, e.g. [1, 1] before a classifier (torch.nn.AdaptiveAvgPool2d). */
export class AdaptiveAvgPool2d extends _AdaptivePoolNd<F.IntOrPair> {
  protected static override readonly signature: Signature = ADAPTIVE_AVG;

  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveAvgPool2d(input, this.outputSize);
  }
}

/** Average pooling of [N, C, D, H, W] to `outputSize` (torch.nn.AdaptiveAvgPool3d). */
export class AdaptiveAvgPool3d extends _AdaptivePoolNd<Ints> {
  protected static override readonly signature: Signature = ADAPTIVE_AVG;

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

type LPPoolParams = { normType: number; kernelSize: Ints; stride?: Ints | null; ceilMode?: boolean };

/**
 * torch's _LPPoolNd, power-average pooling: LPPool{1,2,3}d(normType, kernelSize,
 * { stride, ceilMode }) computes (Σ x^p)^(1/p) per window.
 */
export abstract class _LPPoolNd extends Module {
  readonly normType: number;
  readonly kernelSize: Ints;
  readonly stride: Ints | null;
  readonly ceilMode: boolean;

  constructor(...args: Args<typeof LP_POOL, LPPoolParams>) {
    super();
    const opts = bind<LPPoolParams>(LP_POOL, args, new.target.name);
    this.normType = opts.normType;
    this.kernelSize = opts.kernelSize;
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

type MaxUnpoolParams = { kernelSize: Ints; stride?: Ints | null; padding?: Ints };

/**
 * torch's _MaxUnpoolNd: MaxUnpool{1,2,3}d(kernelSize, { stride, padding }) inverts max
 * pooling given its indices; forward(input, indices, outputSize?).
 */
export abstract class _MaxUnpoolNd extends Module {
  readonly kernelSize: Ints;
  readonly stride: Ints;
  readonly padding: Ints;

  constructor(...args: Args<typeof MAX_UNPOOL, MaxUnpoolParams>) {
    super();
    const opts = bind<MaxUnpoolParams>(MAX_UNPOOL, args, new.target.name);
    const kernelSize = opts.kernelSize;
    this.kernelSize = kernelSize;
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
  /** PyTorch's name of randomSamples. */
  _randomSamples?: t.Tensor | null;
  /** Only false: F.fractionalMaxPool{2,3}dWithIndices return the indices. */
  returnIndices?: false;
}
type FractionalParams = { kernelSize: Ints } & FractionalMaxPoolModuleOptions;

/**
 * The fractional max pools' common part: FractionalMaxPool{2,3}d(kernelSize,
 * { outputSize | outputRatio, randomSamples }).
 */
export abstract class _FractionalMaxPoolNd extends Module {
  readonly kernelSize: Ints;
  readonly outputSize: Ints | null;
  readonly outputRatio: Ints | null;

  constructor(...args: Args<typeof FRACTIONAL, FractionalParams>) {
    super();
    const name = new.target.name;
    const opts = bind<FractionalParams>(FRACTIONAL, args, name);
    this.kernelSize = opts.kernelSize;
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
    this.registerBuffer('_random_samples', opts._randomSamples ?? null);
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

// 3-d and adaptive 3-d pooling, power-average (LP) pooling and max unpooling modules
// (torch.nn.modules.pooling).
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

type Ints = number | number[];
const show = (v: Ints | null) =>
  v === null ? 'None' : typeof v === 'number' ? String(v) : `(${v.join(', ')})`;

export class MaxPool3d extends Module {
  readonly stride: Ints;
  readonly padding: Ints;
  readonly dilation: Ints;
  readonly ceilMode: boolean;
  constructor(
    readonly kernelSize: Ints,
    opts: { stride?: Ints | null; padding?: Ints; dilation?: Ints; ceilMode?: boolean } = {},
  ) {
    super();
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.dilation = opts.dilation ?? 1;
    this.ceilMode = opts.ceilMode ?? false;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.maxPool3d(input, this.kernelSize, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      ceilMode: this.ceilMode,
    });
  }
  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}, dilation=${show(this.dilation)}, ceil_mode=${this.ceilMode ? 'True' : 'False'}`;
  }
}

export class AvgPool3d extends Module {
  readonly stride: Ints;
  readonly padding: Ints;
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;
  readonly divisorOverride: number | null;
  constructor(
    readonly kernelSize: Ints,
    opts: {
      stride?: Ints | null;
      padding?: Ints;
      ceilMode?: boolean;
      countIncludePad?: boolean;
      divisorOverride?: number | null;
    } = {},
  ) {
    super();
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.ceilMode = opts.ceilMode ?? false;
    this.countIncludePad = opts.countIncludePad ?? true;
    this.divisorOverride = opts.divisorOverride ?? null;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.avgPool3d(input, this.kernelSize, {
      stride: this.stride,
      padding: this.padding,
      ceilMode: this.ceilMode,
      countIncludePad: this.countIncludePad,
      divisorOverride: this.divisorOverride,
    });
  }
  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}`;
  }
}

export class AdaptiveAvgPool3d extends Module {
  constructor(readonly outputSize: Ints) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveAvgPool3d(input, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}

export class AdaptiveMaxPool3d extends Module {
  constructor(readonly outputSize: Ints) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveMaxPool3d(input, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}

// The factories name their return type: the package's .d.ts cannot describe an anonymous class.
function lpPoolModule(
  name: string,
  dims: 1 | 2 | 3,
): new (
  normType: number,
  kernelSize: Ints,
  opts?: { stride?: Ints | null; ceilMode?: boolean },
) => Module & {
  readonly normType: number;
  readonly kernelSize: Ints;
  readonly stride: Ints | null;
  readonly ceilMode: boolean;
} {
  const fn = dims === 1 ? F.lpPool1d : dims === 2 ? F.lpPool2d : F.lpPool3d;
  const C = class extends Module {
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
    override forward(input: t.Tensor): t.Tensor {
      return (fn as (x: t.Tensor, p: number, k: Ints, o: F.LpPoolOptions) => t.Tensor)(
        input,
        this.normType,
        this.kernelSize,
        { stride: this.stride, ceilMode: this.ceilMode },
      );
    }
    override extraRepr(): string {
      return `norm_type=${this.normType}, kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, ceil_mode=${this.ceilMode ? 'True' : 'False'}`;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

/** Power-average pooling: LPPool{1,2,3}d(normType, kernelSize, { stride, ceilMode }). */
export const LPPool1d = lpPoolModule('LPPool1d', 1);
export type LPPool1d = InstanceType<typeof LPPool1d>;
export const LPPool2d = lpPoolModule('LPPool2d', 2);
export type LPPool2d = InstanceType<typeof LPPool2d>;
export const LPPool3d = lpPoolModule('LPPool3d', 3);
export type LPPool3d = InstanceType<typeof LPPool3d>;

function maxUnpoolModule(
  name: string,
  dims: 1 | 2 | 3,
): new (
  kernelSize: Ints,
  opts?: { stride?: Ints | null; padding?: Ints },
) => Module & {
  readonly kernelSize: Ints;
  readonly stride: Ints;
  readonly padding: Ints;
  forward(input: t.Tensor, indices: t.Tensor, outputSize?: number[] | null): t.Tensor;
} {
  const fn = dims === 1 ? F.maxUnpool1d : dims === 2 ? F.maxUnpool2d : F.maxUnpool3d;
  const C = class extends Module {
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
    override forward(input: t.Tensor, indices: t.Tensor, outputSize: number[] | null = null): t.Tensor {
      return (fn as (x: t.Tensor, i: t.Tensor, k: Ints, o: F.MaxUnpoolOptions) => t.Tensor)(
        input,
        indices,
        this.kernelSize,
        { stride: this.stride, padding: this.padding, outputSize },
      );
    }
    override extraRepr(): string {
      return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}`;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

/** Max unpooling: MaxUnpool{1,2,3}d(kernelSize, { stride, padding }); forward(input, indices, outputSize?). */
export const MaxUnpool1d = maxUnpoolModule('MaxUnpool1d', 1);
export type MaxUnpool1d = InstanceType<typeof MaxUnpool1d>;
export const MaxUnpool2d = maxUnpoolModule('MaxUnpool2d', 2);
export type MaxUnpool2d = InstanceType<typeof MaxUnpool2d>;
export const MaxUnpool3d = maxUnpoolModule('MaxUnpool3d', 3);
export type MaxUnpool3d = InstanceType<typeof MaxUnpool3d>;

function fractionalModule(
  name: string,
  dims: 2 | 3,
): new (
  kernelSize: Ints,
  opts?: { outputSize?: Ints | null; outputRatio?: Ints | null; randomSamples?: t.Tensor | null },
) => Module & {
  readonly kernelSize: Ints;
  readonly outputSize: Ints | null;
  readonly outputRatio: Ints | null;
} {
  const fn = dims === 2 ? F.fractionalMaxPool2d : F.fractionalMaxPool3d;
  const C = class extends Module {
    readonly outputSize: Ints | null;
    readonly outputRatio: Ints | null;
    constructor(
      readonly kernelSize: Ints,
      opts: { outputSize?: Ints | null; outputRatio?: Ints | null; randomSamples?: t.Tensor | null } = {},
    ) {
      super();
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
    override forward(input: t.Tensor): t.Tensor {
      return fn(input, this.kernelSize, {
        outputSize: this.outputSize,
        outputRatio: this.outputRatio,
        randomSamples: this._buffers.get('_random_samples') ?? null,
      });
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

/** Fractional max pooling: FractionalMaxPool2d(kernelSize, { outputSize | outputRatio, randomSamples }). */
export const FractionalMaxPool2d = fractionalModule('FractionalMaxPool2d', 2);
export type FractionalMaxPool2d = InstanceType<typeof FractionalMaxPool2d>;
export const FractionalMaxPool3d = fractionalModule('FractionalMaxPool3d', 3);
export type FractionalMaxPool3d = InstanceType<typeof FractionalMaxPool3d>;

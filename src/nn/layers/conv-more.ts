// Conv3d and ConvTranspose1d/2d/3d (torch.nn.modules.conv), with PyTorch's weight layouts,
// default init and, for the transposed ones, forward(input, outputSize).
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import { type FactoryOptions, resetWeightAndBias } from './linear.ts';

type Ints = number | number[];

function tuple(v: Ints, n: number, what: string): number[] {
  const out = typeof v === 'number' ? Array.from({ length: n }, () => v) : [...v];
  if (out.length !== n || !out.every(Number.isInteger)) {
    throw new TypeError(`${what} must be an integer or ${n} integers, got ${JSON.stringify(v)}`);
  }
  return out;
}

function checkGroups(cls: string, inChannels: number, outChannels: number, groups: number): void {
  if (!Number.isInteger(groups) || groups <= 0)
    throw new RangeError(`${cls}: groups must be a positive integer`);
  if (inChannels % groups !== 0) throw new RangeError(`${cls}: in_channels must be divisible by groups`);
  if (outChannels % groups !== 0) throw new RangeError(`${cls}: out_channels must be divisible by groups`);
}

const tup = (p: number[]) => `(${p.join(', ')}${p.length === 1 ? ',' : ''})`;

export interface Conv3dOptions extends FactoryOptions {
  stride?: Ints;
  padding?: Ints | 'same' | 'valid';
  dilation?: Ints;
  groups?: number;
  bias?: boolean;
}

/** 3-d convolution over [N, C, D, H, W]; weight [out, in/groups, kD, kH, kW]. */
export class Conv3d extends Module {
  readonly kernelSize: number[];
  readonly stride: number[];
  readonly padding: number[] | 'same' | 'valid';
  readonly dilation: number[];
  readonly groups: number;
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(
    readonly inChannels: number,
    readonly outChannels: number,
    kernelSize: Ints,
    opts: Conv3dOptions = {},
  ) {
    super();
    this.groups = opts.groups ?? 1;
    checkGroups('Conv3d', inChannels, outChannels, this.groups);
    this.kernelSize = tuple(kernelSize, 3, 'Conv3d: kernelSize');
    this.stride = tuple(opts.stride ?? 1, 3, 'Conv3d: stride');
    this.dilation = tuple(opts.dilation ?? 1, 3, 'Conv3d: dilation');
    const padding = opts.padding ?? 0;
    if (typeof padding === 'string') {
      if (padding !== 'same' && padding !== 'valid') {
        throw new RangeError(`Invalid padding string '${padding}', should be one of 'valid', 'same'`);
      }
      if (padding === 'same' && this.stride.some((s) => s !== 1)) {
        throw new RangeError("padding='same' is not supported for strided convolutions");
      }
      this.padding = padding;
    } else {
      this.padding = tuple(padding, 3, 'Conv3d: padding');
    }
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter(
      'weight',
      Parameter(t.empty([outChannels, inChannels / this.groups, ...this.kernelSize], factory)),
    );
    this.bias = this.registerParameter(
      'bias',
      opts.bias === false ? null : Parameter(t.empty([outChannels], factory)),
    );
    this.resetParameters();
  }

  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.conv3d(input, this.weight, this.bias, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      groups: this.groups,
    });
  }

  override extraRepr(): string {
    let s = `${this.inChannels}, ${this.outChannels}, kernel_size=${tup(this.kernelSize)}, stride=${tup(this.stride)}`;
    if (typeof this.padding === 'string') s += `, padding=${this.padding}`;
    else if (this.padding.some((p) => p !== 0)) s += `, padding=${tup(this.padding)}`;
    if (this.dilation.some((d) => d !== 1)) s += `, dilation=${tup(this.dilation)}`;
    if (this.groups !== 1) s += `, groups=${this.groups}`;
    if (this.bias === null) s += ', bias=False';
    return s;
  }
}

export interface ConvTransposeOptions extends FactoryOptions {
  stride?: Ints;
  padding?: Ints;
  outputPadding?: Ints;
  groups?: number;
  bias?: boolean;
  dilation?: Ints;
}

/** Transposed convolution (torch's _ConvTransposeNd); weight [in, out/groups, *kernel]. */
export abstract class ConvTranspose extends Module {
  readonly kernelSize: number[];
  readonly stride: number[];
  readonly padding: number[];
  readonly outputPadding: number[];
  readonly dilation: number[];
  readonly groups: number;
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(
    readonly inChannels: number,
    readonly outChannels: number,
    kernelSize: Ints,
    opts: ConvTransposeOptions,
    private readonly dims: 1 | 2 | 3,
  ) {
    super();
    const cls = `ConvTranspose${dims}d`;
    this.groups = opts.groups ?? 1;
    checkGroups(cls, inChannels, outChannels, this.groups);
    this.kernelSize = tuple(kernelSize, dims, `${cls}: kernelSize`);
    this.stride = tuple(opts.stride ?? 1, dims, `${cls}: stride`);
    this.padding = tuple(opts.padding ?? 0, dims, `${cls}: padding`);
    this.outputPadding = tuple(opts.outputPadding ?? 0, dims, `${cls}: outputPadding`);
    this.dilation = tuple(opts.dilation ?? 1, dims, `${cls}: dilation`);
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter(
      'weight',
      Parameter(t.empty([inChannels, outChannels / this.groups, ...this.kernelSize], factory)),
    );
    this.bias = this.registerParameter(
      'bias',
      opts.bias === false ? null : Parameter(t.empty([outChannels], factory)),
    );
    this.resetParameters();
  }

  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  /** PyTorch's _output_padding: the output padding that gives `outputSize`. */
  protected outputPaddingFor(input: t.Tensor, outputSize: number[] | null): number[] {
    if (outputSize === null) return this.outputPadding;
    const n = this.dims;
    const nonSpatial = input.ndim === n + 2 ? 2 : 1;
    const size = outputSize.length === nonSpatial + n ? outputSize.slice(nonSpatial) : outputSize;
    if (size.length !== n) {
      throw new RangeError(
        `ConvTranspose${n}d: outputSize must have ${n} or ${n + nonSpatial} elements (got ${outputSize.length})`,
      );
    }
    return size.map((s, d) => {
      const min =
        (input.shape[d + nonSpatial] - 1) * this.stride[d] -
        2 * this.padding[d] +
        this.dilation[d] * (this.kernelSize[d] - 1) +
        1;
      const max = min + this.stride[d] - 1;
      if (s < min || s > max) {
        throw new RangeError(
          `requested an output size of [${size.join(', ')}], but valid sizes range from [${min}] to [${max}] in dim ${d}`,
        );
      }
      return s - min;
    });
  }

  override forward(input: t.Tensor, outputSize: number[] | null = null): t.Tensor {
    const opts = {
      stride: this.stride,
      padding: this.padding,
      outputPadding: this.outputPaddingFor(input, outputSize),
      groups: this.groups,
      dilation: this.dilation,
    };
    if (this.dims === 1) return F.convTranspose1d(input, this.weight, this.bias, opts);
    if (this.dims === 2) return F.convTranspose2d(input, this.weight, this.bias, opts);
    return F.convTranspose3d(input, this.weight, this.bias, opts);
  }

  override extraRepr(): string {
    let s = `${this.inChannels}, ${this.outChannels}, kernel_size=${tup(this.kernelSize)}, stride=${tup(this.stride)}`;
    if (this.padding.some((p) => p !== 0)) s += `, padding=${tup(this.padding)}`;
    if (this.dilation.some((d) => d !== 1)) s += `, dilation=${tup(this.dilation)}`;
    if (this.outputPadding.some((p) => p !== 0)) s += `, output_padding=${tup(this.outputPadding)}`;
    if (this.groups !== 1) s += `, groups=${this.groups}`;
    if (this.bias === null) s += ', bias=False';
    return s;
  }
}

export class ConvTranspose1d extends ConvTranspose {
  constructor(inChannels: number, outChannels: number, kernelSize: Ints, opts: ConvTransposeOptions = {}) {
    super(inChannels, outChannels, kernelSize, opts, 1);
  }
}

export class ConvTranspose2d extends ConvTranspose {
  constructor(inChannels: number, outChannels: number, kernelSize: Ints, opts: ConvTransposeOptions = {}) {
    super(inChannels, outChannels, kernelSize, opts, 2);
  }
}

export class ConvTranspose3d extends ConvTranspose {
  constructor(inChannels: number, outChannels: number, kernelSize: Ints, opts: ConvTransposeOptions = {}) {
    super(inChannels, outChannels, kernelSize, opts, 3);
  }
}

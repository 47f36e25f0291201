// torch.nn.modules.conv: Conv1d/2d/3d and ConvTranspose1d/2d/3d over one base, _ConvNd
// (the channel and group checks, sizes as one int per spatial dim, PyTorch's weight
// layouts and default init, the repr), and their lazy forms, whose inChannels comes from
// the first input.
import type * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';
import { LazyModuleMixin, type LazySpec, materialize, setInferredSize } from './lazy.ts';
import { type FactoryOptions, registerWeightAndBias, resetWeightAndBias } from './linear.ts';

type Ints = number | number[];

/** The options of every convolution; `S` is how a size is given (an int, or one per spatial dim). */
interface ConvNdOptions<S> extends FactoryOptions {
  stride?: S;
  padding?: S | 'same' | 'valid';
  dilation?: S;
  groups?: number;
  bias?: boolean;
}

export interface Conv1dOptions extends ConvNdOptions<number | [number]> {
  /** Only 'zeros' (the default) is supported; another mode is refused by name. */
  paddingMode?: 'zeros';
}

export interface Conv2dOptions extends ConvNdOptions<F.IntOrPair> {
  /** Only 'zeros' (the default) is supported; another mode is refused by name. */
  paddingMode?: 'zeros';
}

export interface Conv3dOptions extends ConvNdOptions<Ints> {
  /** Only 'zeros' (the default) is supported; another mode is refused by name. */
  paddingMode?: 'zeros';
}

export interface ConvTransposeOptions extends FactoryOptions {
  stride?: Ints;
  padding?: Ints;
  outputPadding?: Ints;
  groups?: number;
  bias?: boolean;
  dilation?: Ints;
  /** Only 'zeros' (the default; PyTorch's only one for transposed convolutions). */
  paddingMode?: 'zeros';
}

/** The sizes every convolution is built from, by name. */
interface ConvSizes<K> {
  inChannels: number;
  outChannels: number;
  kernelSize: K;
}

// PyTorch's signatures: Conv{1,2,3}d and ConvTranspose{1,2,3}d, and their lazy forms
// without in_channels. Only padding_mode 'zeros' is implemented.
const NO_PADDING_MODES = {
  unsupported: { paddingMode: 'zeros' },
  hints: { paddingMode: 'pad the input with F.pad(x, pad, { mode }) and use padding 0' },
} as const;
const CONV_OPTIONAL = [
  'stride',
  'padding',
  'dilation',
  'groups',
  'bias',
  'paddingMode',
  'device',
  'dtype',
] as const;
const TRANSPOSE_OPTIONAL = [
  'stride',
  'padding',
  'outputPadding',
  'groups',
  'bias',
  'dilation',
  'paddingMode',
  'device',
  'dtype',
] as const;
const CONV = signature(['Conv1d', 'Conv2d', 'Conv3d'], {
  required: ['inChannels', 'outChannels', 'kernelSize'],
  optional: CONV_OPTIONAL,
  ...NO_PADDING_MODES,
});
const CONV_TRANSPOSE = signature(['ConvTranspose1d', 'ConvTranspose2d', 'ConvTranspose3d'], {
  required: ['inChannels', 'outChannels', 'kernelSize'],
  optional: TRANSPOSE_OPTIONAL,
  ...NO_PADDING_MODES,
});
const LAZY_CONV_SIG = signature(['LazyConv1d', 'LazyConv2d', 'LazyConv3d'], {
  required: ['outChannels', 'kernelSize'],
  optional: CONV_OPTIONAL,
  ...NO_PADDING_MODES,
});
const LAZY_TRANSPOSE_SIG = signature(['LazyConvTranspose1d', 'LazyConvTranspose2d', 'LazyConvTranspose3d'], {
  required: ['outChannels', 'kernelSize'],
  optional: TRANSPOSE_OPTIONAL,
  ...NO_PADDING_MODES,
});

type ConvArgs<K, O> = Args<typeof CONV, ConvSizes<K> & O>;
type TransposeArgs = Args<typeof CONV_TRANSPOSE, ConvSizes<Ints> & ConvTransposeOptions>;
type LazyParams<K, O> = Omit<ConvSizes<K>, 'inChannels'> & O;
type LazyArgs<K, O> = Args<typeof LAZY_CONV_SIG, LazyParams<K, O>>;
type LazyTransposeArgs = Args<typeof LAZY_TRANSPOSE_SIG, LazyParams<Ints, ConvTransposeOptions>>;

/** What _ConvNd is built from: the sizes and options of any convolution, bound by name. */
type ConvParams = ConvSizes<Ints> & ConvNdOptions<Ints> & { outputPadding?: Ints };

const TUPLE_TEXT = ['', 'a 1-tuple of integers', 'a pair of integers', '3 integers'];

/** `v` as one integer per spatial dim (PyTorch's _single/_pair/_triple), checked. */
function ntuple(v: Ints, dims: number, what: string): number[] {
  const out = typeof v === 'number' ? Array.from({ length: dims }, () => v) : [...v];
  if (out.length !== dims || !out.every(Number.isInteger)) {
    throw new TypeError(`${what} must be an integer or ${TUPLE_TEXT[dims]}, got ${JSON.stringify(v)}`);
  }
  return out;
}

/** A size as PyTorch prints a tuple: `(3,)`, `(3, 3)`. */
const tupleText = (p: number[]) => `(${p.join(', ')}${p.length === 1 ? ',' : ''})`;

/**
 * torch's _ConvNd: what every convolution shares. `Size` is the type of its per-dim sizes
 * ([number] for Conv1d, [number, number] for Conv2d, number[] otherwise). The weight is
 * [out, in/groups, *kernel], or [in, out/groups, *kernel] for a transposed convolution.
 */
export abstract class _ConvNd<Size extends number[]> extends Module {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernelSize: Size;
  readonly stride: Size;
  readonly padding: Size | 'same' | 'valid';
  readonly dilation: Size;
  readonly groups: number;
  weight: t.Tensor;
  bias: t.Tensor | null;

  /** `cls` names the class in error messages; `opts` are the bound arguments (nn/args.ts). */
  constructor(cls: string, dims: 1 | 2 | 3, opts: ConvParams, transposed: boolean) {
    super();
    const { inChannels, outChannels, kernelSize } = opts;
    const groups = opts.groups ?? 1;
    if (!Number.isInteger(groups) || groups <= 0)
      throw new RangeError(`${cls}: groups must be a positive integer`);
    if (inChannels % groups !== 0) throw new RangeError(`${cls}: in_channels must be divisible by groups`);
    if (outChannels % groups !== 0) throw new RangeError(`${cls}: out_channels must be divisible by groups`);
    this.inChannels = inChannels;
    this.outChannels = outChannels;
    this.kernelSize = ntuple(kernelSize, dims, `${cls}: kernelSize`) as Size;
    this.stride = ntuple(opts.stride ?? 1, dims, `${cls}: stride`) as Size;
    const padding = opts.padding ?? 0;
    if (typeof padding !== 'string' || transposed) {
      this.padding = ntuple(padding as Ints, dims, `${cls}: padding`) as Size;
    } else {
      if (padding !== 'same' && padding !== 'valid') {
        throw new RangeError(`Invalid padding string '${padding}', should be one of 'valid', 'same'`);
      }
      if (padding === 'same' && this.stride.some((s) => s !== 1)) {
        throw new RangeError("padding='same' is not supported for strided convolutions");
      }
      this.padding = padding;
    }
    this.dilation = ntuple(opts.dilation ?? 1, dims, `${cls}: dilation`) as Size;
    this.groups = groups;
    const [weightIn, weightOut] = transposed ? [inChannels, outChannels] : [outChannels, inChannels];
    const weightShape = [weightIn, weightOut / groups, ...this.kernelSize];
    [this.weight, this.bias] = registerWeightAndBias(this, weightShape, outChannels, opts);
    this.resetParameters();
  }

  /** kaiming_uniform_(a=√5) for the weight, U(±1/√fanIn) for the bias, as torch's convolutions. */
  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  /** The functional's options that the module holds. */
  protected convOptions(): F.ConvOptions {
    return { stride: this.stride, padding: this.padding, dilation: this.dilation, groups: this.groups };
  }

  /** The output_padding part of the repr (transposed convolutions only). */
  protected outputPaddingText(): string {
    return '';
  }

  override extraRepr(): string {
    let s = `${this.inChannels}, ${this.outChannels}, kernel_size=${tupleText(this.kernelSize)}, stride=${tupleText(this.stride)}`;
    if (typeof this.padding === 'string') s += `, padding=${this.padding}`;
    else if (this.padding.some((p) => p !== 0)) s += `, padding=${tupleText(this.padding)}`;
    if (this.dilation.some((d) => d !== 1)) s += `, dilation=${tupleText(this.dilation)}`;
    s += this.outputPaddingText();
    if (this.groups !== 1) s += `, groups=${this.groups}`;
    if (this.bias === null) s += ', bias=False';
    return s;
  }
}

/** 1-d convolution over [N, C, L] input; weight [out, in/groups, k] (torch.nn.Conv1d). */
export class Conv1d extends _ConvNd<[number]> {
  constructor(...args: ConvArgs<number | [number], Conv1dOptions>) {
    super('Conv1d', 1, bind<ConvParams>(CONV, args, 'Conv1d'), false);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.conv1d(input, this.weight, this.bias, this.convOptions());
  }
}

/** 2-d convolution over [N, C, H, W] input; weight [out, in/groups, kH, kW] (torch.nn.Conv2d). */
export class Conv2d extends _ConvNd<[number, number]> {
  constructor(...args: ConvArgs<F.IntOrPair, Conv2dOptions>) {
    super('Conv2d', 2, bind<ConvParams>(CONV, args, 'Conv2d'), false);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.conv2d(input, this.weight, this.bias, this.convOptions());
  }
}

/** 3-d convolution over [N, C, D, H, W]; weight [out, in/groups, kD, kH, kW] (torch.nn.Conv3d). */
export class Conv3d extends _ConvNd<number[]> {
  constructor(...args: ConvArgs<Ints, Conv3dOptions>) {
    super('Conv3d', 3, bind<ConvParams>(CONV, args, 'Conv3d'), false);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.conv3d(input, this.weight, this.bias, this.convOptions());
  }
}

/**
 * Transposed convolution (torch's _ConvTransposeNd); weight [in, out/groups, *kernel].
 * forward(input, outputSize?) picks the output padding that gives `outputSize`.
 */
export abstract class ConvTranspose extends _ConvNd<number[]> {
  declare readonly padding: number[];
  readonly outputPadding: number[];
  private readonly dims: 1 | 2 | 3;

  /** The subclass binds its arguments (`args`, PyTorch's) for its rank `dims`. */
  constructor(dims: 1 | 2 | 3, args: ArrayLike<unknown>) {
    const cls = `ConvTranspose${dims}d`;
    const opts = bind<ConvParams>(CONV_TRANSPOSE, args, cls);
    super(cls, dims, opts, true);
    this.dims = dims;
    this.outputPadding = ntuple(opts.outputPadding ?? 0, dims, `${cls}: outputPadding`);
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

  protected override outputPaddingText(): string {
    return this.outputPadding.some((p) => p !== 0) ? `, output_padding=${tupleText(this.outputPadding)}` : '';
  }
}

/** Transposed 1-d convolution over [N, C, L] input (torch.nn.ConvTranspose1d). */
export class ConvTranspose1d extends ConvTranspose {
  constructor(...args: TransposeArgs) {
    super(1, args);
  }
}

/** Transposed 2-d convolution over [N, C, H, W] input (torch.nn.ConvTranspose2d). */
export class ConvTranspose2d extends ConvTranspose {
  constructor(...args: TransposeArgs) {
    super(2, args);
  }
}

/** Transposed 3-d convolution over [N, C, D, H, W] input (torch.nn.ConvTranspose3d). */
export class ConvTranspose3d extends ConvTranspose {
  constructor(...args: TransposeArgs) {
    super(3, args);
  }
}

// The lazy convolutions (PyTorch's _LazyConvXdMixin): inChannels is dim 1 of the first
// input (dim 0 of an unbatched one).
const LAZY_CONV: LazySpec<_ConvNd<number[]>> = {
  size: (m) => m.inChannels,
  placeholders: ['weight', 'bias'],
  initialize(m, input) {
    const spatial = m.kernelSize.length;
    if (input.ndim !== spatial + 1 && input.ndim !== spatial + 2) {
      throw new RangeError(
        `Expected ${spatial + 1}D (unbatched) or ${spatial + 2}D (batched) input, but got input of size: [${input.shape.join(', ')}]`,
      );
    }
    const inChannels = input.ndim === spatial + 2 ? input.shape[1] : input.shape[0];
    if (inChannels % m.groups !== 0) throw new RangeError('in_channels must be divisible by groups');
    setInferredSize(m, 'inChannels', inChannels);
    const [weightIn, weightOut] =
      m instanceof ConvTranspose ? [inChannels, m.outChannels] : [m.outChannels, inChannels];
    materialize(m.weight, [weightIn, weightOut / m.groups, ...m.kernelSize]);
    if (m.bias !== null) materialize(m.bias, [m.outChannels]);
  },
};

/** Conv1d whose inChannels comes from the first input (torch.nn.LazyConv1d). */
export class LazyConv1d extends LazyModuleMixin(Conv1d, LAZY_CONV) {
  constructor(...args: LazyArgs<number | [number], Conv1dOptions>) {
    const { outChannels, kernelSize, ...opts } = bind<LazyParams<number | [number], Conv1dOptions>>(
      LAZY_CONV_SIG,
      args,
      'LazyConv1d',
    );
    super(0, outChannels, kernelSize, opts);
  }
}

/** Conv2d whose inChannels comes from the first input (torch.nn.LazyConv2d). */
export class LazyConv2d extends LazyModuleMixin(Conv2d, LAZY_CONV) {
  constructor(...args: LazyArgs<number | number[], Conv2dOptions>) {
    const { outChannels, kernelSize, ...opts } = bind<LazyParams<number | number[], Conv2dOptions>>(
      LAZY_CONV_SIG,
      args,
      'LazyConv2d',
    );
    super(0, outChannels, kernelSize, opts);
  }
}

/** Conv3d whose inChannels comes from the first input (torch.nn.LazyConv3d). */
export class LazyConv3d extends LazyModuleMixin(Conv3d, LAZY_CONV) {
  constructor(...args: LazyArgs<number | number[], Conv3dOptions>) {
    const { outChannels, kernelSize, ...opts } = bind<LazyParams<number | number[], Conv3dOptions>>(
      LAZY_CONV_SIG,
      args,
      'LazyConv3d',
    );
    super(0, outChannels, kernelSize, opts);
  }
}

/** ConvTranspose1d whose inChannels comes from the first input (torch.nn.LazyConvTranspose1d). */
export class LazyConvTranspose1d extends LazyModuleMixin(ConvTranspose1d, LAZY_CONV) {
  constructor(...args: LazyTransposeArgs) {
    const cls = 'LazyConvTranspose1d';
    const { outChannels, kernelSize, ...opts } = bind<LazyParams<Ints, ConvTransposeOptions>>(
      LAZY_TRANSPOSE_SIG,
      args,
      cls,
    );
    super(0, outChannels, kernelSize, opts);
  }
}

/** ConvTranspose2d whose inChannels comes from the first input (torch.nn.LazyConvTranspose2d). */
export class LazyConvTranspose2d extends LazyModuleMixin(ConvTranspose2d, LAZY_CONV) {
  constructor(...args: LazyTransposeArgs) {
    const cls = 'LazyConvTranspose2d';
    const { outChannels, kernelSize, ...opts } = bind<LazyParams<Ints, ConvTransposeOptions>>(
      LAZY_TRANSPOSE_SIG,
      args,
      cls,
    );
    super(0, outChannels, kernelSize, opts);
  }
}

/** ConvTranspose3d whose inChannels comes from the first input (torch.nn.LazyConvTranspose3d). */
export class LazyConvTranspose3d extends LazyModuleMixin(ConvTranspose3d, LAZY_CONV) {
  constructor(...args: LazyTransposeArgs) {
    const cls = 'LazyConvTranspose3d';
    const { outChannels, kernelSize, ...opts } = bind<LazyParams<Ints, ConvTransposeOptions>>(
      LAZY_TRANSPOSE_SIG,
      args,
      cls,
    );
    super(0, outChannels, kernelSize, opts);
  }
}

// linear and the convolutions with torch.nn.functional's arguments, positional or by name
// (nn/args.ts).
import * as t from '../../core/index.ts';
import { type Args, bind, define, signature } from '../args.ts';
import type { IntOrPair } from './common.ts';

export const linear = define(
  'linear',
  { required: ['input', 'weight'], optional: ['bias'] },
  ({ input, weight, bias = null }: { input: t.Tensor; weight: t.Tensor; bias?: t.Tensor | null }): t.Tensor =>
    t.linear(input, weight, bias),
);

export interface ConvOptions {
  stride?: IntOrPair;
  /** Zero padding per side, or 'valid' (none) / 'same' (output size = input size; stride 1 only). */
  padding?: IntOrPair | 'same' | 'valid';
  dilation?: IntOrPair;
  groups?: number;
}

/** @deprecated the same as ConvOptions (kept for code written against tsddp's first API). */
export type Conv2dOptions = ConvOptions;

function paddingArg(padding: IntOrPair | 'same' | 'valid'): IntOrPair | 'same' | 'valid' {
  if (typeof padding === 'string' && padding !== 'same' && padding !== 'valid') {
    throw new RangeError(`Invalid padding string '${padding}', should be one of 'valid', 'same'`);
  }
  return padding;
}

/** The parameters of F.conv{1,2,3}d by name. */
type ConvParams = { input: t.Tensor; weight: t.Tensor; bias?: t.Tensor | null } & ConvOptions;

const CONV = signature(['conv1d', 'conv2d', 'conv3d'], {
  required: ['input', 'weight'],
  optional: ['bias', 'stride', 'padding', 'dilation', 'groups'],
});

type ConvFn = (...args: Args<typeof CONV, ConvParams>) => t.Tensor;

/** F.conv{1,2,3}d over aten::conv{N}d (integer padding) or its `.padding` overload ('same'/'valid'). */
function convNd(dims: 1 | 2 | 3): ConvFn {
  const fn = `conv${dims}d`;
  const [numeric, named] = [`aten::conv${dims}d`, `aten::conv${dims}d.padding`];
  return (...args) => {
    const {
      input,
      weight,
      bias = null,
      stride = 1,
      dilation = 1,
      groups = 1,
      ...a
    } = bind<ConvParams>(CONV, args, fn);
    const padding = paddingArg(a.padding ?? 0);
    const op = typeof padding === 'string' ? named : numeric;
    return t.ops.call(op, input, weight, bias, stride, padding, dilation, groups) as t.Tensor;
  };
}

/** 1-d convolution over [N, C, L] (or [C, L]) input; weight [out, in/groups, k]. */
export const conv1d: ConvFn = convNd(1);
/** 2-d convolution over [N, C, H, W] (or [C, H, W]) input; weight [out, in/groups, kH, kW]. */
export const conv2d: ConvFn = convNd(2);
/** 3-d convolution over [N, C, D, H, W] input; weight [out, in/groups, kD, kH, kW]. */
export const conv3d: ConvFn = convNd(3);

export interface ConvTransposeOptions {
  stride?: IntOrPair;
  padding?: IntOrPair;
  /** Extra size added to one side of each output dim. Default 0. */
  outputPadding?: IntOrPair;
  groups?: number;
  dilation?: IntOrPair;
}

type ConvTransposeParams = {
  input: t.Tensor;
  weight: t.Tensor;
  bias?: t.Tensor | null;
} & ConvTransposeOptions;

const CONV_TRANSPOSE = signature(['convTranspose1d', 'convTranspose2d', 'convTranspose3d'], {
  required: ['input', 'weight'],
  optional: ['bias', 'stride', 'padding', 'outputPadding', 'groups', 'dilation'],
});

type ConvTransposeFn = (...args: Args<typeof CONV_TRANSPOSE, ConvTransposeParams>) => t.Tensor;

/** F.conv_transpose{1,2,3}d over aten's op of that name. */
function convTransposeNd(dims: 1 | 2 | 3, op: string): ConvTransposeFn {
  const fn = `convTranspose${dims}d`;
  return (...args) => {
    const a = bind<ConvTransposeParams>(CONV_TRANSPOSE, args, fn);
    const {
      input,
      weight,
      bias = null,
      stride = 1,
      padding = 0,
      outputPadding = 0,
      groups = 1,
      dilation = 1,
    } = a;
    return t.ops.call(op, input, weight, bias, stride, padding, outputPadding, groups, dilation) as t.Tensor;
  };
}

/** Transposed 1-d convolution; weight [in, out/groups, k]. */
export const convTranspose1d: ConvTransposeFn = convTransposeNd(1, 'aten::conv_transpose1d');
/** Transposed 2-d convolution; weight [in, out/groups, kH, kW]. */
export const convTranspose2d: ConvTransposeFn = convTransposeNd(2, 'aten::conv_transpose2d.input');
/** Transposed 3-d convolution; weight [in, out/groups, kD, kH, kW]. */
export const convTranspose3d: ConvTransposeFn = convTransposeNd(3, 'aten::conv_transpose3d.input');

/** 1-d convolution over time-batch-channel [T, N, C] input; weight [k, in, out]. */
export const convTbc = define(
  'convTbc',
  { required: ['input', 'weight', 'bias'], optional: ['pad'] },
  ({ input, weight, bias, pad = 0 }: { input: t.Tensor; weight: t.Tensor; bias: t.Tensor; pad?: number }) =>
    t.ops.call('aten::conv_tbc', input, weight, bias, pad) as t.Tensor,
);

/** y = x1ᵀ·A·x2 + b, with weight [out, in1, in2]. */
export const bilinear = define(
  'bilinear',
  { required: ['input1', 'input2', 'weight'], optional: ['bias'] },
  ({ input1, input2, weight, bias = null }: BilinearParams): t.Tensor =>
    t.ops.call('aten::bilinear', input1, input2, weight, bias) as t.Tensor,
);

interface BilinearParams {
  input1: t.Tensor;
  input2: t.Tensor;
  weight: t.Tensor;
  bias?: t.Tensor | null;
}

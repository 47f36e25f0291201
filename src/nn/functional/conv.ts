// linear and the convolutions with torch.nn.functional's arguments.
import * as t from '../../core/index.ts';
import type { IntOrPair } from './common.ts';

export function linear(input: t.Tensor, weight: t.Tensor, bias: t.Tensor | null = null): t.Tensor {
  return t.linear(input, weight, bias);
}

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

type ConvFn = (input: t.Tensor, weight: t.Tensor, bias?: t.Tensor | null, opts?: ConvOptions) => t.Tensor;

/** F.conv{1,2,3}d over aten::conv{N}d (integer padding) or its `.padding` overload ('same'/'valid'). */
function convNd(dims: 1 | 2 | 3): ConvFn {
  const [numeric, named] = [`aten::conv${dims}d`, `aten::conv${dims}d.padding`];
  return (input, weight, bias = null, opts = {}) => {
    const padding = paddingArg(opts.padding ?? 0);
    const op = typeof padding === 'string' ? named : numeric;
    const { stride = 1, dilation = 1, groups = 1 } = opts;
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

type ConvTransposeFn = (
  input: t.Tensor,
  weight: t.Tensor,
  bias?: t.Tensor | null,
  opts?: ConvTransposeOptions,
) => t.Tensor;

/** F.conv_transpose{1,2,3}d over aten's op of that name. */
function convTransposeNd(op: string): ConvTransposeFn {
  return (input, weight, bias = null, opts = {}) => {
    const { stride = 1, padding = 0, outputPadding = 0, groups = 1, dilation = 1 } = opts;
    return t.ops.call(op, input, weight, bias, stride, padding, outputPadding, groups, dilation) as t.Tensor;
  };
}

/** Transposed 1-d convolution; weight [in, out/groups, k]. */
export const convTranspose1d: ConvTransposeFn = convTransposeNd('aten::conv_transpose1d');
/** Transposed 2-d convolution; weight [in, out/groups, kH, kW]. */
export const convTranspose2d: ConvTransposeFn = convTransposeNd('aten::conv_transpose2d.input');
/** Transposed 3-d convolution; weight [in, out/groups, kD, kH, kW]. */
export const convTranspose3d: ConvTransposeFn = convTransposeNd('aten::conv_transpose3d.input');

/** 1-d convolution over time-batch-channel [T, N, C] input; weight [k, in, out]. */
export function convTbc(input: t.Tensor, weight: t.Tensor, bias: t.Tensor, pad = 0): t.Tensor {
  return t.ops.call('aten::conv_tbc', input, weight, bias, pad) as t.Tensor;
}

/** y = x1ᵀ·A·x2 + b, with weight [out, in1, in2]. */
export function bilinear(
  input1: t.Tensor,
  input2: t.Tensor,
  weight: t.Tensor,
  bias: t.Tensor | null = null,
): t.Tensor {
  return t.ops.call('aten::bilinear', input1, input2, weight, bias) as t.Tensor;
}

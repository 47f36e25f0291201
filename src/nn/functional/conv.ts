// linear, conv1d and conv2d with torch.nn.functional's arguments.
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

/** 1-d convolution over [N, C, L] (or [C, L]) input; weight [out, in/groups, k]. */
export function conv1d(
  input: t.Tensor,
  weight: t.Tensor,
  bias: t.Tensor | null = null,
  opts: ConvOptions = {},
): t.Tensor {
  const padding = paddingArg(opts.padding ?? 0);
  const stride = opts.stride ?? 1;
  const dilation = opts.dilation ?? 1;
  const groups = opts.groups ?? 1;
  return typeof padding === 'string'
    ? t.conv1d(input, weight, bias, stride, padding, dilation, groups)
    : t.conv1d(input, weight, bias, stride, padding, dilation, groups);
}

/** 2-d convolution over [N, C, H, W] (or [C, H, W]) input; weight [out, in/groups, kH, kW]. */
export function conv2d(
  input: t.Tensor,
  weight: t.Tensor,
  bias: t.Tensor | null = null,
  opts: ConvOptions = {},
): t.Tensor {
  const padding = paddingArg(opts.padding ?? 0);
  const stride = opts.stride ?? 1;
  const dilation = opts.dilation ?? 1;
  const groups = opts.groups ?? 1;
  return typeof padding === 'string'
    ? t.conv2d(input, weight, bias, stride, padding, dilation, groups)
    : t.conv2d(input, weight, bias, stride, padding, dilation, groups);
}

/** 3-d convolution over [N, C, D, H, W] input; weight [out, in/groups, kD, kH, kW]. */
export function conv3d(
  input: t.Tensor,
  weight: t.Tensor,
  bias: t.Tensor | null = null,
  opts: ConvOptions = {},
): t.Tensor {
  const padding = paddingArg(opts.padding ?? 0);
  return t.ops.call(
    typeof padding === 'string' ? 'aten::conv3d.padding' : 'aten::conv3d',
    input,
    weight,
    bias,
    opts.stride ?? 1,
    padding,
    opts.dilation ?? 1,
    opts.groups ?? 1,
  ) as t.Tensor;
}

export interface ConvTransposeOptions {
  stride?: IntOrPair;
  padding?: IntOrPair;
  /** Extra size added to one side of each output dim. Default 0. */
  outputPadding?: IntOrPair;
  groups?: number;
  dilation?: IntOrPair;
}

/** Transposed 1-d convolution; weight [in, out/groups, k]. */
export function convTranspose1d(
  input: t.Tensor,
  weight: t.Tensor,
  bias: t.Tensor | null = null,
  opts: ConvTransposeOptions = {},
): t.Tensor {
  return t.ops.call(
    'aten::conv_transpose1d',
    input,
    weight,
    bias,
    opts.stride ?? 1,
    opts.padding ?? 0,
    opts.outputPadding ?? 0,
    opts.groups ?? 1,
    opts.dilation ?? 1,
  ) as t.Tensor;
}

/** Transposed 2-d convolution; weight [in, out/groups, kH, kW]. */
export function convTranspose2d(
  input: t.Tensor,
  weight: t.Tensor,
  bias: t.Tensor | null = null,
  opts: ConvTransposeOptions = {},
): t.Tensor {
  return t.ops.call(
    'aten::conv_transpose2d.input',
    input,
    weight,
    bias,
    opts.stride ?? 1,
    opts.padding ?? 0,
    opts.outputPadding ?? 0,
    opts.groups ?? 1,
    opts.dilation ?? 1,
  ) as t.Tensor;
}

/** Transposed 3-d convolution; weight [in, out/groups, kD, kH, kW]. */
export function convTranspose3d(
  input: t.Tensor,
  weight: t.Tensor,
  bias: t.Tensor | null = null,
  opts: ConvTransposeOptions = {},
): t.Tensor {
  return t.ops.call(
    'aten::conv_transpose3d.input',
    input,
    weight,
    bias,
    opts.stride ?? 1,
    opts.padding ?? 0,
    opts.outputPadding ?? 0,
    opts.groups ?? 1,
    opts.dilation ?? 1,
  ) as t.Tensor;
}

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

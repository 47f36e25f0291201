// nn.functional: the stateless forms of the layers, with torch.nn.functional's argument
// names and defaults (keyword arguments as a trailing options object).
import * as t from '../core/index.ts';

export { type CrossEntropyOptions, crossEntropy, type Reduction } from '../core/index.ts';

export type IntOrPair = number | [number, number] | number[];

export function linear(input: t.Tensor, weight: t.Tensor, bias: t.Tensor | null = null): t.Tensor {
  return t.linear(input, weight, bias);
}

export interface Conv2dOptions {
  stride?: IntOrPair;
  /** Zero padding per side, or 'valid' (none) / 'same' (output size = input size; stride 1 only). */
  padding?: IntOrPair | 'same' | 'valid';
  dilation?: IntOrPair;
  groups?: number;
}

export function conv2d(
  input: t.Tensor,
  weight: t.Tensor,
  bias: t.Tensor | null = null,
  opts: Conv2dOptions = {},
): t.Tensor {
  const stride = opts.stride ?? 1;
  const dilation = opts.dilation ?? 1;
  const groups = opts.groups ?? 1;
  const padding = opts.padding ?? 0;
  if (typeof padding === 'string') {
    if (padding !== 'same' && padding !== 'valid') {
      throw new RangeError(`Invalid padding string '${padding}', should be one of 'valid', 'same'`);
    }
    return t.conv2d(input, weight, bias, stride, padding, dilation, groups);
  }
  return t.conv2d(input, weight, bias, stride, padding, dilation, groups);
}

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

function verifyBatchSize(size: number[]): void {
  let n = size[0];
  for (let i = 2; i < size.length; i++) n *= size[i];
  if (n === 1) {
    throw new RangeError(
      `Expected more than 1 value per channel when training, got input size [${size.join(', ')}]`,
    );
  }
}

export function relu(input: t.Tensor, opts: { inplace?: boolean } = {}): t.Tensor {
  return opts.inplace ? input.relu_() : t.relu(input);
}

export interface MaxPool2dOptions {
  /** Default: kernelSize. */
  stride?: IntOrPair | null;
  padding?: IntOrPair;
  dilation?: IntOrPair;
  ceilMode?: boolean;
}

export function maxPool2d(input: t.Tensor, kernelSize: IntOrPair, opts: MaxPool2dOptions = {}): t.Tensor {
  return t.maxPool2d(
    input,
    kernelSize,
    opts.stride ?? kernelSize,
    opts.padding ?? 0,
    opts.dilation ?? 1,
    opts.ceilMode ?? false,
  );
}

/** max_pool2d with return_indices=True: [output, indices]. */
export function maxPool2dWithIndices(
  input: t.Tensor,
  kernelSize: IntOrPair,
  opts: MaxPool2dOptions = {},
): [t.Tensor, t.Tensor] {
  return t.maxPool2dWithIndices(
    input,
    kernelSize,
    opts.stride ?? kernelSize,
    opts.padding ?? 0,
    opts.dilation ?? 1,
    opts.ceilMode ?? false,
  );
}

export function adaptiveAvgPool2d(input: t.Tensor, outputSize: IntOrPair): t.Tensor {
  return t.adaptiveAvgPool2d(input, outputSize);
}

/** torch.flatten: dims startDim..endDim merged into one. */
export function flatten(input: t.Tensor, startDim = 0, endDim = -1): t.Tensor {
  return t.flatten(input, startDim, endDim);
}

export interface DropoutOptions {
  /** Probability of zeroing an element. Default 0.5. */
  p?: number;
  /** Apply dropout (false: identity). Default true, as in torch.nn.functional. */
  training?: boolean;
  inplace?: boolean;
}

/** Zeroes elements with probability p and scales the rest by 1/(1-p), in training only. */
export function dropout(input: t.Tensor, opts: DropoutOptions = {}): t.Tensor {
  const p = opts.p ?? 0.5;
  if (!(p >= 0 && p <= 1))
    throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  const training = opts.training ?? true;
  return opts.inplace ? t.dropout_(input, p, training) : t.dropout(input, p, training);
}

/** torch.nn.functional.nll_loss. */
export function nllLoss(
  input: t.Tensor,
  target: t.Tensor,
  opts: Omit<t.CrossEntropyOptions, 'labelSmoothing'> = {},
): t.Tensor {
  return t.nll(input, target, opts);
}

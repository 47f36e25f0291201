// nn.init: in-place initialisers with torch.nn.init's formulas. The scalar arithmetic
// follows PyTorch's expression order exactly (JS numbers are IEEE doubles like Python
// floats), and the random draws are libtorch's own uniform_/normal_ kernels on the
// same generator, so a seeded model initialises bit-for-bit as in PyTorch.
import { noGrad } from '../autograd/index.ts';
import type * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';

export type Nonlinearity =
  | 'linear'
  | 'conv1d'
  | 'conv2d'
  | 'conv3d'
  | 'conv_transpose1d'
  | 'conv_transpose2d'
  | 'conv_transpose3d'
  | 'sigmoid'
  | 'tanh'
  | 'relu'
  | 'leaky_relu'
  | 'leakyRelu'
  | 'selu';

/** 'fanIn' keeps the variance of activations in the forward pass, 'fanOut' of gradients in backward. */
export type FanMode = 'fanIn' | 'fanOut' | 'fan_in' | 'fan_out';

export interface RandomInitOptions {
  generator?: t.Generator;
}

export interface KaimingOptions extends RandomInitOptions {
  /** Negative slope of the rectifier after this layer (leaky_relu only). Default 0. */
  a?: number;
  mode?: FanMode;
  nonlinearity?: Nonlinearity;
}

const RANDOM = optionNames<RandomInitOptions>({ generator: true });
const KAIMING = optionNames<KaimingOptions>({ generator: true, a: true, mode: true, nonlinearity: true });

const LINEAR_FNS = new Set([
  'linear',
  'conv1d',
  'conv2d',
  'conv3d',
  'conv_transpose1d',
  'conv_transpose2d',
  'conv_transpose3d',
]);

/** The recommended gain for a nonlinearity (torch.nn.init.calculate_gain). */
export function calculateGain(nonlinearity: Nonlinearity, param?: number): number {
  if (LINEAR_FNS.has(nonlinearity) || nonlinearity === 'sigmoid') return 1;
  if (nonlinearity === 'tanh') return 5.0 / 3;
  if (nonlinearity === 'relu') return Math.sqrt(2.0);
  if (nonlinearity === 'leaky_relu' || nonlinearity === 'leakyRelu') {
    let slope = 0.01;
    if (param !== undefined) {
      if (typeof param !== 'number' || Number.isNaN(param)) {
        throw new TypeError(`negative_slope ${String(param)} not a valid number`);
      }
      slope = param;
    }
    return Math.sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity === 'selu') return 3.0 / 4;
  throw new RangeError(`Unsupported nonlinearity ${String(nonlinearity)}`);
}

/** [fanIn, fanOut] of a weight: dim 1 and dim 0 times the receptive field size. */
export function calculateFanInAndFanOut(tensor: t.Tensor): [number, number] {
  const shape = tensor.shape;
  if (shape.length < 2) {
    throw new RangeError('Fan in and fan out can not be computed for tensor with fewer than 2 dimensions');
  }
  let receptiveField = 1;
  for (let i = 2; i < shape.length; i++) receptiveField *= shape[i];
  return [shape[1] * receptiveField, shape[0] * receptiveField];
}

function correctFan(tensor: t.Tensor, mode: FanMode): number {
  const [fanIn, fanOut] = calculateFanInAndFanOut(tensor);
  if (mode === 'fanIn' || mode === 'fan_in') return fanIn;
  if (mode === 'fanOut' || mode === 'fan_out') return fanOut;
  throw new RangeError(`Mode ${String(mode)} not supported, please use one of fanIn, fanOut`);
}

function gen(opts: RandomInitOptions): { generator?: t.Generator } {
  return opts.generator ? { generator: opts.generator } : {};
}

/** Fills with U(a, b). */
export function uniform_(tensor: t.Tensor, a = 0, b = 1, options?: RandomInitOptions): t.Tensor {
  const opts = checkOptions('uniform_', options, RANDOM);
  return noGrad(() => tensor.uniform_(a, b, gen(opts)));
}

/** Fills with N(mean, std²). */
export function normal_(tensor: t.Tensor, mean = 0, std = 1, options?: RandomInitOptions): t.Tensor {
  const opts = checkOptions('normal_', options, RANDOM);
  return noGrad(() => tensor.normal_(mean, std, gen(opts)));
}

export function constant_(tensor: t.Tensor, val: number): t.Tensor {
  return noGrad(() => tensor.fill_(val));
}

export function ones_(tensor: t.Tensor): t.Tensor {
  return constant_(tensor, 1);
}

export function zeros_(tensor: t.Tensor): t.Tensor {
  return noGrad(() => tensor.zero_());
}

/** Glorot uniform: U(-a, a) with a = gain·sqrt(6 / (fanIn + fanOut)). */
export function xavierUniform_(tensor: t.Tensor, gain = 1, options?: RandomInitOptions): t.Tensor {
  const opts = checkOptions('xavierUniform_', options, RANDOM);
  const [fanIn, fanOut] = calculateFanInAndFanOut(tensor);
  const std = gain * Math.sqrt(2.0 / (fanIn + fanOut));
  const a = Math.sqrt(3.0) * std;
  return uniform_(tensor, -a, a, opts);
}

/** Glorot normal: N(0, std²) with std = gain·sqrt(2 / (fanIn + fanOut)). */
export function xavierNormal_(tensor: t.Tensor, gain = 1, options?: RandomInitOptions): t.Tensor {
  const opts = checkOptions('xavierNormal_', options, RANDOM);
  const [fanIn, fanOut] = calculateFanInAndFanOut(tensor);
  const std = gain * Math.sqrt(2.0 / (fanIn + fanOut));
  return normal_(tensor, 0, std, opts);
}

/** He uniform: U(-bound, bound), bound = gain·sqrt(3 / fan). Defaults as PyTorch (a 0, fanIn, leaky_relu). */
export function kaimingUniform_(tensor: t.Tensor, options?: KaimingOptions): t.Tensor {
  const opts = checkOptions('kaimingUniform_', options, KAIMING);
  // PyTorch skips zero-element tensors (their fan may be 0).
  if (tensor.numel() === 0) return tensor;
  const fan = correctFan(tensor, opts.mode ?? 'fanIn');
  const gain = calculateGain(opts.nonlinearity ?? 'leaky_relu', opts.a ?? 0);
  const std = gain / Math.sqrt(fan);
  const bound = Math.sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound, { generator: opts.generator });
}

/** He normal: N(0, std²), std = gain / sqrt(fan). Defaults as PyTorch (a 0, fanIn, leaky_relu). */
export function kaimingNormal_(tensor: t.Tensor, options?: KaimingOptions): t.Tensor {
  const opts = checkOptions('kaimingNormal_', options, KAIMING);
  // PyTorch skips zero-element tensors (their fan may be 0).
  if (tensor.numel() === 0) return tensor;
  const fan = correctFan(tensor, opts.mode ?? 'fanIn');
  const gain = calculateGain(opts.nonlinearity ?? 'leaky_relu', opts.a ?? 0);
  const std = gain / Math.sqrt(fan);
  return normal_(tensor, 0, std, { generator: opts.generator });
}

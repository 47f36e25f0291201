// Conv1d and Conv2d.
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import { type FactoryOptions, resetWeightAndBias } from './linear.ts';

export interface Conv2dOptions extends FactoryOptions {
  stride?: F.IntOrPair;
  padding?: F.IntOrPair | 'same' | 'valid';
  dilation?: F.IntOrPair;
  groups?: number;
  bias?: boolean;
  /** Only 'zeros' (the default) is supported. */
  paddingMode?: 'zeros';
}

function pair(v: F.IntOrPair, name: string): [number, number] {
  const p = typeof v === 'number' ? [v, v] : v;
  if (p.length !== 2 || !p.every((x) => Number.isInteger(x))) {
    throw new TypeError(`Conv2d: ${name} must be an integer or a pair of integers, got ${JSON.stringify(v)}`);
  }
  return [p[0], p[1]];
}

/** 2-d convolution over [N, C, H, W] input; weight [out, in/groups, kH, kW]. */
export class Conv2d extends Module {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernelSize: [number, number];
  readonly stride: [number, number];
  readonly padding: [number, number] | 'same' | 'valid';
  readonly dilation: [number, number];
  readonly groups: number;
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(inChannels: number, outChannels: number, kernelSize: F.IntOrPair, opts: Conv2dOptions = {}) {
    super();
    const groups = opts.groups ?? 1;
    if (!Number.isInteger(groups) || groups <= 0) throw new RangeError('groups must be a positive integer');
    if (inChannels % groups !== 0) throw new RangeError('in_channels must be divisible by groups');
    if (outChannels % groups !== 0) throw new RangeError('out_channels must be divisible by groups');
    if ((opts.paddingMode ?? 'zeros') !== 'zeros') {
      throw new RangeError(`Conv2d: paddingMode '${opts.paddingMode}' is not supported (only 'zeros')`);
    }
    this.inChannels = inChannels;
    this.outChannels = outChannels;
    this.kernelSize = pair(kernelSize, 'kernelSize');
    this.stride = pair(opts.stride ?? 1, 'stride');
    this.dilation = pair(opts.dilation ?? 1, 'dilation');
    const padding = opts.padding ?? 0;
    if (typeof padding === 'string') {
      if (padding !== 'same' && padding !== 'valid') {
        throw new RangeError(`Invalid padding string '${padding}', should be one of 'valid', 'same'`);
      }
      if (padding === 'same' && (this.stride[0] !== 1 || this.stride[1] !== 1)) {
        throw new RangeError("padding='same' is not supported for strided convolutions");
      }
      this.padding = padding;
    } else {
      this.padding = pair(padding, 'padding');
    }
    this.groups = groups;
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter(
      'weight',
      Parameter(t.empty([outChannels, inChannels / groups, ...this.kernelSize], factory)),
    );
    this.bias = this.registerParameter(
      'bias',
      opts.bias === false ? null : Parameter(t.empty([outChannels], factory)),
    );
    this.resetParameters();
  }

  /** kaiming_uniform_(a=√5) for the weight, U(±1/√fanIn) for the bias, as torch.nn.Conv2d. */
  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.conv2d(input, this.weight, this.bias, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      groups: this.groups,
    });
  }

  override extraRepr(): string {
    const tup = (p: [number, number]) => `(${p[0]}, ${p[1]})`;
    let s = `${this.inChannels}, ${this.outChannels}, kernel_size=${tup(this.kernelSize)}, stride=${tup(this.stride)}`;
    if (typeof this.padding === 'string') s += `, padding=${this.padding}`;
    else if (this.padding[0] !== 0 || this.padding[1] !== 0) s += `, padding=${tup(this.padding)}`;
    if (this.dilation[0] !== 1 || this.dilation[1] !== 1) s += `, dilation=${tup(this.dilation)}`;
    if (this.groups !== 1) s += `, groups=${this.groups}`;
    if (this.bias === null) s += ', bias=False';
    return s;
  }
}

export interface Conv1dOptions extends FactoryOptions {
  stride?: number | [number];
  padding?: number | [number] | 'same' | 'valid';
  dilation?: number | [number];
  groups?: number;
  bias?: boolean;
  /** Only 'zeros' (the default) is supported. */
  paddingMode?: 'zeros';
}

function single(v: number | number[], name: string): [number] {
  const p = typeof v === 'number' ? [v] : v;
  if (p.length !== 1 || !Number.isInteger(p[0])) {
    throw new TypeError(
      `Conv1d: ${name} must be an integer or a 1-tuple of integers, got ${JSON.stringify(v)}`,
    );
  }
  return [p[0]];
}

/** 1-d convolution over [N, C, L] input; weight [out, in/groups, k] (torch.nn.Conv1d). */
export class Conv1d extends Module {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernelSize: [number];
  readonly stride: [number];
  readonly padding: [number] | 'same' | 'valid';
  readonly dilation: [number];
  readonly groups: number;
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: number | [number],
    opts: Conv1dOptions = {},
  ) {
    super();
    const groups = opts.groups ?? 1;
    if (!Number.isInteger(groups) || groups <= 0) throw new RangeError('groups must be a positive integer');
    if (inChannels % groups !== 0) throw new RangeError('in_channels must be divisible by groups');
    if (outChannels % groups !== 0) throw new RangeError('out_channels must be divisible by groups');
    if ((opts.paddingMode ?? 'zeros') !== 'zeros') {
      throw new RangeError(`Conv1d: paddingMode '${opts.paddingMode}' is not supported (only 'zeros')`);
    }
    this.inChannels = inChannels;
    this.outChannels = outChannels;
    this.kernelSize = single(kernelSize, 'kernelSize');
    this.stride = single(opts.stride ?? 1, 'stride');
    this.dilation = single(opts.dilation ?? 1, 'dilation');
    const padding = opts.padding ?? 0;
    if (typeof padding === 'string') {
      if (padding !== 'same' && padding !== 'valid') {
        throw new RangeError(`Invalid padding string '${padding}', should be one of 'valid', 'same'`);
      }
      if (padding === 'same' && this.stride[0] !== 1) {
        throw new RangeError("padding='same' is not supported for strided convolutions");
      }
      this.padding = padding;
    } else {
      this.padding = single(padding, 'padding');
    }
    this.groups = groups;
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter(
      'weight',
      Parameter(t.empty([outChannels, inChannels / groups, ...this.kernelSize], factory)),
    );
    this.bias = this.registerParameter(
      'bias',
      opts.bias === false ? null : Parameter(t.empty([outChannels], factory)),
    );
    this.resetParameters();
  }

  /** kaiming_uniform_(a=√5) for the weight, U(±1/√fanIn) for the bias, as torch.nn.Conv1d. */
  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.conv1d(input, this.weight, this.bias, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      groups: this.groups,
    });
  }

  override extraRepr(): string {
    const tup = (p: [number]) => `(${p[0]},)`;
    let s = `${this.inChannels}, ${this.outChannels}, kernel_size=${tup(this.kernelSize)}, stride=${tup(this.stride)}`;
    if (typeof this.padding === 'string') s += `, padding=${this.padding}`;
    else if (this.padding[0] !== 0) s += `, padding=${tup(this.padding)}`;
    if (this.dilation[0] !== 1) s += `, dilation=${tup(this.dilation)}`;
    if (this.groups !== 1) s += `, groups=${this.groups}`;
    if (this.bias === null) s += ', bias=False';
    return s;
  }
}

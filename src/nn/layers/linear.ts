// Linear, Identity and Flatten.
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';

export interface FactoryOptions {
  /** A dtype or one of PyTorch's aliases ('double', 'half', ...). */
  dtype?: t.DTypeName;
  device?: t.DeviceLike;
}

/** y = x·Wᵀ + b, with weight [outFeatures, inFeatures] and PyTorch's default init. */
export class Linear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(inFeatures: number, outFeatures: number, opts: { bias?: boolean } & FactoryOptions = {}) {
    super();
    this.inFeatures = inFeatures;
    this.outFeatures = outFeatures;
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter('weight', Parameter(t.empty([outFeatures, inFeatures], factory)));
    this.bias = this.registerParameter(
      'bias',
      opts.bias === false ? null : Parameter(t.empty([outFeatures], factory)),
    );
    this.resetParameters();
  }

  /** kaiming_uniform_(a=√5) for the weight, U(±1/√fanIn) for the bias, as torch.nn.Linear. */
  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.linear(input, this.weight, this.bias);
  }

  override extraRepr(): string {
    return `in_features=${this.inFeatures}, out_features=${this.outFeatures}, bias=${this.bias !== null ? 'True' : 'False'}`;
  }
}

/** The default init of torch.nn.Linear and torch.nn.Conv*d. */
export function resetWeightAndBias(weight: t.Tensor, bias: t.Tensor | null): void {
  init.kaimingUniform_(weight, { a: Math.sqrt(5) });
  if (bias !== null) {
    const [fanIn] = init.calculateFanInAndFanOut(weight);
    const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
    init.uniform_(bias, -bound, bound);
  }
}

/** Returns its input unchanged (the same tensor). */
export class Identity extends Module {
  override forward(input: t.Tensor): t.Tensor {
    return input;
  }
}

/** Flattens dims startDim..endDim (default 1..-1: everything but the batch dim). */
export class Flatten extends Module {
  constructor(
    readonly startDim = 1,
    readonly endDim = -1,
  ) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.flatten(input, this.startDim, this.endDim);
  }

  override extraRepr(): string {
    return `start_dim=${this.startDim}, end_dim=${this.endDim}`;
  }
}

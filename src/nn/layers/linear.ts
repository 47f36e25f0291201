// torch.nn.modules.linear: Identity, Linear, Bilinear and LazyLinear, with PyTorch's
// parameter names and default init; also the factory options (dtype, device) and the
// Linear/Conv init that the other layers share.
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import { LazyModuleMixin, type LazySpec, materialize, setInferredSize } from './lazy.ts';

export interface FactoryOptions {
  /** A dtype or one of PyTorch's aliases ('double', 'half', ...). */
  dtype?: t.DTypeName;
  device?: t.DeviceLike;
}

/**
 * Registers `weight` (of `weightShape`) and, unless `opts.bias` is false, `bias` ([size]) on
 * `m`, both uninitialized for its resetParameters: the parameters of Linear, Bilinear and
 * the convolutions.
 */
export function registerWeightAndBias(
  m: Module,
  weightShape: number[],
  size: number,
  opts: { bias?: boolean } & FactoryOptions,
): [t.Tensor, t.Tensor | null] {
  const factory = { dtype: opts.dtype, device: opts.device };
  const weight = m.registerParameter('weight', Parameter(t.empty(weightShape, factory)));
  const bias = m.registerParameter('bias', opts.bias === false ? null : Parameter(t.empty([size], factory)));
  return [weight, bias];
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
    [this.weight, this.bias] = registerWeightAndBias(this, [outFeatures, inFeatures], outFeatures, opts);
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

/** y = x1ᵀ·A·x2 + b (torch.nn.Bilinear): weight [out, in1, in2], bias [out], U(±1/√in1). */
export class Bilinear extends Module {
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(
    readonly in1Features: number,
    readonly in2Features: number,
    readonly outFeatures: number,
    opts: { bias?: boolean } & FactoryOptions = {},
  ) {
    super();
    const weightShape = [outFeatures, in1Features, in2Features];
    [this.weight, this.bias] = registerWeightAndBias(this, weightShape, outFeatures, opts);
    this.resetParameters();
  }

  resetParameters(): void {
    const bound = 1 / Math.sqrt(this.weight.shape[1]);
    init.uniform_(this.weight, -bound, bound);
    if (this.bias !== null) init.uniform_(this.bias, -bound, bound);
  }

  override forward(input1: t.Tensor, input2: t.Tensor): t.Tensor {
    return F.bilinear(input1, input2, this.weight, this.bias);
  }

  override extraRepr(): string {
    return `in1_features=${this.in1Features}, in2_features=${this.in2Features}, out_features=${this.outFeatures}, bias=${this.bias !== null ? 'True' : 'False'}`;
  }
}

// inFeatures is input.shape[-1] of the first forward.
const LAZY_LINEAR: LazySpec<Linear> = {
  size: (m) => m.inFeatures,
  placeholders: ['weight', 'bias'],
  initialize(m, input) {
    const n = input.shape[input.ndim - 1];
    setInferredSize(m, 'inFeatures', n);
    materialize(m.weight, [m.outFeatures, n]);
    if (m.bias !== null) materialize(m.bias, [m.outFeatures]);
  },
  // After loadStateDict materialized the weight, PyTorch takes inFeatures from the input.
  initializeLoaded(m, input) {
    if (m.inFeatures !== 0) return;
    const n = input.shape[input.ndim - 1];
    if (n !== m.weight.shape[1]) {
      throw new RangeError(
        `The in_features inferred from input: ${n} is not equal to in_features from weight: ${m.weight.shape[1]}`,
      );
    }
    setInferredSize(m, 'inFeatures', n);
  },
};

/** Linear whose inFeatures is input.shape[-1] of the first forward (torch.nn.LazyLinear). */
export class LazyLinear extends LazyModuleMixin(Linear, LAZY_LINEAR) {
  constructor(outFeatures: number, opts: { bias?: boolean } & FactoryOptions = {}) {
    super(0, outFeatures, opts);
  }
}

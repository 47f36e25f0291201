// torch.nn.modules.linear: Identity, Linear, Bilinear and LazyLinear, with PyTorch's
// parameter names and default init; also the factory options (dtype, device) and the
// Linear/Conv init that the other layers share.
import * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
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

/** The options of Linear, Bilinear and LazyLinear. */
export interface LinearOptions extends FactoryOptions {
  /** Learn an additive bias. Default true. */
  bias?: boolean;
}

/**
 * Returns its input unchanged (the same tensor). Like PyTorch's, it takes any arguments
 * and uses none ("any argument (unused)"), so a model can swap it in for a layer.
 */
export class Identity extends Module {
  // Not Module's constructor, which refuses arguments: PyTorch's Identity takes (*args, **kwargs).
  constructor(..._args: unknown[]) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return input;
  }
}

const LINEAR = signature('Linear', {
  required: ['inFeatures', 'outFeatures'],
  optional: ['bias', 'device', 'dtype'],
});
type LinearParams = { inFeatures: number; outFeatures: number } & LinearOptions;

/** y = x·Wᵀ + b, with weight [outFeatures, inFeatures] and PyTorch's default init. */
export class Linear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(...args: Args<typeof LINEAR, LinearParams>) {
    super();
    const a = bind<LinearParams>(LINEAR, args, 'Linear');
    this.inFeatures = a.inFeatures;
    this.outFeatures = a.outFeatures;
    [this.weight, this.bias] = registerWeightAndBias(this, [a.outFeatures, a.inFeatures], a.outFeatures, a);
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

const BILINEAR = signature('Bilinear', {
  required: ['in1Features', 'in2Features', 'outFeatures'],
  optional: ['bias', 'device', 'dtype'],
});
type BilinearParams = { in1Features: number; in2Features: number; outFeatures: number } & LinearOptions;

/** y = x1ᵀ·A·x2 + b (torch.nn.Bilinear): weight [out, in1, in2], bias [out], U(±1/√in1). */
export class Bilinear extends Module {
  readonly in1Features: number;
  readonly in2Features: number;
  readonly outFeatures: number;
  weight: t.Tensor;
  bias: t.Tensor | null;

  constructor(...args: Args<typeof BILINEAR, BilinearParams>) {
    super();
    const a = bind<BilinearParams>(BILINEAR, args, 'Bilinear');
    this.in1Features = a.in1Features;
    this.in2Features = a.in2Features;
    this.outFeatures = a.outFeatures;
    const weightShape = [a.outFeatures, a.in1Features, a.in2Features];
    [this.weight, this.bias] = registerWeightAndBias(this, weightShape, a.outFeatures, a);
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

const LAZY_LINEAR_SIG = signature('LazyLinear', {
  required: ['outFeatures'],
  optional: ['bias', 'device', 'dtype'],
});

/** Linear whose inFeatures is input.shape[-1] of the first forward (torch.nn.LazyLinear). */
export class LazyLinear extends LazyModuleMixin(Linear, LAZY_LINEAR) {
  constructor(...args: Args<typeof LAZY_LINEAR_SIG, { outFeatures: number } & LinearOptions>) {
    const { outFeatures, ...opts } = bind<{ outFeatures: number } & LinearOptions>(
      LAZY_LINEAR_SIG,
      args,
      'LazyLinear',
    );
    super(0, outFeatures, opts);
  }
}

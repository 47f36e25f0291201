// torch.nn.modules.activation (MultiheadAttention is in attention.ts): each module is one
// functional call with its constructor arguments stored, which are PyTorch's, positional
// or by name (nn/args.ts). Modules that take the same arguments share the base that
// binds and stores them: those whose options are only `inplace`, ELU/CELU,
// Hardshrink/Softshrink, and the softmax family.
import * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import * as nnInit from '../init.ts';
import { Module, pyFloat } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

interface Inplace {
  inplace?: boolean;
}

const inplaceText = (inplace: boolean) => (inplace ? ', inplace=True' : '');

// The modules that take nothing (PyTorch's Module.__init__ refuses any argument), and
// those that take only `inplace`.
const NO_ARGS = signature(['Sigmoid', 'Tanh', 'LogSigmoid', 'Softsign', 'Tanhshrink', 'Softmax2d'], {});
type NoArgs = Args<typeof NO_ARGS, Record<never, never>>;

/** The activations PyTorch gives no parameters: an argument is refused by name, as `bind` words it. */
abstract class _NoArgs extends Module {
  constructor(...args: NoArgs) {
    super();
    bind(NO_ARGS, args, new.target.name);
  }
}
const INPLACE = signature(['ReLU', 'SiLU', 'SELU', 'Mish', 'Hardswish', 'Hardsigmoid', 'ReLU6'], {
  optional: ['inplace'],
});

/** An activation that can overwrite its input (`inplace`); the repr shows it when set. */
export abstract class _InplaceActivation extends Module {
  readonly inplace: boolean;

  /** `(inplace=False)`, PyTorch's arguments of ReLU, SiLU, ... (subclasses with more bind theirs). */
  constructor(...args: Args<typeof INPLACE, Inplace>) {
    super();
    this.inplace = bind<Inplace>(INPLACE, args, new.target.name).inplace ?? false;
  }

  override extraRepr(): string {
    return this.inplace ? 'inplace=True' : '';
  }
}

/** max(0, x); with `inplace` the input is overwritten and returned. */
export class ReLU extends _InplaceActivation {
  override forward(input: t.Tensor): t.Tensor {
    return F.relu(input, { inplace: this.inplace });
  }
}

/** x·sigmoid(x). */
export class SiLU extends _InplaceActivation {
  override forward(input: t.Tensor): t.Tensor {
    return F.silu(input, { inplace: this.inplace });
  }
}

/** Scaled ELU with PyTorch's fixed alpha and scale. */
export class SELU extends _InplaceActivation {
  override forward(input: t.Tensor): t.Tensor {
    return F.selu(input, { inplace: this.inplace });
  }
}

/** x·tanh(softplus(x)). */
export class Mish extends _InplaceActivation {
  override forward(input: t.Tensor): t.Tensor {
    return F.mish(input, { inplace: this.inplace });
  }
}

/** x·relu6(x + 3)/6. */
export class Hardswish extends _InplaceActivation {
  override forward(input: t.Tensor): t.Tensor {
    return F.hardswish(input, { inplace: this.inplace });
  }
}

/** relu6(x + 3)/6. */
export class Hardsigmoid extends _InplaceActivation {
  override forward(input: t.Tensor): t.Tensor {
    return F.hardsigmoid(input, { inplace: this.inplace });
  }
}

const LEAKY_RELU = signature('LeakyReLU', { optional: ['negativeSlope', 'inplace'] });
type LeakyReLUParams = { negativeSlope?: number } & Inplace;

/** max(0, x) + negativeSlope·min(0, x). */
export class LeakyReLU extends _InplaceActivation {
  readonly negativeSlope: number;

  constructor(...args: Args<typeof LEAKY_RELU, LeakyReLUParams>) {
    const a = bind<LeakyReLUParams>(LEAKY_RELU, args, 'LeakyReLU');
    super({ inplace: a.inplace });
    this.negativeSlope = a.negativeSlope ?? 0.01;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.leakyRelu(input, { negativeSlope: this.negativeSlope, inplace: this.inplace });
  }

  override extraRepr(): string {
    return `negative_slope=${this.negativeSlope}${inplaceText(this.inplace)}`;
  }
}

const ALPHA = signature(['ELU', 'CELU'], { optional: ['alpha', 'inplace'] });
type AlphaParams = { alpha?: number } & Inplace;

/** ELU's and CELU's alpha and `inplace`: the two take the same arguments. */
export abstract class _AlphaActivation extends _InplaceActivation {
  readonly alpha: number;

  constructor(...args: Args<typeof ALPHA, AlphaParams>) {
    const a = bind<AlphaParams>(ALPHA, args, new.target.name);
    super({ inplace: a.inplace });
    this.alpha = a.alpha ?? 1;
  }

  override extraRepr(): string {
    return `alpha=${pyFloat(this.alpha)}${inplaceText(this.inplace)}`;
  }
}

/** x for x > 0, alpha·(exp(x) - 1) otherwise. */
export class ELU extends _AlphaActivation {
  override forward(input: t.Tensor): t.Tensor {
    return F.elu(input, { alpha: this.alpha, inplace: this.inplace });
  }
}

/** max(0, x) + min(0, alpha·(exp(x/alpha) - 1)). */
export class CELU extends _AlphaActivation {
  override forward(input: t.Tensor): t.Tensor {
    return F.celu(input, { alpha: this.alpha, inplace: this.inplace });
  }
}

const HARDTANH = signature('Hardtanh', { optional: ['minVal', 'maxVal', 'inplace', 'minValue', 'maxValue'] });
interface HardtanhParams extends Inplace {
  minVal?: number;
  maxVal?: number;
  /** PyTorch's deprecated name of minVal; it wins when given, as there. */
  minValue?: number | null;
  /** PyTorch's deprecated name of maxVal; it wins when given, as there. */
  maxValue?: number | null;
}

/** x clamped to [minVal, maxVal]. */
export class Hardtanh extends _InplaceActivation {
  readonly minVal: number;
  readonly maxVal: number;

  constructor(...args: Args<typeof HARDTANH, HardtanhParams>) {
    const a = bind<HardtanhParams>(HARDTANH, args, 'Hardtanh');
    super({ inplace: a.inplace });
    const minVal = a.minValue ?? a.minVal ?? -1;
    const maxVal = a.maxValue ?? a.maxVal ?? 1;
    if (!(maxVal > minVal))
      throw new RangeError(`Hardtanh: maxVal (${maxVal}) must be greater than minVal (${minVal})`);
    this.minVal = minVal;
    this.maxVal = maxVal;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.hardtanh(input, { minVal: this.minVal, maxVal: this.maxVal, inplace: this.inplace });
  }

  override extraRepr(): string {
    return `min_val=${pyFloat(this.minVal)}, max_val=${pyFloat(this.maxVal)}${inplaceText(this.inplace)}`;
  }
}

/** x clamped to [0, 6]. */
export class ReLU6 extends Hardtanh {
  constructor(...args: Args<typeof INPLACE, Inplace>) {
    super(0, 6, { inplace: bind<Inplace>(INPLACE, args, 'ReLU6').inplace });
  }

  override extraRepr(): string {
    return this.inplace ? 'inplace=True' : '';
  }
}

const THRESHOLD = signature('Threshold', { required: ['threshold', 'value'], optional: ['inplace'] });
type ThresholdParams = { threshold: number; value: number } & Inplace;

/** x where x > threshold, else value. */
export class Threshold extends _InplaceActivation {
  readonly threshold: number;
  readonly value: number;

  constructor(...args: Args<typeof THRESHOLD, ThresholdParams>) {
    const a = bind<ThresholdParams>(THRESHOLD, args, 'Threshold');
    super({ inplace: a.inplace });
    this.threshold = a.threshold;
    this.value = a.value;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.threshold(input, this.threshold, this.value, { inplace: this.inplace });
  }

  override extraRepr(): string {
    return `threshold=${this.threshold}, value=${this.value}${inplaceText(this.inplace)}`;
  }
}

const RRELU = signature('RReLU', { optional: ['lower', 'upper', 'inplace'] });
type RReLUParams = { lower?: number; upper?: number } & Inplace;

/** Leaky ReLU with a random slope in [lower, upper] in training, their mean in eval. */
export class RReLU extends _InplaceActivation {
  readonly lower: number;
  readonly upper: number;

  constructor(...args: Args<typeof RRELU, RReLUParams>) {
    const a = bind<RReLUParams>(RRELU, args, 'RReLU');
    super({ inplace: a.inplace });
    this.lower = a.lower ?? 1 / 8;
    this.upper = a.upper ?? 1 / 3;
  }

  override forward(input: t.Tensor): t.Tensor {
    const { lower, upper, training, inplace } = this;
    return F.rrelu(input, { lower, upper, training, inplace });
  }

  override extraRepr(): string {
    return `lower=${this.lower}, upper=${this.upper}${inplaceText(this.inplace)}`;
  }
}

/** 1 / (1 + exp(-x)). */
export class Sigmoid extends _NoArgs {
  override forward(input: t.Tensor): t.Tensor {
    return F.sigmoid(input);
  }
}

/** The hyperbolic tangent. */
export class Tanh extends _NoArgs {
  override forward(input: t.Tensor): t.Tensor {
    return F.tanh(input);
  }
}

/** log(sigmoid(x)). */
export class LogSigmoid extends _NoArgs {
  override forward(input: t.Tensor): t.Tensor {
    return F.logsigmoid(input);
  }
}

/** x / (1 + |x|). */
export class Softsign extends _NoArgs {
  override forward(input: t.Tensor): t.Tensor {
    return F.softsign(input);
  }
}

/** x - tanh(x). */
export class Tanhshrink extends _NoArgs {
  override forward(input: t.Tensor): t.Tensor {
    return F.tanhshrink(input);
  }
}

const GELU_SIG = signature('GELU', { optional: ['approximate'] });
type GELUParams = { approximate?: 'none' | 'tanh' };

/** Gaussian error linear unit; `approximate: 'tanh'` for the tanh approximation. */
export class GELU extends Module {
  readonly approximate: 'none' | 'tanh';

  constructor(...args: Args<typeof GELU_SIG, GELUParams>) {
    super();
    this.approximate = bind<GELUParams>(GELU_SIG, args, 'GELU').approximate ?? 'none';
    if (this.approximate !== 'none' && this.approximate !== 'tanh') {
      throw new TypeError(
        `GELU: approximate must be 'none' or 'tanh', got ${JSON.stringify(this.approximate)}`,
      );
    }
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.gelu(input, { approximate: this.approximate });
  }

  override extraRepr(): string {
    return `approximate='${this.approximate}'`;
  }
}

const SOFTPLUS = signature('Softplus', { optional: ['beta', 'threshold'] });
type SoftplusParams = { beta?: number; threshold?: number };

/** log(1 + exp(beta·x))/beta, linear above `threshold`. */
export class Softplus extends Module {
  readonly beta: number;
  readonly threshold: number;

  constructor(...args: Args<typeof SOFTPLUS, SoftplusParams>) {
    super();
    const a = bind<SoftplusParams>(SOFTPLUS, args, 'Softplus');
    this.beta = a.beta ?? 1;
    this.threshold = a.threshold ?? 20;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.softplus(input, { beta: this.beta, threshold: this.threshold });
  }

  override extraRepr(): string {
    return `beta=${pyFloat(this.beta)}, threshold=${pyFloat(this.threshold)}`;
  }
}

const SHRINK = signature(['Hardshrink', 'Softshrink'], { optional: ['lambd'] });
type ShrinkParams = { lambd?: number };

/** Hardshrink's and Softshrink's lambd: the two take the same argument. */
export abstract class _Shrink extends Module {
  readonly lambd: number;

  constructor(...args: Args<typeof SHRINK, ShrinkParams>) {
    super();
    this.lambd = bind<ShrinkParams>(SHRINK, args, new.target.name).lambd ?? 0.5;
  }

  override extraRepr(): string {
    return String(this.lambd);
  }
}

/** x where |x| > lambd, else 0. */
export class Hardshrink extends _Shrink {
  override forward(input: t.Tensor): t.Tensor {
    return F.hardshrink(input, this.lambd);
  }
}

/** x shrunk towards 0 by lambd, 0 within [-lambd, lambd]. */
export class Softshrink extends _Shrink {
  override forward(input: t.Tensor): t.Tensor {
    return F.softshrink(input, this.lambd);
  }
}

const GLU_SIG = signature('GLU', { optional: ['dim'] });

/** The gated linear unit: the first half of `dim` times sigmoid of the second. */
export class GLU extends Module {
  readonly dim: number;

  constructor(...args: Args<typeof GLU_SIG, { dim?: number }>) {
    super();
    this.dim = bind<{ dim?: number }>(GLU_SIG, args, 'GLU').dim ?? -1;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.glu(input, this.dim);
  }

  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}

/** The dim argument of Softmax-like modules: a number, null (PyTorch's legacy implicit dim) or `{ dim }`. */
export type SoftmaxDim = number | null | { dim?: number | null };

const SOFTMAX = signature(['Softmax', 'LogSoftmax', 'Softmin'], { optional: ['dim'] });
type SoftmaxParams = { dim?: number | null };

/** The dim, which must be an integer or null. */
function checkedDim(dim: number | null, what: string): number | null {
  if (dim !== null && !Number.isInteger(dim))
    throw new TypeError(`${what}: dim must be an integer or null, got ${String(dim)}`);
  return dim;
}

/** The softmax family's dim and repr: `new Softmax(1)` or `new Softmax({ dim: 1 })`. */
export abstract class _SoftmaxNd extends Module {
  readonly dim: number | null;

  constructor(...args: Args<typeof SOFTMAX, SoftmaxParams>) {
    super();
    const cls = new.target.name;
    const dim = bind<SoftmaxParams>(SOFTMAX, args, cls).dim ?? null;
    // Softmin kept PyTorch's unchecked dim; the others check it here.
    this.dim = cls === 'Softmin' ? dim : checkedDim(dim, cls);
  }

  override extraRepr(): string {
    return `dim=${this.dim === null ? 'None' : this.dim}`;
  }
}

/**
 * softmax over `dim` (`new Softmax(1)` or `new Softmax({ dim: 1 })`). Without a dim it
 * uses PyTorch's deprecated implicit choice: dim 0 for 0-, 1- and 3-d input, else 1.
 */
export class Softmax extends _SoftmaxNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.softmax(input, this.dim);
  }
}

/** log(softmax(x)) over `dim`, computed stably; the dim argument as Softmax's. */
export class LogSoftmax extends _SoftmaxNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.logSoftmax(input, this.dim);
  }
}

/** softmax(-x) over `dim` (the dim argument as Softmax's). */
export class Softmin extends _SoftmaxNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.softmin(input, this.dim);
  }
}

/** softmax over the channels of [N, C, H, W] or [C, H, W] input. */
export class Softmax2d extends _NoArgs {
  override forward(input: t.Tensor): t.Tensor {
    if (input.ndim !== 3 && input.ndim !== 4) {
      throw new RangeError(`Softmax2d: expected 3-d or 4-d input, got ${input.ndim}-d`);
    }
    return F.softmax(input, -3);
  }
}

const PRELU = signature('PReLU', { optional: ['numParameters', 'init', 'device', 'dtype'] });
type PReLUParams = { numParameters?: number; init?: number } & FactoryOptions;

/** Leaky ReLU with a learnt slope (`weight`): one for all channels, or one per channel. */
export class PReLU extends Module {
  readonly numParameters: number;
  readonly init: number;
  weight: t.Tensor;

  constructor(...args: Args<typeof PRELU, PReLUParams>) {
    super();
    const a = bind<PReLUParams>(PRELU, args, 'PReLU');
    this.numParameters = a.numParameters ?? 1;
    this.init = a.init ?? 0.25;
    this.weight = this.registerParameter(
      'weight',
      Parameter(t.empty([this.numParameters], { dtype: a.dtype, device: a.device })),
    );
    this.resetParameters();
  }

  resetParameters(): void {
    nnInit.constant_(this.weight, this.init);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.prelu(input, this.weight);
  }

  override extraRepr(): string {
    return `num_parameters=${this.numParameters}`;
  }
}

// torch.nn.modules.activation (MultiheadAttention is in attention.ts): each module is one
// functional call with its constructor arguments stored, PyTorch's positional arguments
// positional and `inplace` in an options object. The modules whose options are only
// `inplace` share one base, the softmax family another.
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import * as nnInit from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

interface Inplace {
  inplace?: boolean;
}

const inplaceText = (inplace: boolean) => (inplace ? ', inplace=True' : '');

/** An activation that can overwrite its input (`inplace`); the repr shows it when set. */
export abstract class _InplaceActivation extends Module {
  readonly inplace: boolean;

  constructor(opts: Inplace = {}) {
    super();
    this.inplace = opts.inplace ?? false;
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

/** max(0, x) + negativeSlope·min(0, x). */
export class LeakyReLU extends _InplaceActivation {
  constructor(
    readonly negativeSlope = 0.01,
    opts: Inplace = {},
  ) {
    super(opts);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.leakyRelu(input, { negativeSlope: this.negativeSlope, inplace: this.inplace });
  }

  override extraRepr(): string {
    return `negative_slope=${this.negativeSlope}${inplaceText(this.inplace)}`;
  }
}

/** x for x > 0, alpha·(exp(x) - 1) otherwise. */
export class ELU extends _InplaceActivation {
  constructor(
    readonly alpha = 1,
    opts: Inplace = {},
  ) {
    super(opts);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.elu(input, { alpha: this.alpha, inplace: this.inplace });
  }

  override extraRepr(): string {
    return `alpha=${this.alpha}${inplaceText(this.inplace)}`;
  }
}

/** max(0, x) + min(0, alpha·(exp(x/alpha) - 1)). */
export class CELU extends _InplaceActivation {
  constructor(
    readonly alpha = 1,
    opts: Inplace = {},
  ) {
    super(opts);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.celu(input, { alpha: this.alpha, inplace: this.inplace });
  }

  override extraRepr(): string {
    return `alpha=${this.alpha}${inplaceText(this.inplace)}`;
  }
}

/** x clamped to [minVal, maxVal]. */
export class Hardtanh extends _InplaceActivation {
  constructor(
    readonly minVal = -1,
    readonly maxVal = 1,
    opts: Inplace = {},
  ) {
    super(opts);
    if (!(maxVal > minVal))
      throw new RangeError(`Hardtanh: maxVal (${maxVal}) must be greater than minVal (${minVal})`);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.hardtanh(input, { minVal: this.minVal, maxVal: this.maxVal, inplace: this.inplace });
  }

  override extraRepr(): string {
    return `min_val=${this.minVal}, max_val=${this.maxVal}${inplaceText(this.inplace)}`;
  }
}

/** x clamped to [0, 6]. */
export class ReLU6 extends Hardtanh {
  constructor(opts: Inplace = {}) {
    super(0, 6, opts);
  }

  override extraRepr(): string {
    return this.inplace ? 'inplace=True' : '';
  }
}

/** x where x > threshold, else value. */
export class Threshold extends _InplaceActivation {
  constructor(
    readonly threshold: number,
    readonly value: number,
    opts: Inplace = {},
  ) {
    super(opts);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.threshold(input, this.threshold, this.value, { inplace: this.inplace });
  }

  override extraRepr(): string {
    return `threshold=${this.threshold}, value=${this.value}${inplaceText(this.inplace)}`;
  }
}

/** Leaky ReLU with a random slope in [lower, upper] in training, their mean in eval. */
export class RReLU extends _InplaceActivation {
  constructor(
    readonly lower = 1 / 8,
    readonly upper = 1 / 3,
    opts: Inplace = {},
  ) {
    super(opts);
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
export class Sigmoid extends Module {
  override forward(input: t.Tensor): t.Tensor {
    return F.sigmoid(input);
  }
}

/** The hyperbolic tangent. */
export class Tanh extends Module {
  override forward(input: t.Tensor): t.Tensor {
    return F.tanh(input);
  }
}

/** log(sigmoid(x)). */
export class LogSigmoid extends Module {
  override forward(input: t.Tensor): t.Tensor {
    return F.logsigmoid(input);
  }
}

/** x / (1 + |x|). */
export class Softsign extends Module {
  override forward(input: t.Tensor): t.Tensor {
    return F.softsign(input);
  }
}

/** x - tanh(x). */
export class Tanhshrink extends Module {
  override forward(input: t.Tensor): t.Tensor {
    return F.tanhshrink(input);
  }
}

/** Gaussian error linear unit; `approximate: 'tanh'` for the tanh approximation. */
export class GELU extends Module {
  readonly approximate: 'none' | 'tanh';

  constructor(opts: { approximate?: 'none' | 'tanh' } = {}) {
    super();
    this.approximate = opts.approximate ?? 'none';
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

/** log(1 + exp(beta·x))/beta, linear above `threshold`. */
export class Softplus extends Module {
  constructor(
    readonly beta = 1,
    readonly threshold = 20,
  ) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.softplus(input, { beta: this.beta, threshold: this.threshold });
  }

  override extraRepr(): string {
    return `beta=${this.beta}, threshold=${this.threshold}`;
  }
}

/** x where |x| > lambd, else 0. */
export class Hardshrink extends Module {
  constructor(readonly lambd = 0.5) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.hardshrink(input, this.lambd);
  }

  override extraRepr(): string {
    return String(this.lambd);
  }
}

/** x shrunk towards 0 by lambd, 0 within [-lambd, lambd]. */
export class Softshrink extends Module {
  constructor(readonly lambd = 0.5) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.softshrink(input, this.lambd);
  }

  override extraRepr(): string {
    return String(this.lambd);
  }
}

/** The gated linear unit: the first half of `dim` times sigmoid of the second. */
export class GLU extends Module {
  constructor(readonly dim = -1) {
    super();
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

const dimOf = (dim: SoftmaxDim): number | null =>
  dim !== null && typeof dim === 'object' ? (dim.dim ?? null) : dim;

/** The dim of `dim`, which must be an integer or null. */
function checkedDim(dim: SoftmaxDim, what: string): number | null {
  const d = dimOf(dim);
  if (d !== null && !Number.isInteger(d))
    throw new TypeError(`${what}: dim must be an integer or null, got ${String(d)}`);
  return d;
}

/** The softmax family's dim and repr. */
export abstract class _SoftmaxNd extends Module {
  readonly dim: number | null;

  constructor(dim: SoftmaxDim) {
    super();
    this.dim = dimOf(dim);
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
  constructor(dim: SoftmaxDim = null) {
    super(checkedDim(dim, 'Softmax'));
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.softmax(input, this.dim);
  }
}

/** log(softmax(x)) over `dim`, computed stably; the dim argument as Softmax's. */
export class LogSoftmax extends _SoftmaxNd {
  constructor(dim: SoftmaxDim = null) {
    super(checkedDim(dim, 'LogSoftmax'));
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.logSoftmax(input, this.dim);
  }
}

/** softmax(-x) over `dim` (the dim argument as Softmax's). */
export class Softmin extends _SoftmaxNd {
  constructor(dim: SoftmaxDim = null) {
    super(dim);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.softmin(input, this.dim);
  }
}

/** softmax over the channels of [N, C, H, W] or [C, H, W] input. */
export class Softmax2d extends Module {
  override forward(input: t.Tensor): t.Tensor {
    if (input.ndim !== 3 && input.ndim !== 4) {
      throw new RangeError(`Softmax2d: expected 3-d or 4-d input, got ${input.ndim}-d`);
    }
    return F.softmax(input, -3);
  }
}

/** Leaky ReLU with a learnt slope (`weight`): one for all channels, or one per channel. */
export class PReLU extends Module {
  readonly numParameters: number;
  readonly init: number;
  weight: t.Tensor;

  constructor(numParameters = 1, init = 0.25, opts: FactoryOptions = {}) {
    super();
    this.numParameters = numParameters;
    this.init = init;
    this.weight = this.registerParameter(
      'weight',
      Parameter(t.empty([numParameters], { dtype: opts.dtype, device: opts.device })),
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

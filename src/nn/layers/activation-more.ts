// The rest of torch.nn.modules.activation: each module one functional call with its
// constructor arguments stored (PyTorch's positional arguments positional, `inplace`
// in an options object).
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import * as nnInit from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { SoftmaxDim } from './activation.ts';
import type { FactoryOptions } from './linear.ts';

interface Inplace {
  inplace?: boolean;
}
const inplaceText = (inplace: boolean) => (inplace ? ', inplace=True' : '');

export class ELU extends Module {
  readonly inplace: boolean;
  constructor(
    readonly alpha = 1,
    opts: Inplace = {},
  ) {
    super();
    this.inplace = opts.inplace ?? false;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.elu(input, { alpha: this.alpha, inplace: this.inplace });
  }
  override extraRepr(): string {
    return `alpha=${this.alpha}${inplaceText(this.inplace)}`;
  }
}

export class CELU extends Module {
  readonly inplace: boolean;
  constructor(
    readonly alpha = 1,
    opts: Inplace = {},
  ) {
    super();
    this.inplace = opts.inplace ?? false;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.celu(input, { alpha: this.alpha, inplace: this.inplace });
  }
  override extraRepr(): string {
    return `alpha=${this.alpha}${inplaceText(this.inplace)}`;
  }
}

export class SELU extends Module {
  readonly inplace: boolean;
  constructor(opts: Inplace = {}) {
    super();
    this.inplace = opts.inplace ?? false;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.selu(input, { inplace: this.inplace });
  }
  override extraRepr(): string {
    return this.inplace ? 'inplace=True' : '';
  }
}

export class Hardtanh extends Module {
  readonly inplace: boolean;
  constructor(
    readonly minVal = -1,
    readonly maxVal = 1,
    opts: Inplace = {},
  ) {
    super();
    if (!(maxVal > minVal))
      throw new RangeError(`Hardtanh: maxVal (${maxVal}) must be greater than minVal (${minVal})`);
    this.inplace = opts.inplace ?? false;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.hardtanh(input, { minVal: this.minVal, maxVal: this.maxVal, inplace: this.inplace });
  }
  override extraRepr(): string {
    return `min_val=${this.minVal}, max_val=${this.maxVal}${inplaceText(this.inplace)}`;
  }
}

export class ReLU6 extends Hardtanh {
  constructor(opts: Inplace = {}) {
    super(0, 6, opts);
  }
  override extraRepr(): string {
    return this.inplace ? 'inplace=True' : '';
  }
}

export class Threshold extends Module {
  readonly inplace: boolean;
  constructor(
    readonly threshold: number,
    readonly value: number,
    opts: Inplace = {},
  ) {
    super();
    this.inplace = opts.inplace ?? false;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.threshold(input, this.threshold, this.value, { inplace: this.inplace });
  }
  override extraRepr(): string {
    return `threshold=${this.threshold}, value=${this.value}${inplaceText(this.inplace)}`;
  }
}

export class RReLU extends Module {
  readonly inplace: boolean;
  constructor(
    readonly lower = 1 / 8,
    readonly upper = 1 / 3,
    opts: Inplace = {},
  ) {
    super();
    this.inplace = opts.inplace ?? false;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.rrelu(input, {
      lower: this.lower,
      upper: this.upper,
      training: this.training,
      inplace: this.inplace,
    });
  }
  override extraRepr(): string {
    return `lower=${this.lower}, upper=${this.upper}${inplaceText(this.inplace)}`;
  }
}

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

// Modules without arguments, or with only `inplace`.
// The factories name their return type: the package's .d.ts cannot describe an anonymous class.
function inplaceModule(
  name: string,
  fn: (x: t.Tensor, opts: Inplace) => t.Tensor,
): new (
  opts?: Inplace,
) => Module & { readonly inplace: boolean } {
  const C = class extends Module {
    readonly inplace: boolean;
    constructor(opts: Inplace = {}) {
      super();
      this.inplace = opts.inplace ?? false;
    }
    override forward(input: t.Tensor): t.Tensor {
      return fn(input, { inplace: this.inplace });
    }
    override extraRepr(): string {
      return this.inplace ? 'inplace=True' : '';
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

function plainModule(name: string, fn: (x: t.Tensor) => t.Tensor): new () => Module {
  const C = class extends Module {
    override forward(input: t.Tensor): t.Tensor {
      return fn(input);
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

/** x·tanh(softplus(x)). */
export const Mish = inplaceModule('Mish', F.mish);
export type Mish = InstanceType<typeof Mish>;
export const Hardswish = inplaceModule('Hardswish', F.hardswish);
export type Hardswish = InstanceType<typeof Hardswish>;
export const Hardsigmoid = inplaceModule('Hardsigmoid', F.hardsigmoid);
export type Hardsigmoid = InstanceType<typeof Hardsigmoid>;
export const LogSigmoid = plainModule('LogSigmoid', F.logsigmoid);
export type LogSigmoid = InstanceType<typeof LogSigmoid>;
export const Softsign = plainModule('Softsign', F.softsign);
export type Softsign = InstanceType<typeof Softsign>;
export const Tanhshrink = plainModule('Tanhshrink', F.tanhshrink);
export type Tanhshrink = InstanceType<typeof Tanhshrink>;

/** softmax(-x) over `dim` (the dim argument as Softmax's). */
export class Softmin extends Module {
  readonly dim: number | null;
  constructor(dim: SoftmaxDim = null) {
    super();
    this.dim = dim !== null && typeof dim === 'object' ? (dim.dim ?? null) : dim;
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.softmin(input, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim === null ? 'None' : this.dim}`;
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

// Activation modules (torch.nn.modules.activation) and Dropout.
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

/** max(0, x); with `inplace` the input is overwritten and returned. */
export class ReLU extends Module {
  readonly inplace: boolean;

  constructor(opts: { inplace?: boolean } = {}) {
    super();
    this.inplace = opts.inplace ?? false;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.relu(input, { inplace: this.inplace });
  }

  override extraRepr(): string {
    return this.inplace ? 'inplace=True' : '';
  }
}

/** Zeroes elements with probability p and scales by 1/(1-p) in training mode; identity in eval. */
export class Dropout extends Module {
  readonly p: number;
  readonly inplace: boolean;

  constructor(p = 0.5, opts: { inplace?: boolean } = {}) {
    super();
    if (!(p >= 0 && p <= 1))
      throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
    this.p = p;
    this.inplace = opts.inplace ?? false;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.dropout(input, { p: this.p, training: this.training, inplace: this.inplace });
  }

  override extraRepr(): string {
    return `p=${this.p}, inplace=${this.inplace ? 'True' : 'False'}`;
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

/** x·sigmoid(x). */
export class SiLU extends Module {
  readonly inplace: boolean;

  constructor(opts: { inplace?: boolean } = {}) {
    super();
    this.inplace = opts.inplace ?? false;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.silu(input, { inplace: this.inplace });
  }

  override extraRepr(): string {
    return this.inplace ? 'inplace=True' : '';
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

/** max(0, x) + negativeSlope·min(0, x). */
export class LeakyReLU extends Module {
  readonly negativeSlope: number;
  readonly inplace: boolean;

  constructor(negativeSlope = 0.01, opts: { inplace?: boolean } = {}) {
    super();
    this.negativeSlope = negativeSlope;
    this.inplace = opts.inplace ?? false;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.leakyRelu(input, { negativeSlope: this.negativeSlope, inplace: this.inplace });
  }

  override extraRepr(): string {
    return `negative_slope=${this.negativeSlope}${this.inplace ? ', inplace=True' : ''}`;
  }
}

/** The dim argument of Softmax-like modules: a number, null (PyTorch's legacy implicit dim) or `{ dim }`. */
export type SoftmaxDim = number | null | { dim?: number | null };

function readDim(dim: SoftmaxDim, what: string): number | null {
  const d = dim !== null && typeof dim === 'object' ? (dim.dim ?? null) : dim;
  if (d !== null && !Number.isInteger(d))
    throw new TypeError(`${what}: dim must be an integer or null, got ${String(d)}`);
  return d;
}

/**
 * softmax over `dim` (`new Softmax(1)` or `new Softmax({ dim: 1 })`). Without a dim it
 * uses PyTorch's deprecated implicit choice: dim 0 for 0-, 1- and 3-d input, else 1.
 */
export class Softmax extends Module {
  readonly dim: number | null;

  constructor(dim: SoftmaxDim = null) {
    super();
    this.dim = readDim(dim, 'Softmax');
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.softmax(input, this.dim);
  }

  override extraRepr(): string {
    return `dim=${this.dim === null ? 'None' : this.dim}`;
  }
}

/** log(softmax(x)) over `dim`, computed stably; the dim argument as Softmax's. */
export class LogSoftmax extends Module {
  readonly dim: number | null;

  constructor(dim: SoftmaxDim = null) {
    super();
    this.dim = readDim(dim, 'LogSoftmax');
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.logSoftmax(input, this.dim);
  }

  override extraRepr(): string {
    return `dim=${this.dim === null ? 'None' : this.dim}`;
  }
}

// ReLU and Dropout.
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

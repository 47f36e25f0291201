// torch.nn.modules.flatten: Flatten and its inverse, Unflatten.
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

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

/** Splits dim `dim` into `unflattenedSize` (nn.Flatten's inverse). */
export class Unflatten extends Module {
  constructor(
    readonly dim: number,
    readonly unflattenedSize: number[],
  ) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return t.unflatten(input, this.dim, this.unflattenedSize);
  }

  override extraRepr(): string {
    return `dim=${this.dim}, unflattened_size=(${this.unflattenedSize.join(', ')})`;
  }
}

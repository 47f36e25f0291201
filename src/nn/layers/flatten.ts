// torch.nn.modules.flatten: Flatten and its inverse, Unflatten.
import * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

const FLATTEN = signature('Flatten', { optional: ['startDim', 'endDim'] });
type FlattenParams = { startDim?: number; endDim?: number };
const UNFLATTEN = signature('Unflatten', { required: ['dim', 'unflattenedSize'] });
type UnflattenParams = { dim: number; unflattenedSize: number[] };

/** Flattens dims startDim..endDim (default 1..-1: everything but the batch dim). */
export class Flatten extends Module {
  readonly startDim: number;
  readonly endDim: number;

  constructor(...args: Args<typeof FLATTEN, FlattenParams>) {
    super();
    const a = bind<FlattenParams>(FLATTEN, args, 'Flatten');
    this.startDim = a.startDim ?? 1;
    this.endDim = a.endDim ?? -1;
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
  readonly dim: number;
  readonly unflattenedSize: number[];

  constructor(...args: Args<typeof UNFLATTEN, UnflattenParams>) {
    super();
    const a = bind<UnflattenParams>(UNFLATTEN, args, 'Unflatten');
    this.dim = a.dim;
    this.unflattenedSize = a.unflattenedSize;
  }

  override forward(input: t.Tensor): t.Tensor {
    return t.unflatten(input, this.dim, this.unflattenedSize);
  }

  override extraRepr(): string {
    return `dim=${this.dim}, unflattened_size=(${this.unflattenedSize.join(', ')})`;
  }
}

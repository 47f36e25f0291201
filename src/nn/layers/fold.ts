// torch.nn.modules.fold: Unfold (sliding local blocks as columns, im2col) and Fold (the
// columns summed back into an image, col2im).
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

/** Sliding local blocks as columns (torch.nn.Unfold). */
export class Unfold extends Module {
  constructor(
    readonly kernelSize: number | [number, number],
    readonly opts: F.UnfoldOptions = {},
  ) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.unfold(input, this.kernelSize, this.opts);
  }
}

/** Columns summed back into an image (torch.nn.Fold). */
export class Fold extends Module {
  constructor(
    readonly outputSize: number | [number, number],
    readonly kernelSize: number | [number, number],
    readonly opts: F.UnfoldOptions = {},
  ) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.fold(input, this.outputSize, this.kernelSize, this.opts);
  }
}

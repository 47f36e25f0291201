// torch.nn.modules.fold: Unfold (sliding local blocks as columns, im2col) and Fold (the
// columns summed back into an image, col2im), with PyTorch's arguments positional or by
// name (nn/args.ts).
import type * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

type Size2 = number | [number, number];
const UNFOLD = signature('Unfold', { required: ['kernelSize'], optional: ['dilation', 'padding', 'stride'] });
type UnfoldParams = { kernelSize: Size2 } & F.UnfoldOptions;
const FOLD = signature('Fold', {
  required: ['outputSize', 'kernelSize'],
  optional: ['dilation', 'padding', 'stride'],
});
type FoldParams = { outputSize: Size2 } & UnfoldParams;

/**
 * What Unfold and Fold share: the kernel size, and the dilation, padding and stride with
 * PyTorch's defaults (1, 0, 1) filled in, as its modules store them.
 */
export abstract class _SlidingBlocks extends Module {
  readonly kernelSize: Size2;
  /** dilation, padding and stride. */
  readonly opts: F.UnfoldOptions;

  /** Takes the subclass's arguments, bound by its signature. */
  constructor({ kernelSize, dilation = 1, padding = 0, stride = 1 }: UnfoldParams) {
    super();
    this.kernelSize = kernelSize;
    this.opts = { dilation, padding, stride };
  }
}

/** Sliding local blocks as columns (torch.nn.Unfold). */
export class Unfold extends _SlidingBlocks {
  constructor(...args: Args<typeof UNFOLD, UnfoldParams>) {
    super(bind<UnfoldParams>(UNFOLD, args, 'Unfold'));
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.unfold(input, this.kernelSize, this.opts);
  }
}

/** Columns summed back into an image (torch.nn.Fold). */
export class Fold extends _SlidingBlocks {
  readonly outputSize: Size2;

  constructor(...args: Args<typeof FOLD, FoldParams>) {
    const a = bind<FoldParams>(FOLD, args, 'Fold');
    super(a);
    this.outputSize = a.outputSize;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.fold(input, this.outputSize, this.kernelSize, this.opts);
  }
}

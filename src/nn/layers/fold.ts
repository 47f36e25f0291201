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

/** The dilation, padding and stride, PyTorch's defaults (1, 0, 1) filled in, as its modules store them. */
const windowOptions = ({ dilation = 1, padding = 0, stride = 1 }: F.UnfoldOptions): F.UnfoldOptions => ({
  dilation,
  padding,
  stride,
});

/** Sliding local blocks as columns (torch.nn.Unfold). */
export class Unfold extends Module {
  readonly kernelSize: Size2;
  /** dilation, padding and stride. */
  readonly opts: F.UnfoldOptions;

  constructor(...args: Args<typeof UNFOLD, UnfoldParams>) {
    super();
    const a = bind<UnfoldParams>(UNFOLD, args, 'Unfold');
    this.kernelSize = a.kernelSize;
    this.opts = windowOptions(a);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.unfold(input, this.kernelSize, this.opts);
  }
}

/** Columns summed back into an image (torch.nn.Fold). */
export class Fold extends Module {
  readonly outputSize: Size2;
  readonly kernelSize: Size2;
  /** dilation, padding and stride. */
  readonly opts: F.UnfoldOptions;

  constructor(...args: Args<typeof FOLD, FoldParams>) {
    super();
    const a = bind<FoldParams>(FOLD, args, 'Fold');
    this.outputSize = a.outputSize;
    this.kernelSize = a.kernelSize;
    this.opts = windowOptions(a);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.fold(input, this.outputSize, this.kernelSize, this.opts);
  }
}

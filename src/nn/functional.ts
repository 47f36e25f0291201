// nn.functional (reached as `nn.functional` and `nn.F`): the stateless forms of the
// layers, with torch.nn.functional's argument names, order and defaults — each argument
// positional or by name in a trailing options object, as nn/args.ts binds them;
// `reduction` as PyTorch's string. One namespace over files grouped as
// torch/nn/functional.py is.
import * as t from '../core/index.ts';
import { define } from './args.ts';

export * from './functional/activation.ts';
export * from './functional/attention.ts';
export type { IntOrPair, Reduction, ReductionOptions } from './functional/common.ts';
export * from './functional/conv.ts';
export * from './functional/distance.ts';
export * from './functional/dropout.ts';
export * from './functional/fractional.ts';
export * from './functional/loss.ts';
export * from './functional/normalization.ts';
export * from './functional/pooling.ts';
export * from './functional/sparse.ts';
export * from './functional/vision.ts';

/** torch.flatten: dims startDim..endDim merged into one (nn.Flatten's op). */
export const flatten = define(
  'flatten',
  { required: ['input'], optional: ['startDim', 'endDim'] },
  ({ input, startDim = 0, endDim = -1 }: { input: t.Tensor; startDim?: number; endDim?: number }): t.Tensor =>
    t.flatten(input, startDim, endDim),
);

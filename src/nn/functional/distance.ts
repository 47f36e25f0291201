// Distance functions of torch.nn.functional, with PyTorch's parameters positional or by
// name (nn/args.ts).
import type * as t from '../../core/index.ts';
import { define } from '../args.ts';
import { aten } from './common.ts';

type Pair<O> = { x1: t.Tensor; x2: t.Tensor } & O;

/** Cosine of the angle between x1 and x2 along `dim` (norms clamped to eps). */
export const cosineSimilarity = define(
  'cosineSimilarity',
  { required: ['x1', 'x2'], optional: ['dim', 'eps'] },
  ({ x1, x2, dim = 1, eps = 1e-8 }: Pair<{ dim?: number; eps?: number }>): t.Tensor =>
    aten('aten::cosine_similarity', x1, x2, dim, eps),
);

/** ‖x1 - x2 + eps‖_p along the last dim. */
export const pairwiseDistance = define(
  'pairwiseDistance',
  { required: ['x1', 'x2'], optional: ['p', 'eps', 'keepdim'] },
  ({ x1, x2, p = 2, eps = 1e-6, keepdim = false }: Pair<{ p?: number; eps?: number; keepdim?: boolean }>) =>
    aten('aten::pairwise_distance', x1, x2, p, eps, keepdim),
);

/** p-norm distances between every pair of rows of a [N, M] input (upper triangle, flattened). */
export const pdist = define(
  'pdist',
  { required: ['input'], optional: ['p'] },
  ({ input, p = 2 }: { input: t.Tensor; p?: number }): t.Tensor => aten('aten::pdist', input, p),
);

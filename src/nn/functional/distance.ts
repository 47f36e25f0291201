// Distance functions of torch.nn.functional.
import type * as t from '../../core/index.ts';
import { aten } from './common.ts';

/** Cosine of the angle between x1 and x2 along `dim` (norms clamped to eps). */
export function cosineSimilarity(
  x1: t.Tensor,
  x2: t.Tensor,
  opts: { dim?: number; eps?: number } = {},
): t.Tensor {
  return aten('aten::cosine_similarity', x1, x2, opts.dim ?? 1, opts.eps ?? 1e-8);
}

/** ‖x1 - x2 + eps‖_p along the last dim. */
export function pairwiseDistance(
  x1: t.Tensor,
  x2: t.Tensor,
  opts: { p?: number; eps?: number; keepdim?: boolean } = {},
): t.Tensor {
  return aten('aten::pairwise_distance', x1, x2, opts.p ?? 2, opts.eps ?? 1e-6, opts.keepdim ?? false);
}

/** p-norm distances between every pair of rows of a [N, M] input (upper triangle, flattened). */
export function pdist(input: t.Tensor, p = 2): t.Tensor {
  return aten('aten::pdist', input, p);
}

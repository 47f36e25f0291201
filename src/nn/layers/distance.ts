// torch.nn.modules.distance: CosineSimilarity and PairwiseDistance between two inputs.
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

/** The cosine of the angle between x1 and x2 along `dim` (torch.nn.CosineSimilarity). */
export class CosineSimilarity extends Module {
  readonly dim: number;
  readonly eps: number;

  constructor(opts: { dim?: number; eps?: number } = {}) {
    super();
    this.dim = opts.dim ?? 1;
    this.eps = opts.eps ?? 1e-8;
  }

  override forward(x1: t.Tensor, x2: t.Tensor): t.Tensor {
    return F.cosineSimilarity(x1, x2, { dim: this.dim, eps: this.eps });
  }
}

/** The p-norm distance between the rows of x1 and x2 (torch.nn.PairwiseDistance). */
export class PairwiseDistance extends Module {
  readonly p: number;
  readonly eps: number;
  readonly keepdim: boolean;

  constructor(opts: { p?: number; eps?: number; keepdim?: boolean } = {}) {
    super();
    this.p = opts.p ?? 2;
    this.eps = opts.eps ?? 1e-6;
    this.keepdim = opts.keepdim ?? false;
  }

  override forward(x1: t.Tensor, x2: t.Tensor): t.Tensor {
    return F.pairwiseDistance(x1, x2, { p: this.p, eps: this.eps, keepdim: this.keepdim });
  }
}

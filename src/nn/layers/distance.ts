// torch.nn.modules.distance: CosineSimilarity and PairwiseDistance between two inputs.
import type * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

const COSINE = signature('CosineSimilarity', { optional: ['dim', 'eps'] });
type CosineParams = { dim?: number; eps?: number };
const PAIRWISE = signature('PairwiseDistance', { optional: ['p', 'eps', 'keepdim'] });
type PairwiseParams = { p?: number; eps?: number; keepdim?: boolean };

/** The cosine of the angle between x1 and x2 along `dim` (torch.nn.CosineSimilarity). */
export class CosineSimilarity extends Module {
  readonly dim: number;
  readonly eps: number;

  constructor(...args: Args<typeof COSINE, CosineParams>) {
    super();
    const opts = bind<CosineParams>(COSINE, args, 'CosineSimilarity');
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

  constructor(...args: Args<typeof PAIRWISE, PairwiseParams>) {
    super();
    const opts = bind<PairwiseParams>(PAIRWISE, args, 'PairwiseDistance');
    this.p = opts.p ?? 2;
    this.eps = opts.eps ?? 1e-6;
    this.keepdim = opts.keepdim ?? false;
  }

  override forward(x1: t.Tensor, x2: t.Tensor): t.Tensor {
    return F.pairwiseDistance(x1, x2, { p: this.p, eps: this.eps, keepdim: this.keepdim });
  }
}

// torch.nn.modules.dropout: Dropout, Dropout1d/2d/3d (whole channels), AlphaDropout and
// FeatureAlphaDropout over one base holding p and `inplace` (torch's _DropoutNd); each
// module is its functional, applied in training mode.
import type * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module, pyFloat } from '../module.ts';

const DROPOUT = signature(
  ['Dropout', 'Dropout1d', 'Dropout2d', 'Dropout3d', 'AlphaDropout', 'FeatureAlphaDropout'],
  { optional: ['p', 'inplace'] },
);
type DropoutParams = { p?: number; inplace?: boolean };

/** torch's _DropoutNd: the probability and `inplace` of every dropout module. */
export abstract class _DropoutNd extends Module {
  readonly p: number;
  readonly inplace: boolean;

  constructor(...args: Args<typeof DROPOUT, DropoutParams>) {
    super();
    const opts = bind<DropoutParams>(DROPOUT, args, new.target.name);
    const p = opts.p ?? 0.5;
    if (!(p >= 0 && p <= 1))
      throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
    this.p = p;
    this.inplace = opts.inplace ?? false;
  }

  /** The functional's options: p, inplace and whether the module is training. */
  protected dropoutOptions(): F.DropoutOptions {
    return { p: this.p, training: this.training, inplace: this.inplace };
  }

  override extraRepr(): string {
    return `p=${pyFloat(this.p)}, inplace=${this.inplace ? 'True' : 'False'}`;
  }
}

/** Zeroes elements with probability p and scales by 1/(1-p) in training mode; identity in eval. */
export class Dropout extends _DropoutNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.dropout(input, this.dropoutOptions());
  }
}

/** Zeroes whole channels of [N, C, L] or [C, L] input in training mode. */
export class Dropout1d extends _DropoutNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.dropout1d(input, this.dropoutOptions());
  }
}

/** Zeroes whole channels of [N, C, H, W] input in training mode. */
export class Dropout2d extends _DropoutNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.dropout2d(input, this.dropoutOptions());
  }
}

/** Zeroes whole channels of [N, C, D, H, W] or [C, D, H, W] input in training mode. */
export class Dropout3d extends _DropoutNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.dropout3d(input, this.dropoutOptions());
  }
}

/** Dropout that keeps a SELU network's mean and variance. */
export class AlphaDropout extends _DropoutNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.alphaDropout(input, this.dropoutOptions());
  }
}

/** Channel-wise AlphaDropout. */
export class FeatureAlphaDropout extends _DropoutNd {
  override forward(input: t.Tensor): t.Tensor {
    return F.featureAlphaDropout(input, this.dropoutOptions());
  }
}

// The rest of torch.nn.modules.loss: each module one functional call with its options stored.
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';
import type { LossOptions } from './loss.ts';

function reductionOf(opts: LossOptions, what: string): t.Reduction {
  const r = opts.reduction ?? 'mean';
  if (r !== 'mean' && r !== 'sum' && r !== 'none') {
    throw new TypeError(`${what}: reduction must be 'none', 'mean' or 'sum', got ${JSON.stringify(r)}`);
  }
  return r;
}

export class HuberLoss extends Module {
  readonly reduction: t.Reduction;
  readonly delta: number;
  constructor(opts: LossOptions & { delta?: number } = {}) {
    super();
    this.reduction = reductionOf(opts, 'HuberLoss');
    this.delta = opts.delta ?? 1;
  }
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.huberLoss(input, target, { reduction: this.reduction, delta: this.delta });
  }
}

export class PoissonNLLLoss extends Module {
  readonly reduction: t.Reduction;
  readonly logInput: boolean;
  readonly full: boolean;
  readonly eps: number;
  constructor(opts: LossOptions & { logInput?: boolean; full?: boolean; eps?: number } = {}) {
    super();
    this.reduction = reductionOf(opts, 'PoissonNLLLoss');
    this.logInput = opts.logInput ?? true;
    this.full = opts.full ?? false;
    this.eps = opts.eps ?? 1e-8;
  }
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.poissonNllLoss(input, target, {
      logInput: this.logInput,
      full: this.full,
      eps: this.eps,
      reduction: this.reduction,
    });
  }
}

export class SoftMarginLoss extends Module {
  readonly reduction: t.Reduction;
  constructor(opts: LossOptions = {}) {
    super();
    this.reduction = reductionOf(opts, 'SoftMarginLoss');
  }
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.softMarginLoss(input, target, { reduction: this.reduction });
  }
}

export class HingeEmbeddingLoss extends Module {
  readonly reduction: t.Reduction;
  readonly margin: number;
  constructor(opts: LossOptions & { margin?: number } = {}) {
    super();
    this.reduction = reductionOf(opts, 'HingeEmbeddingLoss');
    this.margin = opts.margin ?? 1;
  }
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.hingeEmbeddingLoss(input, target, { margin: this.margin, reduction: this.reduction });
  }
}

export class MultiLabelMarginLoss extends Module {
  readonly reduction: t.Reduction;
  constructor(opts: LossOptions = {}) {
    super();
    this.reduction = reductionOf(opts, 'MultiLabelMarginLoss');
  }
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.multilabelMarginLoss(input, target, { reduction: this.reduction });
  }
}

/** `weight` is a buffer, as in PyTorch. */
export class MultiLabelSoftMarginLoss extends Module {
  readonly reduction: t.Reduction;
  constructor(opts: LossOptions & { weight?: t.Tensor | null } = {}) {
    super();
    this.registerBuffer('weight', opts.weight ?? null);
    this.reduction = reductionOf(opts, 'MultiLabelSoftMarginLoss');
  }
  get weight(): t.Tensor | null {
    return this._buffers.get('weight') ?? null;
  }
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.multilabelSoftMarginLoss(input, target, { weight: this.weight, reduction: this.reduction });
  }
}

/** `weight` is a buffer, as in PyTorch. */
export class MultiMarginLoss extends Module {
  readonly reduction: t.Reduction;
  readonly p: 1 | 2;
  readonly margin: number;
  constructor(opts: LossOptions & { p?: 1 | 2; margin?: number; weight?: t.Tensor | null } = {}) {
    super();
    this.p = opts.p ?? 1;
    if (this.p !== 1 && this.p !== 2)
      throw new RangeError(`MultiMarginLoss: p must be 1 or 2, got ${this.p}`);
    this.margin = opts.margin ?? 1;
    this.registerBuffer('weight', opts.weight ?? null);
    this.reduction = reductionOf(opts, 'MultiMarginLoss');
  }
  get weight(): t.Tensor | null {
    return this._buffers.get('weight') ?? null;
  }
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.multiMarginLoss(input, target, {
      p: this.p,
      margin: this.margin,
      weight: this.weight,
      reduction: this.reduction,
    });
  }
}

export class CosineEmbeddingLoss extends Module {
  readonly reduction: t.Reduction;
  readonly margin: number;
  constructor(opts: LossOptions & { margin?: number } = {}) {
    super();
    this.reduction = reductionOf(opts, 'CosineEmbeddingLoss');
    this.margin = opts.margin ?? 0;
  }
  override forward(input1: t.Tensor, input2: t.Tensor, target: t.Tensor): t.Tensor {
    return F.cosineEmbeddingLoss(input1, input2, target, { margin: this.margin, reduction: this.reduction });
  }
}

export class MarginRankingLoss extends Module {
  readonly reduction: t.Reduction;
  readonly margin: number;
  constructor(opts: LossOptions & { margin?: number } = {}) {
    super();
    this.reduction = reductionOf(opts, 'MarginRankingLoss');
    this.margin = opts.margin ?? 0;
  }
  override forward(input1: t.Tensor, input2: t.Tensor, target: t.Tensor): t.Tensor {
    return F.marginRankingLoss(input1, input2, target, { margin: this.margin, reduction: this.reduction });
  }
}

export class TripletMarginLoss extends Module {
  readonly reduction: t.Reduction;
  readonly margin: number;
  readonly p: number;
  readonly eps: number;
  readonly swap: boolean;
  constructor(opts: F.TripletMarginLossOptions = {}) {
    super();
    this.reduction = reductionOf(opts, 'TripletMarginLoss');
    this.margin = opts.margin ?? 1;
    if (!(this.margin > 0))
      throw new RangeError(`TripletMarginLoss: margin must be greater than 0, got ${this.margin}`);
    this.p = opts.p ?? 2;
    this.eps = opts.eps ?? 1e-6;
    this.swap = opts.swap ?? false;
  }
  override forward(anchor: t.Tensor, positive: t.Tensor, negative: t.Tensor): t.Tensor {
    return F.tripletMarginLoss(anchor, positive, negative, {
      margin: this.margin,
      p: this.p,
      eps: this.eps,
      swap: this.swap,
      reduction: this.reduction,
    });
  }
}

export class GaussianNLLLoss extends Module {
  readonly reduction: t.Reduction;
  readonly full: boolean;
  readonly eps: number;
  constructor(opts: LossOptions & { full?: boolean; eps?: number } = {}) {
    super();
    this.reduction = reductionOf(opts, 'GaussianNLLLoss');
    this.full = opts.full ?? false;
    this.eps = opts.eps ?? 1e-6;
  }
  override forward(input: t.Tensor, target: t.Tensor, variance: t.Tensor | number): t.Tensor {
    return F.gaussianNllLoss(input, target, variance, {
      full: this.full,
      eps: this.eps,
      reduction: this.reduction,
    });
  }
}

export class CTCLoss extends Module {
  readonly reduction: t.Reduction;
  readonly blank: number;
  readonly zeroInfinity: boolean;
  constructor(opts: F.CtcLossOptions = {}) {
    super();
    this.reduction = reductionOf(opts, 'CTCLoss');
    this.blank = opts.blank ?? 0;
    this.zeroInfinity = opts.zeroInfinity ?? false;
  }
  override forward(
    logProbs: t.Tensor,
    targets: t.Tensor,
    inputLengths: t.Tensor,
    targetLengths: t.Tensor,
  ): t.Tensor {
    return F.ctcLoss(logProbs, targets, inputLengths, targetLengths, {
      blank: this.blank,
      zeroInfinity: this.zeroInfinity,
      reduction: this.reduction,
    });
  }
}

export class TripletMarginWithDistanceLoss extends Module {
  readonly reduction: t.Reduction;
  readonly distanceFunction: ((x1: t.Tensor, x2: t.Tensor) => t.Tensor) | null;
  readonly margin: number;
  readonly swap: boolean;
  constructor(opts: F.TripletMarginWithDistanceLossOptions = {}) {
    super();
    this.reduction = reductionOf(opts, 'TripletMarginWithDistanceLoss');
    this.distanceFunction = opts.distanceFunction ?? null;
    this.margin = opts.margin ?? 1;
    if (!(this.margin > 0)) {
      throw new RangeError(
        `TripletMarginWithDistanceLoss: margin must be greater than 0, got ${this.margin}`,
      );
    }
    this.swap = opts.swap ?? false;
  }
  override forward(anchor: t.Tensor, positive: t.Tensor, negative: t.Tensor): t.Tensor {
    return F.tripletMarginWithDistanceLoss(anchor, positive, negative, {
      distanceFunction: this.distanceFunction,
      margin: this.margin,
      swap: this.swap,
      reduction: this.reduction,
    });
  }
}

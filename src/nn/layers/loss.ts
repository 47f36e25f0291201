// torch.nn.modules.loss: each loss module is its functional with the options stored, over
// torch's _Loss (the reduction, checked) and _WeightedLoss (a `weight` buffer, under
// PyTorch's state-dict name); the three margin losses, whose arguments are the same, share
// _MarginLoss. The constructors take PyTorch's arguments, positional or by name
// (nn/args.ts); the deprecated size_average and reduce set the reduction, as there.
import type * as t from '../../core/index.ts';
import { type Args, bind, LEGACY_REDUCTION, legacyReduction, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

/** The `reduction` option of every loss module. */
export interface LossOptions<R extends string = t.Reduction> {
  /** 'mean' (default), 'sum' or 'none'. */
  reduction?: R;
}

/** PyTorch's deprecated reduction arguments, in most losses' signatures. */
interface Legacy {
  /** Deprecated: with `reduce`, decides the reduction (false: 'sum'). */
  sizeAverage?: boolean | null;
  /** Deprecated: false gives 'none'. */
  reduce?: boolean | null;
}

type LegacyLossOptions<R extends string = t.Reduction> = LossOptions<R> & Legacy;

/**
 * What every loss hands _Loss: the reduction of its bound arguments, `reduction` or what
 * the deprecated arguments say (in the signatures that have them).
 */
function reductionOf<R extends string>(a: LegacyLossOptions<R>): { reduction?: R } {
  return { reduction: legacyReduction(a.sizeAverage, a.reduce, a.reduction) as R | undefined };
}

// _Loss's own signature: MSELoss, L1Loss, SoftMarginLoss, MultiLabelMarginLoss take it.
const LOSS = signature(['MSELoss', 'L1Loss', 'SoftMarginLoss', 'MultiLabelMarginLoss'], {
  optional: LEGACY_REDUCTION,
});
// _WeightedLoss's: BCELoss and MultiLabelSoftMarginLoss take it.
const WEIGHTED = signature(['BCELoss', 'MultiLabelSoftMarginLoss'], {
  optional: ['weight', ...LEGACY_REDUCTION],
});
type WeightedParams = LegacyLossOptions & { weight?: t.Tensor | null };

/**
 * torch's _Loss: the reduction, 'mean' by default, checked (an error names the class).
 * `R` widens it for a loss with reductions of its own (KLDivLoss's 'batchmean').
 */
export abstract class _Loss<R extends string = t.Reduction> extends Module {
  readonly reduction: R;

  /** `(size_average, reduce, reduction)`, PyTorch's _Loss arguments (subclasses with more bind theirs). */
  constructor(...args: Args<typeof LOSS, LegacyLossOptions<R>>) {
    super();
    const opts = reductionOf(bind<LegacyLossOptions<R>>(LOSS, args, new.target.name));
    const r = opts.reduction ?? 'mean';
    if (r !== 'mean' && r !== 'sum' && r !== 'none' && !this.ownReductions.includes(r)) {
      throw new TypeError(
        `${new.target.name}: reduction must be 'none', 'mean' or 'sum', got ${JSON.stringify(r)}`,
      );
    }
    this.reduction = r as R;
  }

  /** The reductions this loss takes besides 'none', 'mean' and 'sum'. */
  protected get ownReductions(): readonly string[] {
    return [];
  }
}

/** torch's _WeightedLoss: a per-class (or per-element) rescaling weight, the buffer `weight`. */
export abstract class _WeightedLoss extends _Loss {
  /** `(weight, size_average, reduce, reduction)`, PyTorch's _WeightedLoss arguments. */
  constructor(...args: Args<typeof WEIGHTED, WeightedParams>) {
    const opts = bind<WeightedParams>(WEIGHTED, args, new.target.name);
    super(reductionOf(opts));
    this.registerBuffer('weight', opts.weight ?? null);
  }

  get weight(): t.Tensor | null {
    return this._buffers.get('weight') ?? null;
  }
}

/** Squared error (torch.nn.MSELoss). */
export class MSELoss extends _Loss {
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.mseLoss(input, target, { reduction: this.reduction });
  }
}

/** Absolute error (torch.nn.L1Loss). */
export class L1Loss extends _Loss {
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.l1Loss(input, target, { reduction: this.reduction });
  }
}

const SMOOTH_L1 = signature('SmoothL1Loss', { optional: [...LEGACY_REDUCTION, 'beta'] });
type SmoothL1Params = LegacyLossOptions & { beta?: number };

/** Smooth L1 (torch.nn.SmoothL1Loss): squared below beta, absolute above. */
export class SmoothL1Loss extends _Loss {
  readonly beta: number;

  constructor(...args: Args<typeof SMOOTH_L1, SmoothL1Params>) {
    const opts = bind<SmoothL1Params>(SMOOTH_L1, args, 'SmoothL1Loss');
    super(reductionOf(opts));
    this.beta = opts.beta ?? 1;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.smoothL1Loss(input, target, { reduction: this.reduction, beta: this.beta });
  }
}

const HUBER = signature('HuberLoss', { optional: ['reduction', 'delta'] });
type HuberParams = LossOptions & { delta?: number };

/** Huber loss (torch.nn.HuberLoss): squared below delta, delta-scaled absolute above. */
export class HuberLoss extends _Loss {
  readonly delta: number;

  constructor(...args: Args<typeof HUBER, HuberParams>) {
    const opts = bind<HuberParams>(HUBER, args, 'HuberLoss');
    super(reductionOf(opts));
    this.delta = opts.delta ?? 1;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.huberLoss(input, target, { reduction: this.reduction, delta: this.delta });
  }
}

/** Logistic loss of ±1 targets (torch.nn.SoftMarginLoss). */
export class SoftMarginLoss extends _Loss {
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.softMarginLoss(input, target, { reduction: this.reduction });
  }
}

/** Multi-class multi-label hinge loss over class indices (torch.nn.MultiLabelMarginLoss). */
export class MultiLabelMarginLoss extends _Loss {
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.multilabelMarginLoss(input, target, { reduction: this.reduction });
  }
}

const KL_DIV = signature('KLDivLoss', { optional: [...LEGACY_REDUCTION, 'logTarget'] });

/** Kullback-Leibler divergence (torch.nn.KLDivLoss); reduction may also be 'batchmean'. */
export class KLDivLoss extends _Loss<t.Reduction | 'batchmean'> {
  readonly logTarget: boolean;

  constructor(...args: Args<typeof KL_DIV, F.KlDivOptions>) {
    const opts = bind<F.KlDivOptions>(KL_DIV, args, 'KLDivLoss');
    super(reductionOf(opts));
    this.logTarget = opts.logTarget ?? false;
  }

  protected override get ownReductions(): readonly string[] {
    return ['batchmean'];
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.klDiv(input, target, { reduction: this.reduction, logTarget: this.logTarget });
  }
}

const POISSON = signature('PoissonNLLLoss', {
  optional: ['logInput', 'full', 'sizeAverage', 'eps', 'reduce', 'reduction'],
});
type PoissonParams = LegacyLossOptions & { logInput?: boolean; full?: boolean; eps?: number };

/** Negative log likelihood of a Poisson target (torch.nn.PoissonNLLLoss). */
export class PoissonNLLLoss extends _Loss {
  readonly logInput: boolean;
  readonly full: boolean;
  readonly eps: number;

  constructor(...args: Args<typeof POISSON, PoissonParams>) {
    const opts = bind<PoissonParams>(POISSON, args, 'PoissonNLLLoss');
    super(reductionOf(opts));
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

// PyTorch's GaussianNLLLoss takes its arguments by keyword only.
const GAUSSIAN = signature('GaussianNLLLoss', { keywordOnly: ['full', 'eps', 'reduction'] });
type GaussianParams = LossOptions & { full?: boolean; eps?: number };

/** Negative log likelihood of a Gaussian target; forward(input, target, variance) (torch.nn.GaussianNLLLoss). */
export class GaussianNLLLoss extends _Loss {
  readonly full: boolean;
  readonly eps: number;

  constructor(...args: Args<typeof GAUSSIAN, GaussianParams>) {
    const opts = bind<GaussianParams>(GAUSSIAN, args, 'GaussianNLLLoss');
    super(reductionOf(opts));
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

export interface CrossEntropyLossOptions extends Legacy {
  /** Per-class rescaling weight, a [C] tensor (registered as the buffer `weight`). */
  weight?: t.Tensor | null;
  /** Target value that contributes neither loss nor gradient. Default -100. */
  ignoreIndex?: number;
  /** 'mean' (default; weighted mean with a weight), 'sum' or 'none'. */
  reduction?: t.Reduction;
  /** Mixes the one-hot target with the uniform distribution by this amount. Default 0. */
  labelSmoothing?: number;
}

const CROSS_ENTROPY = signature('CrossEntropyLoss', {
  optional: ['weight', 'sizeAverage', 'ignoreIndex', 'reduce', 'reduction', 'labelSmoothing'],
});

/** Log-softmax + negative log likelihood over class logits; targets are class indices or probabilities. */
export class CrossEntropyLoss extends _WeightedLoss {
  readonly ignoreIndex: number;
  readonly labelSmoothing: number;

  constructor(...args: Args<typeof CROSS_ENTROPY, CrossEntropyLossOptions>) {
    const opts = bind<CrossEntropyLossOptions>(CROSS_ENTROPY, args, 'CrossEntropyLoss');
    super({ weight: opts.weight, ...reductionOf(opts) });
    this.ignoreIndex = opts.ignoreIndex ?? -100;
    this.labelSmoothing = opts.labelSmoothing ?? 0;
    if (!(this.labelSmoothing >= 0 && this.labelSmoothing <= 1)) {
      throw new RangeError(`labelSmoothing must be in [0, 1], got ${this.labelSmoothing}`);
    }
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.crossEntropy(input, target, {
      weight: this.weight,
      ignoreIndex: this.ignoreIndex,
      reduction: this.reduction,
      labelSmoothing: this.labelSmoothing,
    });
  }
}

export interface NLLLossOptions extends LossOptions, Legacy {
  /** Per-class rescaling weight, a [C] tensor (registered as the buffer `weight`). */
  weight?: t.Tensor | null;
  /** Target value that contributes neither loss nor gradient. Default -100. */
  ignoreIndex?: number;
}

const NLL = signature(['NLLLoss', 'NLLLoss2d'], {
  optional: ['weight', 'sizeAverage', 'ignoreIndex', 'reduce', 'reduction'],
});

/** Negative log likelihood over log-probabilities (torch.nn.NLLLoss). */
export class NLLLoss extends _WeightedLoss {
  readonly ignoreIndex: number;

  constructor(...args: Args<typeof NLL, NLLLossOptions>) {
    const opts = bind<NLLLossOptions>(NLL, args, new.target.name);
    super({ weight: opts.weight, ...reductionOf(opts) });
    this.ignoreIndex = opts.ignoreIndex ?? -100;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.nllLoss(input, target, {
      weight: this.weight,
      ignoreIndex: this.ignoreIndex,
      reduction: this.reduction,
    });
  }
}

/** The old name of NLLLoss for [N, C, H, W] input (torch keeps it as a subclass). */
export class NLLLoss2d extends NLLLoss {}

/** Binary cross entropy over probabilities (torch.nn.BCELoss); `weight` is a buffer. */
export class BCELoss extends _WeightedLoss {
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.binaryCrossEntropy(input, target, { weight: this.weight, reduction: this.reduction });
  }
}

export interface BCEWithLogitsLossOptions extends LossOptions, Legacy {
  /** Rescaling weight of each element's loss (the buffer `weight`). */
  weight?: t.Tensor | null;
  /** Weight of positive examples, per class (the buffer `pos_weight`, PyTorch's key). */
  posWeight?: t.Tensor | null;
}

const BCE_LOGITS = signature('BCEWithLogitsLoss', { optional: ['weight', ...LEGACY_REDUCTION, 'posWeight'] });

/** sigmoid + binary cross entropy in one stable op (torch.nn.BCEWithLogitsLoss). */
export class BCEWithLogitsLoss extends _WeightedLoss {
  constructor(...args: Args<typeof BCE_LOGITS, BCEWithLogitsLossOptions>) {
    const opts = bind<BCEWithLogitsLossOptions>(BCE_LOGITS, args, 'BCEWithLogitsLoss');
    super({ weight: opts.weight, ...reductionOf(opts) });
    this.registerBuffer('pos_weight', opts.posWeight ?? null);
  }

  get posWeight(): t.Tensor | null {
    return this._buffers.get('pos_weight') ?? null;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.binaryCrossEntropyWithLogits(input, target, {
      weight: this.weight,
      posWeight: this.posWeight,
      reduction: this.reduction,
    });
  }
}

/** Multi-label one-versus-all logistic loss (torch.nn.MultiLabelSoftMarginLoss); `weight` is a buffer. */
export class MultiLabelSoftMarginLoss extends _WeightedLoss {
  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.multilabelSoftMarginLoss(input, target, { weight: this.weight, reduction: this.reduction });
  }
}

const MULTI_MARGIN = signature('MultiMarginLoss', {
  optional: ['p', 'margin', 'weight', ...LEGACY_REDUCTION],
});
type MultiMarginParams = WeightedParams & { p?: 1 | 2; margin?: number };

/** Multi-class hinge loss (torch.nn.MultiMarginLoss); `weight` is a buffer. */
export class MultiMarginLoss extends _WeightedLoss {
  readonly p: 1 | 2;
  readonly margin: number;

  constructor(...args: Args<typeof MULTI_MARGIN, MultiMarginParams>) {
    const opts = bind<MultiMarginParams>(MULTI_MARGIN, args, 'MultiMarginLoss');
    super({ weight: opts.weight, ...reductionOf(opts) });
    this.p = opts.p ?? 1;
    if (this.p !== 1 && this.p !== 2)
      throw new RangeError(`MultiMarginLoss: p must be 1 or 2, got ${this.p}`);
    this.margin = opts.margin ?? 1;
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

// HingeEmbeddingLoss, CosineEmbeddingLoss, MarginRankingLoss: (margin, size_average, reduce, reduction).
const MARGIN = signature(['HingeEmbeddingLoss', 'CosineEmbeddingLoss', 'MarginRankingLoss'], {
  optional: ['margin', ...LEGACY_REDUCTION],
});
type MarginParams = LegacyLossOptions & { margin?: number };

/** The three margin losses: their margin (each class's default) and the reduction. */
export abstract class _MarginLoss extends _Loss {
  /** The margin when none is given: PyTorch's default of the class. */
  protected static readonly defaultMargin: number = 0;
  readonly margin: number;

  constructor(...args: Args<typeof MARGIN, MarginParams>) {
    const opts = bind<MarginParams>(MARGIN, args, new.target.name);
    super(reductionOf(opts));
    this.margin = opts.margin ?? new.target.defaultMargin;
  }
}

/** Loss of ±1 targets on the margin of `input` (torch.nn.HingeEmbeddingLoss). */
export class HingeEmbeddingLoss extends _MarginLoss {
  protected static override readonly defaultMargin = 1;

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.hingeEmbeddingLoss(input, target, { margin: this.margin, reduction: this.reduction });
  }
}

/** Whether two inputs are alike (target 1) or not (-1), by cosine similarity (torch.nn.CosineEmbeddingLoss). */
export class CosineEmbeddingLoss extends _MarginLoss {
  override forward(input1: t.Tensor, input2: t.Tensor, target: t.Tensor): t.Tensor {
    return F.cosineEmbeddingLoss(input1, input2, target, { margin: this.margin, reduction: this.reduction });
  }
}

/** Which of two inputs ranks higher (target 1 or -1), with a margin (torch.nn.MarginRankingLoss). */
export class MarginRankingLoss extends _MarginLoss {
  override forward(input1: t.Tensor, input2: t.Tensor, target: t.Tensor): t.Tensor {
    return F.marginRankingLoss(input1, input2, target, { margin: this.margin, reduction: this.reduction });
  }
}

const TRIPLET = signature('TripletMarginLoss', {
  optional: ['margin', 'p', 'eps', 'swap', ...LEGACY_REDUCTION],
});

/** Anchor closer to the positive than to the negative by a margin, in p-norm (torch.nn.TripletMarginLoss). */
export class TripletMarginLoss extends _Loss {
  readonly margin: number;
  readonly p: number;
  readonly eps: number;
  readonly swap: boolean;

  constructor(...args: Args<typeof TRIPLET, F.TripletMarginLossOptions>) {
    const opts = bind<F.TripletMarginLossOptions>(TRIPLET, args, 'TripletMarginLoss');
    super(reductionOf(opts));
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

// PyTorch's TripletMarginWithDistanceLoss takes its arguments by keyword only.
const TRIPLET_DISTANCE = signature('TripletMarginWithDistanceLoss', {
  keywordOnly: ['distanceFunction', 'margin', 'swap', 'reduction'],
});

/** TripletMarginLoss with a distance function of one's own (torch.nn.TripletMarginWithDistanceLoss). */
export class TripletMarginWithDistanceLoss extends _Loss {
  readonly distanceFunction: ((x1: t.Tensor, x2: t.Tensor) => t.Tensor) | null;
  readonly margin: number;
  readonly swap: boolean;

  constructor(...args: Args<typeof TRIPLET_DISTANCE, F.TripletMarginWithDistanceLossOptions>) {
    const opts = bind<F.TripletMarginWithDistanceLossOptions>(
      TRIPLET_DISTANCE,
      args,
      'TripletMarginWithDistanceLoss',
    );
    super(reductionOf(opts));
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

const CTC = signature('CTCLoss', { optional: ['blank', 'reduction', 'zeroInfinity'] });

/** Connectionist temporal classification (torch.nn.CTCLoss). */
export class CTCLoss extends _Loss {
  readonly blank: number;
  readonly zeroInfinity: boolean;

  constructor(...args: Args<typeof CTC, F.CtcLossOptions>) {
    const opts = bind<F.CtcLossOptions>(CTC, args, 'CTCLoss');
    super(reductionOf(opts));
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

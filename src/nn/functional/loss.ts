// Loss functions of torch.nn.functional, with PyTorch's string `reduction` and its
// parameters positional or by name (nn/args.ts). PyTorch's deprecated size_average and
// reduce are honoured as PyTorch reads them (legacyReduction).

import type { CrossEntropyOptions as CoreCrossEntropyOptions } from '../../core/index.ts';
import * as t from '../../core/index.ts';
import { define, LEGACY_REDUCTION, legacyReduction } from '../args.ts';
import { aten, type ReductionOptions, reductionOf, sameShape, shapeText } from './common.ts';

/** PyTorch's deprecated reduction arguments, still in its signatures (see legacyReduction). */
export interface LegacyReductionOptions extends ReductionOptions {
  /** Deprecated: with `reduce`, decides the reduction (false: 'sum'). Default null. */
  sizeAverage?: boolean | null;
  /** Deprecated: false gives 'none'. Default null. */
  reduce?: boolean | null;
}

/** The reduction a call asks for, its deprecated arguments read as PyTorch reads them. */
function reductionIn(a: LegacyReductionOptions): t.Reduction {
  return legacyReduction(a.sizeAverage, a.reduce, a.reduction) ?? 'mean';
}

/** The aten reduction enum of a call's reduction (legacy arguments included), checked. */
function reductionCode(a: LegacyReductionOptions, fn: string): number {
  return reductionOf({ reduction: reductionIn(a) }, fn);
}

type InputTarget<O> = { input: t.Tensor; target: t.Tensor } & O;

export interface NllLossOptions extends LegacyReductionOptions {
  /** Per-class rescaling weight, a [C] tensor. */
  weight?: t.Tensor | null;
  /** Target value that contributes neither loss nor gradient. Default -100. */
  ignoreIndex?: number;
}

/**
 * Negative log likelihood of log-probabilities `input` ([N, C] or [N, C, d1, ...]) at
 * class-index `target`; aten's nll_loss_nd, as torch.nn.functional.nll_loss calls.
 */
export const nllLoss = define(
  'nllLoss',
  {
    required: ['input', 'target'],
    optional: ['weight', 'sizeAverage', 'ignoreIndex', 'reduce', 'reduction'],
  },
  (a: InputTarget<NllLossOptions>): t.Tensor =>
    aten(
      'aten::nll_loss_nd',
      a.input,
      a.target,
      a.weight ?? null,
      reductionCode(a, 'nllLoss'),
      a.ignoreIndex ?? -100,
    ),
);

export interface CrossEntropyOptions extends CoreCrossEntropyOptions, LegacyReductionOptions {}

/** torch.nn.functional.cross_entropy: class-index or class-probability targets. */
export const crossEntropy = define(
  'crossEntropy',
  {
    required: ['input', 'target'],
    optional: ['weight', 'sizeAverage', 'ignoreIndex', 'reduce', 'reduction', 'labelSmoothing'],
  },
  (a: InputTarget<CrossEntropyOptions>): t.Tensor => {
    const reduction = reductionIn(a);
    reductionOf({ reduction }, 'crossEntropy');
    return t.crossEntropy(a.input, a.target, {
      weight: a.weight,
      ignoreIndex: a.ignoreIndex,
      reduction,
      labelSmoothing: a.labelSmoothing,
    });
  },
);

// mse_loss and l1_loss broadcast input and target (PyTorch warns when their sizes differ).
function broadcastPair(input: t.Tensor, target: t.Tensor): [t.Tensor, t.Tensor] {
  if (sameShape(input.shape, target.shape)) return [input, target];
  return t.ops.call('aten::broadcast_tensors', [input, target]) as [t.Tensor, t.Tensor];
}

/** The per-element loss times `weight`, reduced as PyTorch's weighted mse/l1/huber losses do. */
function weighted(
  loss: t.Tensor,
  weight: t.Tensor,
  input: t.Tensor,
  reduction: t.Reduction,
  mean: 'sum-over-weight' | 'mean',
  fn: string,
): t.Tensor {
  if (!sameShape(weight.shape, input.shape)) {
    throw new RangeError(`${fn}(): Weights and input must have the same size.`);
  }
  const w = t.mul(loss, weight);
  if (reduction === 'none') return w;
  if (reduction === 'sum') return t.sum(w);
  return mean === 'mean' ? t.mean(w) : t.div(t.sum(w), t.sum(weight));
}

/** What mseLoss and l1Loss take: (input, target, size_average, reduce, reduction, weight). */
export interface PointwiseLossOptions extends LegacyReductionOptions {
  /** A weight per element (input's shape); the mean is then the weighted mean. */
  weight?: t.Tensor | null;
}

const POINTWISE = {
  required: ['input', 'target'],
  optional: [...LEGACY_REDUCTION, 'weight'],
} as const;

/** Mean (or summed, or element-wise) squared error. */
export const mseLoss = define('mseLoss', POINTWISE, (a: InputTarget<PointwiseLossOptions>): t.Tensor => {
  const code = reductionCode(a, 'mseLoss');
  return t.tidy(() => {
    const [x, y] = broadcastPair(a.input, a.target);
    if (!a.weight) return t.mseLoss(x, y, code);
    const sq = t.pow(t.sub(x, y), 2);
    return weighted(sq, a.weight, a.input, reductionIn(a), 'sum-over-weight', 'mseLoss');
  });
});

/** Mean (or summed, or element-wise) absolute error. */
export const l1Loss = define('l1Loss', POINTWISE, (a: InputTarget<PointwiseLossOptions>): t.Tensor => {
  const code = reductionCode(a, 'l1Loss');
  return t.tidy(() => {
    const [x, y] = broadcastPair(a.input, a.target);
    if (!a.weight) return t.l1Loss(x, y, code);
    return weighted(t.abs(t.sub(x, y)), a.weight, a.input, reductionIn(a), 'sum-over-weight', 'l1Loss');
  });
});

/** Squared error below `beta`, absolute error (minus beta/2) above; beta 0 is l1Loss. */
export const smoothL1Loss = define(
  'smoothL1Loss',
  { required: ['input', 'target'], optional: [...LEGACY_REDUCTION, 'beta'] },
  (a: InputTarget<LegacyReductionOptions & { beta?: number }>): t.Tensor => {
    const reduction = reductionCode(a, 'smoothL1Loss');
    const beta = a.beta ?? 1;
    if (!(beta >= 0)) throw new RangeError(`smoothL1Loss(): beta must be >= 0, got ${beta}`);
    return t.tidy(() => {
      const [x, y] = broadcastPair(a.input, a.target);
      return beta === 0 ? t.l1Loss(x, y, reduction) : t.smoothL1Loss(x, y, reduction, beta);
    });
  },
);

export interface HuberLossOptions extends ReductionOptions {
  delta?: number;
  /** A weight per element (input's shape). */
  weight?: t.Tensor | null;
}

/** Squared error below `delta`, delta·(|error| - delta/2) above. */
export const huberLoss = define(
  'huberLoss',
  { required: ['input', 'target'], optional: ['reduction', 'delta', 'weight'] },
  (a: InputTarget<HuberLossOptions>): t.Tensor => {
    const code = reductionOf(a, 'huberLoss');
    const delta = a.delta ?? 1;
    return t.tidy(() => {
      const [x, y] = broadcastPair(a.input, a.target);
      if (!a.weight) return t.huberLoss(x, y, code, delta);
      const loss = t.huberLoss(x, y, t.reductionCode('none'), delta);
      return weighted(loss, a.weight, a.input, a.reduction ?? 'mean', 'mean', 'huberLoss');
    });
  },
);

export interface BinaryCrossEntropyOptions extends LegacyReductionOptions {
  /** Rescaling weight, broadcast to the target's shape. */
  weight?: t.Tensor | null;
}

/** Binary cross entropy between probabilities `input` and targets in [0, 1]. */
export const binaryCrossEntropy = define(
  'binaryCrossEntropy',
  { required: ['input', 'target'], optional: ['weight', ...LEGACY_REDUCTION] },
  ({ input, target, ...a }: InputTarget<BinaryCrossEntropyOptions>): t.Tensor => {
    const reduction = reductionCode(a, 'binaryCrossEntropy');
    if (!sameShape(input.shape, target.shape)) {
      throw new RangeError(
        `binaryCrossEntropy(): target size ${shapeText(target.shape)} must be the same as input size ${shapeText(input.shape)}`,
      );
    }
    const weight = a.weight ?? null;
    return t.tidy(() =>
      t.binaryCrossEntropy(input, target, weight === null ? null : t.expand(weight, target.shape), reduction),
    );
  },
);

export interface BinaryCrossEntropyWithLogitsOptions extends BinaryCrossEntropyOptions {
  /** Weight of the positive examples, broadcast along the class (last) dim. */
  posWeight?: t.Tensor | null;
}

/** sigmoid + binary cross entropy in one numerically stable op. */
export const binaryCrossEntropyWithLogits = define(
  'binaryCrossEntropyWithLogits',
  {
    required: ['input', 'target'],
    optional: ['weight', ...LEGACY_REDUCTION, 'posWeight'],
  },
  ({ input, target, ...a }: InputTarget<BinaryCrossEntropyWithLogitsOptions>): t.Tensor => {
    const reduction = reductionCode(a, 'binaryCrossEntropyWithLogits');
    if (!sameShape(input.shape, target.shape)) {
      throw new RangeError(
        `binaryCrossEntropyWithLogits(): target size ${shapeText(target.shape)} must be the same as input size ${shapeText(input.shape)}`,
      );
    }
    return t.binaryCrossEntropyWithLogits(input, target, a.weight ?? null, a.posWeight ?? null, reduction);
  },
);

export interface KlDivOptions {
  /** Deprecated (see LegacyReductionOptions). */
  sizeAverage?: boolean | null;
  /** Deprecated (see LegacyReductionOptions). */
  reduce?: boolean | null;
  /** 'mean' (over elements; PyTorch's default), 'batchmean' (sum / batch size: the true KL), 'sum' or 'none'. */
  reduction?: t.Reduction | 'batchmean';
  /** The target is given as log-probabilities. Default false. */
  logTarget?: boolean;
}

/** Kullback-Leibler divergence of log-probabilities `input` from `target`. */
export const klDiv = define(
  'klDiv',
  { required: ['input', 'target'], optional: [...LEGACY_REDUCTION, 'logTarget'] },
  ({ input, target, ...a }: InputTarget<KlDivOptions>): t.Tensor => {
    const r = legacyReduction(a.sizeAverage, a.reduce, a.reduction) ?? 'mean';
    const logTarget = a.logTarget ?? false;
    if (r === 'batchmean') {
      return t.tidy(() => {
        const sum = aten('aten::kl_div', input, target, t.reductionCode('sum'), logTarget);
        return input.ndim === 0 ? sum : t.div(sum, input.shape[0]);
      });
    }
    return aten('aten::kl_div', input, target, reductionOf({ reduction: r }, 'klDiv'), logTarget);
  },
);

export interface PoissonNllLossOptions extends LegacyReductionOptions {
  /** The input is log(rate) (default true). */
  logInput?: boolean;
  /** Add the Stirling approximation term. Default false. */
  full?: boolean;
  eps?: number;
}

/** Poisson negative log likelihood; `logInput` (default true) means input is log(rate). */
export const poissonNllLoss = define(
  'poissonNllLoss',
  {
    required: ['input', 'target'],
    optional: ['logInput', 'full', 'sizeAverage', 'eps', 'reduce', 'reduction'],
  },
  ({ input, target, ...a }: InputTarget<PoissonNllLossOptions>): t.Tensor => {
    const reduction = reductionCode(a, 'poissonNllLoss');
    const { logInput = true, full = false, eps = 1e-8 } = a;
    return aten('aten::poisson_nll_loss', input, target, logInput, full, eps, reduction);
  },
);

type PairTarget<O> = { input1: t.Tensor; input2: t.Tensor; target: t.Tensor } & O;
type MarginOptions = LegacyReductionOptions & { margin?: number };
const PAIR_MARGIN = {
  required: ['input1', 'input2', 'target'],
  optional: ['margin', ...LEGACY_REDUCTION],
} as const;

/** 1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1. */
export const cosineEmbeddingLoss = define(
  'cosineEmbeddingLoss',
  PAIR_MARGIN,
  ({ input1, input2, target, ...a }: PairTarget<MarginOptions>): t.Tensor => {
    const reduction = reductionCode(a, 'cosineEmbeddingLoss');
    return aten('aten::cosine_embedding_loss', input1, input2, target, a.margin ?? 0, reduction);
  },
);

/** max(0, -target·(input1 - input2) + margin). */
export const marginRankingLoss = define(
  'marginRankingLoss',
  PAIR_MARGIN,
  ({ input1, input2, target, ...a }: PairTarget<MarginOptions>): t.Tensor => {
    const reduction = reductionCode(a, 'marginRankingLoss');
    if (input1.ndim !== input2.ndim || input1.ndim !== target.ndim) {
      throw new RangeError(
        `marginRankingLoss(): all input tensors should have the same number of dims, got input1 ${shapeText(input1.shape)}, input2 ${shapeText(input2.shape)}, target ${shapeText(target.shape)}`,
      );
    }
    return aten('aten::margin_ranking_loss', input1, input2, target, a.margin ?? 0, reduction);
  },
);

/** x for target 1, max(0, margin - x) for target -1. */
export const hingeEmbeddingLoss = define(
  'hingeEmbeddingLoss',
  { required: ['input', 'target'], optional: ['margin', ...LEGACY_REDUCTION] },
  ({ input, target, ...a }: InputTarget<MarginOptions>): t.Tensor =>
    aten('aten::hinge_embedding_loss', input, target, a.margin ?? 1, reductionCode(a, 'hingeEmbeddingLoss')),
);

const LEGACY_ONLY = {
  required: ['input', 'target'],
  optional: LEGACY_REDUCTION,
} as const;

/** log(1 + exp(-target·input)) for targets ±1. */
export const softMarginLoss = define(
  'softMarginLoss',
  LEGACY_ONLY,
  ({ input, target, ...a }: InputTarget<LegacyReductionOptions>): t.Tensor =>
    aten('aten::soft_margin_loss', input, target, reductionCode(a, 'softMarginLoss')),
);

export interface TripletMarginLossOptions extends LegacyReductionOptions {
  /** Default 1; must be > 0. */
  margin?: number;
  /** The norm's exponent. Default 2. */
  p?: number;
  eps?: number;
  /** Use the positive-negative distance when smaller (distance swap). Default false. */
  swap?: boolean;
}

type Triplet<O> = { anchor: t.Tensor; positive: t.Tensor; negative: t.Tensor } & O;

/** max(d(anchor, positive) - d(anchor, negative) + margin, 0). */
export const tripletMarginLoss = define(
  'tripletMarginLoss',
  {
    required: ['anchor', 'positive', 'negative'],
    optional: ['margin', 'p', 'eps', 'swap', ...LEGACY_REDUCTION],
  },
  ({ anchor, positive, negative, ...a }: Triplet<TripletMarginLossOptions>): t.Tensor => {
    const reduction = reductionCode(a, 'tripletMarginLoss');
    const margin = a.margin ?? 1;
    if (!(margin > 0))
      throw new RangeError(`tripletMarginLoss(): margin must be greater than 0, got ${margin}`);
    const { p = 2, eps = 1e-6, swap = false } = a;
    return aten('aten::triplet_margin_loss', anchor, positive, negative, margin, p, eps, swap, reduction);
  },
);

export interface MultiMarginLossOptions extends LegacyReductionOptions {
  /** 1 or 2. Default 1. */
  p?: 1 | 2;
  margin?: number;
  /** Per-class weight, 1-d. */
  weight?: t.Tensor | null;
}

/** Multi-class hinge loss over class-index targets. */
export const multiMarginLoss = define(
  'multiMarginLoss',
  {
    required: ['input', 'target'],
    optional: ['p', 'margin', 'weight', ...LEGACY_REDUCTION],
  },
  ({ input, target, ...a }: InputTarget<MultiMarginLossOptions>): t.Tensor => {
    const reduction = reductionCode(a, 'multiMarginLoss');
    const p = a.p ?? 1;
    if (p !== 1 && p !== 2) throw new RangeError(`multiMarginLoss(): p must be 1 or 2, got ${p}`);
    const weight = a.weight ?? null;
    if (weight !== null && weight.ndim !== 1)
      throw new RangeError('multiMarginLoss(): weight must be one-dimensional');
    return aten('aten::multi_margin_loss', input, target, p, a.margin ?? 1, weight, reduction);
  },
);

/** Multi-label hinge loss; target holds class indices, padded with -1. */
export const multilabelMarginLoss = define(
  'multilabelMarginLoss',
  LEGACY_ONLY,
  ({ input, target, ...a }: InputTarget<LegacyReductionOptions>): t.Tensor =>
    aten('aten::multilabel_margin_loss', input, target, reductionCode(a, 'multilabelMarginLoss')),
);

/** Per-class binary logistic loss averaged over classes (PyTorch's own composite). */
export const multilabelSoftMarginLoss = define(
  'multilabelSoftMarginLoss',
  { required: ['input', 'target'], optional: ['weight', ...LEGACY_REDUCTION] },
  ({ input, target, ...a }: InputTarget<BinaryCrossEntropyOptions>): t.Tensor => {
    const r = reductionIn(a);
    reductionOf({ reduction: r }, 'multilabelSoftMarginLoss');
    return t.tidy(() => {
      // -(target·logsigmoid(x) + (1 - target)·logsigmoid(-x))
      const pos = t.mul(target, aten('aten::log_sigmoid', input));
      const neg = t.mul(aten('aten::rsub.Scalar', target, 1), aten('aten::log_sigmoid', t.neg(input)));
      let loss = t.neg(t.add(pos, neg));
      if (a.weight) loss = t.mul(loss, a.weight);
      const classDim = input.ndim - 1;
      loss = t.div(t.sum(loss, [classDim]), input.shape[classDim]);
      if (r === 'none') return loss;
      return r === 'mean' ? t.mean(loss) : t.sum(loss);
    });
  },
);

export interface GaussianNllLossOptions extends ReductionOptions {
  /** Add the constant term 0.5·log(2π). Default false. */
  full?: boolean;
  /** The variance's lower clamp. Default 1e-6. */
  eps?: number;
}

/** `var` as a tensor of input's shape (a number filled in), or PyTorch's error about its size or sign. */
function varianceLike(input: t.Tensor, variance: t.Tensor | number): t.Tensor {
  if (typeof variance === 'number') {
    if (variance < 0) throw new RangeError('gaussianNllLoss(): var has negative entry/entries');
    return t.mul(t.onesLike(input), variance);
  }
  if (t.any(t.lt(variance, 0)).item())
    throw new RangeError('gaussianNllLoss(): var has negative entry/entries');
  if (sameShape(variance.shape, input.shape)) return variance;
  const inShape = input.shape;
  if (sameShape(inShape.slice(0, -1), variance.shape)) return t.unsqueeze(variance, -1);
  const oneMismatch =
    inShape.length === variance.ndim &&
    inShape.reduce((n, d, i) => n + (d !== variance.shape[i] ? variance.shape[i] : 0), 0) === 1;
  if (!oneMismatch) throw new RangeError('gaussianNllLoss(): var is of incorrect size');
  return variance;
}

/**
 * Gaussian negative log likelihood of `target` under N(input, var), as PyTorch composes
 * it: `var` (a number, or a tensor of input's shape, one dim short, or broadcastable with
 * one mismatched dim) is clamped to eps without gradient.
 */
export const gaussianNllLoss = define(
  'gaussianNllLoss',
  { required: ['input', 'target', 'var'], optional: ['full', 'eps', 'reduction'] },
  ({
    input,
    target,
    var: variance,
    ...a
  }: InputTarget<{ var: t.Tensor | number } & GaussianNllLossOptions>) => {
    const r = a.reduction ?? 'mean';
    reductionOf(a, 'gaussianNllLoss');
    const eps = a.eps ?? 1e-6;
    return t.tidy(() => {
      const v = varianceLike(input, variance);
      // var.clone() then clamp_(min=eps) under no_grad: the clamp does not reach autograd.
      const clamped = t.clone(v);
      t.ops.call('aten::clamp_min_', clamped.detach(), eps);
      const diff = t.sub(input, target);
      let loss = t.mul(t.add(t.log(clamped), t.div(t.pow(diff, 2), clamped)), 0.5);
      if (a.full) loss = t.add(loss, 0.5 * Math.log(2 * Math.PI));
      if (r === 'mean') return t.mean(loss);
      if (r === 'sum') return t.sum(loss);
      return loss;
    });
  },
);

export interface TripletMarginWithDistanceLossOptions extends ReductionOptions {
  /** Default: pairwiseDistance. */
  distanceFunction?: ((x1: t.Tensor, x2: t.Tensor) => t.Tensor) | null;
  /** Default 1; must be > 0. */
  margin?: number;
  swap?: boolean;
}

/** tripletMarginLoss with any distance function (PyTorch's composite; its options are keyword-only there). */
export const tripletMarginWithDistanceLoss = define(
  'tripletMarginWithDistanceLoss',
  {
    required: ['anchor', 'positive', 'negative'],
    keywordOnly: ['distanceFunction', 'margin', 'swap', 'reduction'],
  },
  ({ anchor, positive, negative, ...a }: Triplet<TripletMarginWithDistanceLossOptions>): t.Tensor => {
    const r = a.reduction ?? 'mean';
    reductionOf(a, 'tripletMarginWithDistanceLoss');
    const margin = a.margin ?? 1;
    if (!(margin > 0))
      throw new RangeError(`tripletMarginWithDistanceLoss(): margin must be greater than 0, got ${margin}`);
    if (anchor.ndim !== positive.ndim || positive.ndim !== negative.ndim) {
      throw new RangeError(
        `tripletMarginWithDistanceLoss(): anchor, positive and negative must have the same number of dims, got ${anchor.ndim}, ${positive.ndim}, ${negative.ndim}`,
      );
    }
    const dist =
      a.distanceFunction ??
      ((x: t.Tensor, y: t.Tensor) => aten('aten::pairwise_distance', x, y, 2, 1e-6, false));
    return t.tidy(() => {
      const distPos = dist(anchor, positive);
      let distNeg = dist(anchor, negative);
      if (a.swap) distNeg = t.minimum(distNeg, dist(positive, negative));
      const loss = t.clampMin(t.sub(t.add(distPos, margin), distNeg), 0);
      if (r === 'sum') return t.sum(loss);
      if (r === 'mean') return t.mean(loss);
      return loss;
    });
  },
);

export interface CtcLossOptions extends ReductionOptions {
  /** The blank label. Default 0. */
  blank?: number;
  /** Zero infinite losses (and their gradients). Default false. */
  zeroInfinity?: boolean;
}

interface CtcParams extends CtcLossOptions {
  logProbs: t.Tensor;
  targets: t.Tensor;
  inputLengths: t.Tensor;
  targetLengths: t.Tensor;
}

/** Connectionist temporal classification loss over log-probabilities [T, N, C]. */
export const ctcLoss = define(
  'ctcLoss',
  {
    required: ['logProbs', 'targets', 'inputLengths', 'targetLengths'],
    optional: ['blank', 'reduction', 'zeroInfinity'],
  },
  (a: CtcParams): t.Tensor =>
    aten(
      'aten::ctc_loss.Tensor',
      a.logProbs,
      a.targets,
      a.inputLengths,
      a.targetLengths,
      a.blank ?? 0,
      reductionOf(a, 'ctcLoss'),
      a.zeroInfinity ?? false,
    ),
);

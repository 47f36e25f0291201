// Loss functions of torch.nn.functional, with PyTorch's string `reduction`.
import * as t from '../../core/index.ts';
import { aten, type ReductionOptions, reductionOf, sameShape, shapeText } from './common.ts';

export { type CrossEntropyOptions, crossEntropy } from '../../core/index.ts';

export interface NllLossOptions extends ReductionOptions {
  /** Per-class rescaling weight, a [C] tensor. */
  weight?: t.Tensor | null;
  /** Target value that contributes neither loss nor gradient. Default -100. */
  ignoreIndex?: number;
}

/**
 * Negative log likelihood of log-probabilities `input` ([N, C] or [N, C, d1, ...]) at
 * class-index `target`; aten's nll_loss_nd, as torch.nn.functional.nll_loss calls.
 */
export function nllLoss(input: t.Tensor, target: t.Tensor, opts: NllLossOptions = {}): t.Tensor {
  const reduction = reductionOf(opts, 'nllLoss');
  return aten('aten::nll_loss_nd', input, target, opts.weight ?? null, reduction, opts.ignoreIndex ?? -100);
}

// mse_loss and l1_loss broadcast input and target (PyTorch warns when their sizes differ).
function broadcastPair(input: t.Tensor, target: t.Tensor): [t.Tensor, t.Tensor] {
  if (sameShape(input.shape, target.shape)) return [input, target];
  return t.ops.call('aten::broadcast_tensors', [input, target]) as [t.Tensor, t.Tensor];
}

/** Mean (or summed, or element-wise) squared error. */
export function mseLoss(input: t.Tensor, target: t.Tensor, opts: ReductionOptions = {}): t.Tensor {
  const reduction = reductionOf(opts, 'mseLoss');
  return t.tidy(() => t.mseLoss(...broadcastPair(input, target), reduction));
}

/** Mean (or summed, or element-wise) absolute error. */
export function l1Loss(input: t.Tensor, target: t.Tensor, opts: ReductionOptions = {}): t.Tensor {
  const reduction = reductionOf(opts, 'l1Loss');
  return t.tidy(() => t.l1Loss(...broadcastPair(input, target), reduction));
}

/** Squared error below `beta`, absolute error (minus beta/2) above; beta 0 is l1Loss. */
export function smoothL1Loss(
  input: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions & { beta?: number } = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'smoothL1Loss');
  const beta = opts.beta ?? 1;
  if (!(beta >= 0)) throw new RangeError(`smoothL1Loss(): beta must be >= 0, got ${beta}`);
  return t.tidy(() => {
    const [a, b] = broadcastPair(input, target);
    return beta === 0 ? t.l1Loss(a, b, reduction) : t.smoothL1Loss(a, b, reduction, beta);
  });
}

/** Squared error below `delta`, delta·(|error| - delta/2) above. */
export function huberLoss(
  input: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions & { delta?: number } = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'huberLoss');
  return t.tidy(() => t.huberLoss(...broadcastPair(input, target), reduction, opts.delta ?? 1));
}

export interface BinaryCrossEntropyOptions extends ReductionOptions {
  /** Rescaling weight, broadcast to the target's shape. */
  weight?: t.Tensor | null;
}

/** Binary cross entropy between probabilities `input` and targets in [0, 1]. */
export function binaryCrossEntropy(
  input: t.Tensor,
  target: t.Tensor,
  opts: BinaryCrossEntropyOptions = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'binaryCrossEntropy');
  if (!sameShape(input.shape, target.shape)) {
    throw new RangeError(
      `binaryCrossEntropy(): target size ${shapeText(target.shape)} must be the same as input size ${shapeText(input.shape)}`,
    );
  }
  const weight = opts.weight ?? null;
  return t.tidy(() =>
    t.binaryCrossEntropy(input, target, weight === null ? null : t.expand(weight, target.shape), reduction),
  );
}

export interface BinaryCrossEntropyWithLogitsOptions extends BinaryCrossEntropyOptions {
  /** Weight of the positive examples, broadcast along the class (last) dim. */
  posWeight?: t.Tensor | null;
}

/** sigmoid + binary cross entropy in one numerically stable op. */
export function binaryCrossEntropyWithLogits(
  input: t.Tensor,
  target: t.Tensor,
  opts: BinaryCrossEntropyWithLogitsOptions = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'binaryCrossEntropyWithLogits');
  if (!sameShape(input.shape, target.shape)) {
    throw new RangeError(
      `binaryCrossEntropyWithLogits(): target size ${shapeText(target.shape)} must be the same as input size ${shapeText(input.shape)}`,
    );
  }
  return t.binaryCrossEntropyWithLogits(
    input,
    target,
    opts.weight ?? null,
    opts.posWeight ?? null,
    reduction,
  );
}

export interface KlDivOptions {
  /** 'mean' (over elements; PyTorch's default), 'batchmean' (sum / batch size: the true KL), 'sum' or 'none'. */
  reduction?: t.Reduction | 'batchmean';
  /** The target is given as log-probabilities. Default false. */
  logTarget?: boolean;
}

/** Kullback-Leibler divergence of log-probabilities `input` from `target`. */
export function klDiv(input: t.Tensor, target: t.Tensor, opts: KlDivOptions = {}): t.Tensor {
  const r = opts.reduction ?? 'mean';
  const logTarget = opts.logTarget ?? false;
  if (r === 'batchmean') {
    return t.tidy(() => {
      const sum = aten('aten::kl_div', input, target, t.reductionCode('sum'), logTarget);
      return input.ndim === 0 ? sum : t.div(sum, input.shape[0]);
    });
  }
  const reduction = reductionOf({ reduction: r }, 'klDiv');
  return aten('aten::kl_div', input, target, reduction, logTarget);
}

/** Poisson negative log likelihood; `logInput` (default true) means input is log(rate). */
export function poissonNllLoss(
  input: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions & { logInput?: boolean; full?: boolean; eps?: number } = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'poissonNllLoss');
  return aten(
    'aten::poisson_nll_loss',
    input,
    target,
    opts.logInput ?? true,
    opts.full ?? false,
    opts.eps ?? 1e-8,
    reduction,
  );
}

/** 1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1. */
export function cosineEmbeddingLoss(
  input1: t.Tensor,
  input2: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions & { margin?: number } = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'cosineEmbeddingLoss');
  return aten('aten::cosine_embedding_loss', input1, input2, target, opts.margin ?? 0, reduction);
}

/** max(0, -target·(input1 - input2) + margin). */
export function marginRankingLoss(
  input1: t.Tensor,
  input2: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions & { margin?: number } = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'marginRankingLoss');
  if (input1.ndim !== input2.ndim || input1.ndim !== target.ndim) {
    throw new RangeError(
      `marginRankingLoss(): all input tensors should have the same number of dims, got input1 ${shapeText(input1.shape)}, input2 ${shapeText(input2.shape)}, target ${shapeText(target.shape)}`,
    );
  }
  return aten('aten::margin_ranking_loss', input1, input2, target, opts.margin ?? 0, reduction);
}

/** x for target 1, max(0, margin - x) for target -1. */
export function hingeEmbeddingLoss(
  input: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions & { margin?: number } = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'hingeEmbeddingLoss');
  return aten('aten::hinge_embedding_loss', input, target, opts.margin ?? 1, reduction);
}

/** log(1 + exp(-target·input)) for targets ±1. */
export function softMarginLoss(input: t.Tensor, target: t.Tensor, opts: ReductionOptions = {}): t.Tensor {
  return aten('aten::soft_margin_loss', input, target, reductionOf(opts, 'softMarginLoss'));
}

export interface TripletMarginLossOptions extends ReductionOptions {
  /** Default 1; must be > 0. */
  margin?: number;
  /** The norm's exponent. Default 2. */
  p?: number;
  eps?: number;
  /** Use the positive-negative distance when smaller (distance swap). Default false. */
  swap?: boolean;
}

/** max(d(anchor, positive) - d(anchor, negative) + margin, 0). */
export function tripletMarginLoss(
  anchor: t.Tensor,
  positive: t.Tensor,
  negative: t.Tensor,
  opts: TripletMarginLossOptions = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'tripletMarginLoss');
  const margin = opts.margin ?? 1;
  if (!(margin > 0))
    throw new RangeError(`tripletMarginLoss(): margin must be greater than 0, got ${margin}`);
  return aten(
    'aten::triplet_margin_loss',
    anchor,
    positive,
    negative,
    margin,
    opts.p ?? 2,
    opts.eps ?? 1e-6,
    opts.swap ?? false,
    reduction,
  );
}

/** Multi-class hinge loss over class-index targets. */
export function multiMarginLoss(
  input: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions & { p?: 1 | 2; margin?: number; weight?: t.Tensor | null } = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'multiMarginLoss');
  const p = opts.p ?? 1;
  if (p !== 1 && p !== 2) throw new RangeError(`multiMarginLoss(): p must be 1 or 2, got ${p}`);
  const weight = opts.weight ?? null;
  if (weight !== null && weight.ndim !== 1)
    throw new RangeError('multiMarginLoss(): weight must be one-dimensional');
  return aten('aten::multi_margin_loss', input, target, p, opts.margin ?? 1, weight, reduction);
}

/** Multi-label hinge loss; target holds class indices, padded with -1. */
export function multilabelMarginLoss(
  input: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions = {},
): t.Tensor {
  return aten('aten::multilabel_margin_loss', input, target, reductionOf(opts, 'multilabelMarginLoss'));
}

/** Per-class binary logistic loss averaged over classes (PyTorch's own composite). */
export function multilabelSoftMarginLoss(
  input: t.Tensor,
  target: t.Tensor,
  opts: ReductionOptions & { weight?: t.Tensor | null } = {},
): t.Tensor {
  const r = opts.reduction ?? 'mean';
  reductionOf(opts, 'multilabelSoftMarginLoss');
  return t.tidy(() => {
    // -(target·logsigmoid(x) + (1 - target)·logsigmoid(-x))
    const pos = t.mul(target, aten('aten::log_sigmoid', input));
    const neg = t.mul(aten('aten::rsub.Scalar', target, 1), aten('aten::log_sigmoid', t.neg(input)));
    let loss = t.neg(t.add(pos, neg));
    if (opts.weight) loss = t.mul(loss, opts.weight);
    const classDim = input.ndim - 1;
    loss = t.div(t.sum(loss, [classDim]), input.shape[classDim]);
    if (r === 'none') return loss;
    return r === 'mean' ? t.mean(loss) : t.sum(loss);
  });
}

/**
 * Gaussian negative log likelihood of `target` under N(input, var), as PyTorch composes
 * it: `var` (a number, or a tensor of input's shape, one dim short, or broadcastable with
 * one mismatched dim) is clamped to eps without gradient.
 */
export function gaussianNllLoss(
  input: t.Tensor,
  target: t.Tensor,
  variance: t.Tensor | number,
  opts: ReductionOptions & { full?: boolean; eps?: number } = {},
): t.Tensor {
  const r = opts.reduction ?? 'mean';
  reductionOf(opts, 'gaussianNllLoss');
  const eps = opts.eps ?? 1e-6;
  return t.tidy(() => {
    let v: t.Tensor;
    if (typeof variance === 'number') {
      if (variance < 0) throw new RangeError('gaussianNllLoss(): var has negative entry/entries');
      v = t.mul(t.onesLike(input), variance);
    } else {
      if (t.any(t.lt(variance, 0)).item())
        throw new RangeError('gaussianNllLoss(): var has negative entry/entries');
      v = variance;
      if (!sameShape(v.shape, input.shape)) {
        const inShape = input.shape;
        if (sameShape(inShape.slice(0, -1), v.shape)) v = t.unsqueeze(v, -1);
        else if (
          !(
            inShape.length === v.ndim &&
            inShape.reduce((n, d, i) => n + (d !== v.shape[i] ? v.shape[i] : 0), 0) === 1
          )
        ) {
          throw new RangeError('gaussianNllLoss(): var is of incorrect size');
        }
      }
    }
    // var.clone() then clamp_(min=eps) under no_grad: the clamp does not reach autograd.
    const clamped = t.clone(v);
    t.ops.call('aten::clamp_min_', clamped.detach(), eps);
    const diff = t.sub(input, target);
    let loss = t.mul(t.add(t.log(clamped), t.div(t.pow(diff, 2), clamped)), 0.5);
    if (opts.full) loss = t.add(loss, 0.5 * Math.log(2 * Math.PI));
    if (r === 'mean') return t.mean(loss);
    if (r === 'sum') return t.sum(loss);
    return loss;
  });
}

export interface TripletMarginWithDistanceLossOptions extends ReductionOptions {
  /** Default: pairwiseDistance. */
  distanceFunction?: ((x1: t.Tensor, x2: t.Tensor) => t.Tensor) | null;
  /** Default 1; must be > 0. */
  margin?: number;
  swap?: boolean;
}

/** tripletMarginLoss with any distance function (PyTorch's composite). */
export function tripletMarginWithDistanceLoss(
  anchor: t.Tensor,
  positive: t.Tensor,
  negative: t.Tensor,
  opts: TripletMarginWithDistanceLossOptions = {},
): t.Tensor {
  const r = opts.reduction ?? 'mean';
  reductionOf(opts, 'tripletMarginWithDistanceLoss');
  const margin = opts.margin ?? 1;
  if (!(margin > 0))
    throw new RangeError(`tripletMarginWithDistanceLoss(): margin must be greater than 0, got ${margin}`);
  if (anchor.ndim !== positive.ndim || positive.ndim !== negative.ndim) {
    throw new RangeError(
      `tripletMarginWithDistanceLoss(): anchor, positive and negative must have the same number of dims, got ${anchor.ndim}, ${positive.ndim}, ${negative.ndim}`,
    );
  }
  const dist =
    opts.distanceFunction ??
    ((a: t.Tensor, b: t.Tensor) => aten('aten::pairwise_distance', a, b, 2, 1e-6, false));
  return t.tidy(() => {
    const distPos = dist(anchor, positive);
    let distNeg = dist(anchor, negative);
    if (opts.swap) distNeg = t.minimum(distNeg, dist(positive, negative));
    const loss = t.clampMin(t.sub(t.add(distPos, margin), distNeg), 0);
    if (r === 'sum') return t.sum(loss);
    if (r === 'mean') return t.mean(loss);
    return loss;
  });
}

export interface CtcLossOptions extends ReductionOptions {
  /** The blank label. Default 0. */
  blank?: number;
  /** Zero infinite losses (and their gradients). Default false. */
  zeroInfinity?: boolean;
}

/** Connectionist temporal classification loss over log-probabilities [T, N, C]. */
export function ctcLoss(
  logProbs: t.Tensor,
  targets: t.Tensor,
  inputLengths: t.Tensor,
  targetLengths: t.Tensor,
  opts: CtcLossOptions = {},
): t.Tensor {
  const reduction = reductionOf(opts, 'ctcLoss');
  return aten(
    'aten::ctc_loss.Tensor',
    logProbs,
    targets,
    inputLengths,
    targetLengths,
    opts.blank ?? 0,
    reduction,
    opts.zeroInfinity ?? false,
  );
}

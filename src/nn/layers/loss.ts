// Loss modules (torch.nn.modules.loss): the functional form with the options stored;
// weights are buffers under PyTorch's state-dict names.
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

export interface CrossEntropyLossOptions {
  /** Per-class rescaling weight, a [C] tensor (registered as the buffer `weight`). */
  weight?: t.Tensor | null;
  /** Target value that contributes neither loss nor gradient. Default -100. */
  ignoreIndex?: number;
  /** 'mean' (default; weighted mean with a weight), 'sum' or 'none'. */
  reduction?: t.Reduction;
  /** Mixes the one-hot target with the uniform distribution by this amount. Default 0. */
  labelSmoothing?: number;
}

/** Log-softmax + negative log likelihood over class logits; targets are class indices or probabilities. */
export class CrossEntropyLoss extends Module {
  readonly ignoreIndex: number;
  readonly reduction: t.Reduction;
  readonly labelSmoothing: number;

  constructor(opts: CrossEntropyLossOptions = {}) {
    super();
    this.registerBuffer('weight', opts.weight ?? null);
    this.ignoreIndex = opts.ignoreIndex ?? -100;
    this.reduction = opts.reduction ?? 'mean';
    t.reductionCode(this.reduction);
    this.labelSmoothing = opts.labelSmoothing ?? 0;
    if (!(this.labelSmoothing >= 0 && this.labelSmoothing <= 1)) {
      throw new RangeError(`labelSmoothing must be in [0, 1], got ${this.labelSmoothing}`);
    }
  }

  get weight(): t.Tensor | null {
    return this._buffers.get('weight') ?? null;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return t.crossEntropy(input, target, {
      weight: this.weight,
      ignoreIndex: this.ignoreIndex,
      reduction: this.reduction,
      labelSmoothing: this.labelSmoothing,
    });
  }
}

/** The `reduction` option of every loss module. */
export interface LossOptions {
  /** 'mean' (default), 'sum' or 'none'. */
  reduction?: t.Reduction;
}

function checkReduction(r: t.Reduction, what: string): t.Reduction {
  if (r !== 'mean' && r !== 'sum' && r !== 'none') {
    throw new TypeError(`${what}: reduction must be 'none', 'mean' or 'sum', got ${JSON.stringify(r)}`);
  }
  return r;
}

/** Squared error (torch.nn.MSELoss). */
export class MSELoss extends Module {
  readonly reduction: t.Reduction;

  constructor(opts: LossOptions = {}) {
    super();
    this.reduction = checkReduction(opts.reduction ?? 'mean', 'MSELoss');
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.mseLoss(input, target, { reduction: this.reduction });
  }
}

/** Absolute error (torch.nn.L1Loss). */
export class L1Loss extends Module {
  readonly reduction: t.Reduction;

  constructor(opts: LossOptions = {}) {
    super();
    this.reduction = checkReduction(opts.reduction ?? 'mean', 'L1Loss');
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.l1Loss(input, target, { reduction: this.reduction });
  }
}

/** Smooth L1 (torch.nn.SmoothL1Loss): squared below beta, absolute above. */
export class SmoothL1Loss extends Module {
  readonly reduction: t.Reduction;
  readonly beta: number;

  constructor(opts: LossOptions & { beta?: number } = {}) {
    super();
    this.reduction = checkReduction(opts.reduction ?? 'mean', 'SmoothL1Loss');
    this.beta = opts.beta ?? 1;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.smoothL1Loss(input, target, { reduction: this.reduction, beta: this.beta });
  }
}

export interface NLLLossOptions extends LossOptions {
  /** Per-class rescaling weight, a [C] tensor (registered as the buffer `weight`). */
  weight?: t.Tensor | null;
  /** Target value that contributes neither loss nor gradient. Default -100. */
  ignoreIndex?: number;
}

/** Negative log likelihood over log-probabilities (torch.nn.NLLLoss). */
export class NLLLoss extends Module {
  readonly ignoreIndex: number;
  readonly reduction: t.Reduction;

  constructor(opts: NLLLossOptions = {}) {
    super();
    this.registerBuffer('weight', opts.weight ?? null);
    this.ignoreIndex = opts.ignoreIndex ?? -100;
    this.reduction = checkReduction(opts.reduction ?? 'mean', 'NLLLoss');
  }

  get weight(): t.Tensor | null {
    return this._buffers.get('weight') ?? null;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.nllLoss(input, target, {
      weight: this.weight,
      ignoreIndex: this.ignoreIndex,
      reduction: this.reduction,
    });
  }
}

/** Binary cross entropy over probabilities (torch.nn.BCELoss); `weight` is a buffer. */
export class BCELoss extends Module {
  readonly reduction: t.Reduction;

  constructor(opts: LossOptions & { weight?: t.Tensor | null } = {}) {
    super();
    this.registerBuffer('weight', opts.weight ?? null);
    this.reduction = checkReduction(opts.reduction ?? 'mean', 'BCELoss');
  }

  get weight(): t.Tensor | null {
    return this._buffers.get('weight') ?? null;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.binaryCrossEntropy(input, target, { weight: this.weight, reduction: this.reduction });
  }
}

export interface BCEWithLogitsLossOptions extends LossOptions {
  /** Rescaling weight of each element's loss (the buffer `weight`). */
  weight?: t.Tensor | null;
  /** Weight of positive examples, per class (the buffer `pos_weight`, PyTorch's key). */
  posWeight?: t.Tensor | null;
}

/** sigmoid + binary cross entropy in one stable op (torch.nn.BCEWithLogitsLoss). */
export class BCEWithLogitsLoss extends Module {
  readonly reduction: t.Reduction;

  constructor(opts: BCEWithLogitsLossOptions = {}) {
    super();
    this.registerBuffer('weight', opts.weight ?? null);
    this.registerBuffer('pos_weight', opts.posWeight ?? null);
    this.reduction = checkReduction(opts.reduction ?? 'mean', 'BCEWithLogitsLoss');
  }

  get weight(): t.Tensor | null {
    return this._buffers.get('weight') ?? null;
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

/** Kullback-Leibler divergence (torch.nn.KLDivLoss); reduction may also be 'batchmean'. */
export class KLDivLoss extends Module {
  readonly reduction: t.Reduction | 'batchmean';
  readonly logTarget: boolean;

  constructor(opts: F.KlDivOptions = {}) {
    super();
    const r = opts.reduction ?? 'mean';
    this.reduction = r === 'batchmean' ? r : checkReduction(r, 'KLDivLoss');
    this.logTarget = opts.logTarget ?? false;
  }

  override forward(input: t.Tensor, target: t.Tensor): t.Tensor {
    return F.klDiv(input, target, { reduction: this.reduction, logTarget: this.logTarget });
  }
}

/** The old name of NLLLoss for [N, C, H, W] input (torch keeps it as a subclass). */
export class NLLLoss2d extends NLLLoss {}

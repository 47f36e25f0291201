// CrossEntropyLoss.
import * as t from '../../core/index.ts';
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

// ConstantLR: the lr times `factor` until totalIters steps, then the lr itself, as
// PyTorch's (a short warm-up at a constant fraction).
import type { Optimizer } from '../optimizer.ts';
import { currentLrs, LRScheduler } from './base.ts';

export interface ConstantLROptions {
  /** Factor until totalIters (default 1/3), in [0, 1]. */
  factor?: number;
  /** Steps at the reduced lr (default 5). */
  totalIters?: number;
  lastEpoch?: number;
}

export class ConstantLR extends LRScheduler {
  factor: number;
  totalIters: number;

  constructor(optimizer: Optimizer, opts: ConstantLROptions = {}) {
    super(optimizer, opts.lastEpoch ?? -1);
    const factor = opts.factor ?? 1.0 / 3;
    if (!(factor >= 0 && factor <= 1.0)) {
      throw new RangeError(
        'ConstantLR: factor (constant multiplicative factor) expected to be between 0 and 1.',
      );
    }
    this.factor = factor;
    this.totalIters = opts.totalIters ?? 5;
    this.initialStep();
  }

  getLr(): number[] {
    const groups = this.optimizer.paramGroups;
    if (this.lastEpoch === 0) return groups.map((g) => g.lr * this.factor);
    if (this.lastEpoch !== this.totalIters) return currentLrs(this.optimizer);
    return groups.map((g) => g.lr * (1.0 / this.factor));
  }

  override getClosedFormLr(): number[] {
    const after = this.lastEpoch >= this.totalIters ? 1 : 0;
    return this.baseLrs.map((b) => b * (this.factor + after * (1 - this.factor)));
  }

  protected override stateKeys(): string[] {
    return ['factor', 'totalIters'];
  }
}

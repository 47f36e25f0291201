// ExponentialLR: the lr times gamma every step, as PyTorch's.
import { cPow } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { currentLrs, LRScheduler } from './base.ts';

export class ExponentialLR extends LRScheduler {
  gamma: number;

  constructor(optimizer: Optimizer, gamma: number, opts: { lastEpoch?: number } = {}) {
    super(optimizer, opts.lastEpoch ?? -1);
    if (typeof gamma !== 'number')
      throw new TypeError(`ExponentialLR: gamma must be a number, got ${typeof gamma}`);
    this.gamma = gamma;
    this.initialStep();
  }

  getLr(): number[] {
    if (this._isInitial) return currentLrs(this.optimizer);
    return this.optimizer.paramGroups.map((g) => g.lr * this.gamma);
  }

  override getClosedFormLr(): number[] {
    return this.baseLrs.map((b) => b * cPow(this.gamma, this.lastEpoch));
  }

  protected override stateKeys(): string[] {
    return ['gamma'];
  }
}

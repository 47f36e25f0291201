// PolynomialLR: the lr decays as (1 - step / totalIters) ** power to 0 at totalIters,
// then stays, as PyTorch's. Powers are Python's (cPow), so the lrs are PyTorch's bit
// for bit.
import { cPow } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { currentLrs, LRScheduler } from './base.ts';

export interface PolynomialLROptions {
  /** Steps until the lr reaches 0 (default 5). */
  totalIters?: number;
  /** Power of the polynomial (default 1: linear). */
  power?: number;
  lastEpoch?: number;
}

export class PolynomialLR extends LRScheduler {
  totalIters: number;
  power: number;

  constructor(optimizer: Optimizer, opts: PolynomialLROptions = {}) {
    super(optimizer, opts.lastEpoch ?? -1);
    this.totalIters = opts.totalIters ?? 5;
    this.power = opts.power ?? 1.0;
    this.initialStep();
  }

  getLr(): number[] {
    const { lastEpoch: e, totalIters: T } = this;
    if (this._isInitial || e > T) return currentLrs(this.optimizer);
    const decay = cPow((1.0 - e / T) / (1.0 - (e - 1) / T), this.power);
    return this.optimizer.paramGroups.map((g) => g.lr * decay);
  }

  override getClosedFormLr(): number[] {
    const { lastEpoch: e, totalIters: T } = this;
    return this.baseLrs.map((b) => b * cPow(1.0 - Math.min(T, e) / T, this.power));
  }

  protected override stateKeys(): string[] {
    return ['totalIters', 'power'];
  }
}

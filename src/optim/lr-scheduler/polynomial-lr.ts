// PolynomialLR: the lr decays as (1 - step / totalIters) ** power to 0 at totalIters,
// then stays, as PyTorch's. Powers are Python's (cPow), so the lrs are PyTorch's bit
// for bit. Arguments are read as args.ts says.
import { cPow } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { schedulerArgs, type TorchSpelled } from './args.ts';
import { currentLrs, LRScheduler } from './base.ts';

const POLYNOMIAL_LR = [
  ['totalIters', 'total_iters'],
  ['power', 'power'],
  ['lastEpoch', 'last_epoch'],
] as const;

export type PolynomialLROptions = TorchSpelled<
  {
    /** Steps until the lr reaches 0 (default 5). */
    totalIters?: number;
    /** Power of the polynomial (default 1: linear). */
    power?: number;
    lastEpoch?: number;
  },
  typeof POLYNOMIAL_LR
>;

export class PolynomialLR extends LRScheduler {
  totalIters: number;
  power: number;

  /** `new PolynomialLR(opt, { totalIters, power })`, or PyTorch's `(opt, total_iters, power, last_epoch)`. */
  constructor(optimizer: Optimizer, options?: PolynomialLROptions);
  constructor(optimizer: Optimizer, totalIters?: number, power?: number, lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const opts = schedulerArgs<{ totalIters?: number; power?: number; lastEpoch?: number }>(
      'PolynomialLR',
      POLYNOMIAL_LR,
      0,
      args,
    );
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

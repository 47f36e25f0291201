// ExponentialLR: the lr times gamma every step, as PyTorch's. Arguments are read as
// args.ts says.
import { cPow } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { type LastEpochOption, schedulerArgs } from './args.ts';
import { currentLrs, LRScheduler } from './base.ts';

const EXPONENTIAL_LR = [
  ['gamma', 'gamma'],
  ['lastEpoch', 'last_epoch'],
] as const;

export class ExponentialLR extends LRScheduler {
  gamma: number;

  /** `new ExponentialLR(opt, { gamma })`, or PyTorch's `(opt, gamma, last_epoch)`. */
  constructor(optimizer: Optimizer, options: LastEpochOption & { gamma: number });
  constructor(optimizer: Optimizer, gamma: number, options?: LastEpochOption);
  constructor(optimizer: Optimizer, gamma: number, lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { gamma, lastEpoch } = schedulerArgs<{ gamma: number; lastEpoch?: number }>(
      'ExponentialLR',
      EXPONENTIAL_LR,
      1,
      args,
    );
    super(optimizer, lastEpoch ?? -1);
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

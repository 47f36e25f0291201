// ConstantLR: the lr times `factor` until totalIters steps, then the lr itself, as
// PyTorch's (a short warm-up at a constant fraction). Arguments are read as args.ts says.
import type { Optimizer } from '../optimizer.ts';
import { schedulerArgs, type TorchSpelled } from './args.ts';
import { currentLrs, LRScheduler } from './base.ts';

const CONSTANT_LR = [
  ['factor', 'factor'],
  ['totalIters', 'total_iters'],
  ['lastEpoch', 'last_epoch'],
] as const;

export type ConstantLROptions = TorchSpelled<
  {
    /** Factor until totalIters (default 1/3), in [0, 1]. */
    factor?: number;
    /** Steps at the reduced lr (default 5). */
    totalIters?: number;
    lastEpoch?: number;
  },
  typeof CONSTANT_LR
>;

export class ConstantLR extends LRScheduler {
  factor: number;
  totalIters: number;

  /** `new ConstantLR(opt, { factor, totalIters })`, or PyTorch's `(opt, factor, total_iters, last_epoch)`. */
  constructor(optimizer: Optimizer, options?: ConstantLROptions);
  constructor(optimizer: Optimizer, factor?: number, totalIters?: number, lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const opts = schedulerArgs<{ factor?: number; totalIters?: number; lastEpoch?: number }>(
      'ConstantLR',
      CONSTANT_LR,
      0,
      args,
    );
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

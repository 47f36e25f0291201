// LinearLR: scales the lr by a factor that moves linearly from startFactor to
// endFactor over totalIters steps (a warm-up when startFactor < 1), as PyTorch's.
// Arguments are read as args.ts says.
import type { Optimizer } from '../optimizer.ts';
import { schedulerArgs, type TorchSpelled } from './args.ts';
import { currentLrs, LRScheduler } from './base.ts';

const LINEAR_LR = [
  ['startFactor', 'start_factor'],
  ['endFactor', 'end_factor'],
  ['totalIters', 'total_iters'],
  ['lastEpoch', 'last_epoch'],
] as const;

export type LinearLROptions = TorchSpelled<
  {
    /** Factor at step 0 (default 1/3), in (0, 1]. */
    startFactor?: number;
    /** Factor from step totalIters on (default 1), in [0, 1]. */
    endFactor?: number;
    /** Steps to go from startFactor to endFactor (default 5). */
    totalIters?: number;
    lastEpoch?: number;
  },
  typeof LINEAR_LR
>;

export class LinearLR extends LRScheduler {
  startFactor: number;
  endFactor: number;
  totalIters: number;

  /** `new LinearLR(opt, { startFactor, endFactor, totalIters })`, or PyTorch's positional arguments. */
  constructor(optimizer: Optimizer, options?: LinearLROptions);
  constructor(
    optimizer: Optimizer,
    startFactor?: number,
    endFactor?: number,
    totalIters?: number,
    lastEpoch?: number,
  );
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const opts = schedulerArgs<{
      startFactor?: number;
      endFactor?: number;
      totalIters?: number;
      lastEpoch?: number;
    }>('LinearLR', LINEAR_LR, 0, args);
    super(optimizer, opts.lastEpoch ?? -1);
    const startFactor = opts.startFactor ?? 1.0 / 3;
    const endFactor = opts.endFactor ?? 1.0;
    if (startFactor > 1.0 || startFactor <= 0) {
      throw new RangeError(
        'Starting multiplicative factor expected to be greater than 0 and less or equal to 1.',
      );
    }
    if (endFactor > 1.0 || endFactor < 0) {
      throw new RangeError('Ending multiplicative factor expected to be between 0 and 1.');
    }
    this.startFactor = startFactor;
    this.endFactor = endFactor;
    this.totalIters = opts.totalIters ?? 5;
    this.initialStep();
  }

  getLr(): number[] {
    const groups = this.optimizer.paramGroups;
    if (this.lastEpoch === 0) return groups.map((g) => g.lr * this.startFactor);
    if (this._isInitial || this.lastEpoch > this.totalIters) return currentLrs(this.optimizer);
    const d = this.endFactor - this.startFactor;
    return groups.map(
      (g) => g.lr * (1.0 + d / (this.totalIters * this.startFactor + (this.lastEpoch - 1) * d)),
    );
  }

  override getClosedFormLr(): number[] {
    const d = this.endFactor - this.startFactor;
    return this.baseLrs.map(
      (b) => b * (this.startFactor + (d * Math.min(this.totalIters, this.lastEpoch)) / this.totalIters),
    );
  }

  protected override stateKeys(): string[] {
    return ['startFactor', 'endFactor', 'totalIters'];
  }
}

// StepLR and MultiStepLR: multiply the lr by gamma every stepSize steps, or at each
// milestone (a milestone listed twice multiplies by gamma twice), as PyTorch's.
// Powers are Python's (cPow), so the lrs are PyTorch's bit for bit. Arguments are read
// as args.ts says.
import { cPow } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { type RequiredOption, schedulerArgs, type TorchSpelled } from './args.ts';
import { bisectRight, currentLrs, LRScheduler } from './base.ts';

const STEP_LR = [
  ['stepSize', 'step_size'],
  ['gamma', 'gamma'],
  ['lastEpoch', 'last_epoch'],
] as const;
const MULTI_STEP_LR = [
  ['milestones', 'milestones'],
  ['gamma', 'gamma'],
  ['lastEpoch', 'last_epoch'],
] as const;

/** StepLR's and MultiStepLR's optional options. */
export type StepLROptions = TorchSpelled<
  {
    /** Multiplicative factor (default 0.1). */
    gamma?: number;
    lastEpoch?: number;
  },
  typeof STEP_LR
>;

export class StepLR extends LRScheduler {
  stepSize: number;
  gamma: number;

  /** `new StepLR(opt, { stepSize, gamma })`, or PyTorch's `(opt, step_size, gamma, last_epoch)`. */
  constructor(optimizer: Optimizer, options: StepLROptions & RequiredOption<'stepSize', 'step_size', number>);
  constructor(optimizer: Optimizer, stepSize: number, options?: StepLROptions);
  constructor(optimizer: Optimizer, stepSize: number, gamma?: number, lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { stepSize, ...opts } = schedulerArgs<{ stepSize: number; gamma?: number; lastEpoch?: number }>(
      'StepLR',
      STEP_LR,
      1,
      args,
    );
    super(optimizer, opts.lastEpoch ?? -1);
    if (!Number.isInteger(stepSize) || stepSize <= 0) {
      throw new RangeError(`StepLR: stepSize must be a positive integer, got ${stepSize}`);
    }
    this.stepSize = stepSize;
    this.gamma = opts.gamma ?? 0.1;
    this.initialStep();
  }

  getLr(): number[] {
    if (this.lastEpoch === 0 || this.lastEpoch % this.stepSize !== 0) return currentLrs(this.optimizer);
    return this.optimizer.paramGroups.map((g) => g.lr * this.gamma);
  }

  override getClosedFormLr(): number[] {
    return this.baseLrs.map((b) => b * cPow(this.gamma, Math.floor(this.lastEpoch / this.stepSize)));
  }

  protected override stateKeys(): string[] {
    return ['stepSize', 'gamma'];
  }
}

export class MultiStepLR extends LRScheduler {
  /** Milestone -> how many times it was listed (PyTorch keeps a Counter). */
  milestones: Record<string, number>;
  gamma: number;

  /** `new MultiStepLR(opt, { milestones, gamma })`, or PyTorch's `(opt, milestones, gamma, last_epoch)`. */
  constructor(optimizer: Optimizer, options: StepLROptions & { milestones: number[] });
  constructor(optimizer: Optimizer, milestones: number[], options?: StepLROptions);
  constructor(optimizer: Optimizer, milestones: number[], gamma?: number, lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { milestones, ...opts } = schedulerArgs<{
      milestones: number[];
      gamma?: number;
      lastEpoch?: number;
    }>('MultiStepLR', MULTI_STEP_LR, 1, args);
    super(optimizer, opts.lastEpoch ?? -1);

    this.milestones = {};
    for (const m of milestones) {
      if (!Number.isInteger(m)) throw new RangeError(`MultiStepLR: milestones must be integers, got ${m}`);
      this.milestones[m] = (this.milestones[m] ?? 0) + 1;
    }
    this.gamma = opts.gamma ?? 0.1;
    this.initialStep();
  }

  getLr(): number[] {
    const count = this.milestones[this.lastEpoch];
    if (count === undefined) return currentLrs(this.optimizer);
    return this.optimizer.paramGroups.map((g) => g.lr * cPow(this.gamma, count));
  }

  override getClosedFormLr(): number[] {
    const sorted: number[] = [];
    for (const [m, n] of Object.entries(this.milestones)) for (let i = 0; i < n; i++) sorted.push(Number(m));
    sorted.sort((a, b) => a - b);
    return this.baseLrs.map((b) => b * cPow(this.gamma, bisectRight(sorted, this.lastEpoch)));
  }

  protected override stateKeys(): string[] {
    return ['milestones', 'gamma'];
  }
}

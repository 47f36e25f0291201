// StepLR and MultiStepLR: multiply the lr by gamma every stepSize steps, or at each
// milestone (a milestone listed twice multiplies by gamma twice), as PyTorch's.
// Powers are Python's (cPow), so the lrs are PyTorch's bit for bit.
import { cPow } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { bisectRight, currentLrs, LRScheduler } from './base.ts';

export interface StepLROptions {
  /** Multiplicative factor (default 0.1). */
  gamma?: number;
  lastEpoch?: number;
}

export class StepLR extends LRScheduler {
  stepSize: number;
  gamma: number;

  constructor(optimizer: Optimizer, stepSize: number, opts: StepLROptions = {}) {
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

  constructor(optimizer: Optimizer, milestones: number[], opts: StepLROptions = {}) {
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

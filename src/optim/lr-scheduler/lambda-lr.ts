// LambdaLR and MultiplicativeLR, as PyTorch's: the lr is the base lr times a function
// of the epoch (LambdaLR), or the previous lr times it (MultiplicativeLR); one function
// for all param groups or one per group. The functions are code, not state: the state
// dict holds null for each (PyTorch saves only a callable object's attributes, which a
// JS function does not have), and loading keeps the scheduler's own functions.
// Arguments are read as args.ts says.
import type { Optimizer } from '../optimizer.ts';
import { type LastEpochOption, type RequiredOption, schedulerArgs } from './args.ts';
import { currentLrs, LRScheduler, type SchedulerStateDict } from './base.ts';

const LAMBDA_LR = [
  ['lrLambda', 'lr_lambda'],
  ['lastEpoch', 'last_epoch'],
] as const;

/** LambdaLR's and MultiplicativeLR's options object: `lrLambda` (PyTorch: lr_lambda), `lastEpoch`. */
export type LambdaLROptions = LastEpochOption &
  RequiredOption<'lrLambda', 'lr_lambda', LrLambda | LrLambda[]>;

/** The arguments of either scheduler, whichever form they came in. */
function lambdaArgs(name: string, args: unknown[]): { lrLambda: LrLambda | LrLambda[]; lastEpoch?: number } {
  return schedulerArgs(name, LAMBDA_LR, 1, args);
}

/** A function of the epoch (the step count), giving a factor. */
export type LrLambda = (epoch: number) => number;

function lambdasFor(name: string, optimizer: Optimizer, lrLambda: LrLambda | LrLambda[]): LrLambda[] {
  const n = optimizer.paramGroups.length;
  const list = Array.isArray(lrLambda) ? [...lrLambda] : Array.from({ length: n }, () => lrLambda);
  if (list.length !== n) throw new RangeError(`${name}: expected ${n} lrLambdas, but got ${list.length}`);
  for (const f of list) {
    if (typeof f !== 'function')
      throw new TypeError(`${name}: lrLambda should be a function, but got ${typeof f}`);
  }
  return list;
}

export class LambdaLR extends LRScheduler {
  lrLambdas: LrLambda[];

  /** `new LambdaLR(opt, { lrLambda })`, or PyTorch's `(opt, lr_lambda, last_epoch)`. */
  constructor(optimizer: Optimizer, options: LambdaLROptions);
  constructor(optimizer: Optimizer, lrLambda: LrLambda | LrLambda[], options?: LastEpochOption);
  constructor(optimizer: Optimizer, lrLambda: LrLambda | LrLambda[], lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { lrLambda, lastEpoch } = lambdaArgs('LambdaLR', args);
    super(optimizer, lastEpoch ?? -1);
    this.lrLambdas = lambdasFor('LambdaLR', optimizer, lrLambda);
    this.initialStep();
  }

  getLr(): number[] {
    return this.baseLrs.map((b, i) => b * this.lrLambdas[i](this.lastEpoch));
  }

  override stateDict(): SchedulerStateDict {
    return { ...super.stateDict(), lrLambdas: this.lrLambdas.map(() => null) };
  }
}

export class MultiplicativeLR extends LRScheduler {
  lrLambdas: LrLambda[];

  /** `new MultiplicativeLR(opt, { lrLambda })`, or PyTorch's `(opt, lr_lambda, last_epoch)`. */
  constructor(optimizer: Optimizer, options: LambdaLROptions);
  constructor(optimizer: Optimizer, lrLambda: LrLambda | LrLambda[], options?: LastEpochOption);
  constructor(optimizer: Optimizer, lrLambda: LrLambda | LrLambda[], lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { lrLambda, lastEpoch } = lambdaArgs('MultiplicativeLR', args);
    super(optimizer, lastEpoch ?? -1);
    this.lrLambdas = lambdasFor('MultiplicativeLR', optimizer, lrLambda);
    this.initialStep();
  }

  getLr(): number[] {
    if (this._isInitial) return currentLrs(this.optimizer);
    return this.optimizer.paramGroups.map((g, i) => g.lr * this.lrLambdas[i](this.lastEpoch));
  }

  override stateDict(): SchedulerStateDict {
    return { ...super.stateDict(), lrLambdas: this.lrLambdas.map(() => null) };
  }
}

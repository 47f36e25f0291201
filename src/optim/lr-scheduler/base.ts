// The LRScheduler base, mirroring torch.optim.lr_scheduler.LRScheduler: it writes
// each group's `lr`, sets `initialLr` (PyTorch: initial_lr) on first use, and steps
// once at construction so the optimizer starts at the schedule's first value.
//
// Subclasses compute the next lrs in getLr() — PyTorch's chainable (recursive) forms,
// which is what step() uses — and may offer getClosedFormLr(), which PyTorch uses
// when an explicit epoch is given (SequentialLR does so at its milestones). Their
// constructors set their fields and then call initialStep(), because JS cannot set
// fields before super().
import type { Optimizer } from '../optimizer.ts';

/** A scheduler's state: camelCase names of PyTorch's state_dict() keys (see pytorch-names.ts). */
export type SchedulerStateDict = Record<string, unknown>;

/** Keys of the base class's state, in PyTorch's order (after the subclass's own keys). */
const BASE_STATE_KEYS = [
  'baseLrs',
  'lastEpoch',
  '_stepCount',
  '_isInitial',
  '_getLrCalledWithinStep',
  '_lastLr',
];

export abstract class LRScheduler {
  readonly optimizer: Optimizer;
  /** Each group's initialLr when the scheduler was made. */
  baseLrs: number[];
  /** Index of the last step taken; 0 after construction. */
  lastEpoch: number;
  _stepCount = 0;
  _lastLr: number[] = [];
  /** True only while the constructor's step runs. */
  _isInitial = false;
  _getLrCalledWithinStep = false;

  /**
   * `lastEpoch` other than -1 resumes a schedule: every group must then already have
   * an initialLr (load the optimizer's state first). `bare` leaves the param groups
   * and baseLrs alone, for the schedulers that do not run PyTorch's base constructor
   * (ReduceLROnPlateau, ChainedScheduler).
   */
  constructor(optimizer: Optimizer, lastEpoch = -1, bare = false) {
    this.optimizer = optimizer;
    this.lastEpoch = lastEpoch;
    if (bare) {
      this.baseLrs = [];
      return;
    }
    if (lastEpoch === -1) {
      for (const g of optimizer.paramGroups) if (g.initialLr === undefined) g.initialLr = g.lr;
    } else {
      optimizer.paramGroups.forEach((g, i) => {
        if (g.initialLr === undefined) {
          throw new RangeError(
            `param 'initialLr' is not specified in paramGroups[${i}] when resuming scheduler with lastEpoch >= 0`,
          );
        }
      });
    }
    this.baseLrs = optimizer.paramGroups.map((g) => g.initialLr as number);
  }

  /** The next learning rate of every group (PyTorch's get_lr, the chainable form). */
  abstract getLr(): number[];

  /** The learning rates at `lastEpoch` from the closed form, for schedulers that have one. */
  getClosedFormLr?(): number[];

  /** The learning rates set by the last step, one per param group. */
  getLastLr(): number[] {
    return [...this._lastLr];
  }

  /**
   * Advances the schedule by one step (call it after optimizer.step()). As in
   * PyTorch, `epoch` (deprecated there) moves to that epoch instead, through the closed
   * form where the scheduler has one; ReduceLROnPlateau takes its metric here.
   */
  step(epoch?: number): void {
    this._stepCount += 1;
    this._updateLr(epoch);
  }

  /**
   * Moves to `epoch` (closed form when available) or, without it, to the next step,
   * and writes the lrs into the optimizer. SequentialLR calls this with epoch 0.
   */
  _updateLr(epoch?: number): void {
    let values: number[];
    this._getLrCalledWithinStep = true;
    try {
      if (epoch === undefined) {
        this.lastEpoch += 1;
        values = this.getLr();
      } else {
        this.lastEpoch = epoch;
        values = this.getClosedFormLr ? this.getClosedFormLr() : this.getLr();
      }
    } finally {
      this._getLrCalledWithinStep = false;
    }
    const groups = this.optimizer.paramGroups;
    if (values.length !== groups.length) {
      throw new RangeError(`scheduler produced ${values.length} lrs for ${groups.length} param groups`);
    }
    groups.forEach((g, i) => {
      g.lr = values[i];
    });
    this._lastLr = groups.map((g) => g.lr);
  }

  /** Resets the step count and takes the first step (PyTorch's _initial_step). */
  initialStep(): void {
    this._stepCount = 0;
    this._isInitial = true;
    try {
      this.step();
    } finally {
      this._isInitial = false;
    }
  }

  /** The subclass's own state keys (its hyperparameters), in PyTorch's order. */
  protected stateKeys(): string[] {
    return [];
  }

  /**
   * The scheduler's state, with PyTorch's state_dict() keys in camelCase (T_max is
   * tMax). Values are copies.
   */
  stateDict(): SchedulerStateDict {
    const out: SchedulerStateDict = {};
    const self = this as unknown as Record<string, unknown>;
    for (const k of [...this.stateKeys(), ...BASE_STATE_KEYS]) out[k] = copyValue(self[k]);
    return out;
  }

  /** Restores state from stateDict() (keys it does not know are ignored). */
  loadStateDict(sd: SchedulerStateDict): void {
    const self = this as unknown as Record<string, unknown>;
    for (const k of [...this.stateKeys(), ...BASE_STATE_KEYS]) {
      if (k in sd) self[k] = copyValue(sd[k]);
    }
  }
}

/** A copy of a JSON-like value (arrays and plain objects copied deeply). */
export function copyValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(copyValue);
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, copyValue(x)]));
  }
  return v;
}

/** Python's floored modulo (the result has the sign of the divisor). */
export function pyMod(a: number, b: number): number {
  return ((a % b) + b) % b;
}

/** Python's bisect.bisect_right on a sorted array. */
export function bisectRight(sorted: number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (x < sorted[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The groups' current lrs (what a scheduler returns when the lr does not change). */
export function currentLrs(optimizer: Optimizer): number[] {
  return optimizer.paramGroups.map((g) => g.lr);
}

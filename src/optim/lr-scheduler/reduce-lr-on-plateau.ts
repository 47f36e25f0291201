// ReduceLROnPlateau, as PyTorch's: step(metric) after each evaluation; when the metric
// has not improved (by `threshold`, relative or absolute) for more than `patience`
// steps, every group's lr is multiplied by `factor` (not below its minLr), then
// `cooldown` steps pass before bad steps count again. Like PyTorch's, it neither sets
// initialLr nor steps at construction, and its state holds no baseLrs. Arguments are
// read as args.ts says.
import type { Optimizer } from '../optimizer.ts';
import { schedulerArgs, type TorchSpelled } from './args.ts';
import { LRScheduler, type SchedulerStateDict } from './base.ts';

const REDUCE_LR_ON_PLATEAU = [
  ['mode', 'mode'],
  ['factor', 'factor'],
  ['patience', 'patience'],
  ['threshold', 'threshold'],
  ['thresholdMode', 'threshold_mode'],
  ['cooldown', 'cooldown'],
  ['minLr', 'min_lr'],
  ['eps', 'eps'],
] as const;

export type ReduceLROnPlateauOptions = TorchSpelled<PlateauOptions, typeof REDUCE_LR_ON_PLATEAU>;

/** ReduceLROnPlateau's options under tsddp's names. */
export interface PlateauOptions {
  /** 'min' (default): lower is better; 'max': higher is better. */
  mode?: 'min' | 'max';
  /** Factor the lr is multiplied by (default 0.1), < 1. */
  factor?: number;
  /** Steps without improvement tolerated before the lr is reduced (default 10). */
  patience?: number;
  /** Least improvement that counts (default 1e-4). */
  threshold?: number;
  /** 'rel' (default): relative to the best; 'abs': absolute. */
  thresholdMode?: 'rel' | 'abs';
  /** Steps after a reduction before bad steps count again (default 0). */
  cooldown?: number;
  /** Lower bound of the lr, one for all groups or one per group (default 0). */
  minLr?: number | number[];
  /** A reduction smaller than this is not applied (default 1e-8). */
  eps?: number;
}

export class ReduceLROnPlateau extends LRScheduler {
  factor: number;
  /** The minLr given as one number (null when given per group). */
  defaultMinLr: number | null;
  minLrs: number[];
  patience: number;
  cooldown: number;
  eps: number;
  modeWorse = Number.POSITIVE_INFINITY;
  mode: 'min' | 'max' = 'min';
  threshold = 1e-4;
  thresholdMode: 'rel' | 'abs' = 'rel';
  /** The best metric so far (modeWorse before the first step). */
  best = Number.POSITIVE_INFINITY;
  cooldownCounter = 0;
  numBadEpochs = 0;

  /** `new ReduceLROnPlateau(opt, { mode, factor, patience, ... })`, or PyTorch's positional arguments. */
  constructor(optimizer: Optimizer, options?: ReduceLROnPlateauOptions);
  constructor(
    optimizer: Optimizer,
    mode?: 'min' | 'max',
    factor?: number,
    patience?: number,
    threshold?: number,
    thresholdMode?: 'rel' | 'abs',
    cooldown?: number,
    minLr?: number | number[],
    eps?: number,
  );
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const opts = schedulerArgs<PlateauOptions>('ReduceLROnPlateau', REDUCE_LR_ON_PLATEAU, 0, args);
    super(optimizer, 0, true);
    const factor = opts.factor ?? 0.1;
    if (!(factor < 1.0)) throw new RangeError('ReduceLROnPlateau: factor should be < 1.0.');
    this.factor = factor;
    const groups = optimizer.paramGroups.length;
    const minLr = opts.minLr ?? 0;
    if (Array.isArray(minLr)) {
      if (minLr.length !== groups) {
        throw new RangeError(`ReduceLROnPlateau: expected ${groups} minLrs, got ${minLr.length}`);
      }
      this.defaultMinLr = null;
      this.minLrs = [...minLr];
    } else {
      this.defaultMinLr = minLr;
      this.minLrs = Array.from({ length: groups }, () => minLr);
    }
    this.patience = opts.patience ?? 10;
    this.cooldown = opts.cooldown ?? 0;
    this.eps = opts.eps ?? 1e-8;
    this._lastLr = optimizer.paramGroups.map((g) => g.lr);
    this.initIsBetter(opts.mode ?? 'min', opts.threshold ?? 1e-4, opts.thresholdMode ?? 'rel');
    this.best = this.modeWorse;
  }

  private initIsBetter(mode: string, threshold: number, thresholdMode: string): void {
    if (mode !== 'min' && mode !== 'max') throw new RangeError(`ReduceLROnPlateau: mode ${mode} is unknown!`);
    if (thresholdMode !== 'rel' && thresholdMode !== 'abs') {
      throw new RangeError(`ReduceLROnPlateau: thresholdMode ${thresholdMode} is unknown!`);
    }
    this.modeWorse = mode === 'min' ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
    this.mode = mode;
    this.threshold = threshold;
    this.thresholdMode = thresholdMode;
  }

  private isBetter(a: number, best: number): boolean {
    if (this.mode === 'min' && this.thresholdMode === 'rel') return a < best * (1.0 - this.threshold);
    if (this.mode === 'min') return a < best - this.threshold;
    if (this.thresholdMode === 'rel') return a > best * (this.threshold + 1.0);
    return a > best + this.threshold;
  }

  get inCooldown(): boolean {
    return this.cooldownCounter > 0;
  }

  getLr(): number[] {
    throw new TypeError('ReduceLROnPlateau has no getLr(); step(metric) reduces the lrs');
  }

  /** Takes the latest value of the monitored metric (a loss, an accuracy). */
  override step(metric?: number): void {
    if (typeof metric !== 'number') {
      throw new TypeError(`ReduceLROnPlateau.step(metric): metric must be a number, got ${typeof metric}`);
    }
    const epoch = this.lastEpoch + 1;
    this.lastEpoch = epoch;
    if (this.isBetter(metric, this.best)) {
      this.best = metric;
      this.numBadEpochs = 0;
    } else {
      this.numBadEpochs += 1;
    }
    if (this.inCooldown) {
      this.cooldownCounter -= 1;
      this.numBadEpochs = 0;
    }
    if (this.numBadEpochs > this.patience) {
      this.reduceLr();
      this.cooldownCounter = this.cooldown;
      this.numBadEpochs = 0;
    }
    this._lastLr = this.optimizer.paramGroups.map((g) => g.lr);
  }

  private reduceLr(): void {
    const groups = this.optimizer.paramGroups;
    if (groups.length !== this.minLrs.length) {
      if (this.defaultMinLr === null) {
        throw new RangeError(
          `The number of param groups in the \`optimizer\` (${groups.length}) differs from when \`ReduceLROnPlateau\` was initialized (${this.minLrs.length}), usually due to a new param group being added to the optimizer. Please modify the \`minLrs\` field to match the length of the \`optimizer\` param groups.`,
        );
      }
      this.minLrs = groups.map(() => this.defaultMinLr as number);
    }
    groups.forEach((g, i) => {
      const oldLr = g.lr;
      const newLr = Math.max(oldLr * this.factor, this.minLrs[i]);
      if (oldLr - newLr > this.eps) g.lr = newLr;
    });
  }

  /** PyTorch's keys: its whole __dict__ (no baseLrs or _stepCount: it does not run the base constructor). */
  override stateDict(): SchedulerStateDict {
    return {
      factor: this.factor,
      defaultMinLr: this.defaultMinLr,
      minLrs: [...this.minLrs],
      patience: this.patience,
      cooldown: this.cooldown,
      eps: this.eps,
      lastEpoch: this.lastEpoch,
      _lastLr: [...this._lastLr],
      modeWorse: this.modeWorse,
      mode: this.mode,
      threshold: this.threshold,
      thresholdMode: this.thresholdMode,
      best: this.best,
      cooldownCounter: this.cooldownCounter,
      numBadEpochs: this.numBadEpochs,
    };
  }

  /**
   * Restores stateDict(). JSON writes the infinite `best` of a scheduler that has not
   * stepped as null; null is read back as that infinity (modeWorse).
   */
  override loadStateDict(sd: SchedulerStateDict): void {
    const self = this as unknown as Record<string, unknown>;
    for (const k of Object.keys(this.stateDict())) {
      if (k in sd) self[k] = Array.isArray(sd[k]) ? [...(sd[k] as unknown[])] : sd[k];
    }
    this.initIsBetter(this.mode, this.threshold, this.thresholdMode);
    if (this.best === null) this.best = this.modeWorse;
  }
}

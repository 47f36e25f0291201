// OneCycleLR (Smith & Topin's 1cycle policy), as PyTorch's: the lr rises from
// maxLr / divFactor to maxLr over the first pctStart of totalSteps, then anneals to
// initialLr / finalDivFactor (three phases with threePhase), while the momentum (or
// Adam's beta1) cycles the opposite way. It adds initialLr, maxLr, minLr,
// maxMomentum and baseMomentum to each param group, as PyTorch does. Its phases are
// state (PyTorch's _schedule_phases): a loaded state dict's phases and totalSteps win
// over the constructor's. Arguments are read as args.ts says.
import { cCos } from '../c-math.ts';
import type { Optimizer, ParamGroup } from '../optimizer.ts';
import { type RequiredOption, schedulerArgs, type TorchSpelled } from './args.ts';
import { LRScheduler, type SchedulerStateDict } from './base.ts';

const ONE_CYCLE_LR = [
  ['maxLr', 'max_lr'],
  ['totalSteps', 'total_steps'],
  ['epochs', 'epochs'],
  ['stepsPerEpoch', 'steps_per_epoch'],
  ['pctStart', 'pct_start'],
  ['annealStrategy', 'anneal_strategy'],
  ['cycleMomentum', 'cycle_momentum'],
  ['baseMomentum', 'base_momentum'],
  ['maxMomentum', 'max_momentum'],
  ['divFactor', 'div_factor'],
  ['finalDivFactor', 'final_div_factor'],
  ['threePhase', 'three_phase'],
  ['lastEpoch', 'last_epoch'],
] as const;

export type OneCycleLROptions = TorchSpelled<OneCycleOptions, typeof ONE_CYCLE_LR>;

/** OneCycleLR's optional options under tsddp's names. */
export interface OneCycleOptions {
  /** Total number of steps; or give epochs and stepsPerEpoch. */
  totalSteps?: number;
  epochs?: number;
  stepsPerEpoch?: number;
  /** Fraction of the cycle spent increasing the lr (default 0.3). */
  pctStart?: number;
  annealStrategy?: 'cos' | 'linear';
  cycleMomentum?: boolean;
  baseMomentum?: number | number[];
  maxMomentum?: number | number[];
  /** initialLr = maxLr / divFactor (default 25). */
  divFactor?: number;
  /** minLr = initialLr / finalDivFactor (default 1e4). */
  finalDivFactor?: number;
  threePhase?: boolean;
  lastEpoch?: number;
}

/**
 * One phase of the cycle, as PyTorch's `_schedule_phases` entries: the last step of
 * the phase and the names of the param-group keys it anneals between (tsddp's names,
 * initialLr; pytorch-names.ts gives initial_lr in a PyTorch state dict).
 */
export interface OneCyclePhase {
  endStep: number;
  startLr: string;
  endLr: string;
  startMomentum: string;
  endMomentum: string;
}

export class OneCycleLR extends LRScheduler {
  totalSteps: number;
  _annealFuncType: 'cos' | 'linear';
  cycleMomentum: boolean;
  useBeta1 = false;
  /** The phases; part of the state, so a loaded state's phases win over the constructor's (as in PyTorch). */
  _schedulePhases: OneCyclePhase[];

  /** `new OneCycleLR(opt, { maxLr, totalSteps, ... })`, or PyTorch's positional arguments. */
  constructor(
    optimizer: Optimizer,
    options: OneCycleLROptions & RequiredOption<'maxLr', 'max_lr', number | number[]>,
  );
  constructor(optimizer: Optimizer, maxLr: number | number[], options?: OneCycleLROptions);
  constructor(
    optimizer: Optimizer,
    maxLr: number | number[],
    totalSteps?: number,
    epochs?: number,
    stepsPerEpoch?: number,
    pctStart?: number,
    annealStrategy?: 'cos' | 'linear',
    cycleMomentum?: boolean,
    baseMomentum?: number | number[],
    maxMomentum?: number | number[],
    divFactor?: number,
    finalDivFactor?: number,
    threePhase?: boolean,
    lastEpoch?: number,
  );
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { maxLr, ...opts } = schedulerArgs<OneCycleOptions & { maxLr: number | number[] }>(
      'OneCycleLR',
      ONE_CYCLE_LR,
      1,
      args,
    );
    super(optimizer, opts.lastEpoch ?? -1);
    const lastEpoch = opts.lastEpoch ?? -1;
    if (opts.totalSteps !== undefined) {
      if (!Number.isInteger(opts.totalSteps) || opts.totalSteps <= 0) {
        throw new RangeError(`Expected positive integer totalSteps, but got ${opts.totalSteps}`);
      }
      this.totalSteps = opts.totalSteps;
    } else if (opts.epochs !== undefined && opts.stepsPerEpoch !== undefined) {
      if (!Number.isInteger(opts.epochs) || opts.epochs <= 0) {
        throw new RangeError(`Expected positive integer epochs, but got ${opts.epochs}`);
      }
      if (!Number.isInteger(opts.stepsPerEpoch) || opts.stepsPerEpoch <= 0) {
        throw new RangeError(`Expected positive integer stepsPerEpoch, but got ${opts.stepsPerEpoch}`);
      }
      this.totalSteps = opts.epochs * opts.stepsPerEpoch;
    } else {
      throw new RangeError('You must define either totalSteps OR (epochs AND stepsPerEpoch)');
    }
    const pctStart = opts.pctStart ?? 0.3;
    if (!(pctStart >= 0 && pctStart <= 1)) {
      throw new RangeError(`Expected float between 0 and 1 pctStart, but got ${pctStart}`);
    }
    const total = this.totalSteps;
    this._schedulePhases = opts.threePhase
      ? [
          phase(pctStart * total - 1, 'initialLr', 'maxLr', 'maxMomentum', 'baseMomentum'),
          phase(2 * pctStart * total - 2, 'maxLr', 'initialLr', 'baseMomentum', 'maxMomentum'),
          phase(total - 1, 'initialLr', 'minLr', 'maxMomentum', 'maxMomentum'),
        ]
      : [
          phase(pctStart * total - 1, 'initialLr', 'maxLr', 'maxMomentum', 'baseMomentum'),
          phase(total - 1, 'maxLr', 'minLr', 'baseMomentum', 'maxMomentum'),
        ];
    const anneal = opts.annealStrategy ?? 'cos';
    if (anneal !== 'cos' && anneal !== 'linear') {
      throw new RangeError(`annealStrategy must be one of 'cos' or 'linear', instead got ${String(anneal)}`);
    }
    this._annealFuncType = anneal;
    const groups = optimizer.paramGroups;
    const divFactor = opts.divFactor ?? 25.0;
    const finalDivFactor = opts.finalDivFactor ?? 1e4;
    const maxLrs = perGroup('maxLr', groups, maxLr);
    if (lastEpoch === -1) {
      groups.forEach((g, i) => {
        g.initialLr = maxLrs[i] / divFactor;
        g.maxLr = maxLrs[i];
        g.minLr = (g.initialLr as number) / finalDivFactor;
      });
    }
    this.cycleMomentum = opts.cycleMomentum ?? true;
    if (this.cycleMomentum) {
      if (!('momentum' in optimizer.defaults) && !('betas' in optimizer.defaults)) {
        throw new RangeError('optimizer must support momentum or beta1 with `cycleMomentum` option enabled');
      }
      this.useBeta1 = 'betas' in optimizer.defaults;
      const maxMomenta = perGroup('maxMomentum', groups, opts.maxMomentum ?? 0.95);
      const baseMomenta = perGroup('baseMomentum', groups, opts.baseMomentum ?? 0.85);
      if (lastEpoch === -1) {
        groups.forEach((g, i) => {
          if (this.useBeta1) g.betas = [maxMomenta[i], (g.betas as number[])[1]];
          else g.momentum = maxMomenta[i];
          g.maxMomentum = maxMomenta[i];
          g.baseMomentum = baseMomenta[i];
        });
      }
    }
    // PyTorch sets initial_lr before its base constructor reads base_lrs.
    this.baseLrs = groups.map((g) => g.initialLr as number);
    this.initialStep();
  }

  private anneal(start: number, end: number, pct: number): number {
    if (this._annealFuncType === 'cos') {
      const cosOut = cCos(Math.PI * pct) + 1;
      return end + ((start - end) / 2.0) * cosOut;
    }
    return (end - start) * pct + start;
  }

  getLr(): number[] {
    const stepNum = this.lastEpoch;
    if (stepNum > this.totalSteps) {
      throw new RangeError(
        `Tried to step ${stepNum} times. The specified number of total steps is ${this.totalSteps}`,
      );
    }
    return this.optimizer.paramGroups.map((g) => {
      let startStep = 0.0;
      const phases = this._schedulePhases;
      for (let i = 0; i < phases.length; i++) {
        const p = phases[i];
        if (stepNum <= p.endStep || i === phases.length - 1) {
          const pct = (stepNum - startStep) / (p.endStep - startStep);
          const lr = this.anneal(num(g, p.startLr), num(g, p.endLr), pct);
          if (this.cycleMomentum) {
            const m = this.anneal(num(g, p.startMomentum), num(g, p.endMomentum), pct);
            if (this.useBeta1) g.betas = [m, (g.betas as number[])[1]];
            else g.momentum = m;
          }
          return lr;
        }
        startStep = p.endStep;
      }
      throw new Error('unreachable: OneCycleLR has no phase');
    });
  }

  override loadStateDict(sd: SchedulerStateDict): void {
    super.loadStateDict(sd);
    // stateKeys() followed this scheduler's cycleMomentum; the loaded one decides.
    if ('useBeta1' in sd) this.useBeta1 = sd.useBeta1 as boolean;
  }

  /** PyTorch's keys, in its order (use_beta1 exists only with cycle_momentum there). */
  protected override stateKeys(): string[] {
    return this.cycleMomentum
      ? ['totalSteps', '_schedulePhases', '_annealFuncType', 'cycleMomentum', 'useBeta1']
      : ['totalSteps', '_schedulePhases', '_annealFuncType', 'cycleMomentum'];
  }
}

function phase(
  endStep: number,
  startLr: string,
  endLr: string,
  startMomentum: string,
  endMomentum: string,
): OneCyclePhase {
  return { endStep, startLr, endLr, startMomentum, endMomentum };
}

function perGroup(name: string, groups: ParamGroup[], v: number | number[]): number[] {
  if (Array.isArray(v)) {
    if (v.length !== groups.length) {
      throw new RangeError(`expected ${groups.length} values for ${name}, got ${v.length}`);
    }
    return [...v];
  }
  return groups.map(() => v);
}

function num(g: ParamGroup, key: string): number {
  const v = g[key];
  if (typeof v !== 'number') throw new TypeError(`OneCycleLR: param group '${key}' must be a number`);
  return v;
}

// CyclicLR (Smith's cyclical learning rates), as PyTorch's: the lr goes from baseLr up
// to maxLr over stepSizeUp steps and back over stepSizeDown, the amplitude scaled per
// cycle ('triangular': constant, 'triangular2': halved each cycle) or per step
// ('exp_range': gamma ** step), or by a scaleFn of your own; the momentum (or Adam's
// beta1) cycles the opposite way. It sets each group's lr to baseLr and adds
// maxMomentum and baseMomentum to the groups, as PyTorch does. Arguments are read as
// args.ts says.
import { cPow } from '../c-math.ts';
import type { Optimizer, ParamGroup } from '../optimizer.ts';
import { type RequiredOption, schedulerArgs, type TorchSpelled } from './args.ts';
import { LRScheduler, type SchedulerStateDict } from './base.ts';

export type CyclicLRMode = 'triangular' | 'triangular2' | 'exp_range';

const CYCLIC_LR = [
  ['baseLr', 'base_lr'],
  ['maxLr', 'max_lr'],
  ['stepSizeUp', 'step_size_up'],
  ['stepSizeDown', 'step_size_down'],
  ['mode', 'mode'],
  ['gamma', 'gamma'],
  ['scaleFn', 'scale_fn'],
  ['scaleMode', 'scale_mode'],
  ['cycleMomentum', 'cycle_momentum'],
  ['baseMomentum', 'base_momentum'],
  ['maxMomentum', 'max_momentum'],
  ['lastEpoch', 'last_epoch'],
] as const;

export type CyclicLROptions = TorchSpelled<CyclicOptions, typeof CYCLIC_LR>;

/** The options object of `new CyclicLR(opt, { baseLr, maxLr, ... })`. */
export type CyclicLRAllOptions = CyclicLROptions &
  RequiredOption<'baseLr', 'base_lr', number | number[]> &
  RequiredOption<'maxLr', 'max_lr', number | number[]>;

/** CyclicLR's optional options under tsddp's names. */
export interface CyclicOptions {
  /** Steps in the increasing half of a cycle (default 2000). */
  stepSizeUp?: number;
  /** Steps in the decreasing half (default stepSizeUp). */
  stepSizeDown?: number;
  /** Amplitude policy (default 'triangular'); ignored when scaleFn is given. */
  mode?: CyclicLRMode;
  /** The base of 'exp_range' (default 1). */
  gamma?: number;
  /** A custom amplitude scale, 0 <= scaleFn(x) <= 1, of the cycle or the step (scaleMode). */
  scaleFn?: ((x: number) => number) | null;
  /** What scaleFn is a function of: 'cycle' (default) or 'iterations'. */
  scaleMode?: 'cycle' | 'iterations';
  cycleMomentum?: boolean;
  baseMomentum?: number | number[];
  maxMomentum?: number | number[];
  lastEpoch?: number;
}

const MODES: readonly string[] = ['triangular', 'triangular2', 'exp_range'];

export class CyclicLR extends LRScheduler {
  maxLrs: number[];
  totalSize: number;
  stepRatio: number;
  mode: CyclicLRMode;
  gamma: number;
  scaleMode: 'cycle' | 'iterations';
  cycleMomentum: boolean;
  useBeta1 = false;
  baseMomentums: number[] = [];
  maxMomentums: number[] = [];
  /** The user's scaleFn: code, not state (the state dict holds null, as PyTorch for a function). */
  private readonly scaleFnCustom: ((x: number) => number) | null;

  /** `new CyclicLR(opt, { baseLr, maxLr, ... })`, or PyTorch's positional arguments. */
  constructor(optimizer: Optimizer, options: CyclicLRAllOptions);
  constructor(
    optimizer: Optimizer,
    baseLr: number | number[],
    maxLr: number | number[],
    options?: CyclicLROptions,
  );
  constructor(
    optimizer: Optimizer,
    baseLr: number | number[],
    maxLr: number | number[],
    stepSizeUp?: number,
    stepSizeDown?: number,
    mode?: CyclicLRMode,
    gamma?: number,
    scaleFn?: ((x: number) => number) | null,
    scaleMode?: 'cycle' | 'iterations',
    cycleMomentum?: boolean,
    baseMomentum?: number | number[],
    maxMomentum?: number | number[],
    lastEpoch?: number,
  );
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { baseLr, maxLr, ...opts } = schedulerArgs<
      CyclicOptions & { baseLr: number | number[]; maxLr: number | number[] }
    >('CyclicLR', CYCLIC_LR, 2, args);
    const lastEpoch = opts.lastEpoch ?? -1;
    const groups = optimizer.paramGroups;
    const baseLrs = perGroup('baseLr', groups, baseLr);
    // PyTorch sets the lrs before its base constructor reads them into initial_lr.
    if (lastEpoch === -1) {
      groups.forEach((g, i) => {
        g.lr = baseLrs[i];
      });
    }
    super(optimizer, lastEpoch);
    this.maxLrs = perGroup('maxLr', groups, maxLr);
    const up = opts.stepSizeUp ?? 2000;
    const down = opts.stepSizeDown ?? up;
    this.totalSize = up + down;
    this.stepRatio = up / this.totalSize;
    const mode = opts.mode ?? 'triangular';
    this.scaleFnCustom = opts.scaleFn ?? null;
    if (!MODES.includes(mode) && this.scaleFnCustom === null) {
      throw new RangeError(`CyclicLR: mode '${String(mode)}' is invalid and scaleFn is not given`);
    }
    this.mode = mode;
    this.gamma = opts.gamma ?? 1.0;
    this.scaleMode = opts.scaleMode ?? 'cycle';
    this.initScaleFn();
    this.cycleMomentum = opts.cycleMomentum ?? true;
    if (this.cycleMomentum) {
      if (!('momentum' in optimizer.defaults) && !('betas' in optimizer.defaults)) {
        throw new RangeError('optimizer must support momentum or beta1 with `cycleMomentum` option enabled');
      }
      this.useBeta1 = 'betas' in optimizer.defaults;
      this.baseMomentums = perGroup('baseMomentum', groups, opts.baseMomentum ?? 0.8);
      this.maxMomentums = perGroup('maxMomentum', groups, opts.maxMomentum ?? 0.9);
      if (lastEpoch === -1) {
        groups.forEach((g, i) => {
          setMomentum(g, this.useBeta1, this.maxMomentums[i]);
          g.maxMomentum = this.maxMomentums[i];
          g.baseMomentum = this.baseMomentums[i];
        });
      }
    }
    this.initialStep();
    // As PyTorch: after the base constructor, the given baseLr wins over initialLr.
    this.baseLrs = baseLrs;
  }

  /** The built-in modes fix what their scale is a function of (PyTorch's _init_scale_fn). */
  private initScaleFn(): void {
    if (this.scaleFnCustom !== null) return;
    this.scaleMode = this.mode === 'exp_range' ? 'iterations' : 'cycle';
  }

  /** The amplitude scale at `x` (a cycle number or a step). */
  scaleFn(x: number): number {
    if (this.scaleFnCustom !== null) return this.scaleFnCustom(x);
    if (this.mode === 'triangular') return 1.0;
    if (this.mode === 'triangular2') return 1 / cPow(2.0, x - 1);
    return cPow(this.gamma, x);
  }

  getLr(): number[] {
    const e = this.lastEpoch;
    const cycle = Math.floor(1 + e / this.totalSize);
    const x = 1.0 + e / this.totalSize - cycle;
    const scaleFactor = x <= this.stepRatio ? x / this.stepRatio : (x - 1) / (this.stepRatio - 1);
    const scale = this.scaleFn(this.scaleMode === 'cycle' ? cycle : e);
    const lrs = this.baseLrs.map((b, i) => b + (this.maxLrs[i] - b) * scaleFactor * scale);
    if (this.cycleMomentum) {
      this.optimizer.paramGroups.forEach((g, i) => {
        const base = this.baseMomentums[i];
        const max = this.maxMomentums[i];
        setMomentum(g, this.useBeta1, max - (max - base) * scaleFactor * scale);
      });
    }
    return lrs;
  }

  override stateDict(): SchedulerStateDict {
    return { ...super.stateDict(), _scaleFnCustom: null };
  }

  override loadStateDict(sd: SchedulerStateDict): void {
    super.loadStateDict(sd);
    if ('useBeta1' in sd) this.useBeta1 = sd.useBeta1 as boolean;
    if ('baseMomentums' in sd) this.baseMomentums = [...(sd.baseMomentums as number[])];
    if ('maxMomentums' in sd) this.maxMomentums = [...(sd.maxMomentums as number[])];
    this.initScaleFn();
  }

  /** PyTorch's keys, in its order (the momentum ones only with cycleMomentum). */
  protected override stateKeys(): string[] {
    const keys = ['maxLrs', 'totalSize', 'stepRatio', 'mode', 'gamma', 'scaleMode', 'cycleMomentum'];
    return this.cycleMomentum ? [...keys, 'useBeta1', 'baseMomentums', 'maxMomentums'] : keys;
  }
}

function setMomentum(g: ParamGroup, useBeta1: boolean, m: number): void {
  if (useBeta1) g.betas = [m, ...(g.betas as number[]).slice(1)];
  else g.momentum = m;
}

function perGroup(name: string, groups: ParamGroup[], v: number | number[]): number[] {
  if (Array.isArray(v)) {
    if (v.length !== groups.length) {
      throw new RangeError(
        `${name} must have the same length as optimizer.paramGroups. ${name} has ${v.length} values, paramGroups has ${groups.length}.`,
      );
    }
    return [...v];
  }
  return groups.map(() => v);
}

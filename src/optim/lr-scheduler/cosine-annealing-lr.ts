// CosineAnnealingLR: lr follows half a cosine from the base lr down to etaMin over
// tMax steps (then back up, periodically). Like PyTorch, step() uses the recursive
// form, which drifts from the closed form by rounding: the fixture holds it to
// PyTorch's own numbers, bit for bit (C's cos through cCos, as Python's math.cos).
// Arguments are read as args.ts says.
import { cCos } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { type RequiredOption, schedulerArgs, type TorchSpelled } from './args.ts';
import { currentLrs, LRScheduler, pyMod } from './base.ts';

const COSINE_ANNEALING_LR = [
  ['tMax', 'T_max'],
  ['etaMin', 'eta_min'],
  ['lastEpoch', 'last_epoch'],
] as const;

export type CosineAnnealingLROptions = TorchSpelled<
  {
    /** Minimum learning rate (default 0). PyTorch: eta_min. */
    etaMin?: number;
    lastEpoch?: number;
  },
  typeof COSINE_ANNEALING_LR
>;

export class CosineAnnealingLR extends LRScheduler {
  /** Half-period in steps. PyTorch: T_max. */
  tMax: number;
  etaMin: number;

  /** `new CosineAnnealingLR(opt, { tMax, etaMin })` (or `T_max`, `eta_min`), or PyTorch's positional arguments. */
  constructor(
    optimizer: Optimizer,
    options: CosineAnnealingLROptions & RequiredOption<'tMax', 'T_max', number>,
  );
  constructor(optimizer: Optimizer, tMax: number, options?: CosineAnnealingLROptions);
  constructor(optimizer: Optimizer, tMax: number, etaMin?: number, lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { tMax, ...opts } = schedulerArgs<{ tMax: number; etaMin?: number; lastEpoch?: number }>(
      'CosineAnnealingLR',
      COSINE_ANNEALING_LR,
      1,
      args,
    );
    super(optimizer, opts.lastEpoch ?? -1);
    if (!(tMax > 0)) throw new RangeError(`CosineAnnealingLR: tMax must be positive, got ${tMax}`);
    this.tMax = tMax;
    this.etaMin = opts.etaMin ?? 0.0;
    this.initialStep();
  }

  getLr(): number[] {
    const groups = this.optimizer.paramGroups;
    const { tMax: T, etaMin, lastEpoch: e } = this;
    if (this._isInitial) return currentLrs(this.optimizer);
    if (this._stepCount === 1 && e > 0) {
      return this.baseLrs.map((b) => etaMin + ((b - etaMin) * (1 + cCos((e * Math.PI) / T))) / 2);
    }
    if (pyMod(e - 1 - T, 2 * T) === 0) {
      return groups.map((g, i) => g.lr + ((this.baseLrs[i] - etaMin) * (1 - cCos(Math.PI / T))) / 2);
    }
    return groups.map(
      (g) => ((1 + cCos((Math.PI * e) / T)) / (1 + cCos((Math.PI * (e - 1)) / T))) * (g.lr - etaMin) + etaMin,
    );
  }

  override getClosedFormLr(): number[] {
    const { tMax: T, etaMin, lastEpoch: e } = this;
    return this.baseLrs.map((b) => etaMin + ((b - etaMin) * (1 + cCos((Math.PI * e) / T))) / 2);
  }

  protected override stateKeys(): string[] {
    return ['tMax', 'etaMin'];
  }
}

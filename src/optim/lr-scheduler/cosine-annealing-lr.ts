// CosineAnnealingLR: lr follows half a cosine from the base lr down to etaMin over
// tMax steps (then back up, periodically). Like PyTorch, step() uses the recursive
// form, which drifts from the closed form by rounding: the fixture holds it to
// PyTorch's own numbers, bit for bit (C's cos through cCos, as Python's math.cos).
import { cCos } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { currentLrs, LRScheduler, pyMod } from './base.ts';

export interface CosineAnnealingLROptions {
  /** Minimum learning rate (default 0). PyTorch: eta_min. */
  etaMin?: number;
  lastEpoch?: number;
}

export class CosineAnnealingLR extends LRScheduler {
  /** Half-period in steps. PyTorch: T_max. */
  tMax: number;
  etaMin: number;

  constructor(optimizer: Optimizer, tMax: number, opts: CosineAnnealingLROptions = {}) {
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

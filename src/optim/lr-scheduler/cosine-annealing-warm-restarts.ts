// CosineAnnealingWarmRestarts (SGDR), as PyTorch's: the lr follows half a cosine from
// the base lr to etaMin over t0 steps, then restarts, each period tMult times longer.
// step() advances one step; step(epoch) jumps to a (possibly fractional) epoch, as in
// `scheduler.step(epoch + i / itersPerEpoch)`. Like PyTorch's, its step() does not
// count _stepCount. Arguments are read as args.ts says.
import { cCos, cLog } from '../c-math.ts';
import type { Optimizer } from '../optimizer.ts';
import { type RequiredOption, schedulerArgs, type TorchSpelled } from './args.ts';
import { LRScheduler } from './base.ts';

const WARM_RESTARTS = [
  ['t0', 'T_0'],
  ['tMult', 'T_mult'],
  ['etaMin', 'eta_min'],
  ['lastEpoch', 'last_epoch'],
] as const;

export type CosineAnnealingWarmRestartsOptions = TorchSpelled<
  {
    /** Each restart's period is tMult times the last (an integer >= 1, default 1). PyTorch: T_mult. */
    tMult?: number;
    /** Minimum learning rate (default 0). PyTorch: eta_min. */
    etaMin?: number;
    lastEpoch?: number;
  },
  typeof WARM_RESTARTS
>;

export class CosineAnnealingWarmRestarts extends LRScheduler {
  /** Steps until the first restart. PyTorch: T_0. */
  t0: number;
  /** The current period. PyTorch: T_i. */
  tI: number;
  tMult: number;
  etaMin: number;
  /** Steps (or epochs, possibly fractional) since the last restart. PyTorch: T_cur. */
  tCur: number;

  /** `new CosineAnnealingWarmRestarts(opt, { t0, tMult, etaMin })` (or `T_0`, `T_mult`, `eta_min`), or PyTorch's positional arguments. */
  constructor(
    optimizer: Optimizer,
    options: CosineAnnealingWarmRestartsOptions & RequiredOption<'t0', 'T_0', number>,
  );
  constructor(optimizer: Optimizer, t0: number, options?: CosineAnnealingWarmRestartsOptions);
  constructor(optimizer: Optimizer, t0: number, tMult?: number, etaMin?: number, lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { t0, ...opts } = schedulerArgs<{
      t0: number;
      tMult?: number;
      etaMin?: number;
      lastEpoch?: number;
    }>('CosineAnnealingWarmRestarts', WARM_RESTARTS, 1, args);
    const lastEpoch = opts.lastEpoch ?? -1;
    super(optimizer, lastEpoch);
    const tMult = opts.tMult ?? 1;
    const etaMin = opts.etaMin ?? 0.0;
    if (!Number.isInteger(t0) || t0 <= 0) throw new RangeError(`Expected positive integer t0, but got ${t0}`);
    if (!Number.isInteger(tMult) || tMult < 1)
      throw new RangeError(`Expected integer tMult >= 1, but got ${tMult}`);
    if (typeof etaMin !== 'number') throw new TypeError(`Expected a number etaMin, but got ${typeof etaMin}`);
    this.t0 = t0;
    this.tI = t0;
    this.tMult = tMult;
    this.etaMin = etaMin;
    this.tCur = lastEpoch;
    this.initialStep();
  }

  getLr(): number[] {
    const { etaMin, tCur, tI } = this;
    return this.baseLrs.map((b) => etaMin + ((b - etaMin) * (1 + cCos((Math.PI * tCur) / tI))) / 2);
  }

  /** The next step, or the schedule at `epoch` (>= 0, fractional allowed). */
  override step(epoch?: number): void {
    let e = epoch;
    if (e === undefined && this.lastEpoch < 0) e = 0;
    if (e === undefined) {
      e = this.lastEpoch + 1;
      this.tCur = this.tCur + 1;
      if (this.tCur >= this.tI) {
        this.tCur = this.tCur % this.tI;
        this.tI = this.tI * this.tMult;
      }
    } else {
      if (!(e >= 0)) throw new RangeError(`Expected non-negative epoch, but got ${e}`);
      if (e >= this.t0) {
        if (this.tMult === 1) {
          this.tCur = e % this.t0;
        } else {
          // Python's int(math.log(x, base)): log(x) / log(base) in C's libm, truncated.
          const n = Math.trunc(cLog((e / this.t0) * (this.tMult - 1) + 1) / cLog(this.tMult));
          this.tCur = e - (this.t0 * (this.tMult ** n - 1)) / (this.tMult - 1);
          this.tI = this.t0 * this.tMult ** n;
        }
      } else {
        this.tI = this.t0;
        this.tCur = e;
      }
    }
    this.lastEpoch = Math.floor(e);
    this._getLrCalledWithinStep = true;
    let values: number[];
    try {
      values = this.getLr();
    } finally {
      this._getLrCalledWithinStep = false;
    }
    this.optimizer.paramGroups.forEach((g, i) => {
      g.lr = values[i];
    });
    this._lastLr = this.optimizer.paramGroups.map((g) => g.lr);
  }

  protected override stateKeys(): string[] {
    return ['t0', 'tI', 'tMult', 'etaMin', 'tCur'];
  }
}

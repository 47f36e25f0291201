// SequentialLR: runs `schedulers` one after another, switching at `milestones`, as
// PyTorch's. At a milestone the next scheduler restarts at its epoch 0 (its closed
// form), and each child keeps its own step count and state. Arguments are read as
// args.ts says.
import type { Optimizer } from '../optimizer.ts';
import { type LastEpochOption, schedulerArgs } from './args.ts';
import { bisectRight, LRScheduler, type SchedulerStateDict } from './base.ts';

const SEQUENTIAL_LR = [
  ['schedulers', 'schedulers'],
  ['milestones', 'milestones'],
  ['lastEpoch', 'last_epoch'],
] as const;

export class SequentialLR extends LRScheduler {
  _schedulers: LRScheduler[];
  _milestones: number[];

  /** `new SequentialLR(opt, { schedulers, milestones })`, or PyTorch's `(opt, schedulers, milestones, last_epoch)`. */
  constructor(
    optimizer: Optimizer,
    options: LastEpochOption & { schedulers: LRScheduler[]; milestones: number[] },
  );
  constructor(
    optimizer: Optimizer,
    schedulers: LRScheduler[],
    milestones: number[],
    options?: LastEpochOption,
  );
  constructor(optimizer: Optimizer, schedulers: LRScheduler[], milestones: number[], lastEpoch?: number);
  constructor(optimizer: Optimizer, ...args: unknown[]) {
    const { schedulers, milestones, ...opts } = schedulerArgs<{
      schedulers: LRScheduler[];
      milestones: number[];
      lastEpoch?: number;
    }>('SequentialLR', SEQUENTIAL_LR, 2, args);
    super(optimizer, opts.lastEpoch ?? -1);
    if (schedulers.length < 1) {
      throw new RangeError('SequentialLR expects at least one scheduler, but got no scheduler.');
    }
    schedulers.forEach((s, i) => {
      if (s.optimizer !== optimizer) {
        throw new RangeError(
          `SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler ${s.constructor.name} at index ${i} with a different optimizer`,
        );
      }
    });
    if (milestones.length !== schedulers.length - 1) {
      throw new RangeError(
        'Sequential Schedulers expects number of schedulers provided to be one more than the number of ' +
          `milestone points, but got number of schedulers ${schedulers.length} and the number of milestones to be equal to ${milestones.length}`,
      );
    }
    this._schedulers = schedulers;
    this._milestones = [...milestones];
    this.lastEpoch = (opts.lastEpoch ?? -1) + 1;
    // Undo what constructing the children did: back to the initial lrs, each child one
    // step back, then the first child's constructor step again.
    for (const g of optimizer.paramGroups) g.lr = g.initialLr as number;
    this.recursiveUndo();
    const idx = bisectRight(this._milestones, 0);
    this._schedulers[idx].initialStep();
    this._lastLr = this._schedulers[idx].getLastLr();
  }

  private recursiveUndo(sched: LRScheduler = this): void {
    if (sched instanceof SequentialLR) {
      for (const s of sched._schedulers) this.recursiveUndo(s);
    } else {
      sched.lastEpoch -= 1;
    }
  }

  getLr(): number[] {
    throw new TypeError('SequentialLR has no getLr(); its children compute the lrs');
  }

  override step(): void {
    this.lastEpoch += 1;
    const idx = bisectRight(this._milestones, this.lastEpoch);
    const scheduler = this._schedulers[idx];
    if (idx > 0 && this._milestones[idx - 1] === this.lastEpoch) scheduler._updateLr(0);
    else scheduler.step();
    this._lastLr = scheduler.getLastLr();
  }

  /** PyTorch's keys: _milestones, last_epoch, _last_lr and the children's states in _schedulers. */
  override stateDict(): SchedulerStateDict {
    return {
      _milestones: [...this._milestones],
      lastEpoch: this.lastEpoch,
      _lastLr: [...this._lastLr],
      _schedulers: this._schedulers.map((s) => s.stateDict()),
    };
  }

  override loadStateDict(sd: SchedulerStateDict): void {
    if ('_milestones' in sd) this._milestones = [...(sd._milestones as number[])];
    if ('lastEpoch' in sd) this.lastEpoch = sd.lastEpoch as number;
    if ('_lastLr' in sd) this._lastLr = [...(sd._lastLr as number[])];
    const children = sd._schedulers;
    if (children !== undefined) {
      if (!Array.isArray(children) || children.length !== this._schedulers.length) {
        throw new RangeError(
          `SequentialLR.loadStateDict: expected ${this._schedulers.length} child scheduler states`,
        );
      }
      children.forEach((c, i) => {
        this._schedulers[i].loadStateDict(c as SchedulerStateDict);
      });
    }
  }
}

// ChainedScheduler: steps several schedulers of one optimizer together, each applying
// its change to the lr the previous one left (e.g. ConstantLR warm-up times
// ExponentialLR decay), as PyTorch's. Like PyTorch's, it does not step at
// construction and its state is its last lrs and the children's states. Arguments are
// read as args.ts says (the optimizer, optional, comes second, as in PyTorch).
import type { Optimizer } from '../optimizer.ts';
import { schedulerArgs } from './args.ts';
import { LRScheduler, type SchedulerStateDict } from './base.ts';

const CHAINED_SCHEDULER = [
  ['schedulers', 'schedulers'],
  ['optimizer', 'optimizer'],
] as const;

import { ReduceLROnPlateau } from './reduce-lr-on-plateau.ts';

export class ChainedScheduler extends LRScheduler {
  _schedulers: LRScheduler[];

  /** `new ChainedScheduler({ schedulers, optimizer })`, or PyTorch's `(schedulers, optimizer)`. */
  constructor(options: { schedulers: LRScheduler[]; optimizer?: Optimizer });
  constructor(schedulers: LRScheduler[], optimizer?: Optimizer);
  constructor(...args: unknown[]) {
    const { schedulers, optimizer } = schedulerArgs<{ schedulers: LRScheduler[]; optimizer?: Optimizer }>(
      'ChainedScheduler',
      CHAINED_SCHEDULER,
      1,
      args,
      false,
    );
    if (!Array.isArray(schedulers) || schedulers.length < 1) {
      throw new RangeError(
        'ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.',
      );
    }
    const opt = optimizer ?? schedulers[0].optimizer;
    super(opt, 0, true);
    schedulers.forEach((s, i) => {
      if (!(s instanceof LRScheduler)) {
        throw new TypeError(`ChainedScheduler at index ${i} should be an LRScheduler.`);
      }
      if (s instanceof ReduceLROnPlateau) {
        throw new TypeError(
          `ChainedScheduler does not support \`ReduceLROnPlateau\` scheduler as it requires additional kwargs to be specified when calling \`step\`, but got one at index ${i} in the given schedulers sequence.`,
        );
      }
      if (s.optimizer !== opt) {
        throw new RangeError(
          `ChainedScheduler expects all schedulers to belong to the same optimizer, but got scheduler ${s.constructor.name} at index ${i} with a different optimizer`,
        );
      }
    });
    this._schedulers = [...schedulers];
    this._lastLr = this._schedulers[this._schedulers.length - 1].optimizer.paramGroups.map((g) => g.lr);
  }

  getLr(): number[] {
    throw new TypeError('ChainedScheduler has no getLr(); its children compute the lrs');
  }

  override step(): void {
    for (const s of this._schedulers) s.step();
    this._lastLr = this._schedulers[this._schedulers.length - 1].optimizer.paramGroups.map((g) => g.lr);
  }

  /** PyTorch's keys: _last_lr and the children's states in _schedulers. */
  override stateDict(): SchedulerStateDict {
    return { _lastLr: [...this._lastLr], _schedulers: this._schedulers.map((s) => s.stateDict()) };
  }

  override loadStateDict(sd: SchedulerStateDict): void {
    const children = sd._schedulers;
    if (children !== undefined && (!Array.isArray(children) || children.length !== this._schedulers.length)) {
      throw new RangeError(
        `ChainedScheduler.loadStateDict: expected ${this._schedulers.length} child scheduler states`,
      );
    }
    if ('_lastLr' in sd) this._lastLr = [...(sd._lastLr as number[])];
    if (Array.isArray(children)) {
      children.forEach((c, i) => {
        this._schedulers[i].loadStateDict(c as SchedulerStateDict);
      });
    }
  }
}

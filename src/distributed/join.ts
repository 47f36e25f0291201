// Uneven inputs, as torch.distributed.algorithms.join: a rank that runs out of batches
// leaves the training loop while the others go on, and its Joinables' hooks shadow the
// collectives the others still issue (DDP: the buffer broadcast, the backward-sync flag
// and one all-reduce of zeros per gradient bucket), so nobody waits for a rank that has
// stopped. Every collective here is the one join.py issues, in its order.
import * as t from '../core/index.ts';
import { native } from '../core/native.ts';
import { type ProcessGroup, Work } from './process-group.ts';

/** What a Joinable does for the ranks still training once this rank has joined (torch's JoinHook). */
export interface JoinHook {
  /** One iteration of the others' collectives, shadowed. */
  mainHook(): void;
  /** After every rank has joined; `isLastJoiner` says whether this rank joined last. */
  postHook(isLastJoiner: boolean): void;
}

/** How a Join context configured a Joinable (torch's _JoinConfig). */
export interface JoinConfig {
  enable: boolean;
  throwOnEarlyTermination: boolean;
  isFirstJoinable: boolean;
}

export const DISABLED_JOIN: JoinConfig = Object.freeze({
  enable: false,
  throwOnEarlyTermination: false,
  isFirstJoinable: false,
});

/**
 * A participant of Join (torch's Joinable): DistributedDataParallel, or a class of yours
 * that calls Join.notifyJoinContext(this) before its own per-iteration collectives.
 */
export interface Joinable {
  joinConfig: JoinConfig;
  /** The hook that shadows this Joinable's collectives; `options` are Join's extra options. */
  joinHook(options: Record<string, unknown>): JoinHook;
  /** Where Join's own agreement tensors live ('cpu' for Gloo). */
  readonly joinDevice: string;
  readonly joinProcessGroup: ProcessGroup;
}

export interface JoinOptions {
  /** Detect uneven inputs; false makes Join do nothing. Default true. */
  enable?: boolean;
  /** Instead of shadowing, every rank throws once one has run out of inputs. Default false. */
  throwOnEarlyTermination?: boolean;
  /** Passed to each joinHook (DDP: divideByInitialWorldSize). */
  [hookOption: string]: unknown;
}

/** An all-reduce of one value that this thread waits for. */
function agree(pg: ProcessGroup, value: number, device: string, op: 'sum' | 'max' = 'sum'): number {
  const x = t.tensor([value], { dtype: op === 'max' ? 'int64' : 'float32', device });
  native.allReduce(pg.h, x.h, op, undefined, true);
  const v = Number(x.item());
  x.dispose();
  return v;
}

/**
 * The join context (torch.distributed.algorithms.Join): run the training loop through
 * `run`; when this rank's loop ends first, its Joinables shadow the others' collectives
 * until every rank has finished, then their post-hooks run (DDP: the last rank to join
 * broadcasts the final model).
 */
export class Join {
  private readonly enable: boolean;
  private readonly throwOnEarlyTermination: boolean;
  private readonly hooks: JoinHook[];
  private readonly pg: ProcessGroup;
  private readonly device: string;

  constructor(joinables: Joinable[], opts: JoinOptions = {}) {
    if (joinables.length === 0) throw new TypeError('Join(): expected at least one Joinable');
    const { enable = true, throwOnEarlyTermination = false, ...hookOptions } = opts;
    this.enable = enable;
    this.throwOnEarlyTermination = throwOnEarlyTermination;
    for (const [i, j] of joinables.entries())
      j.joinConfig = { enable, throwOnEarlyTermination, isFirstJoinable: i === 0 };
    this.hooks = joinables.map((j) => j.joinHook(hookOptions));
    this.pg = joinables[0].joinProcessGroup;
    if (joinables.some((j) => j.joinProcessGroup !== this.pg))
      throw new TypeError('Join(): every Joinable must use the same process group');
    this.device = joinables[0].joinDevice;
  }

  /**
   * Runs `loop` (this rank's training loop, sync or async) in the context; when it
   * returns, shadows the others until all have joined. When `loop` throws, the error
   * propagates at once, as from PyTorch's `with Join(...)`.
   */
  run<T>(loop: () => T): T {
    const out = loop();
    if (out instanceof Promise)
      return out.then((v) => {
        this.exit();
        return v;
      }) as T;
    this.exit();
    return out;
  }

  private exit(): void {
    if (!this.enable) return;
    let isLastJoiner = true;
    for (let i = 0; ; i++) {
      if (i === 1000)
        process.emitWarning(
          `Join: rank ${this.pg.rank} has at least 1000 fewer inputs than the ranks still training; such skew slows training`,
        );
      // The others' notifyJoinContext all-reduces ones; a joined rank adds zeros.
      if (agree(this.pg, 0, this.device) === 0) break;
      if (this.throwOnEarlyTermination) {
        agree(this.pg, 1, this.device);
        throw new Error(`Rank ${this.pg.rank} exhausted all inputs.`);
      }
      for (const h of this.hooks) h.mainHook();
      isLastJoiner = false;
    }
    for (const h of this.hooks) h.postHook(isLastJoiner);
  }

  /**
   * What a Joinable calls before its per-iteration collectives (torch's
   * Join.notify_join_context): the first Joinable of an enabled Join all-reduces a one
   * (this rank has not joined) and returns that Work; with throwOnEarlyTermination it
   * also learns whether any rank has joined and then throws. Otherwise null.
   */
  static notifyJoinContext(joinable: Joinable): Work | null {
    const cfg = joinable.joinConfig;
    if (!cfg.isFirstJoinable || !cfg.enable) return null;
    const pg = joinable.joinProcessGroup;
    const ones = t.ones([1], { device: joinable.joinDevice });
    const work = new Work(native.allReduce(pg.h, ones.h, 'sum'), 'Join', pg.rank);
    if (cfg.throwOnEarlyTermination) Join.throwIfAnyJoined(joinable);
    return work;
  }

  /** throwOnEarlyTermination's check: an all-reduce of zeros that a joined rank makes non-zero. */
  static throwIfAnyJoined(joinable: Joinable): void {
    if (agree(joinable.joinProcessGroup, 0, joinable.joinDevice) !== 0)
      throw new Error('Detected at least one rank that exhausted inputs. Throwing across all ranks.');
  }

  /** The max over ranks of `rank` where `cond` holds (-1 elsewhere): DDP's _find_common_rank. */
  static commonRank(pg: ProcessGroup, cond: boolean, device: string): number {
    const r = agree(pg, cond ? pg.rank : -1, device, 'max');
    if (r === -1)
      throw new Error('Join: no rank qualified as the authoritative one (a bug: please report it)');
    return r;
  }

  /** An all-reduce (sum) of one float that this thread waits for: the agreements of join hooks. */
  static agree(pg: ProcessGroup, value: number, device: string): number {
    return agree(pg, value, device);
  }
}

// torch.distributed's collectives and point-to-point calls, each one c10d call on a group
// (native/src/process_group.cc, native/src/collectives.cc). As in PyTorch, `src`/`dst`
// are global ranks, `groupSrc`/`groupDst` ranks within `group`; a rank outside `group`
// does nothing (PyTorch warns and returns None). Every call returns a Work; as in PyTorch,
// a call waits for its collective unless `asyncOp` is true (isend/irecv never wait).
import { type Ended, native, type PendingCall } from '../core/native.ts';
import { checkOptions } from '../core/options.ts';
import type { Tensor } from '../core/tensor.ts';
import { collectiveFailed, type ProcessGroup, ReduceOp, resolveGroup, Work } from './process-group.ts';

export interface CollectiveOptions {
  group?: ProcessGroup | null;
  /**
   * PyTorch's async_op. false (the default): the call waits for the collective on this
   * thread, as PyTorch's does, and returns a completed Work; true: it returns at once with a
   * Work to await later, and the event loop runs meanwhile. Awaiting either works.
   */
  asyncOp?: boolean;
  timeoutMs?: number;
}

export interface RootOptions extends CollectiveOptions {
  /** The root as a rank within `group` instead of a global rank (PyTorch's group_src/group_dst). */
  groupRank?: number;
}

export interface P2POptions {
  group?: ProcessGroup | null;
  /** Matches a send with the recv of the same tag. Default 0. */
  tag?: number;
  /** The peer as a rank within `group` instead of a global rank (PyTorch's group_dst/group_src). */
  groupPeer?: number;
}

const COLLECTIVE_KEYS = ['group', 'asyncOp', 'timeoutMs'];
const ROOT_KEYS = [...COLLECTIVE_KEYS, 'groupRank'];
const P2P_KEYS = ['group', 'tag', 'groupPeer'];
const BARRIER_KEYS = ['group', 'timeoutMs', 'waitAllRanks'];

/**
 * The group of a call's options (default: the world), after refusing an option the call
 * does not take: a misspelt `group` would otherwise run the collective on the whole world.
 */
export function groupOf(opts: object, what: string, keys: readonly string[]): ProcessGroup {
  checkOptions(what, opts, keys);
  return resolveGroup((opts as { group?: ProcessGroup | null }).group);
}

const REDUCE_OPS = new Set<unknown>(Object.values(ReduceOp));

/** Refuses an op that is not a ReduceOp (or its string), before any rank waits on it. */
function checkOp(op: unknown, what: string): void {
  if (REDUCE_OPS.has(op)) return;
  const got = typeof op === 'string' ? `'${op}'` : String(op);
  throw new TypeError(
    `${what}(): op must be one of ${[...REDUCE_OPS].join(', ')} (the values of ReduceOp), got ${got}`,
  );
}

/** c10's names of the integer and bool dtypes, as PyTorch's messages spell them. */
const C10_INTEGRAL: Partial<Record<string, string>> = {
  uint8: 'Byte',
  int8: 'Char',
  int16: 'Short',
  int32: 'Int',
  int64: 'Long',
  bool: 'Bool',
};

/**
 * Refuses AVG of an integer or bool tensor on Gloo before it runs. PyTorch's Gloo fails
 * the same way, but only inside the collective (it sums, then divides by the world size
 * in place), and that failed work can still be pending when the next collective of the
 * group waits on its predecessors, which then fails too. Refused up front, nothing
 * reaches the group; the message carries PyTorch's words (docs/reliability.md R46).
 */
function checkAvg(op: ReduceOp, tensor: Tensor, pg: ProcessGroup, what: string): void {
  if (op !== ReduceOp.AVG || (pg.backend !== 'gloo' && tensor.isCuda)) return;
  const c10 = C10_INTEGRAL[tensor.dtype];
  if (c10 === undefined) return;
  throw new TypeError(
    `${what}(): ReduceOp.AVG on Gloo needs a floating-point tensor, got ${tensor.dtype} ` +
      `(result type Float can't be cast to the desired output type ${c10})`,
  );
}

const warned = new Set<string>();

/** PyTorch's answer to a call on a group this rank is not in: a warning, and nothing done. */
function notInGroup(pg: ProcessGroup, op: string): Work {
  if (!warned.has(op)) {
    warned.add(op);
    process.emitWarning(`${op}(): this rank is not in group '${pg.name}'; nothing is done`);
  }
  return new Work(Promise.resolve(), op, pg.rank);
}

/** The group rank of a root or peer given as a global rank, or as a group rank. */
function groupPeer(
  pg: ProcessGroup,
  global: number | undefined,
  inGroup: number | undefined,
  what: string,
): number {
  if (inGroup !== undefined) {
    if (global !== undefined) throw new TypeError(`${what}(): pass a global rank or a group rank, not both`);
    if (!Number.isInteger(inGroup) || inGroup < 0 || inGroup >= pg.size)
      throw new RangeError(`${what}(): group rank ${inGroup} is out of range for a group of ${pg.size}`);
    return inGroup;
  }
  if (global === undefined || global === null)
    throw new TypeError(`${what}(): the rank of the peer is missing`);
  const r = pg.ranks.indexOf(global);
  if (r >= 0) return r;
  if (pg.name === '0')
    throw new RangeError(`${what}(): rank ${global} is out of range for world size ${pg.size}`);
  throw new RangeError(
    `${what}(): rank ${global} is not in group '${pg.name}' (ranks ${pg.ranks.join(', ')})`,
  );
}

function expectCount(list: readonly Tensor[], pg: ProcessGroup, what: string, name: string): void {
  if (list.length !== pg.size)
    throw new TypeError(`${what}(): expected ${pg.size} ${name} (one per rank), got ${list.length}`);
}

/**
 * One c10d call. Blocking (PyTorch's default, async_op=False) waits for it on this thread,
 * as PyTorch's caller does, throws its failure here and returns a completed Work; with
 * `asyncOp` the Work completes later and the event loop runs meanwhile. (Blocking also
 * saves a hand-off of each completion to the event loop: docs/benchmarks.md, Collectives.)
 */
function issue(
  pg: ProcessGroup,
  op: string,
  opts: { asyncOp?: boolean },
  call: (blocking: boolean) => Ended<unknown>,
): Work {
  if (opts.asyncOp) return new Work(call(false) as Promise<unknown>, op, pg.rank);
  try {
    call(true);
  } catch (e) {
    if (e instanceof TypeError) throw e; // a bad argument, refused before anything ran
    throw collectiveFailed(op, pg.rank, e);
  }
  return Work.completed();
}

/** Reduces `tensor` across ranks in place (default: ReduceOp.SUM). */
export function allReduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, opts: CollectiveOptions = {}): Work {
  const pg = groupOf(opts, 'allReduce', COLLECTIVE_KEYS);
  checkOp(op, 'allReduce');
  checkAvg(op, tensor, pg, 'allReduce');
  if (!pg.isMember) return notInGroup(pg, 'allReduce');
  return issue(pg, 'allReduce', opts, (b) => native.allReduce(pg.h, tensor.h, op, opts.timeoutMs, b));
}

/** Copies `tensor` from rank `src` (global; or `groupRank`) to every rank, in place. */
export function broadcast(tensor: Tensor, src?: number, opts: RootOptions = {}): Work {
  const pg = groupOf(opts, 'broadcast', ROOT_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'broadcast');
  const root = groupPeer(pg, src, opts.groupRank, 'broadcast');
  return issue(pg, 'broadcast', opts, (b) => native.broadcast(pg.h, tensor.h, root, opts.timeoutMs, b));
}

/** Fills `outputs[r]` with rank r's `input` (outputs has one tensor per rank). */
export function allGather(outputs: Tensor[], input: Tensor, opts: CollectiveOptions = {}): Work {
  const pg = groupOf(opts, 'allGather', COLLECTIVE_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'allGather');
  expectCount(outputs, pg, 'allGather', 'output tensors');
  const hs = outputs.map((t) => t.h);
  return issue(pg, 'allGather', opts, (b) => native.allGather(pg.h, hs, input.h, opts.timeoutMs, b));
}

/**
 * A contiguous tensor as one flat view of its storage, so the single-tensor collectives take
 * the stacked form ([worldSize, ...]) as well as the concatenated one, on Gloo as on NCCL.
 */
function flat(x: Tensor): Tensor {
  return x.isContiguous() ? x.view([-1]) : x;
}

/**
 * Calls `call` with the handles of `output` and `input` as flat views (flat()), and frees
 * the views it made when it returns: the call holds its own reference, and a view left in
 * the caller's scope would keep a whole buffer alive until that scope ends.
 */
function withFlat<R>(output: Tensor, input: Tensor, call: (output: number, input: number) => R): R {
  const o = flat(output);
  const i = flat(input);
  try {
    return call(o.h, i.h);
  } finally {
    if (o !== output) o.dispose();
    if (i !== input) i.dispose();
  }
}

/**
 * Gathers every rank's `input` into `output`: concatenated on dim 0, or stacked
 * ([worldSize, ...input.shape]) (torch's all_gather_into_tensor).
 */
export function allGatherIntoTensor(output: Tensor, input: Tensor, opts: CollectiveOptions = {}): Work {
  const pg = groupOf(opts, 'allGatherIntoTensor', COLLECTIVE_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'allGatherIntoTensor');
  if (output.numel() !== input.numel() * pg.size)
    throw new TypeError(
      `allGatherIntoTensor(): the output has ${output.numel()} elements; it needs ${pg.size} x ${input.numel()} (world size x input)`,
    );
  return issue(pg, 'allGatherIntoTensor', opts, (b) =>
    withFlat(output, input, (o, i) => native.allGatherIntoTensor(pg.h, o, i, opts.timeoutMs, b)),
  );
}

/**
 * A collective issued now and waited for later on this thread (PyTorch's synchronous
 * Work.wait()), for work issued ahead inside a synchronous forward or backward, which
 * cannot await: fully sharded data parallel's prefetched all-gathers and deferred
 * reduce-scatters (fsdp/param-group.ts). Not a public API.
 */
export class PendingCollective {
  private waited = false;

  constructor(
    private readonly handle: PendingCall,
    private readonly op: string,
    private readonly rank: number,
  ) {}

  /** Waits until the collective is done; its failure throws here, as a DistributedError. */
  wait(): void {
    if (this.waited) return;
    this.waited = true;
    try {
      native.waitPending(this.handle);
    } catch (e) {
      throw collectiveFailed(this.op, this.rank, e);
    }
  }
}

/** allGatherIntoTensor over `group`, issued now, waited for with PendingCollective.wait(). */
export function startAllGatherIntoTensor(
  output: Tensor,
  input: Tensor,
  group: ProcessGroup,
): PendingCollective {
  if (output.numel() !== input.numel() * group.size)
    throw new TypeError('allGatherIntoTensor(): the output is not world size x the input');
  const h = withFlat(output, input, (o, i) => native.allGatherIntoTensor(group.h, o, i, undefined, 'handle'));
  return new PendingCollective(h as PendingCall, 'allGatherIntoTensor', group.rank);
}

/** reduceScatterTensor over `group`, issued now, waited for with PendingCollective.wait(). */
export function startReduceScatterTensor(
  output: Tensor,
  input: Tensor,
  op: ReduceOp,
  group: ProcessGroup,
): PendingCollective {
  if (input.numel() !== output.numel() * group.size)
    throw new TypeError('reduceScatterTensor(): the input is not world size x the output');
  const h = withFlat(output, input, (o, i) =>
    native.reduceScatterTensor(group.h, o, i, op, undefined, 'handle'),
  );
  return new PendingCollective(h as PendingCall, 'reduceScatterTensor', group.rank);
}

/** Reduces `inputs[r]` across ranks into rank r's `output`. */
export function reduceScatter(
  output: Tensor,
  inputs: Tensor[],
  op: ReduceOp = ReduceOp.SUM,
  opts: CollectiveOptions = {},
): Work {
  const pg = groupOf(opts, 'reduceScatter', COLLECTIVE_KEYS);
  checkOp(op, 'reduceScatter');
  checkAvg(op, output, pg, 'reduceScatter');
  if (!pg.isMember) return notInGroup(pg, 'reduceScatter');
  expectCount(inputs, pg, 'reduceScatter', 'input tensors');
  const hs = inputs.map((t) => t.h);
  return issue(pg, 'reduceScatter', opts, (b) =>
    native.reduceScatter(pg.h, output.h, hs, op, opts.timeoutMs, b),
  );
}

/**
 * Reduces `input` (concatenated or stacked on dim 0) across ranks and leaves chunk r on rank r
 * (torch's reduce_scatter_tensor).
 */
export function reduceScatterTensor(
  output: Tensor,
  input: Tensor,
  op: ReduceOp = ReduceOp.SUM,
  opts: CollectiveOptions = {},
): Work {
  const pg = groupOf(opts, 'reduceScatterTensor', COLLECTIVE_KEYS);
  checkOp(op, 'reduceScatterTensor');
  checkAvg(op, output, pg, 'reduceScatterTensor');
  if (!pg.isMember) return notInGroup(pg, 'reduceScatterTensor');
  if (input.numel() !== output.numel() * pg.size)
    throw new TypeError(
      `reduceScatterTensor(): the input has ${input.numel()} elements; it needs ${pg.size} x ${output.numel()} (world size x output)`,
    );
  return issue(pg, 'reduceScatterTensor', opts, (b) =>
    withFlat(output, input, (o, i) => native.reduceScatterTensor(pg.h, o, i, op, opts.timeoutMs, b)),
  );
}

/** Reduces `tensor` across ranks into rank `dst`'s (global; or `groupRank`), as torch's reduce. */
export function reduce(
  tensor: Tensor,
  dst?: number,
  op: ReduceOp = ReduceOp.SUM,
  opts: RootOptions = {},
): Work {
  const pg = groupOf(opts, 'reduce', ROOT_KEYS);
  checkOp(op, 'reduce');
  checkAvg(op, tensor, pg, 'reduce');
  if (!pg.isMember) return notInGroup(pg, 'reduce');
  const root = groupPeer(pg, dst, opts.groupRank, 'reduce');
  return issue(pg, 'reduce', opts, (b) => native.reduce(pg.h, tensor.h, root, op, opts.timeoutMs, b));
}

/** Collects every rank's `tensor` into `gatherList` on rank `dst` (the others pass none). */
export function gather(
  tensor: Tensor,
  gatherList?: Tensor[] | null,
  dst?: number,
  opts: RootOptions = {},
): Work {
  const pg = groupOf(opts, 'gather', ROOT_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'gather');
  const root = groupPeer(pg, dst ?? (opts.groupRank === undefined ? 0 : undefined), opts.groupRank, 'gather');
  const list = rootList(gatherList, pg, root, 'gather', 'gatherList');
  return issue(pg, 'gather', opts, (b) => native.gather(pg.h, list, tensor.h, root, opts.timeoutMs, b));
}

/** Sends `scatterList[r]` from rank `src` to rank r's `tensor` (the others pass no list). */
export function scatter(
  tensor: Tensor,
  scatterList?: Tensor[] | null,
  src?: number,
  opts: RootOptions = {},
): Work {
  const pg = groupOf(opts, 'scatter', ROOT_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'scatter');
  const root = groupPeer(
    pg,
    src ?? (opts.groupRank === undefined ? 0 : undefined),
    opts.groupRank,
    'scatter',
  );
  const list = rootList(scatterList, pg, root, 'scatter', 'scatterList');
  return issue(pg, 'scatter', opts, (b) => native.scatter(pg.h, tensor.h, list, root, opts.timeoutMs, b));
}

/** The root's list (one tensor per rank) as handles; PyTorch's refusal of a list elsewhere. */
function rootList(
  list: Tensor[] | null | undefined,
  pg: ProcessGroup,
  root: number,
  what: string,
  name: string,
): number[] {
  if (pg.rank !== root) {
    if (list && list.length > 0)
      throw new TypeError(`${what}(): ${name} must not be given on ranks other than the root`);
    return [];
  }
  if (!list) throw new TypeError(`${what}(): ${name} is required on the root rank`);
  expectCount(list, pg, what, `tensors in ${name}`);
  return list.map((t) => t.h);
}

/**
 * Splits `input` on dim 0 by `inputSplitSizes` (default: equal parts), sends part r to rank
 * r, and fills `output` with the parts received, in rank order (torch's all_to_all_single).
 */
export function allToAllSingle(
  output: Tensor,
  input: Tensor,
  outputSplitSizes?: number[] | null,
  inputSplitSizes?: number[] | null,
  opts: CollectiveOptions = {},
): Work {
  const pg = groupOf(opts, 'allToAllSingle', COLLECTIVE_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'allToAllSingle');
  checkSplits(outputSplitSizes, output, pg, 'outputSplitSizes');
  checkSplits(inputSplitSizes, input, pg, 'inputSplitSizes');
  return issue(pg, 'allToAllSingle', opts, (b) =>
    native.allToAllSingle(
      pg.h,
      output.h,
      input.h,
      outputSplitSizes ?? [],
      inputSplitSizes ?? [],
      opts.timeoutMs,
      b,
    ),
  );
}

function checkSplits(splits: number[] | null | undefined, t: Tensor, pg: ProcessGroup, name: string): void {
  const rows = t.ndim === 0 ? 1 : t.shape[0];
  if (!splits || splits.length === 0) {
    if (rows % pg.size !== 0)
      throw new TypeError(
        `allToAllSingle(): dim 0 (${rows}) does not split equally over ${pg.size} ranks; pass ${name}`,
      );
    return;
  }
  if (splits.length !== pg.size)
    throw new TypeError(
      `allToAllSingle(): ${name} needs ${pg.size} sizes (one per rank), got ${splits.length}`,
    );
  const total = splits.reduce((a, b) => a + b, 0);
  if (splits.some((n) => !Number.isInteger(n) || n < 0) || total !== rows)
    throw new TypeError(
      `allToAllSingle(): ${name} [${splits.join(', ')}] must be counts that add up to dim 0 (${rows})`,
    );
}

/** Sends `inputs[r]` to rank r and receives rank r's into `outputs[r]` (torch's all_to_all). */
export function allToAll(outputs: Tensor[], inputs: Tensor[], opts: CollectiveOptions = {}): Work {
  const pg = groupOf(opts, 'allToAll', COLLECTIVE_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'allToAll');
  expectCount(outputs, pg, 'allToAll', 'output tensors');
  expectCount(inputs, pg, 'allToAll', 'input tensors');
  const o = outputs.map((t) => t.h);
  const i = inputs.map((t) => t.h);
  return issue(pg, 'allToAll', opts, (b) => native.allToAll(pg.h, o, i, opts.timeoutMs, b));
}

/** All-reduces each tensor of the list (torch's all_reduce_coalesced). */
export function allReduceCoalesced(
  tensors: Tensor[],
  op: ReduceOp = ReduceOp.SUM,
  opts: CollectiveOptions = {},
): Work {
  const pg = groupOf(opts, 'allReduceCoalesced', COLLECTIVE_KEYS);
  checkOp(op, 'allReduceCoalesced');
  for (const x of tensors) checkAvg(op, x, pg, 'allReduceCoalesced');
  if (!pg.isMember) return notInGroup(pg, 'allReduceCoalesced');
  const hs = tensors.map((t) => t.h);
  return issue(pg, 'allReduceCoalesced', opts, (b) =>
    native.allReduceCoalesced(pg.h, hs, op, opts.timeoutMs, b),
  );
}

/** All-gathers each input: `outputLists[r][i]` is rank r's `inputs[i]` (torch's all_gather_coalesced). */
export function allGatherCoalesced(
  outputLists: Tensor[][],
  inputs: Tensor[],
  opts: CollectiveOptions = {},
): Work {
  const pg = groupOf(opts, 'allGatherCoalesced', COLLECTIVE_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'allGatherCoalesced');
  if (outputLists.length !== pg.size)
    throw new TypeError(
      `allGatherCoalesced(): expected ${pg.size} output lists (one per rank), got ${outputLists.length}`,
    );
  const outs = outputLists.map((l) => l.map((t) => t.h));
  const ins = inputs.map((t) => t.h);
  return issue(pg, 'allGatherCoalesced', opts, (b) =>
    native.allGatherCoalesced(pg.h, outs, ins, opts.timeoutMs, b),
  );
}

/** Waits until every rank reaches the barrier. */
export function barrier(opts: CollectiveOptions = {}): Work {
  const pg = groupOf(opts, 'barrier', COLLECTIVE_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'barrier');
  return issue(pg, 'barrier', opts, (b) => native.barrier(pg.h, opts.timeoutMs, b));
}

export interface MonitoredBarrierOptions {
  group?: ProcessGroup | null;
  /** Default: the group's timeout. */
  timeoutMs?: number;
  /** Rank 0 names every rank that did not arrive, instead of the first. Default false. */
  waitAllRanks?: boolean;
}

/**
 * A barrier whose rank 0 checks in with every other rank and, when some do not arrive
 * within the timeout, fails naming them (torch's monitored_barrier; Gloo only).
 */
export function monitoredBarrier(opts: MonitoredBarrierOptions = {}): Work {
  const pg = groupOf(opts, 'monitoredBarrier', BARRIER_KEYS);
  if (!pg.isMember) return notInGroup(pg, 'monitoredBarrier');
  if (pg.backend !== 'gloo')
    throw new TypeError('monitoredBarrier(): only the Gloo backend has it, as in PyTorch');
  const timeoutMs = opts.timeoutMs ?? pg.timeoutMs;
  // As PyTorch's, it blocks: it has no async_op.
  return issue(pg, 'monitoredBarrier', {}, (b) =>
    native.monitoredBarrier(pg.h, timeoutMs, opts.waitAllRanks ?? false, b),
  );
}

/** Sends `tensor` to rank `dst` (global; or `groupPeer`); the Work completes once it is sent. */
export function isend(tensor: Tensor, dst?: number, opts: P2POptions = {}): Work {
  return sendTo(tensor, dst, opts, 'isend', false);
}

/** Receives into `tensor` from rank `src` (global; or `groupPeer`; neither: any rank). */
export function irecv(tensor: Tensor, src?: number, opts: P2POptions = {}): Work {
  const pg = groupOf(opts, 'irecv', P2P_KEYS);
  const from = recvFrom(tensor, src, opts, 'irecv', false);
  return typeof from === 'number' ? Work.completed() : new Work(from, 'irecv', pg.rank);
}

/** Sends `tensor` and waits until it is sent (torch.distributed.send). */
export async function send(tensor: Tensor, dst?: number, opts: P2POptions = {}): Promise<void> {
  sendTo(tensor, dst, opts, 'send', true);
}

/** Receives into `tensor`, waiting for it; resolves with the sender's global rank (torch.distributed.recv). */
export async function recv(tensor: Tensor, src?: number, opts: P2POptions = {}): Promise<number> {
  return recvFrom(tensor, src, opts, 'recv', true);
}

function sendTo(
  tensor: Tensor,
  dst: number | undefined,
  opts: P2POptions,
  what: string,
  blocking: boolean,
): Work {
  const pg = groupOf(opts, what, P2P_KEYS);
  if (!pg.isMember) return notInGroup(pg, what);
  const peer = groupPeer(pg, dst, opts.groupPeer, what);
  if (peer === pg.rank) throw new TypeError(`${what}(): rank ${pg.rank} cannot send to itself`);
  return issue(pg, what, { asyncOp: !blocking }, (b) => native.send(pg.h, tensor.h, peer, opts.tag ?? 0, b));
}

/** The sender's global rank (blocking), or a promise of it; -1 off the group. */
function recvFrom(
  tensor: Tensor,
  src: number | undefined,
  opts: P2POptions,
  what: string,
  blocking: boolean,
): number | Promise<number> {
  const pg = groupOf(opts, what, P2P_KEYS);
  if (!pg.isMember) {
    notInGroup(pg, what);
    return -1;
  }
  const any = src === undefined && opts.groupPeer === undefined;
  const peer = any ? -1 : groupPeer(pg, src, opts.groupPeer, what);
  if (peer === pg.rank) throw new TypeError(`${what}(): rank ${pg.rank} cannot receive from itself`);
  const global = (from: number) => pg.ranks[from] ?? from;
  if (!blocking) return (native.recv(pg.h, tensor.h, peer, opts.tag ?? 0) as Promise<number>).then(global);
  try {
    return global(native.recv(pg.h, tensor.h, peer, opts.tag ?? 0, true) as number);
  } catch (e) {
    if (e instanceof TypeError) throw e;
    throw collectiveFailed(what, pg.rank, e);
  }
}

/** One operation of batchIsendIrecv: isend or irecv, the tensor and the peer (torch's P2POp). */
export class P2POp {
  constructor(
    readonly op: typeof isend | typeof irecv,
    readonly tensor: Tensor,
    readonly peer?: number,
    readonly group?: ProcessGroup | null,
    readonly tag = 0,
    readonly groupPeer?: number,
  ) {
    if (op !== isend && op !== irecv)
      throw new TypeError('P2POp(): op must be distributed.isend or distributed.irecv');
    if (peer === undefined && groupPeer === undefined) throw new TypeError('P2POp(): the peer is missing');
  }
}

/**
 * Starts every operation of the list and returns their Works (torch's batch_isend_irecv).
 * Gloo has no coalescing: as PyTorch on Gloo, the operations start one after the other.
 */
export function batchIsendIrecv(ops: P2POp[]): Work[] {
  if (ops.length === 0 || !ops.every((o) => o instanceof P2POp))
    throw new TypeError('batchIsendIrecv(): expected a non-empty list of P2POp');
  const group = ops[0].group ?? null;
  if (ops.some((o) => (o.group ?? null) !== group))
    throw new TypeError('batchIsendIrecv(): every P2POp must use the same group');
  // PyTorch coalesces the batch on NCCL (one group call); tsddp issues the ops one by one,
  // which is right on Gloo but can deadlock NCCL's paired sends and receives.
  if (resolveGroup(group).backend === 'nccl' && ops.some((o) => o.tensor.isCuda))
    throw new TypeError(
      'batchIsendIrecv(): on NCCL the batch must be coalesced, which tsddp does not do yet; use Gloo, or isend/irecv in an order both sides match',
    );
  return ops.map((o) => o.op(o.tensor, o.peer, { group: o.group, tag: o.tag, groupPeer: o.groupPeer }));
}

/** PyTorch 2.13's name for allGatherIntoTensor (torch.distributed.all_gather_single). */
export const allGatherSingle = allGatherIntoTensor;

/** PyTorch 2.13's name for reduceScatterTensor (torch.distributed.reduce_scatter_single). */
export const reduceScatterSingle = reduceScatterTensor;

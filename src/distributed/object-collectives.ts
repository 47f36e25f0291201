// torch.distributed's object collectives: each value is pickled as PyTorch's
// _object_to_tensor pickles it (checkpoint/pt/object-pickle.ts), sent as a uint8 tensor
// and unpickled on arrival, through the same collectives in the same order as
// distributed_c10d.py's all_gather_object, gather_object, broadcast_object_list,
// scatter_object_list, send_object_list and recv_object_list, so a PyTorch rank in the
// group exchanges objects with a tsddp rank. Values are the data-only ones of t.save
// (numbers, strings, bools, null, arrays, plain objects, Maps, tensors); any other is a
// SerializationError before a byte is sent.
import { pickleObject, unpickleObject } from '../checkpoint/pt/object-pickle.ts';
import type { PtValue } from '../checkpoint/pt/values.ts';
import * as t from '../core/index.ts';
import { allGather, broadcast, gather, groupOf, recv, scatter, send } from './collectives.ts';
import type { ProcessGroup } from './process-group.ts';

export interface ObjectOptions {
  group?: ProcessGroup | null;
}

export interface RootObjectOptions extends ObjectOptions {
  /** The root as a rank within `group` instead of a global rank (PyTorch's group_src/group_dst). */
  groupRank?: number;
}

/** Where a group's object tensors live: the CPU for Gloo, the current GPU for NCCL (as PyTorch). */
function deviceOf(pg: ProcessGroup): string {
  return pg.backend === 'nccl' ? `cuda:${t.cuda.currentDevice()}` : 'cpu';
}

/** _object_to_tensor: the pickle as a uint8 tensor and its length as an int64 [1]. */
function objectTensor(obj: unknown, device: string): [t.Tensor, t.Tensor] {
  const bytes = pickleObject(obj, 'a distributed object');
  const tensor = t.fromBuffer(bytes, [bytes.length], 'uint8').to(device);
  return [tensor, t.tensor([bytes.length], { dtype: 'int64' }).to(device)];
}

function objectOf(tensor: t.Tensor, size: number): PtValue {
  const bytes = tensor.narrow(0, 0, size).to('cpu').contiguous().toTypedArray() as Uint8Array;
  return unpickleObject(new Uint8Array(bytes), 'a distributed object');
}

const numbers = (x: t.Tensor): number[] =>
  Array.from(x.to('cpu').toTypedArray() as ArrayLike<number | bigint>, Number);

/** The root's group rank: `global` (default 0) or opts.groupRank. */
function rootOf(pg: ProcessGroup, global: number | undefined, opts: RootObjectOptions): number {
  if (opts.groupRank !== undefined) return opts.groupRank;
  return pg.ranks.indexOf(global ?? 0);
}

/**
 * The first half of all_gather_object and gather_object: `obj` pickled, every rank's pickle
 * size (an all-gather), and this rank's pickle padded to the largest.
 */
async function pickledAndSized(
  obj: unknown,
  pg: ProcessGroup,
  device: string,
): Promise<{ padded: t.Tensor; sizes: number[]; max: number }> {
  const [input, localSize] = objectTensor(obj, device);
  const sizesTensor = t.zeros([pg.size], { dtype: 'int64', device });
  const sizeList = Array.from({ length: pg.size }, (_, i) => sizesTensor.narrow(0, i, 1));
  await allGather(sizeList, localSize, { group: pg });
  const sizes = numbers(sizesTensor);
  const max = Math.max(...sizes);
  const padded = t.zeros([max], { dtype: 'uint8', device });
  padded.narrow(0, 0, input.shape[0]).copy_(input);
  return { padded, sizes, max };
}

/** Fills `objectList[r]` with rank r's `obj` (torch's all_gather_object). */
export async function allGatherObject(
  objectList: unknown[],
  obj: unknown,
  opts: ObjectOptions = {},
): Promise<void> {
  const pg = groupOf(opts, 'allGatherObject', ['group']);
  if (!pg.isMember) return;
  const device = deviceOf(pg);
  const { padded, sizes, max } = await pickledAndSized(obj, pg, device);
  const out = t.empty([max * pg.size], { dtype: 'uint8', device });
  const outputs = Array.from({ length: pg.size }, (_, i) => out.narrow(0, max * i, max));
  await allGather(outputs, padded, { group: pg });
  for (const [i, x] of outputs.entries()) objectList[i] = objectOf(x, sizes[i]);
}

/** Collects every rank's `obj` into `objectGatherList` on rank `dst` (default 0) (torch's gather_object). */
export async function gatherObject(
  obj: unknown,
  objectGatherList?: unknown[] | null,
  dst?: number,
  opts: RootObjectOptions = {},
): Promise<void> {
  const pg = groupOf(opts, 'gatherObject', ['group', 'groupRank']);
  if (!pg.isMember) return;
  const root = rootOf(pg, dst, opts);
  if (pg.rank === root && !objectGatherList)
    throw new TypeError('gatherObject(): objectGatherList is required on the destination rank');
  if (pg.rank !== root && objectGatherList)
    throw new TypeError(
      'gatherObject(): objectGatherList must not be given on ranks other than the destination',
    );
  const device = deviceOf(pg);
  const { padded, sizes, max } = await pickledAndSized(obj, pg, device);
  const out = pg.rank === root ? t.empty([max * pg.size], { dtype: 'uint8', device }) : null;
  const outputs = out ? Array.from({ length: pg.size }, (_, i) => out.narrow(0, max * i, max)) : null;
  await gather(padded, outputs, undefined, { group: pg, groupRank: root });
  if (!outputs || !objectGatherList) return;
  for (const [i, x] of outputs.entries()) objectGatherList[i] = objectOf(x, sizes[i]);
}

/** Replaces `objectList`'s items with rank `src`'s (default 0) (torch's broadcast_object_list). */
export async function broadcastObjectList(
  objectList: unknown[],
  src?: number,
  opts: RootObjectOptions = {},
): Promise<void> {
  const pg = groupOf(opts, 'broadcastObjectList', ['group', 'groupRank']);
  if (!pg.isMember) return;
  const root = rootOf(pg, src, opts);
  const device = deviceOf(pg);
  const mine = pg.rank === root ? objectList.map((o) => objectTensor(o, device)) : null;
  const sizesTensor = mine
    ? t.cat(mine.map(([, s]) => s))
    : t.empty([objectList.length], { dtype: 'int64', device });
  await broadcast(sizesTensor, undefined, { group: pg, groupRank: root });
  const sizes = numbers(sizesTensor);
  const objects = mine
    ? mine.length === 1
      ? mine[0][0]
      : t.cat(mine.map(([x]) => x))
    : t.empty([sizes.reduce((a, b) => a + b, 0)], { dtype: 'uint8', device });
  await broadcast(objects, undefined, { group: pg, groupRank: root });
  if (mine) return;
  let offset = 0;
  for (const [i, size] of sizes.entries()) {
    objectList[i] = objectOf(objects.narrow(0, offset, size), size);
    offset += size;
  }
}

/**
 * Sends `scatterObjectInputList[r]` from rank `src` (default 0) to rank r, which finds it
 * in `scatterObjectOutputList[0]` (torch's scatter_object_list).
 */
export async function scatterObjectList(
  scatterObjectOutputList: unknown[],
  scatterObjectInputList?: unknown[] | null,
  src?: number,
  opts: RootObjectOptions = {},
): Promise<void> {
  const pg = groupOf(opts, 'scatterObjectList', ['group', 'groupRank']);
  if (!pg.isMember) return;
  if (!Array.isArray(scatterObjectOutputList) || scatterObjectOutputList.length < 1)
    throw new TypeError('scatterObjectList(): scatterObjectOutputList must be a list of at least one item');
  const root = rootOf(pg, src, opts);
  const device = deviceOf(pg);
  let inputs: t.Tensor[] | null = null;
  let sizes: t.Tensor[] | null = null;
  const maxSize = t.tensor([0], { dtype: 'int64', device });
  if (pg.rank === root) {
    if (!scatterObjectInputList || scatterObjectInputList.length !== pg.size)
      throw new TypeError(`scatterObjectList(): the source rank passes ${pg.size} objects (one per rank)`);
    const made = scatterObjectInputList.map((o) => objectTensor(o, device));
    sizes = made.map(([, s]) => s);
    const max = Math.max(...made.map(([x]) => x.shape[0]));
    maxSize.fill_(max);
    inputs = made.map(([x]) => {
      const p = t.zeros([max], { dtype: 'uint8', device });
      p.narrow(0, 0, x.shape[0]).copy_(x);
      return p;
    });
  }
  await broadcast(maxSize, undefined, { group: pg, groupRank: root });
  const output = t.empty([numbers(maxSize)[0]], { dtype: 'uint8', device });
  await scatter(output, inputs, undefined, { group: pg, groupRank: root });
  const size = t.tensor([0], { dtype: 'int64', device });
  await scatter(size, sizes, undefined, { group: pg, groupRank: root });
  scatterObjectOutputList[0] = objectOf(output, numbers(size)[0]);
}

/** Sends the objects of `objectList` to rank `dst` (torch's send_object_list). */
export async function sendObjectList(
  objectList: unknown[],
  dst: number,
  opts: ObjectOptions = {},
): Promise<void> {
  const pg = groupOf(opts, 'sendObjectList', ['group']);
  if (!pg.isMember) return;
  const device = deviceOf(pg);
  const made = objectList.map((o) => objectTensor(o, device));
  await send(t.cat(made.map(([, s]) => s)), dst, { group: pg });
  await send(made.length === 1 ? made[0][0] : t.cat(made.map(([x]) => x)), dst, { group: pg });
}

/**
 * Receives `objectList.length` objects into `objectList` from rank `src` (any rank when
 * undefined) and resolves with the sender's rank (torch's recv_object_list).
 */
export async function recvObjectList(
  objectList: unknown[],
  src?: number,
  opts: ObjectOptions = {},
): Promise<number> {
  const pg = groupOf(opts, 'recvObjectList', ['group']);
  if (!pg.isMember) return -1;
  const device = deviceOf(pg);
  const sizesTensor = t.empty([objectList.length], { dtype: 'int64', device });
  const from = await recv(sizesTensor, src, { group: pg });
  const sizes = numbers(sizesTensor);
  const objects = t.empty([sizes.reduce((a, b) => a + b, 0)], { dtype: 'uint8', device });
  await recv(objects, from, { group: pg });
  let offset = 0;
  for (const [i, size] of sizes.entries()) {
    objectList[i] = objectOf(objects.narrow(0, offset, size), size);
    offset += size;
  }
  return from;
}

// One tsddp rank of a 3-rank world that runs every collective of torch.distributed
// (test/collectives-torch.test.ts); collectives_rank.py is the PyTorch rank that does
// exactly the same. env:// rendezvous, Gloo. Prints one JSON line: each collective's
// result on this rank (null where PyTorch leaves it undefined, e.g. reduce off the root).
import * as t from '../../src/index.ts';

const d = t.distributed;
d.initProcessGroup({ backend: 'gloo', timeoutMs: 60_000 });
const r = d.getRank();
const n = d.getWorldSize();
const vals = (x: t.Tensor) => Array.from(x.to('float64').contiguous().toTypedArray() as Float64Array);
const out: Record<string, unknown> = {};
const ar = (k: number, base: number) => t.arange(k, { dtype: 'float32' }).add(base);

// Point to point: a ring of isend/irecv in one batch, then a receive from any rank.
const toNext = ar(3, 10 * r);
const fromPrev = t.zeros([3]);
const works = d.batchIsendIrecv([
  new d.P2POp(d.isend, toNext, (r + 1) % n),
  new d.P2POp(d.irecv, fromPrev, (r + n - 1) % n),
]);
for (const w of works) await w;
out.ring = vals(fromPrev);
if (r === 0) await d.send(t.tensor([7, 8]), 2, { tag: 5 });
if (r === 2) {
  const got = t.zeros([2]);
  out.recv_any_from = await d.recv(got, undefined, { tag: 5 });
  out.recv_any = vals(got);
}
if (r === 1) await d.send(t.tensor([r, 0.5]), 0);
if (r === 0) {
  const got = t.zeros([2]);
  out.recv_from = await d.recv(got, 1);
  out.recv = vals(got);
}

// All-to-all: equal splits, uneven splits (rank r sends i + r + 1 rows to rank i), lists
// (Gloo's takes tensors of one size, in PyTorch too).
const a2a = t.zeros([n * 2]);
await d.allToAllSingle(a2a, ar(n * 2, 100 * r));
out.all_to_all_single = vals(a2a);
const inSplits = Array.from({ length: n }, (_, i) => i + r + 1);
const outSplits = Array.from({ length: n }, (_, i) => r + i + 1);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const uneven = t.zeros([sum(outSplits), 2]);
await d.allToAllSingle(uneven, ar(sum(inSplits) * 2, 1000 * r).reshape([-1, 2]), outSplits, inSplits);
out.all_to_all_single_uneven = vals(uneven);
const a2aOut = Array.from({ length: n }, () => t.zeros([2]));
const a2aIn = Array.from({ length: n }, (_, i) => t.full([2], 10 * r + i + 0.5));
await d.allToAll(a2aOut, a2aIn);
out.all_to_all = a2aOut.map(vals);

// Rooted collectives.
const gatherList = r === 1 ? Array.from({ length: n }, () => t.zeros([2])) : null;
await d.gather(t.tensor([r, 0 - r]), gatherList, 1); // 0 - r: +0 on rank 0, as Python's -0
out.gather = gatherList?.map(vals) ?? null;
const scattered = t.zeros([2]);
await d.scatter(
  scattered,
  r === 2 ? Array.from({ length: n }, (_, i) => t.tensor([i, 2 * i + 0.5])) : null,
  2,
);
out.scatter = vals(scattered);
for (const op of ['sum', 'product', 'min', 'max'] as const) {
  const x = t.tensor([r + 1, 3 - r, 0.5 * r]);
  await d.reduce(x, 0, op);
  out[`reduce_${op}`] = r === 0 ? vals(x) : null;
}
for (const op of ['band', 'bor', 'bxor'] as const) {
  const x = t.tensor([r + 1, 6 - r, 12], { dtype: 'int32' });
  await d.reduce(x, 2, op);
  out[`reduce_${op}`] = r === 2 ? vals(x) : null;
}

// Single-tensor all-gather and reduce-scatter; the coalesced forms.
const agt = t.zeros([n, 2]);
await d.allGatherIntoTensor(agt, t.tensor([r, r + 0.25]));
out.all_gather_into_tensor = vals(agt);
for (const op of ['sum', 'max', 'avg'] as const) {
  const rst = t.zeros([2]);
  await d.reduceScatterTensor(rst, ar(n * 2, r * r), op);
  out[`reduce_scatter_tensor_${op}`] = vals(rst);
}
const c1 = t.tensor([r, 1]);
const c2 = t.tensor([[r * 2], [3]]);
await d.allReduceCoalesced([c1, c2]);
out.all_reduce_coalesced = [vals(c1), vals(c2)];

// Groups: one of ranks 0 and 2 (rank 1 is not in it), then subgroups [0, 1] and [2].
const g02 = d.newGroup([2, 0]);
out.g02 = { rank: d.getRank(g02), size: d.getWorldSize(g02) };
if (r !== 1) {
  out.g02_ranks = d.getProcessGroupRanks(g02);
  out.global_rank_of_1_in_g02 = d.getGlobalRank(g02, 1);
  out.group_rank_of_2_in_g02 = d.getGroupRank(g02, 2);
}
const gx = t.tensor([r + 1]);
await d.allReduce(gx, 'sum', { group: g02 });
out.g02_all_reduce = vals(gx);
const gb = t.tensor([r, r]);
await d.broadcast(gb, 2, { group: g02 });
out.g02_broadcast = vals(gb);
const [mine, subgroups] = d.newSubgroupsByEnumeration([[0, 1], [2]]);
out.subgroups = subgroups.length;
const sx = t.tensor([10 ** r]);
await d.allReduce(sx, 'sum', { group: mine });
out.subgroup_all_reduce = vals(sx);
out.subgroup = { rank: d.getRank(mine ?? undefined), ranks: mine ? d.getProcessGroupRanks(mine) : null };
out.pg_count = d.getPgCount();

// Object collectives: plain values and tensors, pickled as PyTorch pickles them.
const obj = (k: number) => ({
  rank: k,
  name: `r${k}`,
  list: [1, 2.5, true, null, 'é'],
  nested: { t: t.tensor([k, 0.5]) },
});
const show = (v: unknown): unknown =>
  v instanceof t.Tensor
    ? { tensor: vals(v), dtype: v.dtype }
    : Array.isArray(v)
      ? v.map(show)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, show(x)]))
        : v;
const gatheredObjects: unknown[] = Array.from({ length: n }, () => null);
await d.allGatherObject(gatheredObjects, obj(r));
out.all_gather_object = show(gatheredObjects);
const bcast: unknown[] = r === 1 ? [obj(1), 'two', [3]] : [null, null, null];
await d.broadcastObjectList(bcast, 1);
out.broadcast_object_list = show(bcast);
const gatheredAt2: unknown[] | null = r === 2 ? Array.from({ length: n }, () => null) : null;
await d.gatherObject({ from: r }, gatheredAt2, 2);
out.gather_object = gatheredAt2;
const scatteredObject: unknown[] = [null];
await d.scatterObjectList(scatteredObject, r === 0 ? [{ to: 0 }, [1, 'x'], t.tensor([[2, 3]])] : null, 0);
out.scatter_object_list = show(scatteredObject);
if (r === 2) await d.sendObjectList([{ hello: 'rank 1' }, 7], 1);
if (r === 1) {
  const got: unknown[] = [null, null];
  out.recv_object_list_from = await d.recvObjectList(got, 2);
  out.recv_object_list = got;
}

await d.monitoredBarrier({ waitAllRanks: true });
await d.barrier();
console.log(JSON.stringify({ rank: r, side: 'tsddp', ...out }));
d.destroyProcessGroup();

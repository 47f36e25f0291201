# One PyTorch rank of a 3-rank world that runs every collective of torch.distributed
# (test/collectives-torch.test.ts); collectives-rank.mts is the tsddp rank that does exactly
# the same. env:// rendezvous, Gloo. Prints one JSON line: each collective's result on this
# rank (None where PyTorch leaves it undefined, e.g. reduce off the root).
import io
import json
import pickle

import torch
import torch.distributed as d
import torch.distributed.distributed_c10d as c10d

try:
    import numpy  # noqa: F401
except ImportError:
    # PyTorch reads a received object's bytes through numpy (tensor.numpy().tobytes()), which
    # setup's .venv does not install; the same bytes without it. What goes over the wire is
    # unchanged.
    def _tensor_to_object(tensor, tensor_size, group):
        buf = bytes(tensor.cpu().tolist())[: int(tensor_size)]
        return pickle.Unpickler(io.BytesIO(buf)).load()

    c10d._tensor_to_object = _tensor_to_object

d.init_process_group("gloo")
r = d.get_rank()
n = d.get_world_size()
out = {}


def vals(x):
    return x.to(torch.float64).flatten().tolist()


def ar(k, base):
    return torch.arange(k, dtype=torch.float32) + base


to_next = ar(3, 10 * r)
from_prev = torch.zeros(3)
works = d.batch_isend_irecv([d.P2POp(d.isend, to_next, (r + 1) % n), d.P2POp(d.irecv, from_prev, (r + n - 1) % n)])
for w in works:
    w.wait()
out["ring"] = vals(from_prev)
if r == 0:
    d.send(torch.tensor([7.0, 8.0]), 2, tag=5)
if r == 2:
    got = torch.zeros(2)
    out["recv_any_from"] = d.recv(got, None, tag=5)
    out["recv_any"] = vals(got)
if r == 1:
    d.send(torch.tensor([float(r), 0.5]), 0)
if r == 0:
    got = torch.zeros(2)
    out["recv_from"] = d.recv(got, 1)
    out["recv"] = vals(got)

a2a = torch.zeros(n * 2)
d.all_to_all_single(a2a, ar(n * 2, 100 * r))
out["all_to_all_single"] = vals(a2a)
in_splits = [i + r + 1 for i in range(n)]
out_splits = [r + i + 1 for i in range(n)]
uneven = torch.zeros(sum(out_splits), 2)
d.all_to_all_single(uneven, ar(sum(in_splits) * 2, 1000 * r).reshape(-1, 2), out_splits, in_splits)
out["all_to_all_single_uneven"] = vals(uneven)
a2a_out = [torch.zeros(2) for _ in range(n)]
a2a_in = [torch.full((2,), 10 * r + i + 0.5) for i in range(n)]
d.all_to_all(a2a_out, a2a_in)
out["all_to_all"] = [vals(x) for x in a2a_out]

gather_list = [torch.zeros(2) for _ in range(n)] if r == 1 else None
d.gather(torch.tensor([float(r), float(-r)]), gather_list, 1)
out["gather"] = [vals(x) for x in gather_list] if gather_list else None
scattered = torch.zeros(2)
d.scatter(scattered, [torch.tensor([float(i), 2 * i + 0.5]) for i in range(n)] if r == 2 else None, 2)
out["scatter"] = vals(scattered)
for name, op in [("sum", d.ReduceOp.SUM), ("product", d.ReduceOp.PRODUCT), ("min", d.ReduceOp.MIN), ("max", d.ReduceOp.MAX)]:
    x = torch.tensor([r + 1.0, 3.0 - r, 0.5 * r])
    d.reduce(x, 0, op)
    out[f"reduce_{name}"] = vals(x) if r == 0 else None
for name, op in [("band", d.ReduceOp.BAND), ("bor", d.ReduceOp.BOR), ("bxor", d.ReduceOp.BXOR)]:
    x = torch.tensor([r + 1, 6 - r, 12], dtype=torch.int32)
    d.reduce(x, 2, op)
    out[f"reduce_{name}"] = vals(x) if r == 2 else None

agt = torch.zeros(n, 2)
d.all_gather_into_tensor(agt.view(-1), torch.tensor([float(r), r + 0.25]))
out["all_gather_into_tensor"] = vals(agt)
for name, op in [("sum", d.ReduceOp.SUM), ("max", d.ReduceOp.MAX), ("avg", d.ReduceOp.AVG)]:
    rst = torch.zeros(2)
    d.reduce_scatter_tensor(rst, ar(n * 2, r * r), op)
    out[f"reduce_scatter_tensor_{name}"] = vals(rst)
c1 = torch.tensor([float(r), 1.0])
c2 = torch.tensor([[r * 2.0], [3.0]])
d.all_reduce_coalesced([c1, c2])
out["all_reduce_coalesced"] = [vals(c1), vals(c2)]

g02 = d.new_group([2, 0])
out["g02"] = {"rank": d.get_rank(g02), "size": d.get_world_size(g02)}
if r != 1:
    out["g02_ranks"] = d.get_process_group_ranks(g02)
    out["global_rank_of_1_in_g02"] = d.get_global_rank(g02, 1)
    out["group_rank_of_2_in_g02"] = d.get_group_rank(g02, 2)
gx = torch.tensor([r + 1.0])
d.all_reduce(gx, d.ReduceOp.SUM, group=g02)
out["g02_all_reduce"] = vals(gx)
gb = torch.tensor([float(r), float(r)])
d.broadcast(gb, 2, group=g02)
out["g02_broadcast"] = vals(gb)
mine, subgroups = d.new_subgroups_by_enumeration([[0, 1], [2]])
out["subgroups"] = len(subgroups)
sx = torch.tensor([10.0**r])
d.all_reduce(sx, d.ReduceOp.SUM, group=mine)
out["subgroup_all_reduce"] = vals(sx)
out["subgroup"] = {"rank": d.get_rank(mine), "ranks": d.get_process_group_ranks(mine)}
out["pg_count"] = d.get_pg_count()

def obj(k):
    return {"rank": k, "name": f"r{k}", "list": [1, 2.5, True, None, "é"], "nested": {"t": torch.tensor([float(k), 0.5])}}


def show(v):
    if isinstance(v, torch.Tensor):
        return {"tensor": vals(v), "dtype": str(v.dtype).replace("torch.", "")}
    if isinstance(v, (list, tuple)):
        return [show(x) for x in v]
    if isinstance(v, dict):
        return {k: show(x) for k, x in v.items()}
    return v


gathered_objects = [None] * n
d.all_gather_object(gathered_objects, obj(r))
out["all_gather_object"] = show(gathered_objects)
bcast = [obj(1), "two", [3]] if r == 1 else [None, None, None]
d.broadcast_object_list(bcast, 1)
out["broadcast_object_list"] = show(bcast)
gathered_at_2 = [None] * n if r == 2 else None
d.gather_object({"from": r}, gathered_at_2, 2)
out["gather_object"] = gathered_at_2
scattered_object = [None]
d.scatter_object_list(scattered_object, [{"to": 0}, [1, "x"], torch.tensor([[2.0, 3.0]])] if r == 0 else None, 0)
out["scatter_object_list"] = show(scattered_object)
if r == 2:
    d.send_object_list([{"hello": "rank 1"}, 7], 1)
if r == 1:
    got = [None, None]
    out["recv_object_list_from"] = d.recv_object_list(got, 2)
    out["recv_object_list"] = got

d.monitored_barrier(wait_all_ranks=True)
d.barrier()
print(json.dumps({"rank": r, "side": "pytorch", **out}), flush=True)
d.destroy_process_group()

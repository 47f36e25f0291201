# One PyTorch rank of a world that mixes PyTorch and tsddp ranks (test/interop-torch.test.ts;
# the tsddp side is interop-rank.mts and does exactly the same). env:// rendezvous, Gloo.
# Prints one JSON line: each collective's result and the parameters after 3 DDP SGD steps.
import json
import sys

sys.path = [p for p in sys.path if not p.endswith("workers")]
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402

dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
out = {}

x = torch.tensor([float(r + 1), 10.0 * (r + 1), -0.5 * r])
dist.all_reduce(x)
out["all_reduce"] = x.tolist()
m = torch.tensor([float(r), 3.0 - r])
dist.all_reduce(m, op=dist.ReduceOp.MAX)
out["all_reduce_max"] = m.tolist()
b = torch.tensor([1.5, 2.5]) if r == 0 else torch.zeros(2)
dist.broadcast(b, 0)
out["broadcast"] = b.tolist()
gathered = [torch.zeros(2) for _ in range(n)]
dist.all_gather(gathered, torch.tensor([float(r), r + 0.25]))
out["all_gather"] = [g.tolist() for g in gathered]
rs = torch.zeros(2)
dist.reduce_scatter(rs, [torch.tensor([float(r + i), float(10 * i)]) for i in range(n)])
out["reduce_scatter"] = rs.tolist()
dist.barrier()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0001)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
data = torch.arange(32, dtype=torch.float32).reshape(8, 4) * 0.01 * (r + 1)
target = torch.arange(8) % 3
for _ in range(3):
    opt.zero_grad()
    nn.functional.cross_entropy(ddp(data), target).backward()
    opt.step()
out["params"] = [p.detach().flatten().tolist() for p in model.parameters()]
print(json.dumps({"rank": r, "side": "pytorch", **out}), flush=True)
dist.destroy_process_group()

# One PyTorch rank of a world that mixes PyTorch and tsddp ranks (test/interop-torch.test.ts;
# the tsddp side is interop-rank.mts and does exactly the same). env:// rendezvous, Gloo.
#
#   interop_rank.py --write-init INIT.safetensors   # writes the seeded ResNet-18's state
#   interop_rank.py INIT.safetensors [ddp|zero1|fsdp]  # one rank (RANK, WORLD_SIZE, MASTER_*)
#
# A rank prints one JSON line: each collective's result, the loss of each of 3 SGD
# steps (DDP; DDP with ZeroRedundancyOptimizer; or fully_shard on each residual block
# and the model, no DDP) of ResNet-18 (torchvision's module tree and state-dict keys, written out below as
# torchvision is not installed; base width 16 instead of 64 to spare the CPU, 10 classes,
# batch 4 of 32x32 images, 1/4 MiB buckets) started from INIT, and the sha256 of every
# parameter (under fsdp, of this rank's shard) and buffer after them.
import ctypes
import hashlib
import json
import sys

sys.path = [p for p in sys.path if not p.endswith("workers")]
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402


class BasicBlock(nn.Module):  # torchvision.models.resnet.BasicBlock
    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):  # torchvision.models.resnet18(num_classes=...), base width 64
    def __init__(self, num_classes=1000, width=64):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(width, 1)
        self.layer2 = self._make_layer(width * 2, 2)
        self.layer3 = self._make_layer(width * 4, 2)
        self.layer4 = self._make_layer(width * 8, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )
        first = BasicBlock(self.inplanes, planes, stride, downsample)
        self.inplanes = planes
        return nn.Sequential(first, BasicBlock(planes, planes))

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def raw(t):
    t = t.detach().contiguous()
    return ctypes.string_at(t.data_ptr(), t.nbytes)


def write_safetensors(path, tensors):
    """safetensors without the package: u64 header length, JSON header, raw little-endian data."""
    dtypes = {torch.float32: "F32", torch.int64: "I64"}
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        blobs.append(raw(t))
        header[name] = {
            "dtype": dtypes[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(blobs[-1])],
        }
        offset += len(blobs[-1])
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    n = int.from_bytes(buf[:8], "little")
    header = json.loads(buf[8 : 8 + n])
    dtypes = {"F32": torch.float32, "I64": torch.int64}
    out = {}
    for name, e in header.items():
        a, b = e["data_offsets"]
        data = bytearray(buf[8 + n + a : 8 + n + b])
        out[name] = torch.frombuffer(data, dtype=dtypes[e["dtype"]]).reshape(e["shape"]).clone()
    return out


if sys.argv[1] == "--write-init":
    torch.manual_seed(0)
    write_safetensors(sys.argv[2], ResNet18(num_classes=10, width=16).state_dict())
    sys.exit(0)

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

strategy = sys.argv[2] if len(sys.argv) > 2 else "ddp"
model = ResNet18(num_classes=10, width=16)
model.load_state_dict(read_safetensors(sys.argv[1]))
sgd = {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4}
if strategy == "fsdp":
    from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
    from torch.distributed.fsdp import fully_shard  # noqa: E402

    mesh = init_device_mesh("cpu", (n,))
    for layer in (model.layer1, model.layer2, model.layer3, model.layer4):
        for block in layer:
            fully_shard(block, mesh=mesh)
    ddp = fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), **sgd)
else:
    # DDP broadcasts rank 0's parameters and buffers here, and the buffers (BatchNorm's running
    # statistics) again before every forward (broadcast_buffers=True).
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.25)
    if strategy == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402

        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, **sgd)
    else:
        opt = torch.optim.SGD(model.parameters(), **sgd)
data = torch.arange(4 * 3 * 32 * 32, dtype=torch.float32).remainder(251).mul(0.004).sub(0.5)
data = data.mul(r + 1).reshape(4, 3, 32, 32)
target = torch.arange(4).mul(3).add(r).remainder(10)
out["losses"] = []
for _ in range(3):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(ddp(data), target)
    loss.backward()
    opt.step()
    out["losses"].append(loss.item())
local = (lambda p: p.to_local()) if strategy == "fsdp" else (lambda p: p)
out["params"] = [[k, hashlib.sha256(raw(local(p))).hexdigest()] for k, p in model.named_parameters()]
out["buffers"] = [[k, hashlib.sha256(raw(b)).hexdigest()] for k, b in model.named_buffers()]
print(json.dumps({"rank": r, "side": "pytorch", **out}), flush=True)
dist.destroy_process_group()

"""PyTorch side of bench/gpu.ts: ResNet-50 train steps on one CUDA GPU, as written.

    model = ResNet-50 (torchvision's layout; train_step.py's copy), channels_last, .cuda()
    opt = SGD(lr=0.01, momentum=0.9, weight_decay=5e-4)
    torch.backends.cudnn.benchmark = True
    each step: opt.zero_grad(); with autocast("cuda", dtype): loss = CE(model(x), y)
               scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
               (fp16 with GradScaler; bf16 without, as the AMP recipe does)
on one synthetic batch already on the GPU. --ddp nccl|gloo wraps the model in DDP
(env:// from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, set by the driver).

Prints one JSON line: {"imgPerS", "stepMs": [...], "maxMemoryGb", "torch", "gpu"}.
  python3 bench/reference/gpu_step.py --amp bf16 --batch 256 --size 224 --warmup 10 --steps 30 [--ddp nccl|gloo]
"""

import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import Bottleneck, ResNet  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--amp", choices=["bf16", "fp16", "fp32"], default="bf16")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--ddp", choices=["nccl", "gloo"])
    a = p.parse_args()
    torch.cuda.set_device(0)
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = ResNet(Bottleneck, [3, 4, 6, 3]).cuda().to(memory_format=torch.channels_last)
    net = model
    if a.ddp:
        # env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from bench/gpu.ts)
        device_id = torch.device("cuda:0") if a.ddp == "nccl" else None
        torch.distributed.init_process_group(a.ddp, device_id=device_id)
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}[a.amp]
    scaler = torch.amp.GradScaler("cuda", enabled=a.amp == "fp16")
    x = torch.randn(a.batch, 3, a.size, a.size, device="cuda").contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (a.batch,), device="cuda")

    def step():
        opt.zero_grad()
        with torch.autocast("cuda", dtype=dtype or torch.float16, enabled=dtype is not None):
            loss = F.cross_entropy(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(a.steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    med = sorted(times)[len(times) // 2]
    print(json.dumps({
        "imgPerS": a.batch / (med / 1000),
        "stepMs": times,
        "maxMemoryGb": torch.cuda.max_memory_allocated() / 2**30,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
    }))
    if a.ddp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()

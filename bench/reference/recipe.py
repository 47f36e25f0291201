"""The classic PyTorch DDP recipe as written, on CPU: the reference side of bench/recipe.ts.

Launched by torchrun (env:// rendezvous, Gloo on CPU), each rank trains a ResNet with

    DistributedSampler(shuffle=True, seed) + set_epoch(epoch)
    DataLoader(batch_size, num_workers, persistent_workers=True, drop_last=True)
        (pin_memory only with CUDA: on CPU PyTorch warns that it does nothing)
    DistributedDataParallel(model, bucket_cap_mb=25)
    SGD(lr, momentum=0.9, weight_decay=1e-4), linear warm-up then cosine, stepped per step
    fp32, channels-first, the per-parameter SGD loop (PyTorch's CPU default)

and evaluates after every epoch on the validation set (each sample on one rank, the
correct counts all-reduced). The settings are tsddp train's defaults for the same flags,
so the two runs differ only in engine and, for `tsddp train --tune`, in what the tuning
chose. The data is the file bench/recipe.ts exports from tsddp's Shapes dataset: one
record per image, a label byte then the HWC uint8 pixels (CIFAR's binary layout at any
size); the augmentation is CIFAR's (zero-pad an eighth of the side, random crop, random
horizontal flip, per sample in the loader workers), then Normalize with Shapes' mean/std.

Rank 0 prints one JSON line: images/s of the training loops (every rank's images over
the summed epoch loop times, the loader included, evaluation excluded), top-1 per epoch.

Usage (bench/recipe.ts runs it):
  python -m torch.distributed.run --standalone --nproc-per-node 2 bench/reference/recipe.py \
      --train runs/recipe/train-32.bin --val runs/recipe/val-32.bin --image-size 32 \
      --model resnet18 --stem cifar --epochs 3 --batch-size 32 --workers 2
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import BasicBlock, Bottleneck, ResNet  # noqa: E402

# Shapes' per-channel statistics (src/data/datasets/shapes.ts: SHAPES_MEAN, SHAPES_STD).
MEAN = torch.tensor([0.4964, 0.4975, 0.5013]).view(3, 1, 1)
STD = torch.tensor([0.2936, 0.2966, 0.2879]).view(3, 1, 1)
LAYERS = {
    "resnet18": (BasicBlock, [2, 2, 2, 2]),
    "resnet34": (BasicBlock, [3, 4, 6, 3]),
    "resnet50": (Bottleneck, [3, 4, 6, 3]),
}


class Records(Dataset):
    """Images stored as label byte + HWC uint8 records; CIFAR's augmentation when training."""

    def __init__(self, path, size, train):
        with open(path, "rb") as f:
            raw = bytearray(f.read())
        record = 1 + size * size * 3
        if len(raw) == 0 or len(raw) % record != 0:
            raise ValueError(f"{path}: {len(raw)} bytes is not a multiple of the {record}-byte record")
        self.rows = torch.frombuffer(raw, dtype=torch.uint8).view(-1, record)
        self.size = size
        self.train = train
        self.pad = max(1, round(size / 8))

    def __len__(self):
        return self.rows.shape[0]

    def __getitem__(self, i):
        row = self.rows[i]
        s = self.size
        x = row[1:].view(s, s, 3).permute(2, 0, 1).float().div(255)
        if self.train:
            p = self.pad
            x = F.pad(x, (p, p, p, p))
            top, left = torch.randint(0, 2 * p + 1, (2,)).tolist()
            x = x[:, top : top + s, left : left + s]
            if torch.rand(()) < 0.5:
                x = x.flip(2)
        return (x - MEAN) / STD, int(row[0])


def evaluate(model, loader):
    model.eval()
    correct = torch.zeros(2)
    with torch.no_grad():
        for x, y in loader:
            correct[0] += (model(x).argmax(1) == y).sum()
            correct[1] += y.numel()
    dist.all_reduce(correct)
    model.train()
    return (correct[0] / correct[1]).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--val", required=True)
    ap.add_argument("--image-size", type=int, required=True)
    ap.add_argument("--model", choices=sorted(LAYERS), default="resnet18")
    ap.add_argument("--stem", choices=["cifar", "imagenet"], default="cifar")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=None, help="absolute lr (default: 0.1 x global batch / 256)")
    ap.add_argument("--zero-init-residual", action="store_true", help="torchvision's zero_init_residual")
    a = ap.parse_args()

    dist.init_process_group("gloo")  # env:// from torchrun
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(a.seed)
    block, layers = LAYERS[a.model]
    model = ResNet(block, layers, num_classes=10, stem=a.stem)
    if a.zero_init_residual:  # torchvision's zero_init_residual: each residual branch starts at zero
        for m in model.modules():
            if isinstance(m, (Bottleneck, BasicBlock)):
                torch.nn.init.zeros_(m.bn3.weight if isinstance(m, Bottleneck) else m.bn2.weight)
    ddp = DDP(model, bucket_cap_mb=25)

    train_set = Records(a.train, a.image_size, train=True)
    val_set = Records(a.val, a.image_size, train=False)
    sampler = DistributedSampler(train_set, shuffle=True, seed=a.seed)
    loader = DataLoader(
        train_set,
        batch_size=a.batch_size,
        sampler=sampler,
        num_workers=a.workers,
        persistent_workers=a.workers > 0,
        pin_memory=torch.cuda.is_available(),
        drop_last=True,
    )
    val_loader = DataLoader(
        val_set,
        batch_size=2 * a.batch_size,
        sampler=DistributedSampler(val_set, shuffle=False, drop_last=False),
        num_workers=a.workers,
    )

    # tsddp train's defaults: lr 0.1 per 256 images, warm-up min(5, epochs / 10) epochs from 0.1x.
    lr = a.lr if a.lr is not None else 0.1 * a.batch_size * world / 256
    steps_per_epoch = len(loader)
    total = a.epochs * steps_per_epoch
    warm = round(min(5, a.epochs / 10) * steps_per_epoch)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(1, total - warm))
    if warm > 0:
        warmup = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, end_factor=1, total_iters=warm)
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [warmup, cosine], [warm])
    else:
        sched = cosine

    loop_s, images, top1, losses = 0.0, 0, [], []
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        t0 = time.perf_counter()
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()
            opt.step()
            sched.step()
            images += x.shape[0] * world
        loop_s += time.perf_counter() - t0
        losses.append(loss.item())
        top1.append(evaluate(ddp, val_loader))
    if rank == 0:
        out = {
            "side": "pytorch",
            "torch": torch.__version__,
            "imgPerS": images / loop_s,
            "loopSec": loop_s,
            "top1": top1,
            "lastLoss": losses[-1],
            "finite": all(math.isfinite(v) for v in losses),
        }
        print(json.dumps(out), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

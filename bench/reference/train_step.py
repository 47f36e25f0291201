"""PyTorch reference for bench/train_step.ts: single-process training throughput.

One training step, as a PyTorch user writes it:

    opt.zero_grad()                      # grads set to None (PyTorch 2.x default)
    with autocast(bf16) or nothing:
        loss = F.cross_entropy(model(x), y)        # gpt_small: loss = model(idx, targets)[1]
    loss.backward()
    opt.step()                           # ResNets: SGD(lr, momentum=0.9, weight_decay=5e-4);
                                         # vit_tiny, gpt_small: AdamW(lr=1e-3); defaults otherwise

on synthetic random data (x ~ N(0, 1), y uniform over the classes), a fresh model per
measurement (torch.manual_seed(0)), in training mode. The model is torchvision's ResNet
(a copy of test/fixtures/nn/resnet_ref.py below, so this file runs on its own, without
torchvision), with tsddp's CIFAR stem option (3x3 stride-1 conv1, no max pool); the
transformers come from transformer_models.py (torchvision's ViT, nanoGPT's GPT):
vit_tiny is tsddp's vitTiny (SIZE x SIZE images, 4 px patches, 10 classes), gpt_small
nanoGPT's baby GPT (6 layers, 6 heads, width 384, vocab 65, no bias, dropout 0) on
sequences of SIZE random tokens with random targets.

A config is a name "MODEL/SIZE/bBATCH/DTYPE/FORMAT":
  MODEL   resnet18-cifar (10 classes, CIFAR stem) | resnet50 (1000 classes, ImageNet stem)
          | vit_tiny | gpt_small (SIZE: the sequence length, BATCH: sequences)
  DTYPE   fp32 | bf16 (torch.autocast("cpu", dtype=torch.bfloat16) around forward + loss)
  FORMAT  cf (channels-first, contiguous) | cl (model and input in channels_last; ResNets only)
e.g. resnet50/224/b4/bf16/cl.

Each step is timed in three phases (CPU ops are synchronous, so the split is exact):
  fwd = zero_grad + forward + loss, bwd = backward, opt = optimizer step;
and with its minor page faults and the process's peak RSS (getrusage).

Usage:
  python bench/reference/train_step.py --threads 2 --configs resnet18-cifar/32/b32/fp32/cf \
      [--warmup 2] [--steps 5]         prints one JSON object per config, then a summary line
  python bench/reference/train_step.py --threads 2 --serve
      the worker for bench/train_step.ts, driven step by step (see serve()).
OMP_NUM_THREADS should match --threads (bench/train_step.ts sets both).
"""

import argparse
import contextlib
import json
import os
import platform
import resource
import statistics
import sys
import time
import traceback

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the TS side probes for torch first; this is for direct use
    print(json.dumps({"error": f"cannot import torch: {e}"}))
    sys.exit(2)

# The transformer models live next to this file (imported when a transformer is asked
# for: the package ships this file for bench/reference/ddp.py's ResNets, not them);
# importing them must not leave __pycache__ in the repository.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


# --- torchvision's ResNet (copied from test/fixtures/nn/resnet_ref.py) ----------------------


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        width = planes
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv3x3(width, width, stride)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv3(out)
        out = self.bn3(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, stem="imagenet", width_multiplier=1.0):
        super().__init__()
        base = int(width_multiplier * 64 + 0.5)
        self.inplanes = base
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(3, base, kernel_size=7, stride=2, padding=3, bias=False)
        else:
            self.conv1 = nn.Conv2d(3, base, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1) if stem == "imagenet" else nn.Identity()
        self.layer1 = self._make_layer(block, base, layers[0])
        self.layer2 = self._make_layer(block, base * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, base * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, base * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(base * 8 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = x.flatten(1)
        return self.fc(x)


MODELS = {
    # name: (block, layers, constructor kwargs)
    "resnet18-cifar": (BasicBlock, [2, 2, 2, 2], {"num_classes": 10, "stem": "cifar"}),
    "resnet50": (Bottleneck, [3, 4, 6, 3], {"num_classes": 1000, "stem": "imagenet"}),
}
# Transformers: trained with AdamW(lr=1e-3), channels-first ('cf') only.
TRANSFORMERS = ("vit_tiny", "gpt_small")


# --- one measurement ------------------------------------------------------------------------


def parse_config(name):
    """'resnet50/224/b4/bf16/cl' -> dict; raises ValueError on anything else."""
    parts = name.split("/")
    known = parts[0] in MODELS or parts[0] in TRANSFORMERS
    if len(parts) != 5 or not known or not parts[2].startswith("b"):
        raise ValueError(f"bad config {name!r}: expected MODEL/SIZE/bBATCH/fp32|bf16/cf|cl")
    model, size, batch, dtype, fmt = parts
    if dtype not in ("fp32", "bf16") or fmt not in ("cf", "cl"):
        raise ValueError(f"bad config {name!r}: dtype fp32|bf16, format cf|cl")
    if model in TRANSFORMERS and fmt != "cf":
        raise ValueError(f"bad config {name!r}: {model} runs channels-first (cf) only")
    return {"model": model, "size": int(size), "batch": int(batch[1:]), "dtype": dtype, "format": fmt}


class Session:
    """A fresh model (seed 0) in training mode, its optimizer and one random batch for a config."""

    def __init__(self, name):
        cfg = parse_config(name)
        self.name = name
        self.bf16 = cfg["dtype"] == "bf16"
        self.loss = None
        torch.manual_seed(0)
        if cfg["model"] in TRANSFORMERS:
            self._transformer(cfg)
            return
        block, layers, kwargs = MODELS[cfg["model"]]
        model = ResNet(block, layers, **kwargs)
        model.train()
        x = torch.randn(cfg["batch"], 3, cfg["size"], cfg["size"])
        self.y = torch.randint(0, kwargs["num_classes"], (cfg["batch"],))
        if cfg["format"] == "cl":
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        self.model, self.x = model, x
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        self.forward = lambda: F.cross_entropy(self.model(self.x), self.y)

    def _transformer(self, cfg):
        import transformer_models

        b, size = cfg["batch"], cfg["size"]
        if cfg["model"] == "vit_tiny":
            model = transformer_models.vit("vit_tiny", size, 10)
            self.x = torch.randn(b, 3, size, size)
            self.y = torch.randint(0, 10, (b,))
            self.forward = lambda: F.cross_entropy(self.model(self.x), self.y)
        else:
            model = transformer_models.gpt_small(size)
            vocab = model.config.vocab_size
            self.x = torch.randint(0, vocab, (b, size))
            self.y = torch.randint(0, vocab, (b, size))
            self.forward = lambda: self.model(self.x, self.y)[1]
        model.train()
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(self):
        """One training step; returns the seconds of its phases."""
        opt = self.opt
        region = torch.autocast("cpu", dtype=torch.bfloat16) if self.bf16 else contextlib.nullcontext()
        faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        opt.zero_grad()
        with region:
            loss = self.forward()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        self.loss = loss.detach()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "fwd": t1 - t0,
            "bwd": t2 - t1,
            "opt": t3 - t2,
            "step": t3 - t0,
            "minorFaults": usage.ru_minflt - faults0,
            "maxRssMb": usage.ru_maxrss / 1024,
        }

    def close(self):
        return float("nan") if self.loss is None else float(self.loss.item())


def measure(name, warmup, steps):
    """A whole measurement in this process (the command-line mode)."""
    s = Session(name)
    for _ in range(warmup):
        s.step()
    times = [s.step() for _ in range(steps)]
    cfg = parse_config(name)
    med = statistics.median(x["step"] for x in times)
    return {"config": name, "steps": times, "imgPerS": cfg["batch"] / med, "loss": s.close()}


def info():
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "interopThreads": torch.get_num_interop_threads(),
    }


def serve():
    """The worker for bench/train_step.ts: one JSON request per stdin line, one JSON answer
    per stdout line. Requests: {"cmd": "setup", "config": NAME} -> {"ok": true};
    {"cmd": "step"} -> step times; {"cmd": "close"} -> {"loss": ...}. Exits on EOF."""
    print(json.dumps({"ready": True, **info()}), flush=True)
    session = None
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            cmd = req["cmd"]
            if cmd == "setup":
                session = None  # free the previous model first
                session = Session(req["config"])
                out = {"ok": True}
            elif cmd == "step":
                out = session.step()
            elif cmd == "close":
                out = {"loss": session.close()}
                session = None
            else:
                raise ValueError(f"unknown cmd {cmd!r}")
        except Exception as e:  # report and keep serving: the caller decides
            out = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        print(json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--configs", default="resnet18-cifar/32/b32/fp32/cf")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--serve", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.serve:
        serve()
        return
    results = []
    for name in filter(None, args.configs.split(",")):
        r = measure(name, args.warmup, args.steps)
        print(json.dumps(r), flush=True)
        results.append(r)
    print(json.dumps({**info(), "results": {r["config"]: r["imgPerS"] for r in results}}))


if __name__ == "__main__":
    main()

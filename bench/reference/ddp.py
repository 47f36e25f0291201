"""PyTorch reference for the DDP benchmark (bench/ddp.ts, `tsddp bench --reference`).

One rank of a PyTorch DDP job, driven by JSON lines on stdin (the protocol of
src/benchmark/protocol.ts); the driver starts one process per rank with RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT and OMP_NUM_THREADS set, and this script joins the
Gloo process group with init_method env://.

One optimizer step, as a PyTorch user writes it:

    opt.zero_grad()                                   # grads to None (2.x default)
    for m in range(accum):                            # all but the last under ddp.no_sync()
        with autocast("cpu", bfloat16) or nothing:
            loss = F.cross_entropy(ddp(x), y)
        (loss / accum if accum > 1 else loss).backward()
    opt.step()                                        # SGD(lr 0.01, momentum 0.9, wd 5e-4)

with DistributedDataParallel(model, bucket_cap_mb=...) (other options default), comm
hooks from torch.distributed.algorithms.ddp_comm_hooks.default_hooks, channels_last via
model.to(memory_format=...), a fixed random batch per rank (seed 1 + rank) and the model
of bench/reference/train_step.py (torchvision's ResNet) built with torch.manual_seed(0);
for the ViT cases of bench/ddp.ts (model vit_tiny or vit_b_16, not offered by `tsddp
bench`), torchvision's VisionTransformer from bench/reference/transformer_models.py
(10 classes with stem "cifar", else 1000), imported only then.

Communication per batch comes from DDP's Logger (ddp._get_ddp_logging_data(), torch
2.13 field names: iteration, backward_comm_time, backward_compute_comm_overlap_time, in
ns) with the runtime-stats sample rate set to 1, as tsddp sets it.

Usage: python bench/reference/ddp.py   (only as a worker of the TS driver)
"""

import contextlib
import json
import os
import platform
import resource
import sys
import time
import traceback

try:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:
    print(json.dumps({"error": f"cannot import torch: {e}"}), flush=True)
    sys.exit(2)

# The model is train_step.py's; importing it must not leave __pycache__ in the repository.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import BasicBlock, Bottleneck, ResNet  # noqa: E402

ARCHS = {
    "resnet18": (BasicBlock, [2, 2, 2, 2]),
    "resnet34": (BasicBlock, [3, 4, 6, 3]),
    "resnet50": (Bottleneck, [3, 4, 6, 3]),
    "resnet101": (Bottleneck, [3, 4, 23, 3]),
    "resnet152": (Bottleneck, [3, 8, 36, 3]),
}


def bf16_compress_hook_gloo(state, bucket):
    """default_hooks.bf16_compress_hook under another name: DDP refuses that name unless
    CUDA/NCCL is available (a check written for NCCL), but the hook itself runs on Gloo,
    which all-reduces bfloat16 tensors; tsddp's 'bf16' hook does the same on CPU."""
    return default_hooks.bf16_compress_hook(state, bucket)


HOOKS = {
    "allreduce": default_hooks.allreduce_hook,
    "fp16": default_hooks.fp16_compress_hook,
    "bf16": bf16_compress_hook_gloo,
}


class Session:
    def __init__(self, c, rank):
        self.c = c
        torch.manual_seed(0)
        num_classes = c.get("numClasses") or (10 if c["stem"] == "cifar" else 1000)
        if c["model"] == "gpt_small":
            import transformer_models

            num_classes = transformer_models.GPT_SMALL["vocab_size"]
            model = transformer_models.gpt_small(c["size"])
        elif c["model"].startswith("vit"):
            import transformer_models  # bench/ddp.ts's ViT cases only: not shipped with the package

            model = transformer_models.vit(c["model"], c["size"], num_classes)
        else:
            block, layers = ARCHS[c["model"]]
            model = ResNet(
                block, layers, num_classes=num_classes, stem=c["stem"], width_multiplier=c["widthMultiplier"]
            )
        model.train()
        # One GPU per rank where there are GPUs (main() made it the current device).
        self.device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None
        if self.device is not None:
            model = model.to(self.device)
        if c["channelsLast"]:
            model = model.to(memory_format=torch.channels_last)
        self.params = len(list(model.parameters()))
        device_ids = [self.device.index] if self.device is not None else None
        bucket_cap_mb = c["bucketCapMb"]
        if c["hook"] == "powerSGD" and self.device is None:
            # powerSGD_hook over Gloo deadlocks with several buckets (docs/guide/ddp.md):
            # every gradient goes in one bucket, the only way it runs here.
            bucket_cap_mb = 1 + sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
        self.ddp = DDP(model, device_ids=device_ids, bucket_cap_mb=bucket_cap_mb)
        self.ddp._set_ddp_runtime_logging_sample_rate(1)
        if c["hook"] == "powerSGD":
            state = powerSGD.PowerSGDState(
                process_group=None, matrix_approximation_rank=c.get("powerSGDRank", 1), start_powerSGD_iter=2
            )
            self.ddp.register_comm_hook(state, powerSGD.powerSGD_hook)
        elif c["hook"] != "none":
            self.ddp.register_comm_hook(None, HOOKS[c["hook"]])
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        torch.manual_seed(1 + rank)
        self.gpt = c["model"] == "gpt_small"
        if self.gpt:
            self.x = torch.randint(0, num_classes, (c["batch"], c["size"]))
            self.y = torch.randint(0, num_classes, (c["batch"], c["size"]))
        else:
            x = torch.randn(c["batch"], 3, c["size"], c["size"])
            self.x = x.contiguous(memory_format=torch.channels_last) if c["channelsLast"] else x
            self.y = torch.randint(0, num_classes, (c["batch"],))
        if self.device is not None:
            self.x, self.y = self.x.to(self.device), self.y.to(self.device)
        self.last_iteration = 0
        self.loss = float("nan")

    def step(self):
        c, ddp, opt = self.c, self.ddp, self.opt
        accum = c["accum"]
        bwd = 0.0
        faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        opt.zero_grad()
        for m in range(accum):
            sync = contextlib.nullcontext() if m == accum - 1 else ddp.no_sync()
            region = (
                torch.autocast(self.x.device.type, dtype=torch.bfloat16)
                if c["amp"] == "bf16"
                else contextlib.nullcontext()
            )
            with sync:
                with region:
                    loss = ddp(self.x, self.y)[1] if self.gpt else F.cross_entropy(ddp(self.x), self.y)
                tb = time.perf_counter()
                (loss / accum if accum > 1 else loss).backward()
                bwd += time.perf_counter() - tb
            if m == accum - 1:
                self.loss = loss.item()
        t1 = time.perf_counter()
        opt.step()
        if self.device is not None:
            torch.cuda.synchronize()  # the step's GPU work is done: its time is real
        t2 = time.perf_counter()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
        return {"fwd": t1 - t0 - bwd, "bwd": bwd, "opt": t2 - t1, "step": t2 - t0, "faults": faults}

    def comm(self):
        d = self.ddp._get_ddp_logging_data()
        it = d.get("iteration", 0)
        if it <= self.last_iteration or "backward_comm_time" not in d:
            return None
        self.last_iteration = it
        return {
            "iteration": it,
            "commMs": d["backward_comm_time"] / 1e6,
            "overlapMs": d.get("backward_compute_comm_overlap_time", 0) / 1e6,
        }

    def steps(self, n):
        steps, comm = [], []
        for _ in range(n):
            steps.append(self.step())
            s = self.comm()
            if s:
                comm.append(s)
        return {"steps": steps, "comm": comm, "loss": self.loss}


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    if threads > 0:
        torch.set_num_threads(threads)
    if torch.cuda.is_available():
        # The DDP recipe on GPUs: one process per GPU, NCCL, cuDNN's autotuner.
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        torch.backends.cudnn.benchmark = True
        dist.init_process_group(
            "nccl", init_method="env://", rank=rank, world_size=world, device_id=torch.device("cuda", local)
        )
    else:
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)

    def answer(obj):
        print(json.dumps(obj), flush=True)

    answer(
        {
            "ready": True,
            "side": "pytorch",
            "torch": torch.__version__,
            "runtime": f"Python {platform.python_version()}",
            "threads": torch.get_num_threads(),
            "rank": rank,
            "world": world,
        }
    )
    session = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            cmd = req["cmd"]
            if cmd == "setup":
                session = None  # free the previous model first
                session = Session(req["case"], rank)
                out = {"ok": True, "params": session.params}
            elif cmd == "steps":
                out = session.steps(req.get("n", 1))
            elif cmd == "close":
                session = None
                out = {"ok": True}
            else:
                raise ValueError(f"unknown cmd {cmd!r}")
        except Exception as e:  # report and keep serving: the driver decides
            out = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        answer(out)
    session = None
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

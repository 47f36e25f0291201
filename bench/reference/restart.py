"""PyTorch worker of bench/restart.ts: DDP training that checkpoints every step and, started
again by torchrun after a crash, resumes from the last checkpoint.

    torchrun --standalone --nproc-per-node 2 --max-restarts 1 bench/reference/restart.py JOB.json

JOB: {"checkpointDir", "steps", "killAtStep", "killRank", "batchSize", "imageSize",
"widthMultiplier"}. The model is ResNet-18 (train_step.py's copy of torchvision's, CIFAR
stem, 10 classes) on synthetic batches, SGD with momentum 0.9 and weight decay 1e-4, as
the tsddp side's `train()` does. After every step rank 0 saves model, optimizer and step
with torch.save (to a temporary file, then renamed: atomic) and every rank waits at a
barrier for it. In the first attempt (TORCHELASTIC_RESTART_COUNT=0) rank killRank SIGKILLs
itself right after step killAtStep. Each rank prints JSON lines with wall-clock times
(time.time(); "start": when the process was started, from /proc):
{"restartBench": "start" | "step" | "kill", "rank", "attempt", "step", "t"}.
"""

import json
import os
import signal
import sys
import time


def process_start():
    """When this process was started (exec'd), wall clock, from /proc (10 ms resolution)."""
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))


T_START = process_start()
RANK = int(os.environ["RANK"])
ATTEMPT = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def event(kind, step=None, t=None):
    t = time.time() if t is None else t
    e = {"restartBench": kind, "rank": RANK, "attempt": ATTEMPT, "step": step, "t": t}
    line = json.dumps(e)
    sys.stdout.write(line + "\n")  # one write: the ranks share the launcher's stdout
    sys.stdout.flush()


event("start", t=T_START)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

# The model is train_step.py's; importing it must not leave __pycache__ in the repository.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import BasicBlock, ResNet  # noqa: E402

with open(sys.argv[1]) as f:
    job = json.load(f)
os.makedirs(job["checkpointDir"], exist_ok=True)
ckpt = os.path.join(job["checkpointDir"], "checkpoint.pt")

dist.init_process_group("gloo")
torch.manual_seed(0)
model = ResNet(
    BasicBlock, [2, 2, 2, 2], num_classes=10, stem="cifar", width_multiplier=job["widthMultiplier"]
)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
step = 0
if os.path.exists(ckpt):
    state = torch.load(ckpt, map_location="cpu")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    step = state["step"]
ddp = DDP(model)

b, s = job["batchSize"], job["imageSize"]
while step < job["steps"]:
    step += 1
    g = torch.Generator().manual_seed(step * 1000 + RANK)
    x = torch.randn(b, 3, s, s, generator=g)
    y = torch.randint(0, 10, (b,), generator=g)
    opt.zero_grad()
    F.cross_entropy(ddp(x), y).backward()
    opt.step()
    if RANK == 0:
        state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}
        torch.save(state, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)
    dist.barrier()
    event("step", step)
    if ATTEMPT == 0 and RANK == job["killRank"] and step == job["killAtStep"]:
        event("kill", step)
        os.kill(os.getpid(), signal.SIGKILL)

dist.destroy_process_group()

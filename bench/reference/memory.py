"""bench/memory.ts's PyTorch worker, the twin of bench/workers/memory.mts (same steps, same
measures; see its header):

    python bench/reference/memory.py STRATEGY LAYERS WIDTH HEADS VOCAB BLOCK BATCH STEPS

ddp: DistributedDataParallel; zero1: DDP + ZeroRedundancyOptimizer(AdamW); fsdp:
fully_shard on each block, then the model; _ac: each block and the loss under
torch.utils.checkpoint.checkpoint(use_reentrant=False), as tsddp's activationCheckpointing. nanoGPT's GPT from
test/fixtures/gpt/gen.py (bench/reference/transformer_models.py).
"""

import os
import re
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformer_models import GPT, GPTConfig  # noqa: E402


def status(key):
    with open("/proc/self/status") as f:
        return int(re.search(rf"{key}:\s+(\d+) kB", f.read()).group(1)) / 1024


def main():
    strategy = sys.argv[1]
    layers, width, heads, vocab, block, batch, steps = map(int, sys.argv[2:9])
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    base = status("VmRSS")

    torch.manual_seed(0)
    gpt = GPT(GPTConfig(n_layer=layers, n_embd=width, n_head=heads, vocab_size=vocab, block_size=block, dropout=0.0, bias=True))
    if strategy.endswith("_ac"):
        for b in gpt.transformer.h:
            plain = b.forward
            b.forward = lambda x, plain=plain: checkpoint(plain, x, use_reentrant=False)
        # As tsddp's GPT with activationCheckpointing: the loss is checkpointed too, so its
        # log-softmax is recomputed in backward from the logits instead of kept (this process
        # computes no other cross entropy).
        plain_ce = F.cross_entropy
        F.cross_entropy = lambda *a, **k: checkpoint(plain_ce, *a, use_reentrant=False, **k)
    if strategy.startswith("fsdp"):
        for b in gpt.transformer.h:
            fully_shard(b)
        fully_shard(gpt)
        net = gpt
    else:
        net = DDP(gpt)
    if strategy == "zero1":
        opt = ZeroRedundancyOptimizer(gpt.parameters(), torch.optim.AdamW, lr=6e-4, weight_decay=0.1)
    else:
        opt = torch.optim.AdamW(gpt.parameters(), lr=6e-4, weight_decay=0.1)

    gen = torch.Generator().manual_seed(100 + rank)
    losses, activations, t0 = [], 0.0, 0.0
    for s in range(steps):
        if s == 1:
            dist.barrier()
            t0 = time.perf_counter()
        x = torch.randint(0, vocab, (batch, block), generator=gen)
        y = torch.randint(0, vocab, (batch, block), generator=gen)
        before = status("VmRSS")
        logits, loss = net(x, y)
        if s == steps - 1:
            activations = status("VmRSS") - before
        loss.backward()
        losses.append(loss.item())
        # As the tsddp worker's scope: the logits go before the optimizer step. (Held in a
        # variable until the next forward returned, the last step's logits would still be
        # resident through it, and the RSS delta would miss their size.)
        del logits, loss
        opt.step()
        opt.zero_grad()
    elapsed = time.perf_counter() - t0
    worst = torch.tensor([status("VmHWM"), base, activations, elapsed], dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    peak, base_mib, acts, slowest = worst.tolist()
    if rank == 0:
        import json

        print(
            json.dumps(
                {
                    "side": "pytorch",
                    "torch": torch.__version__.split("+")[0],
                    "strategy": strategy,
                    "params": sum(p.numel() for p in gpt.parameters()),
                    "peakMiB": peak,
                    "baseMiB": base_mib,
                    "activationsMiB": acts,
                    "tokensPerS": world * batch * block * (steps - 1) / slowest,
                    "losses": losses,
                }
            )
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""PyTorch worker of bench/collectives.ts, one rank of a long-lived gang (env://, Gloo),
driven by JSON lines on stdin (src/host/gang.ts's Gang); the same steps as the tsddp
worker, bench/workers/collectives.mts:

    python bench/reference/collectives.py

It answers a ready line (versions), then one line per request until stdin closes. A
request {"cmd": "cell", collective, bytes, iters, warmup, cellS} times one collective and
size (float32 zeros; E = bytes / 4 elements rounded down to a multiple of the world size,
the size nccl-tests counts: all-gather's output, reduce-scatter's input, all-to-all's
input):
  1. one untimed op, its time (the slowest rank's) the estimate per op;
  2. min(warmup - 1, 0.25 cellS / estimate) more untimed ops, which re-estimate it;
  3. a barrier, then n = min(iters, max(3, cellS / estimate)) ops, each timed on its own
     (time.perf_counter around the blocking call).
Each rank takes the median and the mean of its n times; the answer's numbers are the
largest over the ranks (an all-reduce MAX), so every rank answers the same.
"""

import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.distributed as dist

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
dist.init_process_group("gloo")
world = dist.get_world_size()


def setup(name, e):
    """The op of one collective on tensors of e elements."""
    z = torch.zeros
    if name == "all-reduce":
        x = z(e)
        return lambda: dist.all_reduce(x, dist.ReduceOp.SUM)
    if name == "all-gather":
        out, x = z(e), z(e // world)
        return lambda: dist.all_gather_into_tensor(out, x)
    if name == "reduce-scatter":
        out, x = z(e // world), z(e)
        return lambda: dist.reduce_scatter_tensor(out, x, dist.ReduceOp.SUM)
    if name == "all-to-all":
        out, x = z(e), z(e)
        return lambda: dist.all_to_all_single(out, x)
    if name == "broadcast":
        x = z(e)
        return lambda: dist.broadcast(x, 0)
    raise ValueError(f"unknown collective {name}")


def max_over_ranks(values):
    """Every rank's values, elementwise maximum (float64), at least 1 ns."""
    x = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(x, dist.ReduceOp.MAX)
    return [max(v, 1e-9) for v in x.tolist()]


def cell(req):
    collective, iters, warmup, cellS = req["collective"], req["iters"], req["warmup"], req["cellS"]
    e = req["bytes"] // 4 // world * world
    op = setup(collective, e)
    dist.barrier()
    t0 = time.perf_counter()
    op()
    [est] = max_over_ranks([time.perf_counter() - t0])
    warm = max(0, min(warmup - 1, int(0.25 * cellS / est)))
    if warm > 0:
        t0 = time.perf_counter()
        for _ in range(warm):
            op()
        [est] = max_over_ranks([(time.perf_counter() - t0) / warm])
    n = min(iters, max(3, int(cellS / est)))
    times = []
    dist.barrier()
    for _ in range(n):
        s = time.perf_counter()
        op()
        times.append(time.perf_counter() - s)
    median_s, mean_s = max_over_ranks([statistics.median(times), sum(times) / n])
    return {
        "collective": collective,
        "bytes": e * 4,
        "iters": n,
        "warmup": 1 + warm,
        "medianS": median_s,
        "meanS": mean_s,
    }


def answer(obj):
    print(json.dumps(obj), flush=True)


runtime = f"Python {sys.version.split()[0]}"
answer({"side": "pytorch", "torch": torch.__version__, "runtime": runtime, "world": world})
for line in sys.stdin:
    if not line.strip():
        continue
    try:
        req = json.loads(line)
        if req["cmd"] != "cell":
            raise ValueError(f"unknown cmd '{req['cmd']}'")
        answer(cell(req))
    except Exception as e:
        answer({"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()})
dist.destroy_process_group()

"""PyTorch worker of bench/collectives.ts, one process per rank (env://, Gloo); the same
steps as the tsddp worker, bench/workers/collectives.mts:

    python bench/reference/collectives.py COLLECTIVES BYTES ITERS WARMUP CELL_S

For each collective and size (float32 zeros; E = BYTES / 4 elements rounded down to a
multiple of the world size, the size nccl-tests counts: all-gather's output,
reduce-scatter's input, all-to-all's input):
  1. one untimed op, its time (the slowest rank's) the estimate per op;
  2. min(WARMUP - 1, 0.25 CELL_S / estimate) more untimed ops, which re-estimate it;
  3. a barrier, then n = min(ITERS, max(3, CELL_S / estimate)) ops, each timed on its own
     (time.perf_counter around the blocking call).
Each rank takes the median and the mean of its n times; the cell's numbers are the
largest over the ranks (an all-reduce MAX). Rank 0 prints one JSON line at the end.
"""

import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

names, bytes_list, iters_arg, warmup_arg, cell_arg = sys.argv[1:6]
ITERS, WARMUP, CELL_S = int(iters_arg), int(warmup_arg), float(cell_arg)

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
dist.init_process_group("gloo")
rank = dist.get_rank()
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


def cell(name, nbytes):
    e = nbytes // 4 // world * world
    op = setup(name, e)
    dist.barrier()
    t0 = time.perf_counter()
    op()
    [est] = max_over_ranks([time.perf_counter() - t0])
    warm = max(0, min(WARMUP - 1, int(0.25 * CELL_S / est)))
    if warm > 0:
        t0 = time.perf_counter()
        for _ in range(warm):
            op()
        [est] = max_over_ranks([(time.perf_counter() - t0) / warm])
    n = min(ITERS, max(3, int(CELL_S / est)))
    times = []
    dist.barrier()
    for _ in range(n):
        s = time.perf_counter()
        op()
        times.append(time.perf_counter() - s)
    median_s, mean_s = max_over_ranks([statistics.median(times), sum(times) / n])
    return {
        "collective": name,
        "bytes": e * 4,
        "iters": n,
        "warmup": 1 + warm,
        "medianS": median_s,
        "meanS": mean_s,
    }


cells = [cell(name, int(b)) for name in names.split(",") for b in bytes_list.split(",")]
if rank == 0:
    runtime = f"Python {sys.version.split()[0]}"
    result = {"side": "pytorch", "torch": torch.__version__, "runtime": runtime, "world": world}
    print(json.dumps({**result, "cells": cells}), flush=True)
dist.destroy_process_group()

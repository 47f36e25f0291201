"""PyTorch reference for bench/op_overhead.ts: microseconds per call of tiny ops.

Each case is the same work the TypeScript benchmark does, written the way a PyTorch
user would (results are freed when the variable is rebound):

  add                1-element float32 tensors, c = a + b
  add_requires_grad  the same with a.requires_grad, so autograd records AddBackward0
  conv2d_small       F.conv2d(x 1x3x8x8, w 4x3x3x3, None, stride 1, padding 1), no grad
  fwd_bwd_small      grads cleared (p.grad = None), then
                     F.linear(F.relu(F.linear(x 4x8, w1 16x8, b1)), w2 4x16, b2).sum().backward()

Prints one JSON object on stdout:
  {"torch": ..., "python": ..., "threads": ..., "cases": {name: {"us": ..., "iters": ..., "seconds": ...}}}

Usage (bench/op_overhead.ts runs it; OMP_NUM_THREADS should match --threads):
  python bench/reference/op_overhead.py [--threads 1] [--cases add,conv2d_small]
      [--iters add=400000,conv2d_small=50000] [--target-s 0.4]
A case without --iters is calibrated to take about --target-s seconds.
"""

import argparse
import json
import platform
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the TS side probes for torch first; this is for direct use
    print(json.dumps({"error": f"cannot import torch: {e}"}))
    sys.exit(2)


def case_add(n):
    a = torch.ones(1)
    b = torch.ones(1)
    c = None
    t0 = time.perf_counter()
    for _ in range(n):
        c = a + b
    t1 = time.perf_counter()
    del c
    return t1 - t0


def case_add_requires_grad(n):
    a = torch.ones(1, requires_grad=True)
    b = torch.ones(1)
    c = None
    t0 = time.perf_counter()
    for _ in range(n):
        c = a + b
    t1 = time.perf_counter()
    del c
    return t1 - t0


def case_conv2d_small(n):
    x = torch.randn(1, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    y = None
    t0 = time.perf_counter()
    for _ in range(n):
        y = F.conv2d(x, w, None, 1, 1)
    t1 = time.perf_counter()
    del y
    return t1 - t0


def case_fwd_bwd_small(n):
    x = torch.randn(4, 8)
    w1 = torch.randn(16, 8, requires_grad=True)
    b1 = torch.randn(16, requires_grad=True)
    w2 = torch.randn(4, 16, requires_grad=True)
    b2 = torch.randn(4, requires_grad=True)
    t0 = time.perf_counter()
    for _ in range(n):
        w1.grad = None
        b1.grad = None
        w2.grad = None
        b2.grad = None
        loss = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2).sum()
        loss.backward()
    t1 = time.perf_counter()
    return t1 - t0


CASES = {
    "add": case_add,
    "add_requires_grad": case_add_requires_grad,
    "conv2d_small": case_conv2d_small,
    "fwd_bwd_small": case_fwd_bwd_small,
}


def calibrate(fn, target_s):
    """Iterations that take about target_s: doubles from 16 until a run takes >= 50 ms,
    then times a run of about target_s / 2 and scales (src/benchmark/stats.ts calibrate())."""
    n = 16
    dt = fn(n)
    while dt < 0.05:
        n *= 2
        dt = fn(n)
    n = max(1, round(n * target_s / 2 / dt))
    dt = fn(n)
    return max(1, round(n * target_s / dt))


def parse_iters(s):
    out = {}
    for part in filter(None, (s or "").split(",")):
        name, _, value = part.partition("=")
        out[name.strip()] = int(value)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--iters", default="")
    p.add_argument("--target-s", type=float, default=0.4)
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    iters = parse_iters(args.iters)
    results = {}
    for name in filter(None, args.cases.split(",")):
        if name not in CASES:
            p.error(f"unknown case {name!r}; known: {', '.join(CASES)}")
        fn = CASES[name]
        n = iters.get(name)
        if n is None:
            n = calibrate(fn, args.target_s)  # also warms up
        else:
            fn(max(1, n // 5))  # warm-up: about a fifth of the measurement
        dt = fn(n)
        results[name] = {"us": dt / n * 1e6, "iters": n, "seconds": dt}

    print(
        json.dumps(
            {
                "torch": torch.__version__,
                "python": platform.python_version(),
                "threads": torch.get_num_threads(),
                "cases": results,
            }
        )
    )


if __name__ == "__main__":
    main()

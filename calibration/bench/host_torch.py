#!/usr/bin/env python3
"""host_torch: what a rank's CPU thread spends to issue work through PyTorch.

    python3 calibration/bench/host_torch.py [--out host_torch.json]

The `host` section of a profile (calibration/README.md): `kernel_issue_us`, the CPU time of one
eagerly issued kernel (framework dispatch plus launch), and `graph_issue_us`, of one CUDA graph
replay. Measured here as the wall time per call of N back-to-back calls whose kernels are tiny
(the GPU finishes each before the next is issued, so the CPU is the bound), the median of 7
runs after a warm-up:

* eager ops of a transformer layer at tiny sizes: an add into a preallocated output, a linear
  layer (cuBLAS), layer norm, the SiLU-gated product, and scaled_dot_product_attention;
* a CUDA graph of 64 tiny adds: the CPU time of one replay call, and the GPU time per graph node
  (the device-side gap between captured kernels).

Writes one JSON object (not a raw bench file: `calibrate fit` keeps the base profile's host
section; these numbers are for a person to compare and copy, with their source).
"""
import argparse
import datetime
import json
import platform
import statistics
import time

import torch
import torch.nn.functional as F


def per_call_us(call, n, runs=7):
    call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="host_torch.json")
    args = parser.parse_args()
    dev = "cuda"
    x = torch.randn(8, 64, device=dev, dtype=torch.bfloat16)
    y = torch.randn(8, 64, device=dev, dtype=torch.bfloat16)
    z = torch.empty_like(x)
    w = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    q = torch.randn(1, 2, 16, 64, device=dev, dtype=torch.bfloat16)
    n = 5000
    eager = {
        "add_out": per_call_us(lambda: torch.add(x, y, out=z), n),
        "linear": per_call_us(lambda: F.linear(x, w), n),
        "layer_norm": per_call_us(lambda: F.layer_norm(x, (64,)), n),
        "silu_mul": per_call_us(lambda: F.silu(x) * y, n),
        "sdpa": per_call_us(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True), n),
    }
    nodes = 64
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            torch.add(x, y, out=z)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(nodes):
            torch.add(x, y, out=z)
    replays = 500
    replay_us = per_call_us(graph.replay, replays)
    # CPU time of the replay call alone: issue, no synchronisation inside the loop.
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(50):
        graph.replay()
    issue_us = (time.perf_counter() - t0) / 50 * 1e6
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    stop.record()
    stop.synchronize()
    gpu_per_node_us = start.elapsed_time(stop) * 1e3 / (replays * nodes)
    props = torch.cuda.get_device_properties(0)
    result = {
        "tool": "host_torch", "version": "0.1.0",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "hardware": {"gpu": props.name, "cpu": platform.processor() or platform.machine(),
                     "python": platform.python_version(), "torch": torch.__version__,
                     "cuda": str(torch.version.cuda)},
        "eager_us_per_call": {k: round(v, 3) for k, v in eager.items()},
        "graph": {"nodes": nodes, "replay_us_per_call_synchronized": round(replay_us, 3),
                  "replay_issue_us": round(issue_us, 3),
                  "gpu_us_per_node": round(gpu_per_node_us, 4)},
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

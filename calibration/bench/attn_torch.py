#!/usr/bin/env python3
"""attn_torch: fused attention through PyTorch's scaled_dot_product_attention, one backend.

    python3 calibration/bench/attn_torch.py --backend cudnn|flash [--out FILE]
        [--max-seconds S] [--long] [--quick]

A second way to measure attention where attn_bench cannot be built (no cuDNN headers) and the
way to reach long sequences: `cudnn` is cuDNN's fused flash attention as PyTorch reaches it
(SDPBackend.CUDNN_ATTENTION, cudnn-frontend's SDPA graph: Transformer Engine's cuDNN path);
`flash` is PyTorch's FlashAttention kernel (SDPBackend.FLASH_ATTENTION). Tensors are bf16, laid
out bshd (batch, sequence, head, dim) and viewed as bhsd, as Transformer Engine passes them;
s_q = s_kv, K and V with all heads (the kv_heads field says so).

Sweep: head dim 128 then 64; causal and not; sequences 512 ... 16384 with 32 heads and
batch x sequence = 16384 tokens (attn_bench's grid), then with --long 32768, 65536 and 131072
with batch 1 and 8 heads (what one rank holds at tensor parallelism 4-8 of a 32-64-head
model). Forward: the median of 5 timed calls after 2 warm-ups (CUDA events); backward:
torch.autograd.grad of the output (no gradient accumulation), timed the same way. Writes the
raw JSON "attention" file of calibration/README.md; `wallsim calibrate fit` reads it like
attn_bench's (and replaces the profile's cuDNN tables with it: give it the cudnn file only).
"""
import argparse
import datetime
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def sweep(quick, long):
    shapes = []
    seqs = [1024, 4096] if quick else [512, 1024, 2048, 4096, 8192, 16384]
    for d in [128] if quick else [128, 64]:
        for causal in (True, False):
            for s in seqs:
                shapes.append((16384 // s, 32, s, d, causal))
    if long:
        for causal in (True, False):
            for s in [32768, 65536, 131072]:
                shapes.append((1, 8, s, 128, causal))
    return shapes


def median_time_s(call, warmup=2, reps=5):
    for _ in range(warmup):
        call()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    times.sort()
    return times[len(times) // 2]


def measure(backend, batch, heads, seq, head_dim, causal):
    def tensor():
        x = torch.randn(batch, seq, heads, head_dim, device="cuda", dtype=torch.bfloat16)
        return x.transpose(1, 2).requires_grad_(True)

    q, k, v = tensor(), tensor(), tensor()
    with sdpa_kernel([BACKENDS[backend]]):
        forward = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        t_fwd = median_time_s(forward)
        out = forward()
        if not torch.isfinite(out.float().flatten()[:4096]).all():
            raise RuntimeError("output is not finite")
        grad = torch.randn_like(out)
        backward = lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)
        t_bwd = median_time_s(backward)
    return t_fwd, t_bwd


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=sorted(BACKENDS), required=True)
    parser.add_argument("--out")
    parser.add_argument("--max-seconds", type=float, default=0)
    parser.add_argument("--long", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out = args.out or f"attn_torch_{args.backend}.raw.json"
    if not torch.cuda.is_available():
        print("attn_torch: no CUDA device", file=sys.stderr)
        return 1
    start = time.monotonic()
    points = []
    for batch, heads, seq, d, causal in sweep(args.quick, args.long):
        if args.max_seconds and time.monotonic() - start > args.max_seconds:
            print(f"attn_torch: --max-seconds spent after {len(points)} points", file=sys.stderr)
            break
        name = f"b{batch} h{heads} s{seq} d{d} {'causal' if causal else 'full'}"
        try:
            t_fwd, t_bwd = measure(args.backend, batch, heads, seq, d, causal)
        except Exception as e:  # a shape the backend refuses is skipped, with why
            print(f"attn_torch: {args.backend} {name} skipped: {e}".splitlines()[0],
                  file=sys.stderr)
            torch.cuda.empty_cache()
            continue
        for p, t in (("forward", t_fwd), ("backward", t_bwd)):
            points.append({"batch": batch, "heads": heads, "kv_heads": heads, "seq_q": seq,
                           "seq_kv": seq, "head_dim": d, "causal": causal, "pass": p,
                           "time_s": float(f"{t:.9g}")})
        print(f"attn_torch: {args.backend} {name}: forward {t_fwd * 1e3:.3f} ms, "
              f"backward {t_bwd * 1e3:.3f} ms", flush=True)
        torch.cuda.empty_cache()
    if not points:
        print(f"attn_torch: {args.backend} ran no shape; {out} not written", file=sys.stderr)
        return 1
    props = torch.cuda.get_device_properties(0)
    hardware = {"gpu": props.name, "sms": str(props.multi_processor_count),
                "cuda": str(torch.version.cuda), "torch": torch.__version__,
                "cudnn": str(torch.backends.cudnn.version()),
                "backend": f"torch.nn.attention.SDPBackend.{BACKENDS[args.backend].name}"}
    raw = {"tool": f"attn_torch ({args.backend})", "version": "0.1.0",
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "hardware": hardware, "kind": "attention", "points": points}
    with open(out, "w") as f:
        json.dump(raw, f, indent=1)
        f.write("\n")
    print(f"{out}: {len(points)} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())

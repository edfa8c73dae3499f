#!/usr/bin/env python3
"""gemm_sustain_torch: a large bf16 GEMM's rate in a short burst and under sustained load.

    python3 calibration/bench/gemm_sustain_torch.py [--out gemm_sustain_torch.json]

A GPU at its power limit lowers its clocks within milliseconds, so a GEMM timed in a burst after
idling runs faster than the same GEMM in a training step, where the GPU is loaded for seconds.
For three data patterns (normal, uniform in [-1, 1), zeros: the bit activity of the operands
sets the power drawn) this times an 8192^3 bf16 torch.matmul (cuBLAS) after 2 s of idle as the
mean of 10 calls after 3 warm-ups (a burst), then keeps the GPU busy for 5 s and times the last
50 calls (sustained), reading the SM clock and the board power (NVML) at the end of each.
Writes one JSON object; not a raw bench file.
"""
import argparse
import datetime
import json
import time

import torch


def timed(a, b, out, calls):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        torch.matmul(a, b, out=out)
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e-3 / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="gemm_sustain_torch.json")
    parser.add_argument("--n", type=int, default=8192)
    args = parser.parse_args()
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)

        def sample():
            return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                    "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0}
    except Exception:  # NVML missing: rates alone
        def sample():
            return {}
    n = args.n
    flops = 2.0 * n ** 3
    patterns = {
        "normal": lambda: torch.randn(n, n, device="cuda", dtype=torch.bfloat16),
        "uniform": lambda: torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1,
        "zeros": lambda: torch.zeros(n, n, device="cuda", dtype=torch.bfloat16),
    }
    results = {}
    for name, make in patterns.items():
        a, b = make(), make()
        out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        time.sleep(2.0)
        timed(a, b, out, 3)
        burst_s = timed(a, b, out, 10)
        burst_state = sample()
        end = time.monotonic() + 5.0
        while time.monotonic() < end:
            timed(a, b, out, 20)
        sustained_s = timed(a, b, out, 50)
        sustained_state = sample()
        results[name] = {"burst_tflops": round(flops / burst_s / 1e12, 1), "burst": burst_state,
                         "sustained_tflops": round(flops / sustained_s / 1e12, 1),
                         "sustained": sustained_state}
        print(name, results[name], flush=True)
    props = torch.cuda.get_device_properties(0)
    doc = {"tool": "gemm_sustain_torch", "version": "0.1.0",
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "hardware": {"gpu": props.name, "torch": torch.__version__,
                        "cuda": str(torch.version.cuda)},
           "shape": [n, n, n], "dtype": "bf16", "results": results}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

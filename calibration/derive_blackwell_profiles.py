#!/usr/bin/env python3
"""Writes the Blackwell calibration profiles (b200, gb200, b300, gb300) from their sources.

Every number comes from docs/reference/blackwell.md (the Blackwell facts with their citations)
or, where Blackwell has no published measurement, from calibration/profiles/h100-sxm.json by the
one transfer rule below. Run it from the repository root after changing a fact; the output is
deterministic (same input, same bytes).

    python3 calibration/derive_blackwell_profiles.py

Transfer rule (uncalibrated tables only): a kernel table measured on one GPU is used on another
at the same fraction of the dense BF16 peak, i.e. every TFLOP/s entry is multiplied by
peak_bf16(target) / peak_bf16(source). It applies to the attention tables (no complete Blackwell
table is published; Hopper's cuDNN and FlashAttention-2 tables are scaled by 2250/989.4 or
2500/989.4). The GEMM tables are measured on Blackwell: B200's BF16 table on a B200 node
(SimuMax's calibration, blackwell.md §3.1), every other table XLA's sm_100 table, used as
published; the memory-bound curve keeps Hopper's shape with its ceiling lowered to the measured
Blackwell ceiling.
"""
import csv
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H100 = os.path.join(ROOT, "calibration", "profiles", "h100-sxm.json")
H100_BF16_PEAK = 989.4
DATE = "2026-12-02"

# docs/reference/blackwell.md §1 (per-GPU specifications) and §2 (MAMF best shapes).
GPUS = {
    "b200": {
        "name": "NVIDIA B200 SXM (HGX/DGX, 1000 W)",
        "sms": 148,
        "cc": 10.0,
        "hbm_GiB": 180,
        "hbm_TBps": 8.0,
        "peak": {"bf16": 2250, "fp8": 4500, "fp4": 9000},
        "best": {"bf16": 1745.0, "fp8": 3432.5},
        "bf16_gemm": "simumax_b200",
        "src": {
            "sms": "docs/reference/blackwell.md §1: 148 SMs, 592 tensor cores [U: third-party spec database hmc-tech.com; NVIDIA's B200 datasheet does not list SMs]",
            "compute_capability": "docs/reference/blackwell.md §1: B200 is compute capability 10.0 (sm_100) [V: CUTLASS Blackwell architecture notes]",
            "hbm_GiB": "docs/reference/blackwell.md §1: 180 GB HBM3e usable (NVIDIA HGX components and MIG pages, via stas00/ml-engineering@744d01e) [V]; 192 GB is the physical stack size. Taken as GiB like every memory capacity in the shipped profiles [D]",
            "hbm_bandwidth_TBps": "docs/reference/blackwell.md §1: 8.0 TB/s [V: ml-engineering@744d01e, glennklockwood.com B200]; verda.com lists 7.7",
            "peak_tflops.bf16": "docs/reference/blackwell.md §1: 2250 dense, HGX B200 at 1000 W [V: glennklockwood.com B200, ml-engineering@744d01e]",
            "peak_tflops.fp8": "docs/reference/blackwell.md §1: 4500 dense [V same]",
            "peak_tflops.fp4": "docs/reference/blackwell.md §1: 9000 dense FP4, HGX B200 at 1000 W [V: glennklockwood.com B200]; ml-engineering lists NVFP4 at 10000",
            "gemm.best_tflops.bf16": "docs/reference/blackwell.md §2: MAMF B200 SXM bf16 1745.0 TF/s (77.6%), best shape 1792x16128x3072, torch 2.7.1+cu128 [M stas00/ml-engineering@744d01e]",
            "gemm.best_tflops.fp8": "docs/reference/blackwell.md §2: MAMF B200 SXM fp8 e4m3 3432.5 TF/s (76.3%) [M same table]",
        },
    },
    "gb200": {
        "name": "NVIDIA GB200 (Blackwell GPU of the Grace Blackwell superchip, 1200 W)",
        "sms": 148,
        "cc": 10.0,
        "hbm_GiB": 186,
        "hbm_TBps": 8.0,
        "peak": {"bf16": 2500, "fp8": 5000, "fp4": 10000},
        "best": {"bf16": 1822.0, "fp8": 3615.6},
        "src": {
            "sms": "docs/reference/blackwell.md §1: the GB200's GPU is the B200 die (148 SMs [U, third-party]); it runs at 1200 W instead of 1000 W, which raises clocks, not the SM count [D]",
            "compute_capability": "docs/reference/blackwell.md §1: sm_100, as B200 [V]",
            "hbm_GiB": "docs/reference/blackwell.md §1: 186 GB usable (NVIDIA MIG table, via ml-engineering@744d01e) [V]; 192 GB physical. Taken as GiB [D]",
            "hbm_bandwidth_TBps": "docs/reference/blackwell.md §1: 8.0 TB/s [V: ml-engineering@744d01e, glennklockwood.com B200]",
            "peak_tflops.bf16": "docs/reference/blackwell.md §1: 2500 dense, GB200 variant at 1200 W [V: glennklockwood.com B200]",
            "peak_tflops.fp8": "docs/reference/blackwell.md §1: 5000 dense [V same]",
            "peak_tflops.fp4": "docs/reference/blackwell.md §1: 10000 dense FP4, GB200 variant at 1200 W [V: glennklockwood.com B200]",
            "gemm.best_tflops.bf16": "docs/reference/blackwell.md §2: MAMF GB200 bf16 1822.0 TF/s (72.9%), best shape 4096x9728x2048, torch 2.10.0.dev+cu130 [M stas00/ml-engineering@744d01e]",
            "gemm.best_tflops.fp8": "docs/reference/blackwell.md §2: MAMF GB200 fp8 e4m3 3615.6 TF/s (72.3%) [M same table]",
        },
    },
    "b300": {
        "name": "NVIDIA B300 SXM (HGX, Blackwell Ultra)",
        "sms": 160,
        "cc": 10.3,
        "hbm_GiB": 270,
        "hbm_TBps": 8.0,
        "peak": {"bf16": 2250, "fp8": 4500, "fp4": 13125},
        "best": {"bf16": 1769.0, "fp8": 3353.3},
        "src": {
            "sms": "docs/reference/blackwell.md §1: Blackwell Ultra has 160 SMs (NVIDIA's Hot Chips 2025 disclosure, as reported by tweaktown.com) [V, second-hand]",
            "compute_capability": "docs/reference/blackwell.md §1: B300 is compute capability 10.3 (sm_103) [V: CUTLASS Blackwell architecture notes; datacrunch.io B300 vs B200]",
            "hbm_GiB": "docs/reference/blackwell.md §1: 288 GB HBM3e physical [V], 270 GB usable [M: verda.com]; the usable figure, as for B200 and GB200. Taken as GiB [D]",
            "hbm_bandwidth_TBps": "docs/reference/blackwell.md §1: 8.0 TB/s [V: ml-engineering@744d01e, glennklockwood.com B300]",
            "peak_tflops.bf16": "docs/reference/blackwell.md §1: 2250 dense, HGX B300 [V: glennklockwood.com B300, ml-engineering@744d01e]",
            "peak_tflops.fp8": "docs/reference/blackwell.md §1: 4500 dense [V same]",
            "peak_tflops.fp4": "docs/reference/blackwell.md §1: 13125 dense FP4, HGX B300 [V: glennklockwood.com B300]; other sources give 12600-15000 (ml-engineering, verda.com)",
            "gemm.best_tflops.bf16": "docs/reference/blackwell.md §2: MAMF B300 SXM bf16 1769.0 TF/s (78.6%), best shape 12288x18432x1024, torch 2.9.1+cu130 [M stas00/ml-engineering@744d01e]",
            "gemm.best_tflops.fp8": "docs/reference/blackwell.md §2: MAMF B300 SXM fp8 e4m3 3353.3 TF/s (74.5%) [M same table]",
        },
    },
    "gb300": {
        "name": "NVIDIA GB300 (Blackwell Ultra GPU of the Grace Blackwell Ultra superchip, 1400 W)",
        "sms": 160,
        "cc": 10.3,
        "hbm_GiB": 279,
        "hbm_TBps": 8.0,
        "peak": {"bf16": 2500, "fp8": 5000, "fp4": 15000},
        "best": {"bf16": 1822.0, "fp8": 3615.6},
        "src": {
            "sms": "docs/reference/blackwell.md §1: Blackwell Ultra has 160 SMs (NVIDIA's Hot Chips 2025 disclosure, as reported by tweaktown.com) [V, second-hand]",
            "compute_capability": "docs/reference/blackwell.md §1: sm_103, as B300 [V]",
            "hbm_GiB": "docs/reference/blackwell.md §1: 288 GB HBM3e physical [V], 279 GB usable [M: verda.com]; the usable figure. Taken as GiB [D]",
            "hbm_bandwidth_TBps": "docs/reference/blackwell.md §1: 8.0 TB/s [V: ml-engineering@744d01e; GB300 NVL72 576 TB/s / 72 GPUs, glennklockwood.com B300]",
            "peak_tflops.bf16": "docs/reference/blackwell.md §1: 2500 dense [V: ml-engineering@744d01e; GB300 NVL72 180 PF BF16 / 72, glennklockwood.com B300]",
            "peak_tflops.fp8": "docs/reference/blackwell.md §1: 5000 dense [V: GB300 NVL72 360 PF FP8 / 72]",
            "peak_tflops.fp4": "docs/reference/blackwell.md §1: 15000 dense NVFP4 [V: GB300 NVL72 1080 PF dense FP4 / 72, glennklockwood.com B300; ml-engineering]",
            "gemm.best_tflops.bf16": "[D, uncalibrated] no MAMF is published for GB300; its dense BF16 and FP8 peaks equal GB200's, so GB200's measured best shapes are used (docs/reference/blackwell.md §2: 1822.0 TF/s bf16)",
            "gemm.best_tflops.fp8": "[D, uncalibrated] as gemm.best_tflops.bf16: GB200's 3615.6 TF/s fp8 (docs/reference/blackwell.md §2)",
        },
    },
}

# docs/reference/blackwell.md §3: XLA's sm_100 matmul table (version C), batch folded into rows.
XLA_SM100 = [
    # rows, n, k, bf16, fp8
    (4096, 2048, 2048, 1160.6, 2047.2),
    (8192, 4096, 256, 793.6, 903.8),
    (8192, 4096, 512, 916.8, 1535.0),
    (16384, 4096, 512, 1090.6, 1712.2),
    (8192, 1024, 1024, 909.2, 1409.1),
    (16384, 1024, 1024, 1060.5, 1868.7),
    (8192, 2048, 1024, 1074.8, 1870.2),
    (16384, 2048, 1024, 1163.1, 2400.8),
    (8192, 4096, 1024, 1161.2, 2394.0),
    (16384, 4096, 1024, 1350.5, 2651.2),
    (8192, 2048, 2048, 1276.4, 2484.1),
    (16384, 2048, 2048, 1345.8, 2884.9),
    (8192, 4096, 2048, 1344.4, 2901.0),
    (16384, 4096, 2048, 1539.9, 3122.5),
    (8192, 1024, 4096, 1335.5, 2462.2),
    (16384, 1024, 4096, 1411.9, 2662.0),
    (8192, 2048, 4096, 1418.4, 2788.9),
    (16384, 2048, 4096, 1465.7, 3133.3),
    (8192, 4096, 4096, 1466.6, 3123.5),
    (16384, 4096, 4096, 1670.5, 3279.7),
    (4096, 4096, 4096, 1417.4, 2782.6),
]

XLA_SOURCE = (
    "docs/reference/blackwell.md §3: OpenXLA's sm_100 matmul interpolation table, "
    "version C (tensorflow/tensorflow @a305421c45a1 third_party/xla/xla/backends/gpu/cost_model/"
    "matmul_interpolator_data.h), {dtype} [M]. The table does not name its GPU; it is used as "
    "published on GB200, B300 and GB300 and for B200's FP8 (the MAMF best shapes of the three "
    "measured parts lie within 5% of one another in bf16 and 8% in fp8, §2; B200's BF16 table is "
    "a B200 node's measurement, §3.1). Batch folded into m (rows = b*m), "
    "every (rows, n, k) appears once (b = 2 and 4 rows only)"
)

# docs/reference/blackwell.md §3.1: GEMMs measured on SimuMax's 8x B200 node, efficiencies of 2250.
SIMUMAX_B200_GEMM = os.path.join(ROOT, "docs", "reference", "simumax_b200_gemm.csv")
SIMUMAX_B200_SOURCE = (
    "docs/reference/blackwell.md §3.1: GEMMs measured on one 8x B200 node (MooreThreads/SimuMax "
    "@e691807a7ef8 configs/system/b200_bf16_ceperm.json, accelerator.op.matmul; the node of the "
    "simumax_b200.csv runs), bf16xbf16->bf16, efficiency x 2250 TFLOP/s [M]. (M, N, K) as wallsim "
    "times each pass: forward (TN) and data gradient (NN) as written, weight gradient (NT "
    "accumulated into the fp32 main_grad, Megatron's default) as (in, out, tokens) = (n, m, k); "
    "the NT entries without fp32 accumulation are left out; one point per shape, the median of "
    "the passes measured at it (docs/reference/simumax_b200_gemm.csv). 25-40% below XLA's sm_100 "
    "table at comparable shapes; the other Blackwell profiles keep XLA's table"
)


def measured_points(path, shape_of, peak_bf16):
    """Efficiencies of `path` (a CSV with m, n, k, efficiency) as (m, n, k) -> TFLOP/s points:
    `shape_of(row)` names a row's shape in wallsim's coordinates, or None to leave it out; one
    point per shape, the median of its rows."""
    by_shape = {}
    with open(path, encoding="utf-8") as f:
        for row in csv.DictReader(f):
            shape = shape_of(row)
            if shape is not None:
                by_shape.setdefault(shape, []).append(float(row["efficiency"]))
    return [
        {"m": m, "n": n, "k": k, "tflops": round(statistics.median(e) * peak_bf16, 1)}
        for (m, n, k), e in sorted(by_shape.items())
    ]


def simumax_b200_shape(row):
    """A simumax_b200_gemm.csv row's (M, N, K) as wallsim times its pass (None: left out)."""
    m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
    if row["b"] != "1":
        raise ValueError("simumax_b200_gemm.csv: batched entry " + str(row))
    if row["layout"] == "NT":
        return (n, m, k) if row["out_dtype"] == "fp32" else None
    return (m, n, k)


def simumax_b200_bf16(peak_bf16):
    """SimuMax's B200 GEMM efficiencies as (M, N, K) -> TFLOP/s points, one per shape."""
    return measured_points(SIMUMAX_B200_GEMM, simumax_b200_shape, peak_bf16)


# docs/reference/blackwell.md §3.2: grouped GEMMs measured on the same node.
SIMUMAX_B200_GROUPED = os.path.join(ROOT, "docs", "reference", "simumax_b200_grouped_gemm.csv")
SIMUMAX_B200_GROUPED_SOURCE = (
    "docs/reference/blackwell.md §3.2: grouped GEMMs (one kernel over ng equal expert problems) "
    "measured on the same 8x B200 node (MooreThreads/SimuMax @e691807a7ef8 "
    "configs/system/b200_bf16_ceperm.json, accelerator.op.group_matmul), bf16, efficiency x 2250 "
    "TFLOP/s [M]; ng = 20-256 problems of 128-9832 rows, 24,640 or 32,768 rows in all. "
    "Coordinates are one problem's (m, n, k) as wallsim times each pass: forward (M, N, K), data "
    "gradient (M, K, N), weight gradient (K, N, M) with the fp32 main_grad accumulation "
    "(Megatron's default; the bf16 entries left out); forward and data gradient entries of both "
    "main_grad settings are the same kernel and are pooled; one point per shape, the median "
    "(docs/reference/simumax_b200_grouped_gemm.csv)"
)


def simumax_b200_grouped_shape(row):
    """A simumax_b200_grouped_gemm.csv row's problem (m, n, k) as wallsim times its pass."""
    m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
    if row["dtype"] != "bf16":
        raise ValueError("simumax_b200_grouped_gemm.csv: not bf16: " + str(row))
    stage = row["stage"]
    if stage == "fwd":
        return (m, n, k)
    if stage == "bwd_grad_act":
        return (m, k, n)
    if stage == "bwd_grad_w":
        return (k, n, m) if row["main_grad_dtype"] == "fp32" else None
    raise ValueError("simumax_b200_grouped_gemm.csv: unknown stage " + stage)


def simumax_b200_grouped_bf16(peak_bf16):
    """SimuMax's B200 grouped-GEMM efficiencies as per-problem (m, n, k) -> TFLOP/s points."""
    return measured_points(SIMUMAX_B200_GROUPED, simumax_b200_grouped_shape, peak_bf16)


# Memory-bound: docs/reference/blackwell.md §4. B300 clone ceiling ~6.3 TB/s of 8.0; B200 RMSNorm
# 6.1-6.8 TB/s at 0.5-1 GB. Hopper's curve (calculon, ceiling 0.90) keeps its shape.
BLACKWELL_HBM_CEILING = 0.79
HOPPER_HBM_CEILING = 0.90


def attention_scaled(h100_attention, peak_bf16):
    """Hopper's cuDNN and FlashAttention-2 tables at the same fraction of the BF16 peak."""
    factor = peak_bf16 / H100_BF16_PEAK
    backends = {}
    for name in ("cudnn", "flash2"):
        source = h100_attention["backends"][name]
        tables = []
        for table in source["tables"]:
            scaled = dict(table)
            scaled["tflops"] = [round(v * factor, 1) for v in table["tflops"]]
            tables.append(scaled)
        backends[name] = {"kernel": source["kernel"], "tables": tables}
    return {"backends": backends}


def hbm_curve(h100_curve):
    scale = BLACKWELL_HBM_CEILING / HOPPER_HBM_CEILING
    return {
        "bytes": h100_curve["bytes"],
        "fraction": [round(f * scale, 3) for f in h100_curve["fraction"]],
    }


def fp4_factor(gpu):
    return gpu["peak"]["fp4"] / gpu["peak"]["fp8"]


def gemm_section(gpu):
    measured = {}
    for index, dtype in ((3, "bf16"), (4, "fp8")):
        points = [
            {"m": row[0], "n": row[1], "k": row[2], "tflops": row[index]} for row in XLA_SM100
        ]
        measured[dtype] = {"source": XLA_SOURCE.format(dtype=dtype_label(dtype)), "points": points}
    if gpu.get("bf16_gemm") == "simumax_b200":
        points = simumax_b200_bf16(gpu["peak"]["bf16"])
        measured["bf16"] = {"source": SIMUMAX_B200_SOURCE, "points": points}
    factor = fp4_factor(gpu)
    measured["fp4"] = {
        "source": (
            "[D, uncalibrated: transfer rule] no FP4 GEMM measurement by shape is published: the "
            f"fp8 table at the same fraction of the dtype's dense peak, x fp4/fp8 peak = "
            f"{gpu['peak']['fp4']}/{gpu['peak']['fp8']} = {factor:.4f} "
            "(docs/reference/blackwell.md §7; calibration/derive_blackwell_profiles.py)"
        ),
        "points": [
            {"m": row[0], "n": row[1], "k": row[2], "tflops": round(row[4] * factor, 1)}
            for row in XLA_SM100
        ],
    }
    best = dict(gpu["best"])
    best["fp4"] = round(gpu["best"]["fp8"] * factor, 1)
    section = {
        "best_tflops": best,
        "tile_m": 128,
        "tile_n": 256,
        "measured": measured,
    }
    if gpu.get("bf16_gemm") == "simumax_b200":
        section["grouped_measured"] = {
            "bf16": {
                "source": SIMUMAX_B200_GROUPED_SOURCE,
                "points": simumax_b200_grouped_bf16(gpu["peak"]["bf16"]),
            }
        }
    return section


def dtype_label(dtype):
    return "bf16xbf16->bf16" if dtype == "bf16" else "f8e4m3fn x f8e4m3fn -> bf16"


def gpu_sources(key, gpu, h100_sources):
    factor = gpu["peak"]["bf16"] / H100_BF16_PEAK
    sources = dict(gpu["src"])
    sources["gemm.best_tflops.fp4"] = (
        "[D, uncalibrated: transfer rule] no FP4 MAMF is published: gemm.best_tflops.fp8 at the "
        f"same fraction of the dense peak, {gpu['best']['fp8']} x {gpu['peak']['fp4']}/"
        f"{gpu['peak']['fp8']} (docs/reference/blackwell.md §7)"
    )
    sources["gemm.tile_m"] = (
        "[U] 128x256 per SM, as Hopper: Blackwell's 2-SM UMMA tiles (256 x N over an SM pair) give "
        "the same output tile per SM; no wave-quantization measurement on Blackwell was found"
    )
    sources["gemm.tile_n"] = sources["gemm.tile_m"]
    sources["attention"] = (
        "[D, uncalibrated: transfer rule] no complete Blackwell attention table is published, so "
        "each table is h100-sxm's table of the same backend, pass, mask, head dim and sequence "
        f"length times peak_bf16 / 989.4 = {gpu['peak']['bf16']} / 989.4 = {factor:.4f} (same "
        "fraction of the dense BF16 peak; calibration/derive_blackwell_profiles.py). FlashAttention-3 "
        "is Hopper-only (sm_90 wgmma) and has no tables here. Cross-checks against the published "
        "Blackwell points (docs/reference/blackwell.md §5): the rule is 4-11% below them (cuDNN "
        "forward hdim 64 at 8k: 1041 against 1147 non-causal on a 2500 TF/s part; hdim-128 backward "
        "at 8k: 1309 against FA4's 1360). H100 tables: "
        + h100_sources["attention"]
    )
    sources["attention.backends.cudnn"] = (
        "Transformer Engine prefers cuDNN fused attention on compute capability >= 9.0 "
        "(docs/reference/blackwell.md §5, TE utils.py 'FusedAttention preference on Hopper+')"
    )
    sources["attention.backends.flash2"] = (
        "[D, uncalibrated] FlashAttention-2 runs on sm_100 through its sm_80 code path; no Blackwell "
        "measurement, transfer rule as for cuDNN"
    )
    sources["hbm_efficiency"] = (
        "[M ceiling, D shape] Hopper's curve (calculon mem1 MB_efficiency, h100-sxm.json) with its "
        f"ceiling {HOPPER_HBM_CEILING} lowered to the measured Blackwell ceiling "
        f"{BLACKWELL_HBM_CEILING}: every fraction x {BLACKWELL_HBM_CEILING}/{HOPPER_HBM_CEILING}. "
        "docs/reference/blackwell.md §4: B300 torch.clone ceiling ~6.3 TB/s = 79% of 8.0 "
        "(Dao-AILab/quack AGENTS.md); B200 RMSNorm 6.1-6.8 TB/s (76-85%) at 0.5-1 GB and 5.6 TB/s "
        "(70%) at 268 MB (pytorch/pytorch PR #159682)"
    )
    sources["kernel_launch_overhead_us"] = (
        "[U, calibrate] as h100-sxm: " + h100_sources["kernel_launch_overhead_us"]
    )
    sources["comm_kernel_sms"] = "[D] as h100-sxm: " + h100_sources["comm_kernel_sms"]
    return sources


def comm_section(h100_comm, key):
    sources = {
        "nvlink_efficiency": "NCCL v2.30.7-1 src/graph/topo.h SM100_NVLINK_BW 40.1 GB/s per link against the 50 GB/s NVLink 5 line rate (18 links: 721.8 of 900 GB/s) [C] (docs/reference/hardware.md §1.2). Check: 8x B200 ring all-reduce measured 682.2 GB/s busbw (hardware.md §3.2), 5.8% below the 721.8 this gives",
        "pcie_efficiency": "NCCL src/graph/topo.cc models PCIe Gen5 and Gen6 at 75% of line rate (Gen5 x16 48 of 64 GB/s; Gen6 x16 96 of 128) [C] (hardware.md §4.4)",
        "network_efficiency": "[U for ConnectX-8] as h100-sxm: AddyLaddy, NVIDIA/nccl-tests#290: 46-48 GB/s per 400 Gb/s NDR NIC -> 47 of 50; no Blackwell-era InfiniBand per-NIC figure was found (the 37 GB/s per 50 GB/s EFA NIC of AWS P6-B200, hardware.md §3.3, is a different transport)",
        "nvls_efficiency": "fitted to the measured 8x B200 NVLS all-reduce busbw of 838.0 GB/s (hardware.md §3.2, NCCL 2.27.7): busbw = 721.8 * e * 2(n-1)/(n+1) at n = 8 gives e = 838.0 / 1122.8 = 0.746; NCCL's own Blackwell nvlsEfficiency is 0.74 (tuning.cc, hardware.md §4.4)",
        "protocol_efficiency": "NCCL tuning.cc, as h100-sxm (architecture independent): " + h100_comm["sources"]["protocol_efficiency"],
        "max_bus_GBps": "NCCL tuning.cc Blackwell row (hardware.md §4.4): llMaxBws 1 node 282; multi-node rows are indexed by CPU vendor, and both Intel (DGX B200/B300) and Arm (Grace) take row 0: 39.0 / 20.4. Tree caps = 8 channels x perChMaxTreeLL128Bws {55.6, 31.67, 20.0} and perChMaxTreeBws {70.0, 42.8, 24.0} (8-channel inter graph, as for Hopper)",
        "latency_us": "NCCL v2.30.7-1 tuning.cc baseLatencies and hwLatencies (hardware.md §4.2), architecture independent; p2p uses the ring's one-step constants [D]. No separate MNNVL latency term is in NCCL's tuning model: a multi-node NVLink domain is one NVLink hop, as in one node",
        "net_overhead_us": "NCCL_NET_OVERHEAD default 1.0 us on Intel x86 and on other (Arm) CPUs, x3 for Simple (hardware.md §4.2)",
        "ring_plateau_factor": "NCCL tuning.cc: multi-node ring Simple all-reduce latency x1.4 (sm80 and later)",
        "ring_channels": "[U] as h100-sxm (24); it enters only the chunk-size test of the multi-node ring plateau, and no Blackwell NCCL log with the ring channel count was found",
    }
    rack = key.startswith("gb")
    if rack:
        sources["nvls_max_bus_GBps"] = (
            "fitted to the measured all-reduce over all 72 GPUs of one GB200 NVL72 rack (docs/reference/blackwell.md §6: CoreWeave nccl-tests PR #43, busbw 834.57 / 846.82 GB/s at 8 GiB and 839.16 / 835.32 at 4 GiB, out of place / in place; mean 839.0): the whole rack reaches no more busbw than 8 GPUs do (838.0 on 8 B200), so NVLS busbw is held at 839.0 whatever the group; the in-switch model without it gives 1045.8 at 72 ranks"
            + ("" if key == "gb200" else ". [U] GB300 takes GB200's: the same NVLink 5 switch trays; no GB300 whole-rack measurement was found")
        )
    section = {
        "sources": sources,
        "nvlink_efficiency": 0.802,
        "pcie_efficiency": 0.75,
        "network_efficiency": 0.94,
        "nvls_efficiency": 0.746,
        "protocol_efficiency": h100_comm["protocol_efficiency"],
        "max_bus_GBps": {
            "ring_ll": [282.0, 39.0, 20.4],
            "tree_ll": [282.0, 39.0, 20.4],
            "tree_ll128": [444.8, 253.4, 160.0],
            "tree_simple": [560.0, 342.4, 192.0],
        },
        "latency_us": h100_comm["latency_us"],
        "net_overhead_us": 1.0,
        "ring_plateau_factor": 1.4,
        "ring_channels": 24,
    }
    if rack:
        section["nvls_max_bus_GBps"] = 839.0
    return section


def host_section(h100_host, key):
    host = dict(h100_host)
    sources = dict(h100_host["sources"])
    grace = key.startswith("gb")
    note = (
        "[U] the Grace (Arm) host of a GB200/GB300 tray is taken to issue kernels at the x86 "
        "figure; no Grace launch-cost measurement was found. "
        if grace
        else ""
    )
    sources["kernel_issue_us"] = note + sources["kernel_issue_us"]
    sources["graph_issue_us"] = note + sources["graph_issue_us"]
    host["sources"] = sources
    return host


def profile(key, gpu, h100):
    h100_gpu = h100["gpu"]
    return {
        "name": key,
        "provenance": {
            "source": "compiled from published vendor specifications and Blackwell measurements; tables with no Blackwell measurement transferred from h100-sxm by the rule in gpu.sources.attention (uncalibrated); generated by calibration/derive_blackwell_profiles.py",
            "date": DATE,
            "hardware": gpu["name"] + " (not measured by wallsim)",
            "tool": "none: literature values, awaiting wallsim calibrate",
        },
        "gpu": {
            "name": gpu["name"],
            "sms": gpu["sms"],
            "compute_capability": gpu["cc"],
            "hbm_GiB": gpu["hbm_GiB"],
            "hbm_bandwidth_TBps": gpu["hbm_TBps"],
            "peak_tflops": gpu["peak"],
            "gemm": gemm_section(gpu),
            "attention": attention_scaled(h100_gpu["attention"], gpu["peak"]["bf16"]),
            "hbm_efficiency": hbm_curve(h100_gpu["hbm_efficiency"]),
            "kernel_launch_overhead_us": h100_gpu["kernel_launch_overhead_us"],
            "comm_kernel_sms": h100_gpu["comm_kernel_sms"],
            "sources": gpu_sources(key, gpu, h100_gpu["sources"]),
        },
        "host": host_section(h100["host"], key),
        "comm": comm_section(h100["comm"], key),
    }


def is_scalar(value):
    return not isinstance(value, (dict, list))


def to_json(value, indent=0):
    """JSON with short scalar lists and scalar objects on one line, as the shipped profiles."""
    pad = "  " * (indent + 1)
    if isinstance(value, list) and all(is_scalar(v) for v in value):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict) and all(is_scalar(v) for v in value.values()):
        inline = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        if len(inline) <= 80:
            return inline
    if isinstance(value, list):
        items = [pad + to_json(v, indent + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    if isinstance(value, dict):
        items = [
            pad + json.dumps(k, ensure_ascii=False) + ": " + to_json(v, indent + 1)
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    return json.dumps(value, ensure_ascii=False)


def main():
    with open(H100, encoding="utf-8") as f:
        h100 = json.load(f)
    out_dir = os.path.join(ROOT, "calibration", "profiles")
    for key, gpu in GPUS.items():
        path = os.path.join(out_dir, key + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(to_json(profile(key, gpu, h100)) + "\n")
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()

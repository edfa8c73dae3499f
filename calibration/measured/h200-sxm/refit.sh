#!/usr/bin/env bash
# Rebuilds calibration/profiles/h200-sxm.json from the raw files beside this script: the
# literature profile (git show 774dce4:calibration/profiles/h200-sxm.json) is the base, the fit
# replaces what the files measure, and the provenance is given the machine's description.
#   calibration/measured/h200-sxm/refit.sh [WALLSIM]   (default build/tools/wallsim)
set -euo pipefail
cd "$(dirname "$0")/../../.."
wallsim=${1:-build/tools/wallsim}
dir=calibration/measured/h200-sxm
base=$(mktemp --suffix=.json)
fitted=$(mktemp --suffix=.json)
trap 'rm -f "$base" "$fitted"' EXIT
git show 774dce4:calibration/profiles/h200-sxm.json > "$base"
"$wallsim" calibrate fit "$dir/gemm_bench.raw.json" "$dir/mem_bench.raw.json" \
  "$dir/attn_torch_cudnn.raw.json" --base "$base" --cluster dgx-h200 -o "$fitted"
python3 - "$fitted" "$base" calibration/profiles/h200-sxm.json <<'PY'
import json, sys
fitted, base, out = sys.argv[1:]
d = json.load(open(fitted))
p = d["provenance"]
p["source"] = p["source"].replace(
    "every other value as in " + base,
    "every other value (the comm section, peak rates, the flash2/flash3 attention tables and "
    "the host section) as in the literature profile it was fitted over, each with its citation "
    "in sources; raw files and how they were taken: calibration/measured/h200-sxm/README.md")
p["hardware"] = ("one NVIDIA H200 SXM 141GB (132 SMs, 700 W power limit), driver 580.159.04, "
                 "CUDA 13.0, cuBLASLt 13.1.0, cuDNN 9.19.0 through PyTorch 2.11.0 "
                 "scaled_dot_product_attention")
order = ["name", "provenance", "gpu", "host", "comm"]
d = {k: d[k] for k in order if k in d} | {k: v for k, v in d.items() if k not in order}
with open(out, "w") as f:
    json.dump(d, f, indent=2)
    f.write("\n")
PY
echo "wrote calibration/profiles/h200-sxm.json"

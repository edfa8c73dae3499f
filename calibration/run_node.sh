#!/usr/bin/env bash
# Calibrates one GPU node in under 10 minutes (calibration/README.md, "A 10-minute node
# calibration"): builds the standalone bench project, runs each bench with a bounded sweep,
# writes the raw JSON files into OUT_DIR and, when a wallsim binary is found, fits a profile
# OUT_DIR/profile.json from them.
#
#   calibration/run_node.sh OUT_DIR [--cluster NAME|FILE] [--quick] [--wallsim PATH]
#
# --cluster  the cluster whose GPU's shipped profile is the fit's base and whose line rates the
#            comm fit divides by (default: from the GPU's name: dgx-h100, dgx-h200, dgx-a100)
# --quick    each bench's --quick sweep (a smoke run, about 2 minutes)
# --wallsim  the wallsim binary (default: $WALLSIM, else build/tools/wallsim in this repository)
#
# Time budget (--max-seconds per bench; a bench stops sweeping when its budget is spent and
# writes what it has; `timeout` kills a hung one 2 minutes later): build about 1 minute,
# mem_bench 60 s, gemm_bench 120 s, attn_bench 150 s, nccl_bench 120 s (only with 2 or more
# GPUs). On one H200 SXM (16 host cores) the whole script ran in 68 s: build 12 s, mem_bench
# 3 s, gemm_bench 8 s, attn_bench 45 s; nccl_bench has not run on hardware.
set -euo pipefail

usage() {
  sed -n '7,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

repo=$(cd "$(dirname "$0")/.." && pwd)
out=""
cluster=""
quick=()
wallsim=${WALLSIM:-$repo/build/tools/wallsim}
while [[ $# -gt 0 ]]; do
  case $1 in
    --cluster) cluster=${2:?--cluster needs a value}; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --wallsim) wallsim=${2:?--wallsim needs a value}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "run_node.sh: unknown option $1" >&2; usage ;;
    *) [[ -z $out ]] || usage; out=$1; shift ;;
  esac
done
[[ -n $out ]] || usage
mkdir -p "$out"
out=$(cd "$out" && pwd)
log() { printf '[%4ds] %s\n' "$SECONDS" "$*" >&2; }

# 1. Build (Ninja when present; the bench project needs only the CUDA toolkit, NCCL, cuDNN).
build=$out/build-bench
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
log "building the benches in $build"
cmake -S "$repo/calibration/bench" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  > "$out/build.log" 2>&1 || { log "configure failed: see $out/build.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" >> "$out/build.log" 2>&1 ||
  { log "build failed: see $out/build.log"; exit 1; }

gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -n 1 || true)
log "GPUs: ${gpus:-0} (${gpu_name:-unknown})"

# 2. Run each bench: name, budget in seconds.
raws=()
run_bench() {
  local name=$1 budget=$2
  if [[ ! -x $build/$name ]]; then
    log "$name was not built (see $out/build.log), skipped"
    return
  fi
  log "$name (at most ${budget}s)"
  if timeout $((budget + 120)) "$build/$name" --out "$out/$name.raw.json" --max-seconds "$budget" \
      "${quick[@]}" > "$out/$name.log" 2>&1 && [[ -s $out/$name.raw.json ]]; then
    raws+=("$out/$name.raw.json")
  else
    log "$name failed or wrote nothing: see $out/$name.log"
  fi
}
run_bench mem_bench 60
run_bench gemm_bench 120
run_bench attn_bench 150
if [[ ${gpus:-0} -ge 2 ]]; then
  run_bench nccl_bench 120
else
  log "nccl_bench skipped: it needs 2 or more GPUs"
fi
log "raw files: ${raws[*]:-none}"
[[ ${#raws[@]} -gt 0 ]] || exit 1

# 3. Fit a profile from them (the base profile is the cluster GPU's shipped one).
if [[ -z $cluster ]]; then
  case $gpu_name in
    *H200*) cluster=dgx-h200 ;;
    *H100*|*H800*) cluster=dgx-h100 ;;
    *A100*) cluster=dgx-a100 ;;
  esac
fi
if [[ ! -x $wallsim ]]; then
  log "no wallsim binary at $wallsim: fit later with"
  log "  wallsim calibrate fit ${raws[*]} --cluster ${cluster:-CLUSTER} -o $out/profile.json"
  exit 0
fi
if [[ -z $cluster ]]; then
  log "unknown GPU '${gpu_name}': give --cluster; raw files are in $out"
  exit 1
fi
log "fitting $out/profile.json (base: the shipped profile of $cluster's GPU)"
"$wallsim" calibrate fit "${raws[@]}" --cluster "$cluster" -o "$out/profile.json" |
  tee "$out/fit.log"
log "done; use it with: wallsim run CONFIG --set calibration=$out/profile.json"

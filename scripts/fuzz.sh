#!/usr/bin/env bash
# Runs every fuzz target for RUNS inputs each (fixed seed, so a run repeats exactly), seeded from
# the repository's own configs and test data, after replaying the saved regression inputs.
# Usage: scripts/fuzz.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:?usage: scripts/fuzz.sh BUILD_DIR [RUNS]}
runs=${2:-20000}
root=$(cd "$(dirname "$0")/.." && pwd)
targets=(fuzz_run_config fuzz_cluster fuzz_profile fuzz_raw fuzz_text fuzz_vary fuzz_megatron_args fuzz_bridge_yaml
         fuzz_torchtitan_toml)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

seed() {  # seed TARGET FILES...
  local target=$1
  shift
  mkdir -p "$work/$target"
  for file in "$@"; do [ -f "$file" ] && cp "$file" "$work/$target/" || true; done
}
seed fuzz_run_config "$root"/configs/examples/*.json "$root"/configs/validation/*.json \
  "$root"/configs/models/*.json
seed fuzz_cluster "$root"/configs/clusters/*.json
seed fuzz_profile "$root"/calibration/profiles/*.json
seed fuzz_raw "$root"/tests/data/calibration/*.raw.json
seed fuzz_megatron_args "$root"/tests/data/megatron_args/*
seed fuzz_bridge_yaml "$root"/tests/data/bridge/*.yaml
seed fuzz_torchtitan_toml "$root"/tests/data/torchtitan/*.toml
mkdir -p "$work/fuzz_text"
printf '1KiB:8GiB' >"$work/fuzz_text/range"
printf 'training.micro_batch=2' >"$work/fuzz_text/set"
printf '[model]\nname = "qwen3"\nflavor = "30B-A3B"\n[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = "Interleaved1F1B"\nexpert_parallel_degree = 4\n[training]\nlocal_batch_size = 4\n' \
  >"$work/fuzz_torchtitan_toml/pipeline_experts"
printf '{"a": [1, 2.5e3, "x"]}' >"$work/fuzz_text/json"
mkdir -p "$work/fuzz_vary"
printf 'tp=4,8\npp=2,4,8' >"$work/fuzz_vary/sizes"
printf 'recompute=none,selective,full\nsp=on,off' >"$work/fuzz_vary/choices"
printf 'mb=1,2,4\ndist_opt=true,false\noverlap=off' >"$work/fuzz_vary/switches"
printf 'vpp=1,2,5,10\ncp=1,2' >"$work/fuzz_vary/vpp"

status=0
for target in "${targets[@]}"; do
  binary="$build/fuzz/$target"
  regressions="$root/fuzz/regressions/$target"
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    echo "== $target: replaying $(ls "$regressions" | wc -l) regression input(s)"
    "$binary" -runs=0 "$regressions" || status=1
  fi
  echo "== $target: fuzzing $runs inputs"
  "$binary" -runs="$runs" -seed=1 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$work/" "$work/$target" 2>&1 | tail -n 3 || status=1
  for artifact in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -e "$artifact" ] || continue
    echo "found: $artifact (save it under fuzz/regressions/$target/)"; status=1
  done
done
exit $status

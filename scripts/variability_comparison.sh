#!/usr/bin/env bash
# Compares the spread of step time that wallsim's default variability predicts with the spread
# of published MLPerf Training logs (docs/reference/variability.md), one layout per row, without
# tuning per system. Prints a Markdown table (README.md "Variability").
# Usage: scripts/variability_comparison.sh [WALLSIM] [SAMPLES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
wallsim=${1:-$root/build/tools/wallsim}
samples=${2:-50}
examples=$root/configs/examples
validation=$root/configs/validation

# label | published p10 | published p90 | config | overrides...
rows=(
  "Llama 3.1 8B, 8 B200, dp8 (median of 14 single-node rows)|-0.68%|+0.77%|$validation/mbridge_25.11_b200_llama3_8b_fp8-cs_8.json"
  "Llama 3.1 8B, 64 H100, dp64|-0.79%|+2.54%|$validation/mbridge_25.11_b200_llama3_8b_fp8-cs_8.json|cluster=configs/clusters/dgx-h100.json|num_gpus=64|training.global_batch=512"
  "Llama 3.1 8B, 128 H100, tp2 dp64|-3.01%|+6.49%|$validation/mbridge_25.11_b200_llama3_8b_fp8-cs_8.json|cluster=configs/clusters/dgx-h100.json|num_gpus=128|parallel.tp=2|parallel.sequence_parallel=true|training.global_batch=512"
  "GPT-3 175B, 512 H100, tp4 pp8 vpp6|-0.14%|+0.66%|$examples/gpt3-175b-64gpu-korthikanti.json|cluster=configs/clusters/dgx-h100.json|num_gpus=512|parallel.tp=4|parallel.vpp=6|training.global_batch=1536|training.precision=fp8"
  "GPT-3 175B, 3072 H100, tp4 pp8 vpp4|-10.19%|+6.31%|$examples/gpt3-175b-64gpu-korthikanti.json|cluster=configs/clusters/dgx-h100.json|num_gpus=3072|parallel.tp=4|parallel.vpp=4|training.global_batch=3072|training.precision=fp8"
  "Llama 3.1 405B, 512 H100, tp8 pp8 cp2|-0.31%|+0.19%|$examples/llama3-405b-16384gpu.json|num_gpus=512|parallel.pp=8|parallel.cp=2|parallel.first_stage_layers=15|parallel.last_stage_layers=15|training.global_batch=1152|training.precision=fp8"
  "Llama 3.1 405B, 2048 H100, tp8 pp8 cp2|-0.39%|+0.37%|$examples/llama3-405b-16384gpu.json|num_gpus=2048|parallel.pp=8|parallel.cp=2|parallel.first_stage_layers=15|parallel.last_stage_layers=15|training.global_batch=1152|training.precision=fp8"
  "Llama 3.1 405B, 8192 H100, tp8 pp8 cp2|-1.21%|+1.53%|$examples/llama3-405b-16384gpu.json|num_gpus=8192|parallel.pp=8|parallel.cp=2|parallel.first_stage_layers=15|parallel.last_stage_layers=15|training.global_batch=2304|training.precision=fp8"
)

echo "| system and layout | published p10 / p90 | wallsim p10 / p90 ($samples samples) | wallsim p50 vs noiseless |"
echo "|---|---|---|---|"
for row in "${rows[@]}"; do
  IFS='|' read -r -a fields <<<"$row"
  label=${fields[0]} p10=${fields[1]} p90=${fields[2]} config=${fields[3]}
  sets=()
  for override in "${fields[@]:4}"; do sets+=(--set "$override"); done
  noiseless=$("$wallsim" run "$config" "${sets[@]}" 2>/dev/null |
    sed -n 's/^  step time *\([0-9.]*\) s$/\1/p')
  line=$("$wallsim" run "$config" "${sets[@]}" --set 'variability={"seed": 1}' \
    --samples "$samples" 2>/dev/null | grep "sampled steps:")
  read -r q10 q50 q90 < <(sed -n 's/.*p10 \([0-9.]*\) s, p50 \([0-9.]*\) s, p90 \([0-9.]*\) s.*/\1 \2 \3/p' <<<"$line")
  awk -v l="$label" -v a="$p10" -v b="$p90" -v q10="$q10" -v q50="$q50" -v q90="$q90" \
    -v n="$noiseless" 'BEGIN {
      printf "| %s | %s / %s | %+.2f%% / %+.2f%% | %+.2f%% |\n", l, a, b,
        100 * (q10 / q50 - 1), 100 * (q90 / q50 - 1), 100 * (q50 / n - 1) }'
done

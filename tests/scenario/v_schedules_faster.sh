#!/usr/bin/env bash
# The V-shape schedules and DualPipe beat 1F1B on the same layout: `wallsim run CONFIG` with
# training.schedule zbv, dualpipev or dualpipe (parallel.vpp 2) takes less time than with 1f1b
# (vpp 1), and reports memory for every pipeline stage.
#   v_schedules_faster.sh WALLSIM CONFIG PP
# Why it must hold: the three run the same layers, GEMMs and collectives in all (the W passes only
# move the weight-gradient GEMMs), and in both placements one stage carries the output layer on
# top of its share of decoder layers (the last stage in 1F1B, stage 0 in the V, with the cheap
# embedding lookup besides). But 1F1B idles (pp − 1)(T_F + T_B + T_W) per stage while the V
# schedules idle about (pp − 1)·T_F/2 (tests/unit/models/v_schedule_test.cpp): at 16
# micro-batches on pp 4 about 3/19 of the step against 1/64, a gap far larger than the extra
# pipeline transfers of two chunks per stage over NVLink. DualPipe idles (pp/2 − 1)·T_F of a
# whole stage (the same test file) and splits the output layer between its two end stages, one
# direction's micro-batches each; its two parameter copies fit this example's memory.
set -euo pipefail
wallsim=$1
config=$2
pp=$3

step_time() {  # step_time SCHEDULE VPP -> iteration_time_s; checks memory.per_stage has PP stages
  local out
  out=$("$wallsim" run "$config" --json --set "training.schedule=$1" --set "parallel.vpp=$2") ||
    { echo "run with $1 failed" >&2; exit 1; }
  local stages
  stages=$(printf '%s' "$out" | tr -d ' \n' | grep -o '"per_stage":\[[^]]*\]' |
    grep -o '"stage":[0-9]*' | sort -u | wc -l)
  [ "$stages" -eq "$pp" ] || { echo "$1: memory.per_stage has $stages stages, want $pp" >&2; exit 1; }
  printf '%s' "$out" | tr -d ' \n' | grep -o '"iteration_time_s":[0-9.eE+-]*' | head -1 | cut -d: -f2
}

one_f_one_b=$(step_time 1f1b 1)
zbv=$(step_time zbv 2)
dualpipev=$(step_time dualpipev 2)
dualpipe=$(step_time dualpipe 2)
echo "step time: 1f1b $one_f_one_b s, zbv $zbv s, dualpipev $dualpipev s, dualpipe $dualpipe s"
awk -v a="$one_f_one_b" -v z="$zbv" -v d="$dualpipev" -v b="$dualpipe" \
  'BEGIN { if (z < a && d < a && b < a) exit 0; print "a schedule is not faster than 1f1b"; exit 1 }'

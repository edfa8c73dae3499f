#!/usr/bin/env bash
# End-to-end checks of `wallsim sweep` on a small space (Llama 3 8B on 8 GPUs).
#   sweep_check.sh MODE WALLSIM WORKDIR
# MODE: jobs       --jobs 1 and --jobs 2 write byte-identical sweep.csv and sweep.json
#       jobs-flow  the same with the flow network model (time-shared links, many more events)
#       reproduce  `wallsim run` on the best row's config gives the row's step time
#       shards     --shard 0/2 + 1/2 joined by sweep-merge equal the whole sweep; --resume of a
#                  finished sweep simulates nothing and writes the same sweep.csv
#       recompute  --all-recompute adds the recompute-pruned points and keeps every other row as
#                  it was; without it no layout has two recomputes that both fit
#       mpi        mpirun -n 2 ... --mpi equals --jobs 1 (skipped, exit 77, without mpirun or MPI)
set -euo pipefail
mode=$1
wallsim=$2
work=$3
rm -rf "$work" && mkdir -p "$work"
space=(llama3-8b-8gpu --network analytical --vary tp=1,2,4 pp=1,2 vpp=1,2 recompute=selective,full)
if [ "$mode" = jobs-flow ]; then
  space=(llama3-8b-8gpu --network flow --vary tp=2,4 pp=1,2 vpp=1 mb=1,2 recompute=selective)
fi

sweep() {  # sweep OUTDIR [extra args...]
  local out=$1
  shift
  "$wallsim" sweep "${space[@]}" --out "$out" "$@" >"$out.stdout" 2>"$out.stderr" ||
    { echo "sweep failed:"; cat "$out.stderr"; exit 1; }
}

same() {  # same FILE1 FILE2
  cmp "$1" "$2" || { echo "$1 and $2 differ:"; diff "$1" "$2" | head -20; exit 1; }
}

case $mode in
jobs | jobs-flow)
  sweep "$work/one" --jobs 1
  sweep "$work/two" --jobs 2
  same "$work/one/sweep.csv" "$work/two/sweep.csv"
  same "$work/one/sweep.json" "$work/two/sweep.json"
  rows=$(($(wc -l <"$work/one/sweep.csv") - 1))
  [ "$rows" -ge 4 ] || { echo "only $rows rows"; exit 1; }
  echo "identical: $rows rows"
  ;;
reproduce)
  sweep "$work/out" --jobs 2
  best=$(sed -n 2p "$work/out/sweep.csv")
  column() {  # column NAME: its field number in sweep.csv's header
    head -1 "$work/out/sweep.csv" | tr , '\n' | grep -nx "$1" | cut -d: -f1
  }
  step=$(echo "$best" | cut -d, -f"$(column step_time_s)")
  config=$(echo "$best" | cut -d, -f"$(column config)")
  ran=$("$wallsim" run "$work/out/$config" --json | grep '"iteration_time_s"' | grep -o '[0-9.eE+-]*' | tail -1)
  awk -v a="$step" -v b="$ran" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-8 * a) }' ||
    { echo "sweep row $config: $step s, wallsim run: $ran s"; exit 1; }
  echo "$config: sweep $step s, run $ran s"
  ;;
shards)
  sweep "$work/whole" --jobs 1
  sweep "$work/s0" --shard 0/2 --jobs 1
  sweep "$work/s1" --shard 1/2 --jobs 1
  "$wallsim" sweep-merge "$work/s1" "$work/s0" --out "$work/merged" >/dev/null
  same "$work/whole/sweep.csv" "$work/merged/sweep.csv"
  ls "$work/merged/configs" | wc -l | grep -qx "$(ls "$work/whole/configs" | wc -l)"
  sweep "$work/whole" --jobs 1 --resume
  grep -q "simulated 0 points" "$work/whole.stderr" || { cat "$work/whole.stderr"; exit 1; }
  same "$work/whole/sweep.csv" "$work/merged/sweep.csv"
  echo "shards merge to the whole sweep; resume of a finished sweep simulates nothing"
  ;;
recompute)
  sweep "$work/pruned" --jobs 2
  sweep "$work/all" --jobs 2 --all-recompute
  pruned=$(grep -o '[0-9]* by recompute' "$work/pruned.stdout" | cut -d' ' -f1)
  [ "$pruned" -gt 0 ] || { echo "no point pruned by recompute"; exit 1; }
  grep -q ' 0 by recompute' "$work/all.stdout" || { cat "$work/all.stdout"; exit 1; }
  rows() { tail -n +2 "$1" | cut -d, -f2,19 | sort; }  # id, step_time_s
  [ "$(rows "$work/all/sweep.csv" | wc -l)" -eq "$(($(rows "$work/pruned/sweep.csv" | wc -l) + pruned))" ] ||
    { echo "--all-recompute does not add exactly the $pruned pruned points"; exit 1; }
  missing=$(comm -23 <(rows "$work/pruned/sweep.csv") <(rows "$work/all/sweep.csv"))
  [ -z "$missing" ] || { echo "rows that differ: $missing"; exit 1; }
  layouts=$(tail -n +2 "$work/pruned/sweep.csv" | cut -d, -f2 | sed 's/-\(none\|selective\|full\)$//' | sort | uniq -d)
  [ -z "$layouts" ] || { echo "layouts simulated with two recomputes: $layouts"; exit 1; }
  echo "$pruned points pruned by recompute; the other rows unchanged"
  ;;
mpi)
  command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
  if "$wallsim" sweep llama3-8b-8gpu --mpi --out "$work/probe" --vary tp=3 2>&1 |
      grep -q "built without MPI"; then
    echo "wallsim built without MPI: skipped"
    exit 77
  fi
  sweep "$work/single" --jobs 1
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -n 2 --oversubscribe "$wallsim" sweep "${space[@]}" --mpi --jobs 1 \
    --out "$work/mpi" >"$work/mpi.stdout" 2>"$work/mpi.stderr" ||
    { echo "mpirun failed:"; cat "$work/mpi.stderr"; exit 1; }
  same "$work/single/sweep.csv" "$work/mpi/sweep.csv"
  echo "mpirun -n 2 gives the same sweep as --jobs 1"
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac

#!/usr/bin/env bash
# Runs `wallsim run ... --out DIR` twice into two directories and fails unless every file it
# writes (summary.json, trace.json, timeline.json, report.html) is byte-identical across them.
# Usage: same_run_files_twice.sh WALLSIM WORKDIR run-arguments...
set -u
wallsim=$1
work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
for n in 1 2; do
  "$wallsim" run "$@" --out "$work/$n" >"$work/$n.stdout" 2>"$work/$n.stderr" ||
    { echo "run $n failed:"; cat "$work/$n.stderr"; exit 1; }
done
status=0
for file in summary.json trace.json timeline.json report.html; do
  [ -s "$work/1/$file" ] || { echo "run 1 wrote no $file"; status=1; continue; }
  if cmp -s "$work/1/$file" "$work/2/$file"; then
    echo "identical: $file ($(wc -c <"$work/1/$file") bytes)"
  else
    echo "$file differs between two runs:"; cmp "$work/1/$file" "$work/2/$file"; status=1
  fi
done
exit $status

#!/usr/bin/env bash
# `wallsim report DIR` re-renders the same report.html that `wallsim run --out DIR` wrote,
# from summary.json and timeline.json alone.
#   report_rerender.sh WALLSIM OUT_DIR
set -euo pipefail
wallsim=$1 out=$2
rm -rf "$out"
"$wallsim" run llama3-8b-8gpu --out "$out" > /dev/null
mv "$out/report.html" "$out/first.html"
"$wallsim" report "$out"
cmp "$out/first.html" "$out/report.html"
"$wallsim" report "$out/summary.json" --out "$out/second.html"
cmp "$out/first.html" "$out/second.html"
echo "report_rerender: ok"

#!/usr/bin/env bash
# Loads report.html in headless Chromium and fails on any JavaScript error, or when the
# headline numbers or the charts are missing from the rendered page; keeps a screenshot.
#   report_in_browser.sh WALLSIM CHROMIUM OUT_DIR [SCREENSHOT.png]
set -euo pipefail
wallsim=$1 chromium=$2 out=$3
shot=${4:-$out/report.png}
rm -rf "$out"
mkdir -p "$out"
"$wallsim" run llama3-8b-8gpu --out "$out" --sensitivity > "$out/stdout.txt"

flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --virtual-time-budget=5000)
"$chromium" "${flags[@]}" --dump-dom "file://$out/report.html" > "$out/dom.html" 2> "$out/chromium.log"
"$chromium" "${flags[@]}" --hide-scrollbars --window-size=1400,1800 --screenshot="$shot" \
  "file://$out/report.html" >> "$out/chromium.log" 2>&1

fail() { echo "report_in_browser: $*" >&2; exit 1; }
grep -q 'data-error=' "$out/dom.html" &&
  fail "JavaScript error: $(grep -o 'data-error="[^"]*"' "$out/dom.html")"
grep -q 'data-ok="1"' "$out/dom.html" || fail "the report's script did not finish (see $out/dom.html)"

# The headline numbers as the page formats them, from summary.json.
number() { sed -n "s/^  \"$1\": \([-0-9.eE+]*\),\{0,1\}$/\1/p" "$out/summary.json"; }
step=$(awk -v s="$(number iteration_time_s)" 'BEGIN { printf "%.3f s", s }')
mfu=$(awk -v m="$(number mfu)" 'BEGIN { printf "%.1f%%", 100 * m }')
tokens=$(awk -v t="$(number tokens_per_s_per_gpu)" 'BEGIN { printf "%.1f", t }')
for expected in "$step" "$mfu" "$tokens" 'id="wall-memory"' 'id="wall-communication"' \
                'id="wall-compute"' '<canvas id="timeline"' 'id="memory-chart"' '<svg' \
                'id="kernel-families"' 'id="sensitivities"' 'id="links"'; do
  grep -qF -- "$expected" "$out/dom.html" || fail "'$expected' is not in the rendered page"
done
[ -s "$shot" ] || fail "no screenshot at $shot"
echo "report_in_browser: ok (step $step, MFU $mfu, tokens/s/GPU $tokens; screenshot $shot)"

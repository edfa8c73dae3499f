#!/usr/bin/env bash
# Runs a command twice and fails unless both runs print exactly the same bytes on stdout.
set -u
first=$(mktemp)
second=$(mktemp)
"$@" >"$first" || { echo "first run failed"; exit 1; }
"$@" >"$second" || { echo "second run failed"; exit 1; }
if cmp -s "$first" "$second"; then
  echo "identical ($(wc -c <"$first") bytes)"
  rm -f "$first" "$second"
else
  echo "outputs differ:"; diff "$first" "$second" | head -20
  rm -f "$first" "$second"
  exit 1
fi

#!/usr/bin/env bash
# Runs a command that must be rejected as bad input: exit code 2 and exactly one line on stderr
# containing the expected text. Usage: expect_bad_input.sh "expected text" command args...
set -u
expected="$1"
shift
stderr_file=$(mktemp)
"$@" >/dev/null 2>"$stderr_file"
code=$?
lines=$(grep -c '' "$stderr_file")
message=$(cat "$stderr_file")
rm -f "$stderr_file"
if [ "$code" -ne 2 ]; then
  echo "expected exit code 2, got $code; stderr: $message"
  exit 1
fi
if [ "$lines" -ne 1 ]; then
  echo "expected one line on stderr, got $lines: $message"
  exit 1
fi
case "$message" in
  *"$expected"*) echo "ok: $message" ;;
  *) echo "stderr lacks '$expected': $message"; exit 1 ;;
esac

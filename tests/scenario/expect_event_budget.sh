#!/usr/bin/env bash
# A run whose step needs more engine events than simulation.max_events allows must stop with
# exit code 3 ("did not finish") and one line on stderr naming the key and the budget; the same
# run with the default budget must finish, so the stop is the budget's doing.
# Usage: expect_event_budget.sh WALLSIM CONFIG
set -u
wallsim=$1
config=$2
stderr_file=$(mktemp)
trap 'rm -f "$stderr_file"' EXIT
"$wallsim" run "$config" --json --set simulation.max_events=100 >/dev/null 2>"$stderr_file"
code=$?
message=$(cat "$stderr_file")
[ "$code" -eq 3 ] || { echo "expected exit code 3, got $code; stderr: $message"; exit 1; }
[ "$(grep -c '' "$stderr_file")" -eq 1 ] || { echo "expected one line on stderr: $message"; exit 1; }
case "$message" in
  *"did not finish: simulation.max_events = 100: the event budget of 100 events ran out"*) ;;
  *) echo "unexpected message: $message"; exit 1 ;;
esac
"$wallsim" run "$config" --json >/dev/null 2>"$stderr_file" ||
  { echo "the same run with the default budget failed: $(cat "$stderr_file")"; exit 1; }
echo "ok: $message"

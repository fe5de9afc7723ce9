#!/usr/bin/env bash
# Runs the whole test suite (./polyvision test) with N CPU-burning processes
# beside it, as on a loaded CI host, and stops them on exit (also on Ctrl-C
# or a failure). The suite must pass like this: tests wait for events, never
# for wall-clock thresholds.
#
#   test/load/run-under-load.sh [N] [vitest args...]   (N defaults to 4: twice a 2-core host)
#
# Prints the load average before and after and the suite's wall time.
set -euo pipefail
cd "$(dirname "$0")/../.."

hogs=${1:-4}
shift || true
case $hogs in '' | *[!0-9]*) echo "usage: $0 [N] [vitest args...] (N: number of CPU hogs)" >&2; exit 2 ;; esac

pids=()
stop_hogs() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM

for ((i = 0; i < hogs; i++)); do
  # A busy loop in a child shell of its own; it dies with this script (trap above).
  ( trap - EXIT INT TERM; while :; do :; done ) &
  pids+=("$!")
done
echo "[load] $hogs CPU hogs (pids ${pids[*]:-none}); load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

started=$SECONDS
status=0
./polyvision test "$@" || status=$?
echo "[load] suite exit $status after $((SECONDS - started)) s with $hogs hogs; load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"

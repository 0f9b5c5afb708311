#!/usr/bin/env bash
# Shows tperf on a real recording: builds tperf and the demo workload (demo/workload.c), records
# the workload with `tperf record` (cpu-clock sampling and callchains), then prints what tperf
# reads from it.
# Everything it writes goes to demo/out/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Paths are relative to the repository root so the commands shown can be typed as they are.
OUT=demo/out
DATA=$OUT/perf.data

bash scripts/setup.sh </dev/null

echo "== building tperf (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build tperf >/dev/null
TPERF=build/tperf

echo "== building the workload (demo/out/workload)"
mkdir -p "$OUT"
cc -O2 -g -fno-omit-frame-pointer -pthread -Wall -Wextra -o "$OUT/workload" demo/workload.c

# cpu-clock is a software event, so this works on machines without a hardware PMU (VMs, CI).
echo "== recording"
echo "\$ $TPERF record -g -e cpu-clock -o $DATA -- $OUT/workload"
"$TPERF" record -g -e cpu-clock -o "$DATA" -- "$OUT/workload"

show() {
  echo
  echo "== \$ $TPERF $*"
  "$TPERF" "$@"
}

show header "$DATA"
show stats "$DATA"

# The dump goes to a file first: piping it into head would kill tperf with SIGPIPE.
"$TPERF" dump "$DATA" >"$OUT/dump.txt"
echo
echo "== \$ $TPERF dump $DATA | head -n 60    (all $(wc -l <"$OUT/dump.txt") lines are in $OUT/dump.txt)"
head -n 60 "$OUT/dump.txt"

echo
echo "The recording is $DATA; compare with: perf report -i $DATA"

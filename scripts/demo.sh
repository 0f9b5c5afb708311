#!/usr/bin/env bash
# Shows tperf on a real recording: builds tperf and the demo workload (demo/workload.c), records
# the workload with `tperf record` (cpu-clock sampling and callchains), then prints the report
# (as perf report --stdio), the task tree and the file's statistics, and ends by writing the
# recording's interactive flame graph page (demo/out/flame.html) and a static SVG of it.
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

# The report is the main thing: Children/Self with caller graphs, as perf report --stdio.
show report -i "$DATA" --percent-limit 2
show report -i "$DATA" --no-children -g none -s comm,pid,dso,sym -n
show report -i "$DATA" --tasks
show stats "$DATA"

# Last, the flame graph: one self-contained HTML file to open in a browser (no network needed),
# and the same graph as a static SVG.
show flame -i "$DATA" -o "$OUT/flame.svg" --svg
show flame -i "$DATA" -o "$OUT/flame.html"

echo
echo "The recording is $DATA; compare with: perf report -i $DATA"
echo "The flame graph page is $OUT/flame.html (open it in a browser: file://$(pwd)/$OUT/flame.html)"

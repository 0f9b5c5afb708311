#!/usr/bin/env bash
# Makes the perf.data files that bench/perfdata_bench.sh reads: a system-wide `perf record -g` of
# bench/workload.c (deep call stacks on every CPU) of about --size MB, and a `-z` (zstd) recording
# of the same workload for as long as the first one took. Files go to bench/out/ and are reused
# when present unless --force is given. Needs root (or perf_event_paranoid <= -1) for `-a`.
#
# Usage: bash bench/make_recordings.sh [--force] [--size MB] [--threads N] [--depth D]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/out"
force=0
size_mb=500
threads=$(( $(nproc) * 4 ))  # more threads than CPUs so the workload holds its share on a busy machine
depth=100                    # frames per stack: max_depth/2 .. max_depth, under perf_event_max_stack (127)
period=10000                 # cpu-clock period in ns: 100k samples/s per CPU, the kernel's floor for cpu-clock
mmap_size=32M                # ring buffer per CPU; smaller ones lose far more samples at this rate

while [[ $# -gt 0 ]]; do
  case "$1" in
    --force) force=1 ;;
    --size) size_mb="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --depth) depth="$2"; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "make_recordings.sh: unknown argument $1" >&2; exit 1 ;;
  esac
  shift
done

if ! command -v perf >/dev/null; then
  echo "make_recordings.sh: perf is not installed (apt-get install linux-perf)" >&2
  exit 1
fi
mkdir -p "$out"

workload="$out/workload"
if [[ ! -x "$workload" || "$here/workload.c" -nt "$workload" ]]; then
  # No inlining and frame pointers everywhere: every level of the recursion is a frame the
  # kernel's unwinder records.
  gcc -O1 -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -pthread -Wall -Wextra \
    -o "$workload" "$here/workload.c"
fi

# A recording counts as made when perf can read its header; partial files are left under a .tmp name.
check_recording() {
  perf report --header-only -i "$1" >/dev/null 2>&1
}

# record NAME SECONDS [extra perf record options...]: records the workload into $out/NAME.
record() {
  local name="$1" seconds="$2"
  shift 2
  local tmp="$out/$name.tmp" log="$out/$name.log"
  rm -f "$tmp"
  local cmd=(perf record -e cpu-clock -c "$period" -a -g -m "$mmap_size" "$@" -o "$tmp"
             -- "$workload" "$threads" "$seconds" "$depth")
  echo "+ ${cmd[*]}" | tee "$log"
  local start end rc=0
  start=$(date +%s.%N)
  "${cmd[@]}" >>"$log" 2>&1 || rc=$?
  end=$(date +%s.%N)
  cat "$log" | tail -n +2
  # 143: perf stopped at --max-size and ended the workload with SIGTERM; that is the plan.
  if [[ $rc -ne 0 && $rc -ne 143 ]] || ! check_recording "$tmp"; then
    echo "make_recordings.sh: perf record failed (status $rc), see $log" >&2
    exit 1
  fi
  mv "$tmp" "$out/$name"
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f\n", e - s }' >"$out/$name.seconds"
  echo "$name: $(stat -c %s "$out/$name") bytes in $(cat "$out/$name.seconds") s"
}

plain="callgraph.data"
compressed="callgraph-z.data"

if [[ $force -eq 1 || ! -f "$out/$plain" ]]; then
  # The workload would run for 10 minutes; perf stops it once the file passes the size limit.
  # perf checks the limit only when it drains its buffers, so the file overshoots by up to the ring
  # buffers' size.
  record "$plain" 600 --max-size="${size_mb}M"
  force=1  # the compressed recording must be redone to match the new duration
else
  echo "$plain: reusing $(stat -c %s "$out/$plain") bytes (--force to remake)"
fi

if [[ $force -eq 1 || ! -f "$out/$compressed" ]]; then
  seconds=$(cat "$out/$plain.seconds" 2>/dev/null || echo 30)
  record "$compressed" "$seconds" -z
else
  echo "$compressed: reusing $(stat -c %s "$out/$compressed") bytes (--force to remake)"
fi

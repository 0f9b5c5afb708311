#!/usr/bin/env bash
# `tperf record` side by side with `perf record` on this machine, three targets:
#  1. peak RSS of `record -- true`: tperf at most half of perf's (GNU time, best of N runs);
#  2. records lost at the highest rate (cpu-clock, -c 10000, -a) over the same 10 s workload:
#     tperf loses no more than perf (LOST records + LOST_SAMPLES, counted by `tperf stats`);
#  3. /proc synthesis with 1,000 extra processes: `tperf record -a -- true` at least as fast as
#     `perf record -a --num-thread-synthesize=2 -- true` (wall time, best of N runs).
# Not part of CI (about a minute); run by hand as root from anywhere:
#
#   bash bench/record_bench.sh [--runs N] [--seconds S] [--procs P]
#
# tperf is built in Release in build-bench/. Results are also written to bench/out/record-*.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$here/out"
runs=5
seconds=10
procs=1000

while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --procs) procs="$2"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "record_bench.sh: unknown option $1" >&2; exit 1 ;;
  esac
  shift
done

if [[ ! -x /usr/bin/time ]]; then
  apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi
command -v perf >/dev/null || { echo "record_bench.sh: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }

mkdir -p "$out"
cmake -S "$root" -B "$root/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPERF_TESTS=OFF >/dev/null
ninja -C "$root/build-bench" tperf >/dev/null
tperf="$root/build-bench/tperf"
work="$(mktemp -d)"
sleepers=()
cleanup() {
  for p in "${sleepers[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
results="$out/record-$(date +%Y%m%d-%H%M%S).txt"
say() { echo "$*" | tee -a "$results"; }

# best_of N CMD...: the smallest "wall_seconds peak_rss_kb" over N runs (RSS of the best-RSS run).
best_of() {
  local n="$1"; shift
  local best_wall="" best_rss=""
  for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" >/dev/null 2>"$work/err.txt" || true
    read -r wall rss <"$work/time.txt"
    if [[ -z "$best_wall" ]] || awk "BEGIN{exit !($wall < $best_wall)}"; then best_wall="$wall"; fi
    if [[ -z "$best_rss" || "$rss" -lt "$best_rss" ]]; then best_rss="$rss"; fi
  done
  echo "$best_wall $best_rss"
}

say "# tperf record vs perf record on $(uname -r), $(nproc) CPUs, $(perf version)"

# 1. Peak RSS of recording `true`.
read -r _ t_rss < <(best_of "$runs" "$tperf" record -q -o "$work/t.data" -- true)
read -r _ p_rss < <(best_of "$runs" perf record -q -o "$work/p.data" -- true)
say "1. record -- true, peak RSS: tperf ${t_rss} KiB, perf ${p_rss} KiB, ratio $(awk "BEGIN{printf \"%.2f\", $t_rss/$p_rss}") (target <= 0.50)"

# 2. Lost records at the highest rate over the same workload.
gcc -O1 -fno-omit-frame-pointer -pthread -o "$work/workload" "$here/workload.c"
lost_of() {  # file -> lost records + lost samples as tperf stats counts them
  "$tperf" stats "$1" | sed -n 's/^# lost: \([0-9]*\) events in [0-9]* LOST records, \([0-9]*\) samples.*/\1 \2/p' |
    awk '{print $1 + $2}'
}
samples_of() { "$tperf" stats "$1" | sed -n 's/.*samples decoded: \([0-9]*\).*/\1/p'; }
threads=$(nproc)
"$tperf" record -q -a -e cpu-clock -c 10000 -o "$work/t-rate.data" -- "$work/workload" "$threads" "$seconds" 40 2>/dev/null
perf record -q -a -e cpu-clock -c 10000 -o "$work/p-rate.data" -- "$work/workload" "$threads" "$seconds" 40 2>/dev/null
t_lost=$(lost_of "$work/t-rate.data"); p_lost=$(lost_of "$work/p-rate.data")
say "2. -a -e cpu-clock -c 10000 for ${seconds}s: tperf lost ${t_lost} of $(samples_of "$work/t-rate.data") samples kept, perf lost ${p_lost} of $(samples_of "$work/p-rate.data") (target: tperf <= perf)"

# 3. /proc synthesis with many processes.
for _ in $(seq "$procs"); do
  sleep 600 &
  sleepers+=($!)
done
sleep 1
read -r t_wall _ < <(best_of "$runs" "$tperf" record -q -a -B -o "$work/t-syn.data" -- true)
read -r p_wall _ < <(best_of "$runs" perf record -q -a -B --num-thread-synthesize=2 -o "$work/p-syn.data" -- true)
say "3. -a -- true with ${procs} extra processes: tperf ${t_wall}s, perf --num-thread-synthesize=2 ${p_wall}s, ratio $(awk "BEGIN{printf \"%.2f\", $t_wall/$p_wall}") (target <= 1.00)"
say "results: $results"

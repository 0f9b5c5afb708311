#!/usr/bin/env bash
# The cost of recording off-CPU time on a context-switch-heavy program (bench/pingpong.c: two
# threads ping-ponging through pipes, each round trip two switches or more), wall time of the
# program, best of N runs:
#   bare | perf record -e sched:sched_switch -g | tperf record --off-cpu -g, the tracepoint way
#   and the BPF way (--off-cpu-way=...)
# and the cost ratios (time over bare); the target is the BPF way's cost at most half of the
# tracepoint way's. Run by hand as root (the BPF way needs it):
#
#   bash bench/offcpu_bench.sh [--runs N] [--rounds R] [--tperf PATH]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
runs=5
rounds=200000
tperf="$root/build/tperf"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --tperf) tperf="$2"; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "offcpu_bench.sh: unknown option $1" >&2; exit 1 ;;
  esac
  shift
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
gcc -O2 -pthread -fno-omit-frame-pointer -o "$work/pingpong" "$here/pingpong.c"

# Best wall time (seconds, from `date +%s.%N`) of `$@` over $runs runs.
best() {
  local b=""
  for _ in $(seq "$runs"); do
    local s e t
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc -l)
    if [[ -z "$b" ]] || (( $(echo "$t < $b" | bc -l) )); then b=$t; fi
  done
  echo "$b"
}

bare=$(best "$work/pingpong" "$rounds")
perf_tp=$(best perf record -q -e sched:sched_switch -g -o "$work/perf.data" -- "$work/pingpong" "$rounds")
tperf_tp=$(best "$tperf" record -q --off-cpu --off-cpu-way=tracepoint -g -o "$work/tperf.data" -- "$work/pingpong" "$rounds")
# Refused (not silently replaced) when the BPF way cannot load: say why and stop.
if ! "$tperf" record -q --off-cpu --off-cpu-way=bpf -o "$work/check.data" -- true >/dev/null; then
  echo "offcpu_bench.sh: the BPF way does not load here" >&2
  exit 1
fi
tperf_bpf=$(best "$tperf" record -q --off-cpu --off-cpu-way=bpf -g -o "$work/tperf-bpf.data" -- "$work/pingpong" "$rounds")
cost() { echo "$1 - $bare" | bc -l; }
row() { printf '%-52s %8.3f s  (+%.0f%%)\n' "$1" "$2" "$(echo "($2 / $bare - 1) * 100" | bc -l)"; }
printf '%-52s %8.3f s\n' "bare" "$bare"
row "perf record -e sched:sched_switch -g" "$perf_tp"
row "tperf record --off-cpu -g (tracepoint way)" "$tperf_tp"
row "tperf record --off-cpu -g (BPF way)" "$tperf_bpf"
printf 'cost (time over bare): BPF way / tracepoint way = %.2f (target <= 0.50); BPF way / perf = %.2f\n' \
  "$(echo "$(cost "$tperf_bpf") / $(cost "$tperf_tp")" | bc -l)" "$(echo "$(cost "$tperf_bpf") / $(cost "$perf_tp")" | bc -l)"

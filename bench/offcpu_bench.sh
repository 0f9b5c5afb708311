#!/usr/bin/env bash
# The cost of recording off-CPU time on a context-switch-heavy program (bench/pingpong.c: two
# threads ping-ponging through pipes, each round trip two switches or more), best of N runs of:
#   bare | perf record -e sched:sched_switch -g | tperf record --off-cpu -g, the tracepoint way
#   and the BPF way (--off-cpu-way=...)
# and the cost ratios (time over bare, of the whole command and of the workload's own round
# trips); the target is the BPF way's cost at most half of the tracepoint way's. Run by hand as
# root (the BPF way needs it):
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

# Best times of `$@` over $runs runs: the whole command's wall time (start-up, /proc synthesis,
# loading the BPF program and writing the file included), its CPU time (user + system of every
# process it ran: the workload's switches and what recording them costs, however the shared
# machine scheduled them), and the workload's own time for its round trips (its "N round trips in
# T s" line). Prints "WALL CPU OWN".
best() {
  local bw="" bc="" bo=""
  for _ in $(seq "$runs"); do
    local t out own wall cpu
    out=$( { TIMEFORMAT='%R %U %S'; time "$@" 2>/dev/null; } 2>&1 )
    t=$(echo "$out" | tail -1)
    wall=$(echo "$t" | awk '{print $1}')
    cpu=$(echo "$t" | awk '{print $2 + $3}')
    own=$(echo "$out" | sed -n 's/.* round trips in \([0-9.]*\) s.*/\1/p' | tail -1)
    if [[ -z "$bw" ]] || (( $(echo "$wall < $bw" | bc -l) )); then bw=$wall; fi
    if [[ -z "$bc" ]] || (( $(echo "$cpu < $bc" | bc -l) )); then bc=$cpu; fi
    if [[ -n "$own" ]] && { [[ -z "$bo" ]] || (( $(echo "$own < $bo" | bc -l) )); }; then bo=$own; fi
  done
  echo "$bw $bc ${bo:-0}"
}

read -r bare bare_cpu bare_own < <(best "$work/pingpong" "$rounds")
read -r perf_tp perf_tp_cpu perf_tp_own < <(best perf record -q -e sched:sched_switch -g -o "$work/perf.data" -- "$work/pingpong" "$rounds")
read -r tperf_tp tperf_tp_cpu tperf_tp_own < <(best "$tperf" record -q --off-cpu --off-cpu-way=tracepoint -g -o "$work/tperf.data" -- "$work/pingpong" "$rounds")
# Refused (not silently replaced) when the BPF way cannot load: say why and stop.
if ! "$tperf" record -q --off-cpu --off-cpu-way=bpf -o "$work/check.data" -- true >/dev/null; then
  echo "offcpu_bench.sh: the BPF way does not load here" >&2
  exit 1
fi
read -r tperf_bpf tperf_bpf_cpu tperf_bpf_own < <(best "$tperf" record -q --off-cpu --off-cpu-way=bpf -g -o "$work/tperf-bpf.data" -- "$work/pingpong" "$rounds")
pct() { echo "($1 / $2 - 1) * 100" | bc -l; }
printf '%-44s %8s %9s %8s %9s %10s %9s\n' "" "wall" "over bare" "CPU" "over bare" "workload's" "over bare"
printf '%-44s %7.3fs %9s %7.3fs %9s %9.3fs\n' "bare" "$bare" "" "$bare_cpu" "" "$bare_own"
row() {
  printf '%-44s %7.3fs %+8.0f%% %7.3fs %+8.0f%% %9.3fs %+8.0f%%\n' "$1" "$2" "$(pct "$2" "$bare")" "$3" \
    "$(pct "$3" "$bare_cpu")" "$4" "$(pct "$4" "$bare_own")"
}
row "perf record -e sched:sched_switch -g" "$perf_tp" "$perf_tp_cpu" "$perf_tp_own"
row "tperf record --off-cpu -g (tracepoint way)" "$tperf_tp" "$tperf_tp_cpu" "$tperf_tp_own"
row "tperf record --off-cpu -g (BPF way)" "$tperf_bpf" "$tperf_bpf_cpu" "$tperf_bpf_own"
ratio() { echo "($1 - $2) / ($3 - $4)" | bc -l; }
printf 'cost BPF way / tracepoint way: wall %.2f, CPU %.2f, workload'"'"'s %.2f (target <= 0.50)\n' \
  "$(ratio "$tperf_bpf" "$bare" "$tperf_tp" "$bare")" "$(ratio "$tperf_bpf_cpu" "$bare_cpu" "$tperf_tp_cpu" "$bare_cpu")" \
  "$(ratio "$tperf_bpf_own" "$bare_own" "$tperf_tp_own" "$bare_own")"
printf 'cost BPF way / perf:           wall %.2f, CPU %.2f, workload'"'"'s %.2f\n' \
  "$(ratio "$tperf_bpf" "$bare" "$perf_tp" "$bare")" "$(ratio "$tperf_bpf_cpu" "$bare_cpu" "$perf_tp_cpu" "$bare_cpu")" \
  "$(ratio "$tperf_bpf_own" "$bare_own" "$perf_tp_own" "$bare_own")"

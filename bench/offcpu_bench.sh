#!/usr/bin/env bash
# The cost of recording off-CPU time on a context-switch-heavy program (bench/pingpong.c: two
# threads ping-ponging through pipes, each round trip two switches or more), best of N runs of:
#   bare | perf record -e sched:sched_switch -g | tperf record -g (no off-CPU: what on-CPU
#   sampling alone costs) | tperf record --off-cpu -g, the tracepoint way and the BPF way
# and the cost ratios (time over bare, of the whole command and of the workload's own round
# trips); the target is the BPF way's cost at most half of the tracepoint way's. Run by hand as
# root (the BPF way needs it):
#
#   bash bench/offcpu_bench.sh [--runs N] [--rounds R] [--tperf PATH] [--unpinned]
#
# The workload runs pinned to CPU 0 (taskset) by default: both threads on one CPU, every round
# trip is two context switches there and its time is what switching, and recording a switch,
# costs. --unpinned lets the threads run on two CPUs: then each round trip also wakes the other
# CPU out of idle, which in a VM (an IPI and a VM exit or two) costs ~15 us, 15x the switch
# itself, and the times follow how the host schedules the vCPUs more than the recording.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
runs=5
rounds=200000
tperf="$root/build/tperf"
pin=(taskset -c 0)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --tperf) tperf="$2"; shift ;;
    --unpinned) pin=() ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
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

wl=("${pin[@]}" "$work/pingpong" "$rounds")
read -r bare bare_cpu bare_own < <(best "${wl[@]}")
read -r perf_tp perf_tp_cpu perf_tp_own < <(best perf record -q -e sched:sched_switch -g -o "$work/perf.data" -- "${wl[@]}")
read -r plain plain_cpu plain_own < <(best "$tperf" record -q -g -o "$work/plain.data" -- "${wl[@]}")
read -r tperf_tp tperf_tp_cpu tperf_tp_own < <(best "$tperf" record -q --off-cpu --off-cpu-way=tracepoint -g -o "$work/tperf.data" -- "${wl[@]}")
# Refused (not silently replaced) when the BPF way cannot load: say why and stop.
if ! "$tperf" record -q --off-cpu --off-cpu-way=bpf -o "$work/check.data" -- true >/dev/null; then
  echo "offcpu_bench.sh: the BPF way does not load here" >&2
  exit 1
fi
read -r tperf_bpf tperf_bpf_cpu tperf_bpf_own < <(best "$tperf" record -q --off-cpu --off-cpu-way=bpf -g -o "$work/tperf-bpf.data" -- "${wl[@]}")
pct() { echo "($1 / $2 - 1) * 100" | bc -l; }
echo "pingpong $rounds round trips, ${pin[*]:-unpinned}, best of $runs"
printf '%-44s %8s %9s %8s %9s %10s %9s\n' "" "wall" "over bare" "CPU" "over bare" "workload's" "over bare"
printf '%-44s %7.3fs %9s %7.3fs %9s %9.3fs\n' "bare" "$bare" "" "$bare_cpu" "" "$bare_own"
row() {
  printf '%-44s %7.3fs %+8.0f%% %7.3fs %+8.0f%% %9.3fs %+8.0f%%\n' "$1" "$2" "$(pct "$2" "$bare")" "$3" \
    "$(pct "$3" "$bare_cpu")" "$4" "$(pct "$4" "$bare_own")"
}
row "perf record -e sched:sched_switch -g" "$perf_tp" "$perf_tp_cpu" "$perf_tp_own"
row "tperf record -g (on-CPU only)" "$plain" "$plain_cpu" "$plain_own"
row "tperf record --off-cpu -g (tracepoint way)" "$tperf_tp" "$tperf_tp_cpu" "$tperf_tp_own"
row "tperf record --off-cpu -g (BPF way)" "$tperf_bpf" "$tperf_bpf_cpu" "$tperf_bpf_own"
ratio() { echo "($1 - $2) / ($3 - $4)" | bc -l; }
printf 'cost BPF way / tracepoint way: wall %.2f, CPU %.2f, workload'"'"'s %.2f (target <= 0.50)\n' \
  "$(ratio "$tperf_bpf" "$bare" "$tperf_tp" "$bare")" "$(ratio "$tperf_bpf_cpu" "$bare_cpu" "$tperf_tp_cpu" "$bare_cpu")" \
  "$(ratio "$tperf_bpf_own" "$bare_own" "$tperf_tp_own" "$bare_own")"
printf 'off-CPU part (over tperf record -g), BPF / tracepoint: wall %.2f, CPU %.2f, workload'"'"'s %.2f\n' \
  "$(ratio "$tperf_bpf" "$plain" "$tperf_tp" "$plain")" "$(ratio "$tperf_bpf_cpu" "$plain_cpu" "$tperf_tp_cpu" "$plain_cpu")" \
  "$(ratio "$tperf_bpf_own" "$plain_own" "$tperf_tp_own" "$plain_own")"
printf 'cost BPF way / perf:           wall %.2f, CPU %.2f, workload'"'"'s %.2f\n' \
  "$(ratio "$tperf_bpf" "$bare" "$perf_tp" "$bare")" "$(ratio "$tperf_bpf_cpu" "$bare_cpu" "$perf_tp_cpu" "$bare_cpu")" \
  "$(ratio "$tperf_bpf_own" "$bare_own" "$perf_tp_own" "$bare_own")"

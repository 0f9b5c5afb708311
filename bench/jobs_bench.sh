#!/usr/bin/env bash
# How much a second thread buys: `tperf report` and `tperf script` with -j 1 against -j N (2 by
# default) on the same file, runs alternating so that a slower or faster spell of a shared
# machine falls on both. Prints, per command, the best and the median wall time of each count,
# the CPU time of the best run, the ratios (-j 1 / -j N, the speed-up; the issue-11 target is
# >= 1.6 on the fp recipe), and whether the outputs are byte-identical. Also what the machine
# itself gives: N copies of the -j 1 run at once, as "ceiling" = N x (-j 1 time) / (their time),
# the speed-up N threads could have at best (on a VM whose cores share a host, well below N).
# Not part of CI; run by hand:
#
#   bash bench/jobs_bench.sh [--runs N] [--jobs N] [--cmd "report --stdio --no-children"] FILE...
#
# Without --cmd it measures `report --stdio --no-children`, `report --stdio` and `script`.
# Output goes to /dev/null for the timed runs; one more run of each count into files checks that
# they are identical. Results also go to bench/out/jobs-results-*.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$here/out"
runs=5
jobs=2
cmds=()
files=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --cmd) cmds+=("$2"); shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "jobs_bench.sh: unknown option $1" >&2; exit 1 ;;
    *) files+=("$1") ;;
  esac
  shift
done
[[ ${#files[@]} -gt 0 ]] || { echo "jobs_bench.sh: name at least one perf.data file" >&2; exit 1; }
[[ ${#cmds[@]} -gt 0 ]] || cmds=("report --stdio --no-children" "report --stdio" "script")

# shellcheck source=bench/lib.sh
source "$here/lib.sh"
bench_tools jobs_bench.sh
bench_build "$root"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
results="$out/jobs-results-$(date -u +%Y%m%dT%H%M%SZ).txt"

# copies_run CMD...: wall seconds of $jobs copies of CMD run at once (stdout to /dev/null), as "wall 0".
copies_run() {
  local start end k
  start=$(date +%s.%N)
  for ((k = 0; k < jobs; k++)); do "$@" >/dev/null 2>&1 & done
  wait
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f 0\n", e - s }'
}

# one_run CMD... : wall and CPU seconds of one run (stdout to /dev/null), as "wall cpu".
one_run() {
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/stderr" ||
    { echo "jobs_bench.sh: failed: $*" >&2; cat "$tmp/stderr" >&2; exit 1; }
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$tmp/time"
}

{
  echo "# jobs_bench $(date -u +%FT%TZ) on $(nproc) CPUs, tperf $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), runs $runs"
  echo "# CPU speed at start (a fixed loop pinned to each): $(cpu_speeds)"
  echo "| file | command | -j 1 best / median | -j $jobs best / median | CPU -j 1 / -j $jobs | speed-up best / median | ceiling best / median | output |"
  echo "|---|---|---|---|---|---|---|---|"
} | tee "$results"

for f in "${files[@]}"; do
  for c in "${cmds[@]}"; do
    read -ra args <<<"$c"
    one=() other=() copies=()
    for ((i = 0; i < runs; i++)); do
      one+=("$(one_run "$tperf" "${args[@]}" -j 1 -i "$f")")
      other+=("$(one_run "$tperf" "${args[@]}" -j "$jobs" -i "$f")")
      copies+=("$(copies_run "$tperf" "${args[@]}" -j 1 -i "$f")")
    done
    "$tperf" "${args[@]}" -j 1 -i "$f" >"$tmp/one.txt" 2>/dev/null
    "$tperf" "${args[@]}" -j "$jobs" -i "$f" >"$tmp/other.txt" 2>/dev/null
    same="identical ($(wc -l <"$tmp/one.txt") lines)"
    cmp -s "$tmp/one.txt" "$tmp/other.txt" || same="DIFFERENT"
    printf '%s\n' "${one[@]}" >"$tmp/one.times"
    printf '%s\n' "${other[@]}" >"$tmp/other.times"
    printf '%s\n' "${copies[@]}" >"$tmp/copies.times"
    python3 - "$tmp/one.times" "$tmp/other.times" "$(basename "$f")" "$c" "$jobs" "$same" "$tmp/copies.times" <<'EOF' | tee -a "$results"
import statistics, sys
def load(p):
    rows = [tuple(map(float, l.split())) for l in open(p) if l.strip()]
    best = min(rows)
    return best[0], statistics.median(r[0] for r in rows), best[1]
b1, m1, c1 = load(sys.argv[1])
bn, mn, cn = load(sys.argv[2])
bc, mc, _ = load(sys.argv[7])
n = int(sys.argv[5])
print(f"| {sys.argv[3]} | `{sys.argv[4]}` | {b1:.2f} / {m1:.2f} s | {bn:.2f} / {mn:.2f} s | "
      f"{c1:.2f} / {cn:.2f} s | {b1 / bn:.2f}x / {m1 / mn:.2f}x | {n * b1 / bc:.2f}x / {n * m1 / mc:.2f}x | {sys.argv[6]} |")
EOF
  done
done
echo "# CPU speed at end: $(cpu_speeds)" | tee -a "$results"
echo "results: $results"

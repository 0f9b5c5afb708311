#!/usr/bin/env bash
# `tperf report --stdio` against `perf report --stdio` on the same -g files, side by side: wall
# time, CPU time and peak RSS of each, whether the reports are the same (tperf with
# --no-unwind-summary, perf's random "Tip" line left out), and the targets of issue 11 (>= 10x
# faster on the fp and sys recipes, >= 4x on the dwarf one, whose file name must contain "dwarf";
# peak RSS <= 1/10 of perf's). tperf's default (with its unwinding quality block) is timed too. Not part of CI; run by hand:
#
#   bash bench/report_bench.sh [--runs N] [--args "REPORT ARGS"] [--settle] [FILE...]
#
# --settle drops each file's cached pages and reads it again before timing it (see warm_cache in
# bench/lib.sh): the times then do not depend on whether the file was just written.
#
# Without FILE it uses bench/out/callgraph.data (bench/make_recordings.sh makes it; perf report
# needs about 45 MB of RAM per MB of such a file). --args adds report options to both sides
# (e.g. "--no-children", "-g none"). Results also go to bench/out/report-results-*.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$here/out"
runs=1
settle=0
args=""
files=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --settle) settle=1 ;;
    --args) args="$2"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "report_bench.sh: unknown option $1" >&2; exit 1 ;;
    *) files+=("$1") ;;
  esac
  shift
done

# shellcheck source=bench/lib.sh
source "$here/lib.sh"
bench_tools report_bench.sh
bench_build "$root"
mkdir -p "$out"

if [[ ${#files[@]} -eq 0 ]]; then
  bash "$here/make_recordings.sh"
  files=("$out/callgraph.data")
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="$out/report-results-$stamp.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exec > >(tee "$report") 2>&1

echo "# report_bench $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM; kernel $(uname -r)"
echo "# $(perf --version); tperf at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') (Release)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); best of $runs run(s); report args: '${args}'; page cache: $([[ $settle == 1 ]] && echo settled || echo as found)"
echo "# CPU speed at start (a fixed loop pinned to each): $(cpu_speeds)"

# perf's report without its tip block ("#", "# (Tip: ...)", "#" at the end).
strip_tip() {
  awk '/^# \(Tip/ {tip=NR} {l[NR]=$0} END {for (i=1;i<=NR;i++) if (!(tip && i>=tip-1 && i<=tip+1)) print l[i]}' "$1"
}

for f in "${files[@]}"; do
  [[ -e $f ]] || { echo "report_bench.sh: no such file $f" >&2; exit 1; }
  mb=$(awk -v b="$(du -sb "$f" | cut -f1)" 'BEGIN { printf "%.1f", b / 1048576 }')
  warm_cache "$f" "$settle"
  echo
  echo "## $(basename "$f"): $mb MiB"
  # shellcheck disable=SC2086
  measure "$tmp/perf.txt" perf report --stdio -i "$f" $args
  p_s=$best_s p_cpu=$best_cpu p_kb=$peak_kb
  # shellcheck disable=SC2086
  measure "$tmp/tperf.txt" "$tperf" report --stdio --no-unwind-summary -i "$f" $args
  t_s=$best_s t_cpu=$best_cpu t_kb=$peak_kb
  # shellcheck disable=SC2086
  measure "$tmp/tperf-summary.txt" "$tperf" report --stdio -i "$f" $args
  s_s=$best_s s_kb=$peak_kb
  strip_tip "$tmp/perf.txt" >"$tmp/perf-notip.txt"
  lines=$(wc -l <"$tmp/perf-notip.txt")
  if cmp -s "$tmp/perf-notip.txt" "$tmp/tperf.txt"; then
    same="identical ($lines lines)"
  else
    same="DIFFERENT: $(diff "$tmp/perf-notip.txt" "$tmp/tperf.txt" | grep -c '^<' || true) of $lines lines differ"
  fi
  want=10
  case "$(basename "$f")" in *dwarf*) want=4 ;; esac
  awk -v want="$want" -v ps="$p_s" -v ts="$t_s" -v ss="$s_s" -v pc="$p_cpu" -v tc="$t_cpu" -v pk="$p_kb" -v tk="$t_kb" -v sk="$s_kb" \
      -v same="$same" 'BEGIN {
    if (ts < 0.01) ts = 0.01; if (tc < 0.01) tc = 0.01; if (ss < 0.01) ss = 0.01
    printf "  perf                    %8.2f s wall %8.2f s cpu %9.1f MiB peak RSS\n", ps, pc, pk / 1024
    printf "  tperf                   %8.2f s wall %8.2f s cpu %9.1f MiB peak RSS\n", ts, tc, tk / 1024
    printf "  tperf (quality block)   %8.2f s wall                %9.1f MiB peak RSS\n", ss, sk / 1024
    printf "  perf / tperf: %.1fx wall (%.1fx with the block), %.1fx cpu; target >= %dx: %s\n", ps / ts, ps / ss, pc / tc, want, (ps / ts >= want ? "ok" : "MISSED")
    printf "  tperf RSS / perf RSS: %.3f; target <= 0.10: %s\n", tk / pk, (tk / pk <= 0.10 ? "ok" : "MISSED")
    printf "  output: %s\n", same
  }'
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU speed at end: $(cpu_speeds)"
echo "# written to $report"

#!/usr/bin/env bash
# `tperf collapse` and `tperf export --format pprof` against `perf script > /dev/null` on the same
# files, side by side: wall time, CPU time and peak RSS of each, and the ratios. perf script's text
# is what `perf script | stackcollapse-perf.pl` (or inferno, or speedscope's import) starts from,
# so its time alone is a lower bound of that pipeline's; tperf goes from perf.data to the file.
# Not part of CI; run by hand:
#
#   bash bench/export_bench.sh [--runs N] [FILE...]
#
# Without FILE arguments it uses bench/out/callgraph.data (bench/make_recordings.sh makes it).
# Results also go to bench/out/export-results-*.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$here/out"
runs=1
files=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "export_bench.sh: unknown option $1" >&2; exit 1 ;;
    *) files+=("$1") ;;
  esac
  shift
done

# shellcheck source=bench/lib.sh
source "$here/lib.sh"
bench_tools export_bench.sh
bench_build "$root"
mkdir -p "$out"

if [[ ${#files[@]} -eq 0 ]]; then
  bash "$here/make_recordings.sh"
  files=("$out/callgraph.data")
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="$out/export-results-$stamp.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exec > >(tee "$report") 2>&1

echo "# export_bench $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM; kernel $(uname -r)"
echo "# $(perf --version); tperf at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') (Release)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); best of $runs run(s)"
echo "# CPU speed at start (a fixed loop pinned to each): $(cpu_speeds)"

# ratio LABEL: one line "perf script / tperf LABEL" from the last two measurements.
ratio() {
  awk -v label="$1" -v ps="$p_s" -v ts="$t_s" -v pc="$p_cpu" -v tc="$t_cpu" -v pk="$p_kb" -v tk="$t_kb" -v size="$2" 'BEGIN {
    if (ts < 0.01) ts = 0.01; if (tc < 0.01) tc = 0.01
    printf "  %-28s %8.2f s wall %8.2f s cpu %9.1f MiB peak RSS  (output %s)\n", "tperf " label, ts, tc, tk / 1024, size
    printf "  %-28s %.1fx wall, %.1fx cpu, RSS %.2f of perf'\''s\n", "  perf script / tperf:", ps / ts, pc / tc, (pk > 0 ? tk / pk : 0)
  }'
}

summary=()
for f in "${files[@]}"; do
  [[ -e $f ]] || { echo "export_bench.sh: no such file $f" >&2; exit 1; }
  mb=$(awk -v b="$(du -sb "$f" | cut -f1)" 'BEGIN { printf "%.1f", b / 1048576 }')
  cat "$f" >/dev/null
  echo
  echo "## $(basename "$f"): $mb MiB"
  measure /dev/null perf script -i "$f"
  p_s=$best_s p_cpu=$best_cpu p_kb=$peak_kb
  printf '  %-28s %8.2f s wall %8.2f s cpu %9.1f MiB peak RSS\n' "perf script > /dev/null" "$p_s" "$p_cpu" "$(awk -v k="$p_kb" 'BEGIN { print k / 1024 }')"

  measure "$tmp/folded.txt" "$tperf" collapse -i "$f"
  t_s=$best_s t_cpu=$best_cpu t_kb=$peak_kb
  line=$(ratio "collapse" "$(wc -l <"$tmp/folded.txt") lines")
  echo "$line"
  summary+=("$(basename "$f") collapse: $(echo "$line" | tail -1 | sed 's/^ *perf script \/ tperf: *//')")

  measure /dev/null "$tperf" export --format pprof -i "$f" -o "$tmp/profile.pb.gz"
  t_s=$best_s t_cpu=$best_cpu t_kb=$peak_kb
  line=$(ratio "export --format pprof" "$(du -h "$tmp/profile.pb.gz" | cut -f1)")
  echo "$line"
  summary+=("$(basename "$f") pprof: $(echo "$line" | tail -1 | sed 's/^ *perf script \/ tperf: *//')")
done

echo
echo "## summary"
printf '%s\n' "${summary[@]}"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU speed at end: $(cpu_speeds)"
echo "# written to $report"

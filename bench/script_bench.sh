#!/usr/bin/env bash
# `tperf script` against `perf script` on the same files, side by side: wall time, CPU time and
# peak RSS of each, whether the two outputs are byte-identical, and the speed-up against the
# targets of issue 3 (>= 10x on a ~500 MB -g recording, >= 5x on a system-wide fork-heavy one).
# Not part of CI (perf script takes minutes on these files); run by hand:
#
#   bash bench/script_bench.sh [--runs N] [--fields LIST] [--time-to-files] [--settle] [FILE...]
#
# Without FILE arguments it uses bench/out/callgraph.data (bench/make_recordings.sh makes it) and
# bench/out/forkheavy.data (made here: perf record -a -g while 2,000 short processes come and go).
# --fields F compares `script -F F`; the default compares the default output and, separately, the
# non-symbol fields "comm,pid,tid,time,event,ip" (equal even where symbol lookup differs).
# The timed runs write to /dev/null (as `perf script > /dev/null` is timed: what the tools cost,
# not what the kernel costs to take the text into a file, the same for both); one more run of each
# into a file checks that the outputs are identical. --time-to-files times those runs instead.
# --settle drops each file's cached pages and reads it again before timing it (warm_cache in
# bench/lib.sh). Results also go to bench/out/script-results-*.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$here/out"
runs=1
settle=0
field_sets=("" "comm,pid,tid,time,event,ip")
files=()
time_to_files=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --settle) settle=1 ;;
    --fields) field_sets=("$2"); shift ;;
    --time-to-files) time_to_files=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "script_bench.sh: unknown option $1" >&2; exit 1 ;;
    *) files+=("$1") ;;
  esac
  shift
done

# shellcheck source=bench/lib.sh
source "$here/lib.sh"
bench_tools script_bench.sh
bench_build "$root"
mkdir -p "$out"

if [[ ${#files[@]} -eq 0 ]]; then
  bash "$here/make_recordings.sh"
  fork="$out/forkheavy.data"
  if [[ ! -s $fork ]]; then
    echo "recording $fork (perf record -a -g, 2,000 short processes)" >&2
    perf record -q -a -g -e cpu-clock -F 4000 -o "$fork" -- \
      sh -c 'i=0; while [ $i -lt 2000 ]; do /bin/true; sh -c ":"; i=$((i+2)); done' >/dev/null 2>&1
  fi
  files=("$out/callgraph.data" "$fork")
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="$out/script-results-$stamp.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exec > >(tee "$report") 2>&1

echo "# script_bench $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM; kernel $(uname -r)"
echo "# $(perf --version); tperf at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') (Release)"
if ((time_to_files)); then sink="files on $tmp"; else sink="/dev/null (then one run each into files for the comparison)"; fi
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); best of $runs run(s), timed with output to $sink; page cache: $([[ $settle == 1 ]] && echo settled || echo as found)"
echo "# CPU speed at start (a fixed loop pinned to each): $(cpu_speeds)"

summary=()
for f in "${files[@]}"; do
  [[ -e $f ]] || { echo "script_bench.sh: no such file $f" >&2; exit 1; }
  mb=$(awk -v b="$(du -sb "$f" | cut -f1)" 'BEGIN { printf "%.1f", b / 1048576 }')
  target=10
  [[ $(basename "$f") == forkheavy* ]] && target=5
  warm_cache "$f" "$settle"
  echo
  echo "## $(basename "$f"): $mb MiB"
  for fields in "${field_sets[@]}"; do
    args=()
    label="default fields"
    if [[ -n $fields ]]; then
      args=(-F "$fields")
      label="-F $fields"
    fi
    if ((time_to_files)); then
      measure "$tmp/perf.txt" perf script -i "$f" "${args[@]}"
      p_s=$best_s p_cpu=$best_cpu p_kb=$peak_kb
      measure "$tmp/tperf.txt" "$tperf" script -i "$f" "${args[@]}"
      t_s=$best_s t_cpu=$best_cpu t_kb=$peak_kb
    else
      measure /dev/null perf script -i "$f" "${args[@]}"
      p_s=$best_s p_cpu=$best_cpu p_kb=$peak_kb
      measure /dev/null "$tperf" script -i "$f" "${args[@]}"
      t_s=$best_s t_cpu=$best_cpu t_kb=$peak_kb
      perf script -i "$f" "${args[@]}" >"$tmp/perf.txt" 2>/dev/null || true
      "$tperf" script -i "$f" "${args[@]}" >"$tmp/tperf.txt" 2>/dev/null || true
    fi
    lines=$(wc -l <"$tmp/perf.txt")
    if cmp -s "$tmp/perf.txt" "$tmp/tperf.txt"; then
      same="identical ($lines lines)"
    else
      differing=$(diff "$tmp/perf.txt" "$tmp/tperf.txt" | grep -c '^<' || true)
      same="DIFFERENT: $differing of $lines lines; first: $(diff "$tmp/perf.txt" "$tmp/tperf.txt" | sed -n 2p | cut -c1-100 || true)"
    fi
    line=$(awk -v name="$(basename "$f")" -v label="$label" -v ps="$p_s" -v ts="$t_s" -v pc="$p_cpu" -v tc="$t_cpu" \
      -v pk="$p_kb" -v tk="$t_kb" -v target="$target" -v same="$same" 'BEGIN {
        if (ts < 0.01) ts = 0.01; if (tc < 0.01) tc = 0.01
        printf "%s, %s:\n", name, label
        printf "  perf  %8.2f s wall %8.2f s cpu %9.1f MiB peak RSS\n", ps, pc, pk / 1024
        printf "  tperf %8.2f s wall %8.2f s cpu %9.1f MiB peak RSS\n", ts, tc, tk / 1024
        printf "  perf / tperf: %.1fx wall, %.1fx cpu, %.1fx RSS; target >= %dx wall: %s\n", ps / ts, pc / tc, pk / (tk > 0 ? tk : 1), target, (ps / ts >= target ? "ok" : "MISSED")
        printf "  output: %s\n", same
      }')
    echo "$line"
    summary+=("$line")
  done
done

echo
echo "## summary"
printf '%s\n' "${summary[@]}"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU speed at end: $(cpu_speeds)"
echo "# written to $report"

#!/usr/bin/env bash
# Reads the same perf.data files with `cat`, `tperf stats`, `perf report --stats` and
# `perf report -D` and prints wall and CPU time, throughput and peak RSS (best of N runs from a
# warm page cache), then the ratios against the targets: tperf within 4x of cat, tperf peak RSS
# under 64 MiB, and how much faster than perf.
# Not part of CI (minutes of run time); run by hand from the repository root or anywhere:
#
#   bash bench/perfdata_bench.sh [--runs N] [--no-perf] [FILE...]
#
# Without FILE arguments it reads the recordings of bench/make_recordings.sh (made if missing).
# tperf is built in Release in build-bench/. Results are also written to bench/out/results-*.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$here/out"
runs=3
with_perf=1
files=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --no-perf) with_perf=0 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "perfdata_bench.sh: unknown option $1" >&2; exit 1 ;;
    *) files+=("$1") ;;
  esac
  shift
done

# GNU time gives peak RSS; bash's `time` keyword does not.
if [[ ! -x /usr/bin/time ]]; then
  echo "installing GNU time (apt-get install time)" >&2
  apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi
if [[ $with_perf -eq 1 ]] && ! command -v perf >/dev/null; then
  echo "perfdata_bench.sh: perf is not installed; use --no-perf or apt-get install linux-perf" >&2
  exit 1
fi

# `-g none`: without it perf report -D also builds its callchain tree, which for these deep, varied
# stacks took 4.7 GB RSS and 64 s on a 76 MB file (vs 175 MB and 28 s with it), and would exhaust
# 24 GB on the 500 MB one. The dump itself, callchains included, is the same either way.
# PERF_REPORT_EXTRA="" measures plain `perf report -D`.
read -r -a perf_report_extra <<<"${PERF_REPORT_EXTRA--g none}"

# shellcheck source=bench/lib.sh
source "$here/lib.sh"
bench_build "$root"

if [[ ${#files[@]} -eq 0 ]]; then
  bash "$here/make_recordings.sh"
  files=("$out/callgraph.data" "$out/callgraph-z.data")
fi
mkdir -p "$out"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="$out/results-$stamp.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Everything printed goes to the terminal and to the report file.
exec > >(tee "$report") 2>&1

echo "# perfdata_bench $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')
echo "# machine: $(nproc) CPUs, $cpu_model, $mem RAM"
echo "# kernel $(uname -r); $(perf --version 2>/dev/null || echo 'no perf'); tperf at $commit (Release)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU speed at start (a fixed loop pinned to each): $(cpu_speeds)"
echo "# perf command: perf report -D -i FILE ${perf_report_extra[*]}"
echo "# best of $runs runs after warming the page cache; RSS is the largest of the runs"

# measure LABEL CMD...: runs CMD $runs times with stdout to /dev/null; sets best_s (wall), best_cpu
# (user + system) and peak_kb. CPU time is shown beside wall time because on a shared machine the
# wall time includes waiting for a CPU.
measure() {
  local label="$1"
  shift
  best_s=""
  best_cpu=""
  peak_kb=0
  local i s kb u sy cpu rc
  for ((i = 0; i < runs; ++i)); do
    rc=0
    /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/stderr" || rc=$?
    # tperf stats exits 2 when it stepped over damage; the run still read the whole file.
    if [[ $rc -ne 0 && ! ($label == tperf && $rc -eq 2) ]]; then
      echo "!! $label failed (status $rc): $*" >&2
      tail -5 "$tmp/stderr" >&2
      best_s=NaN
      best_cpu=NaN
      return
    fi
    read -r s kb u sy < <(tail -1 "$tmp/time")
    cpu=$(awk -v u="$u" -v s="$sy" 'BEGIN { printf "%.2f", u + s }')
    if [[ -z $best_s ]] || awk -v a="$s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then best_s=$s; fi
    if [[ -z $best_cpu ]] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then best_cpu=$cpu; fi
    if ((kb > peak_kb)); then peak_kb=$kb; fi
  done
}

declare -A result_s result_kb result_cpu
summary=()

for f in "${files[@]}"; do
  [[ -e $f ]] || { echo "perfdata_bench.sh: no such file $f" >&2; exit 1; }
  bytes=$(du -sb "$f" | cut -f1)
  mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
  echo
  echo "## $(basename "$f"): $mb MiB ($bytes bytes)"
  stats=$("$tperf" stats "$f" 2>/dev/null || true)
  sed -n '2,5p' <<<"$stats" | grep -v '^#  *lost' | grep '^#' | sed 's/^#/#  /' || true
  # A -z file holds far more data than its size: cat only copies the zstd bytes while tperf and perf
  # unpack and decode all of them, so the 4x-of-cat target does not apply; MiB/s counts unpacked bytes.
  unpacked=$(sed -n 's/^# compressed: .* unpacked to \([0-9]*\) bytes$/\1/p' <<<"$stats")
  data_mb=$mb
  [[ -n $unpacked ]] && data_mb=$(awk -v b="$unpacked" 'BEGIN { printf "%.1f", b / 1048576 }')
  cat "$f" >/dev/null  # warm the page cache

  tools=(cat tperf)
  [[ $with_perf -eq 1 ]] && tools+=(perf-stats perf)
  rate='MiB/s'
  [[ -n $unpacked ]] && rate='unp. MiB/s'
  printf '%-10s %10s %10s %10s %12s\n' tool 'wall s' 'cpu s' "$rate" 'peak RSS MiB'
  for tool in "${tools[@]}"; do
    case $tool in
      cat) measure cat cat "$f" ;;
      tperf) measure tperf "$tperf" stats "$f" ;;
      perf-stats) measure perf perf report --stats -i "$f" ;;
      perf) measure perf perf report -D -i "$f" "${perf_report_extra[@]}" ;;
    esac
    result_s[$tool]=$best_s
    result_kb[$tool]=$peak_kb
    result_cpu[$tool]=$best_cpu
    tool_mb=$data_mb
    [[ $tool == cat ]] && tool_mb=$mb
    awk -v t="$tool" -v s="$best_s" -v cpu="$best_cpu" -v kb="$peak_kb" -v mb="$tool_mb" 'BEGIN {
      printf "%-10s %10.2f %10.2f %10s %12.1f\n", t, s, cpu, (s > 0 ? sprintf("%.0f", mb / s) : "inf"), kb / 1024
    }'
  done

  # Times are in 10 ms steps; a run that rounds to 0 is counted as 10 ms so ratios stay finite.
  line=$(awk -v c="${result_s[cat]}" -v t="${result_s[tperf]}" -v kb="${result_kb[tperf]}" \
    -v p="${result_s[perf]:-}" -v ps="${result_s[perf-stats]:-}" \
    -v cc="${result_cpu[cat]}" -v tc="${result_cpu[tperf]}" \
    -v pc="${result_cpu[perf]:-}" -v psc="${result_cpu[perf-stats]:-}" \
    -v name="$(basename "$f")" -v z="${unpacked:+1}" '
    function both(a, b) { return sprintf("%7.2fx wall %7.2fx cpu", a, b) }
    BEGIN {
      if (c < 0.01) c = 0.01; if (t < 0.01) t = 0.01; if (cc < 0.01) cc = 0.01; if (tc < 0.01) tc = 0.01
      rss = kb / 1024
      printf "%s\n", name
      if (z) {
        printf "  %-22s n/a (compressed: cat copies %s)\n", "tperf / cat", "only the zstd bytes"
      } else {
        printf "  %-22s %s   target <= 4x: %s\n", "tperf / cat", both(t / c, tc / cc), t / c <= 4 ? "ok" : "MISSED"
      }
      printf "  %-22s %7.1f MiB%18s target < 64 MiB: %s\n", "tperf peak RSS", rss, "", rss < 64 ? "ok" : "MISSED"
      if (p != "" && p != "NaN") printf "  %-22s %s\n", "perf report -D / tperf", both(p / t, pc / tc)
      if (ps != "" && ps != "NaN") printf "  %-22s %s\n", "perf --stats / tperf", both(ps / t, psc / tc)
    }')
  summary+=("$line")
done

echo
echo "## ratios"
printf '%s\n' "${summary[@]}"
echo
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU speed at end: $(cpu_speeds)"
echo "# written to $report"

#!/usr/bin/env bash
# Symbolization speed: `tperf script -F +srcline` against `perf script -F +srcline` (perf 6.1
# forks binutils addr2line for every source line) on one recording of a large generated C++
# program with debug info (-O2 -g, a few thousand template instances in deep call chains).
# Prints wall time and peak RSS of each side (best of N runs) and the ratios, and checks that the
# two outputs are the same for the program's own frames. Not part of CI; run by hand:
#
#   bash bench/symbols_bench.sh [--runs N] [--functions N] [--seconds S]
#
# Files go to bench/out/symbols/ and are reused. tperf is built in Release in build-bench/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$here/out/symbols"
runs=3
functions=3000
seconds=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --functions) functions="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "symbols_bench.sh: unknown argument $1" >&2; exit 1 ;;
  esac
  shift
done
mkdir -p "$out"

cmake -S "$root" -B "$root/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPERF_TESTS=OFF >/dev/null
ninja -C "$root/build-bench" tperf >/dev/null
tperf="$root/build-bench/tperf"

# A large C++ program: $functions template instances, each calling the next through a table so
# that stacks are deep and samples spread over many functions, lines and inlined helpers.
src="$out/big_$functions.cpp"
bin="$out/big_$functions"
if [[ ! -x "$bin" ]]; then
  {
    echo '#include <cstdlib>'
    echo 'volatile unsigned long sink;'
    echo 'using Fn = unsigned long (*)(unsigned long, int);'
    echo "extern Fn table[$functions];"
    echo 'template <int N> struct Stage {'
    echo '  static inline unsigned long mix(unsigned long x) { return (x * (N + 3)) ^ (x >> (N % 7 + 1)); }'
    echo '  __attribute__((noinline)) static unsigned long run(unsigned long x, int depth) {'
    echo '    for (int i = 0; i < 64; i++) x = mix(x + i);'
    echo "    if (depth > 0) x += table[(x + N) % $functions](x, depth - 1);"
    echo '    sink += x;'
    echo '    return x;'
    echo '  }'
    echo '};'
    echo "Fn table[$functions] = {"
    for ((i = 0; i < functions; i++)); do echo "  &Stage<$i>::run,"; done
    echo '};'
    echo 'int main(int argc, char** argv) {'
    echo '  unsigned long n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000000;'
    echo '  unsigned long x = 1;'
    echo "  for (unsigned long i = 0; i < n; i++) x += table[i % $functions](x, 20);"
    echo '  return static_cast<int>(x & 1);'
    echo '}'
  } > "$src"
  echo "building $bin ($functions functions)..." >&2
  g++ -O2 -g -fno-omit-frame-pointer -ftemplate-depth=100000 -o "$bin" "$src"
fi
data="$out/big_$functions.data"
if [[ ! -s "$data" ]]; then
  perf record -q -N -e cpu-clock -F 4000 -g -o "$data" -- timeout -s INT "$seconds" "$bin" 1000000000 || true
fi

measure() {  # label, command...: best wall seconds and max RSS KiB over $runs runs
  local best_wall="" best_rss=""
  shift
  for ((r = 0; r < runs; r++)); do
    /usr/bin/time -f '%e %M' -o "$out/time.txt" "$@" > /dev/null 2>&1 || true
    read -r wall rss < <(tail -1 "$out/time.txt")
    if [[ -z "$best_wall" ]] || awk "BEGIN{exit !($wall < $best_wall)}"; then best_wall=$wall; fi
    if [[ -z "$best_rss" ]] || (( rss < best_rss )); then best_rss=$rss; fi
  done
  echo "$best_wall $best_rss"
}

echo "recording: $data ($(du -h "$data" | cut -f1)), $(perf script -i "$data" -F ip 2>/dev/null | grep -c . || true) lines of frames" >&2
read -r t_wall t_rss < <(measure tperf "$tperf" script -i "$data" -F +srcline)
read -r p_wall p_rss < <(measure perf perf script -i "$data" -F +srcline)

# Same output: every frame line and srcline, glibc's included (its DWARF 5 line tables are read
# as binutils' addr2line reads them), and for the program's own frames alone.
"$tperf" script -i "$data" -F +srcline 2>/dev/null > "$out/tperf-all.txt" || true
perf script -i "$data" -F +srcline 2>/dev/null > "$out/perf-all.txt" || true
grep -A1 "(${bin})\$" "$out/tperf-all.txt" | grep -v '^--' > "$out/tperf.txt" || true
grep -A1 "(${bin})\$" "$out/perf-all.txt" | grep -v '^--' > "$out/perf.txt" || true
same_as() { if cmp -s "$1" "$2"; then echo "same"; else echo "DIFFERENT ($(diff "$1" "$2" | grep -c '^<') lines)"; fi; }
same=$(same_as "$out/perf.txt" "$out/tperf.txt")
same_all=$(same_as "$out/perf-all.txt" "$out/tperf-all.txt")

printf '%-6s %10s %12s\n' "" "wall s" "peak RSS KiB"
printf '%-6s %10s %12s\n' tperf "$t_wall" "$t_rss"
printf '%-6s %10s %12s\n' perf "$p_wall" "$p_rss"
awk -v tw="$t_wall" -v pw="$p_wall" -v tr="$t_rss" -v pr="$p_rss" \
  'BEGIN { printf "perf/tperf: wall %.1fx (target >= 20x), RSS %.1fx\n", pw / (tw > 0 ? tw : 0.001), pr / tr }'
echo "output for the program's frames: $same ($(wc -l < "$out/perf.txt") lines)"
echo "whole output: $same_all ($(wc -l < "$out/perf-all.txt") lines)"

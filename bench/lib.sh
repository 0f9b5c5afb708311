# Shared by the bench/*_bench.sh scripts (sourced, not run): tools, the Release build of tperf,
# and side-by-side timing with GNU time.

# bench_tools NAME: GNU time (for peak RSS; bash's `time` has none) and perf, or exit.
bench_tools() {
  if [[ ! -x /usr/bin/time ]]; then
    echo "installing GNU time (apt-get install time)" >&2
    apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
  fi
  command -v perf >/dev/null || { echo "$1: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
}

# warm_cache FILE SETTLE: reads FILE into the page cache before it is timed. SETTLE=1 first drops
# its cached pages (dd iflag=nocache), so the cache is refilled by readahead: how much a walk
# through a mapping of the file costs depends on how its pages came into the cache. Pages a
# program wrote (a recording perf just made, a copy) come in small folios, and mapping them
# takes a page-table change per 4 KiB page; readahead makes large folios, mapped a few at a
# time. On this kind of VM, where every page-table change traps to the hypervisor, touching the
# dwarf recipe's 300 MB file page by page through a mapping took 0.18 s when it had just been
# written and 0.09 s once settled (1 GB fp: 0.81 s and 0.27 s); reading it with pread took 0.04 s
# and 0.02 s. perf and tperf both map their input, so both gain from a settled cache, unequally.
warm_cache() {
  if [[ $2 == 1 ]]; then
    dd if="$1" iflag=nocache count=0 status=none
  fi
  cat "$1" >/dev/null
}

# bench_build ROOT: builds tperf in Release in ROOT/build-bench and sets $tperf.
bench_build() {
  local build="$1/build-bench"
  cmake -S "$1" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPERF_TESTS=OFF >/dev/null
  ninja -C "$build" tperf >/dev/null
  tperf="$build/tperf"
}

# measure OUTFILE CMD...: runs CMD $runs times (stdout to OUTFILE, stderr to $tmp/stderr); sets
# best_s (wall seconds) and best_cpu (user + system) to the best run and peak_kb to the largest
# peak RSS. Needs $runs and $tmp.
measure() {
  local outfile="$1"
  shift
  best_s=""
  best_cpu=""
  peak_kb=0
  local i s kb u sy cpu
  for ((i = 0; i < runs; ++i)); do
    if ! /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "$@" >"$outfile" 2>"$tmp/stderr"; then
      echo "!! failed: $*" >&2
      tail -3 "$tmp/stderr" >&2
    fi
    read -r s kb u sy < <(tail -1 "$tmp/time")
    cpu=$(awk -v u="$u" -v s="$sy" 'BEGIN { printf "%.2f", u + s }')
    if [[ -z $best_s ]] || awk -v a="$s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then best_s=$s; fi
    if [[ -z $best_cpu ]] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then best_cpu=$cpu; fi
    if ((kb > peak_kb)); then peak_kb=$kb; fi
  done
}

# cpu_speeds: one line with the time a fixed shell loop takes pinned to each CPU, and the
# slowest against the fastest. On this project's 2-vCPU VMs the host runs other guests, and one
# vCPU was at times 1.5x slower than the other for minutes (report -j 1 on the fp recipe: 1.35 s
# pinned to CPU 0, 2.15 s pinned to CPU 1, run after run): a thread's speed, and a -j 2 run's
# pace, then depend on which CPU it landed on. Printed at the start and end of a run, so that a
# row is read with the state of the host it was measured in.
cpu_speeds() {
  local c s line="" fastest="" slowest=""
  for ((c = 0; c < $(nproc); ++c)); do
    s=$( { /usr/bin/time -f '%e' taskset -c "$c" bash -c 'i=0; while ((i < 400000)); do ((i++)); done' ; } 2>&1 | tail -1)
    line+=" cpu$c ${s} s"
    if [[ -z $fastest ]] || awk -v a="$s" -v b="$fastest" 'BEGIN { exit !(a < b) }'; then fastest=$s; fi
    if [[ -z $slowest ]] || awk -v a="$s" -v b="$slowest" 'BEGIN { exit !(a > b) }'; then slowest=$s; fi
  done
  echo "${line# } (slowest/fastest $(awk -v a="$slowest" -v b="$fastest" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'))"
}

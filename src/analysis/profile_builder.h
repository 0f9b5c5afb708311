// Builds the stack table (analysis::Profile) of a perf.data file on the shared sample path:
// reader -> ordered events -> Machine -> each distinct raw stack resolved once (maps, symbols,
// inline frames of unwound frames, srclines on request) -> counts per (thread, event, stack).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/profile.h"
#include "analysis/unwind_stats.h"
#include "symbols/symbolizer.h"

namespace tperf::analysis {

struct ProfileOptions {
  bool timed_samples = false;  // keep every sample with its time (Firefox Profiler, speedscope, timelines)
  bool srclines = false;       // file and line of every frame from DWARF (costs lookups)
  bool inline_frames = true;   // frames unwound from --call-graph dwarf stack copies expand into
                               // the functions inlined there, as perf report shows them
  std::vector<int32_t> pids;   // only these processes (empty: all)
  std::vector<int32_t> tids;   // only these threads (empty: all)
  // Off-CPU time instead of samples: each sched_switch switch-out weighs the nanoseconds its
  // thread stayed switched out (analysis/off_cpu.h; the input is read twice, a stream
  // kept in a temporary file for that), perf's
  // offcpu-time samples their period; other events are left out.
  bool off_cpu = false;
  // Wall-clock time: off_cpu, plus the samples of the events whose period is time (cpu-clock,
  // task-clock) counted in the off-CPU event, renamed "wall-clock (<event> + on-CPU time)".
  bool wall_clock = false;
  // Profile::thread_states: each thread's off-CPU stretches, runnable or sleeping, when the file
  // has sched_switch samples (one more pass over the file, which must not be a pipe; a pipe or
  // a file without them leaves has_thread_states false).
  bool thread_states = false;
  symbols::SymbolizerOptions symbols;
};

// Reads the file at `path` ("-": standard input) and returns its stack table. Throws
// perfdata::FormatError (with the file offset) when the file cannot be opened or followed; a
// record that cannot be decoded is skipped and named in Profile::problems. `unwind_stats`, when
// given, receives what tperf report's unwinding quality block is printed from
// (output::print_unwind_summary); the caller may put that text into Profile::unwind_summary.
Profile build_profile(const std::string& path, const ProfileOptions& options, UnwindStats* unwind_stats = nullptr);

}  // namespace tperf::analysis

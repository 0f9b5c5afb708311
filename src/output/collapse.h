// Folded stacks ("comm;outer;...;leaf COUNT" lines) as `perf script | stackcollapse-perf.pl`
// prints them, written straight from the stack table instead of through perf script's text.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "analysis/profile.h"

namespace tperf::output {

struct CollapseOptions {
  bool include_pid = false;  // stackcollapse --pid: "comm-PID"
  bool include_tid = false;  // stackcollapse --tid: "comm-PID/TID"
  bool period = false;       // sum the periods (what current stackcollapse-perf.pl does when perf
                             // script prints the period) instead of counting samples
  bool annotate_kernel = false;  // --kernel: "_[k]" after kernel functions
  bool annotate_jit = false;     // --jit: "_[j]" after functions of /tmp/perf-PID.map
  bool addrs = false;            // --addrs: "[dso <address>]" for frames without a symbol
  // Only samples of this event ("cpu-clock:u" as perf names it). Empty: the first event seen,
  // as stackcollapse-perf.pl keeps only the first event type it meets.
  std::string event;
};

struct CollapsedStacks {
  std::vector<std::pair<std::string, uint64_t>> lines;  // sorted as perl's `sort { $a cmp $b }`
  uint32_t event = analysis::kNoIndex;  // the event shown (kNoIndex: the profile has no samples)
  bool other_events = false;            // samples of other events were left out
};

// The folded stacks of `profile`. `error` is set (and nothing returned) when options.event
// names no event of the profile.
CollapsedStacks collapse_stacks(const analysis::Profile& profile, const CollapseOptions& options,
                                std::string* error);

// One frame's names as stackcollapse-perf.pl derives them from the "sym (dso)" of a perf script
// callchain line: usually one, none for a name in parentheses, several when the name holds
// "->". `pname` is the stack's process part (its Java tidying depends on it); `pc` the address
// as perf script prints it. Exposed for the tests.
std::vector<std::string> stackcollapse_frame_names(const std::string& sym, const std::string& dso, uint64_t pc,
                                                   const std::string& pname, const CollapseOptions& options);

void write_collapsed(std::FILE* out, const CollapsedStacks& stacks);

}  // namespace tperf::output

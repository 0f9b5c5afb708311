// The unwinding quality block of `tperf report`: '#' comment lines after the preamble that say
// how many stacks are whole, where and why the others stop, which DSOs gave no symbols, what
// was lost, and what to change when recording or reading to do better.
#pragma once

#include <cstdio>
#include <string>

#include "analysis/unwind_stats.h"

namespace tperf::output {

// `dwarf_unwound`: whether the report unwound the user stack copies (tperf does not yet; the
// block then says that their user frames are missing).
void print_unwind_summary(std::FILE* out, const analysis::UnwindStats& stats, bool dwarf_unwound = false);
// The same block as text (for the exports and the flame page: Profile::unwind_summary).
std::string unwind_summary_text(const analysis::UnwindStats& stats, bool dwarf_unwound = true);

}  // namespace tperf::output

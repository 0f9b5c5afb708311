// `perf report --stdio` text (perf 6.1 layout): the preamble, one section per event with its
// "# Samples"/"# Event count" lines, the column header sized to the widest value, and one row
// per hist entry (Children/Self or Overhead, Samples, Period, then the sort keys).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/hist.h"

namespace tperf::output {

struct ReportColumns {
  bool children = false;      // Children and Self instead of Overhead
  bool show_samples = false;  // -n
  bool show_period = false;   // --show-total-period
  double percent_limit = 0;   // --percent-limit: rows below are not printed
  bool graph = false;         // draw each entry's callchain tree (-g graph)
  bool folded = false;        // ... as folded lines instead (-g folded)
  bool flat = false;          // ... as flat chains instead (-g flat)
  bool fractal = false;       // -g fractal: graph percentages of the parent branch
  double graph_min_percent = 0.5;  // -g graph,THRESHOLD
  // Columns perf leaves out because a single-value filter fixes them (--comm X, --dso X).
  bool elide_comm = false;
  bool elide_dso = false;
  bool elide_sym = false;   // -S X
  // --percentage relative: the "# Samples"/"# Event count" lines and every percentage are of the
  // samples the filters kept, not of all.
  bool relative = false;
  std::string time_slices;  // --time as given, which perf names in each "# Samples" line
};

// The current comm of a thread (the Pid:Command column), nullptr when unknown.
using ThreadCommFn = std::function<const std::string*(int32_t tid)>;

// The first lines alone: all perf prints when no sample is left to show.
void print_report_header_hint(std::FILE* out);

// "# To display the perf.data header info...", the filter lines ("# comm: NAME" for a single
// --comm, "# dso: NAME" for a single --dso) and the lost-samples block.
void print_report_preamble(std::FILE* out, uint64_t lost_samples, const std::vector<std::string>& filter_lines = {});

// One event's section. `nr_samples` and `total_period` are the event's totals (the percentages'
// base); the hist may hold fewer samples when filters dropped some.
void print_report_section(std::FILE* out, std::string_view event_name, uint64_t nr_samples, uint64_t total_period,
                          const analysis::Hist& hist, const ReportColumns& columns, const ThreadCommFn& thread_comm);

// perf's sample count in the section line: 1K for 1,001..999,999, 3 followed by a space for 3.
std::string abbreviated_count(uint64_t n);

}  // namespace tperf::output

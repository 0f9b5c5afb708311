// `perf report --stdio` in branch mode (perf 6.1 layout): one section per event, each row one
// branch (source, target, flags) with its share of all branches.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string_view>

#include "analysis/branch_hist.h"
#include "output/report_format.h"

namespace tperf::output {

struct BranchReportColumns {
  bool show_samples = false;  // -n
  bool show_period = false;   // --show-total-period
  double percent_limit = 0;   // --percent-limit
  bool quiet = false;         // -q
};

// One event's section: "# Samples" (branches) and "# Event count" lines, the column header, the
// rows. Percentages are of `total_period` (one per branch).
void print_branch_report_section(std::FILE* out, std::string_view event_name, uint64_t nr_samples,
                                 uint64_t total_period, const analysis::BranchHist& hist,
                                 const BranchReportColumns& columns, const ThreadCommFn& thread_comm);

// perf's "# Branch Statistics:" block (after every section; nothing when no branch had a type).
void print_branch_type_stats(std::FILE* out, const analysis::BranchTypeStats& stats);

// The cells as perf prints them: a branch end's symbol ("[k] name", "[.] 0x...") and, for
// addr_from/addr_to, its symbol and offset ("[.] main+0x12"; `level` is the sample's).
std::string branch_sym_text(const analysis::BranchSide& side);
std::string branch_addr_text(const analysis::BranchSide& side, char level, size_t width);

}  // namespace tperf::output

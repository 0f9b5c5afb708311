// perf report --mem-mode --stdio: one event's section of memory samples by the memory sort keys
// (analysis/mem_sort.h), with perf 6.1's columns, widths and header lines.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "analysis/mem_sort.h"

namespace tperf::output {

struct MemReportOptions {
  bool show_samples = false;  // -n
  bool quiet = false;         // -q: no '#' lines
  std::string sort_order;     // the "# Sort order" line
  bool plain = false;         // a plain report: "# Event count" instead of weight and sort order
};

void print_mem_report_section(std::FILE* out, std::string_view event_name, const analysis::MemHist& hist,
                              const MemReportOptions& options);

}  // namespace tperf::output

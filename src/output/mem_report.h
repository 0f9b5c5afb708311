// perf report --mem-mode --stdio: one event's section of memory samples by the memory sort keys
// (analysis/mem_sort.h), with perf 6.1's columns, widths and header lines.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/mem_sort.h"

namespace tperf::output {

// A column after Overhead: a value or a key.
struct MemColumn {
  enum class Kind : uint8_t { kSamples, kPeriod, kKey };
  Kind kind = Kind::kKey;
  analysis::MemKey key = analysis::MemKey::kMem;
};

struct MemReportOptions {
  bool show_samples = false;  // -n
  // -F: the columns after Overhead in this order; empty: [Samples with -n,] the hist's keys.
  std::vector<MemColumn> columns;
  bool quiet = false;         // -q: no '#' lines
  std::string sort_order;     // the "# Sort order" line
  bool plain = false;         // a plain report: "# Event count" instead of weight and sort order
};

void print_mem_report_section(std::FILE* out, std::string_view event_name, const analysis::MemHist& hist,
                              const MemReportOptions& options);

}  // namespace tperf::output

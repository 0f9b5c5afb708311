// `tperf report --mem-mode`: memory samples by perf's memory sort keys (see analysis/mem_sort.h).
#pragma once

#include <string>

namespace tperf::symbols {
struct SymbolizerOptions;
}

namespace tperf::cli {

struct MemReportCliOptions {
  std::string path;
  std::string sort;  // --sort ("" = perf's --mem-mode order)
  std::string fields;  // -F: overhead first, then sample, period and keys (the keys, without --sort)
  bool show_samples = false;
  bool quiet = false;
  // Not --mem-mode: a plain report whose --sort has weight keys; entries weigh their samples'
  // periods and the section says its event count.
  bool plain = false;
  unsigned jobs = 0;  // -j
  bool hint_replaced = false;  // --header/-I printed what takes the place of perf's hint line
};

int run_mem_report(const MemReportCliOptions& cli, const symbols::SymbolizerOptions& so);

}  // namespace tperf::cli

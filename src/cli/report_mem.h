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
  bool show_samples = false;
  bool quiet = false;
};

int run_mem_report(const MemReportCliOptions& cli, const symbols::SymbolizerOptions& so);

}  // namespace tperf::cli

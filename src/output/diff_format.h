// `perf diff` text (perf 6.1 layout): per baseline event an "# Event" line, with more than two
// files the "# Data files" block, the column header (Baseline, then one computed column per
// other file, then the sort keys) and one row per paired or unpaired entry.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/diff.h"
#include "analysis/hist.h"

namespace tperf::output {

// The current comm of thread `tid` in file `file` (0 = baseline), nullptr when unknown.
using DiffThreadCommFn = std::function<const std::string*(size_t file, int32_t tid)>;

struct DiffSection {
  std::string_view event_name;
  bool first = true;                      // the first section has no blank line before it
  std::vector<std::string> paths;         // all files, the baseline first
  std::vector<analysis::SortKey> keys;
  analysis::DiffCompute compute = analysis::DiffCompute::kDeltaAbs;
};

void print_diff_section(std::FILE* out, const DiffSection& section, const analysis::Diff& diff,
                        const DiffThreadCommFn& thread_comm);

}  // namespace tperf::output

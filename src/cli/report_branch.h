// `tperf report` in perf's branch mode (files whose samples carry branch stacks): the wiring of
// the sample path to analysis::BranchHist and output::print_branch_report_section.
#pragma once

#include <string>

#include "cli/commands.h"

namespace tperf::cli {

struct BranchReportOptions {
  std::string path;
  std::string sort;  // "" = perf's default branch keys
  bool show_samples = false;
  bool show_period = false;
  double percent_limit = 0;
  bool quiet = false;
  bool mem_stats = false;
  SymbolCliOptions symbols;
  // An option of the plain report given that branch mode does not take yet ("" = none): branch
  // mode then refuses to run, naming it.
  std::string unsupported;
  // -g as given. perf's branch mode draws no graphs: it takes any -g on a file with callchains,
  // and on one without only "none" (else it stops, as the plain report does).
  std::string callchain;
  unsigned jobs = 0;  // -j
  bool hint_replaced = false;  // --header/-I printed what takes the place of perf's hint line
};

// perf 6.1 reports in branch mode with -b (`branch_stack`) and, unless --no-branch-stack, when
// the file's header says its samples have branch stacks and they hold no user stack copies (a
// pipe's header cannot say so: perf gives the plain report there). Runs that report and returns
// true with its exit status in `status`, or returns false for the plain report.
bool run_branch_report_if_applies(const BranchReportOptions& options, bool branch_stack, bool no_branch_stack,
                                  int* status);

}  // namespace tperf::cli

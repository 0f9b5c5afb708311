#include "cli/report_branch.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "analysis/branch_hist.h"
#include "analysis/report_builder.h"
#include "analysis/sample_path.h"
#include "output/branch_report.h"
#include "output/report_format.h"
#include "output/script_format.h"
#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"
#include "util/spool.h"

namespace tperf::cli {

namespace {

int fail(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "tperf report: {}\n", message);
  return 2;
}

int run_branch_report(const BranchReportOptions& cli, std::unique_ptr<perfdata::Reader> reader) {
  std::vector<analysis::BranchSortKey> keys;
  if (auto err = analysis::parse_branch_sort_keys(cli.sort.empty() ? analysis::kDefaultBranchSort : cli.sort, &keys);
      !err.empty()) {
    return fail(err);
  }
  const std::unique_ptr<session::Machine> machine_owner = analysis::make_report_machine(*reader);
  session::Machine& machine = *machine_owner;
  symbols::SymbolizerOptions so;
  cli.symbols.apply_to(&so);
  symbols::Symbolizer symbolizer(machine, so);
  analysis::SymbolPreloader preloader(machine, symbolizer);

  analysis::BranchHists built = analysis::build_branch_hists(*reader, machine, symbolizer, preloader, keys, cli.jobs);
  const auto& hists = built.hists;
  const analysis::BranchTypeStats& type_stats = built.type_stats;
  const analysis::ReplayResult& replayed = built.replayed;

  auto thread_comm = [&](int32_t tid) -> const std::string* {
    const session::Thread* t = machine.find_thread(tid);
    return t ? t->comm() : nullptr;
  };
  const bool any = std::any_of(hists.begin(), hists.end(), [](const auto& h) { return h->total_samples() > 0; });
  if (!any) {
    if (!cli.hint_replaced) output::print_report_header_hint(stdout);
    std::fflush(stdout);
    fmt::print(stderr, "Error:\nThe {} data has no samples!\n", cli.path);
  } else if (!cli.quiet) {
    output::print_report_preamble(stdout, replayed.lost_samples, {}, !cli.hint_replaced);
  }
  output::BranchReportColumns columns;
  columns.show_samples = cli.show_samples;
  columns.show_period = cli.show_period;
  columns.percent_limit = cli.percent_limit;
  columns.quiet = cli.quiet;
  for (size_t i = 0; i < hists.size() && i < reader->attrs().size(); ++i) {
    const analysis::BranchHist& h = *hists[i];
    if (h.total_samples() == 0) continue;
    output::print_branch_report_section(stdout, output::script_event_name(reader->attrs()[i]), h.total_samples(),
                                        h.total_period(), h, columns, thread_comm);
  }
  if (any) output::print_branch_type_stats(stdout, type_stats);
  std::fflush(stdout);
  preloader.wait();
  for (const auto& w : symbolizer.take_warnings()) {
    if (!cli.quiet) fmt::print(stderr, "tperf report: warning: {}\n", w);
  }
  if (cli.mem_stats) print_mem_stats("report", machine);
  int status = report_reader_problems("report", *reader);
  for (const auto& p : replayed.problems) {
    fmt::print(stderr, "tperf report: {}: {}\n", reader->path(), p);
    status = 2;
  }
  return status;
}

}  // namespace

bool run_branch_report_if_applies(const BranchReportOptions& options, bool branch_stack, bool no_branch_stack,
                                  int* status) {
  if (no_branch_stack && !branch_stack) return false;
  // Standard input or a FIFO can be read once: only -b decides before reading them (and they
  // hold pipe-mode data, whose header never selects branch mode).
  if (!util::rereadable_input(options.path) && !branch_stack) return false;
  std::unique_ptr<perfdata::Reader> reader;
  try {
    reader = perfdata::Reader::open(options.path);
  } catch (const std::exception&) {
    // Not a file tperf can read: the plain report checks its options, then says what is wrong.
    if (!branch_stack) return false;
    throw;
  }
  bool with_branches = false, with_user_stacks = false, with_chains = false;
  for (const perfdata::EventAttr& a : reader->attrs()) {
    with_branches |= (a.attr.sample_type & perfdata::kSampleBranchStack) != 0;
    with_user_stacks |= (a.attr.sample_type & perfdata::kSampleStackUser) != 0;
    with_chains |= (a.attr.sample_type & perfdata::kSampleCallchain) != 0;
  }
  if (!branch_stack) {
    // perf refuses a file whose header names branch stacks its events do not have; its plain
    // report is what can be shown.
    if (reader->is_pipe() || !reader->features().has(perfdata::kFeatBranchStack) || with_user_stacks || !with_branches) {
      return false;
    }
  } else if (!reader->is_pipe() && !with_branches) {
    *status = fail(fmt::format("{}: -b/--branch-stack: the samples have no branch stacks (record with -b or -j)",
                               options.path));
    return true;
  }
  if (!options.unsupported.empty()) {
    *status = fail(fmt::format("{}: {} is not done in branch mode yet (the samples have branch stacks); "
                               "--no-branch-stack gives the plain report",
                               options.path, options.unsupported));
    return true;
  }
  if (!options.callchain.empty() && !options.callchain.starts_with("none") && !with_chains) {
    *status = fail(fmt::format("{}: -g {}: the file has no callchains (record with -g or --call-graph)", options.path,
                               options.callchain));
    return true;
  }
  *status = run_branch_report(options, std::move(reader));
  return true;
}

}  // namespace tperf::cli

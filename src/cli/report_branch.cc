#include "cli/report_branch.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "analysis/branch_hist.h"
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

// perf resolves a branch address in the thread's maps, then the kernel's (the sample's cpumode
// says nothing of where a branch went); an address neither has gets level 'H'.
analysis::BranchSide resolve_branch_end(const session::Machine& machine, symbols::Symbolizer& symbolizer,
                                        const session::Thread& thread, uint64_t addr) {
  analysis::BranchSide side;
  side.addr = addr;
  for (uint8_t mode : {static_cast<uint8_t>(perfdata::kMiscUser), static_cast<uint8_t>(perfdata::kMiscKernel)}) {
    if (const session::Map* map = analysis::find_sample_map(machine, symbolizer, &thread, mode, addr)) {
      side.loc = analysis::locate(symbolizer, map, thread.pid(), mode, addr, false);
      return side;
    }
  }
  side.loc.level = 'H';
  side.loc.addr = addr;
  return side;
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

  std::vector<std::unique_ptr<analysis::BranchHist>> hists;  // by attr index
  analysis::BranchTypeStats type_stats;  // of every event, as perf keeps one
  perfdata::Sample sample;
  analysis::ReplayHandlers handlers;
  handlers.jobs = cli.jobs;
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
    const int ai = reader->attr_index_of(rec);
    if (ai < 0) return;
    reader->decode_sample(rec, sample);
    if (sample.branches.empty()) return;
    while (hists.size() <= static_cast<size_t>(ai)) hists.push_back(std::make_unique<analysis::BranchHist>(keys));
    analysis::BranchHist& hist = *hists[static_cast<size_t>(ai)];
    session::Thread& thread = machine.findnew_thread(static_cast<int32_t>(sample.pid), static_cast<int32_t>(sample.tid));
    const uint8_t cpumode = rec.misc & perfdata::kMiscCpumodeMask;
    // The sample's own keys (comm, thread, cpu, its level), as the plain report has them.
    const session::Map* map = analysis::find_sample_map(machine, symbolizer, &thread, cpumode, sample.ip);
    analysis::BranchHistEntry entry;
    entry.plain = analysis::sample_entry(machine, symbolizer, thread, sample, cpumode, map);
    for (const perfdata::BranchEntry& b : sample.branches) {
      entry.from = resolve_branch_end(machine, symbolizer, thread, b.from);
      entry.to = resolve_branch_end(machine, symbolizer, thread, b.to);
      entry.flags.bits = b.flags;
      // The plain dso/sym keys see the branch's target, by its raw address, at the sample's level.
      entry.plain.loc.dso = entry.to.loc.dso;
      entry.plain.loc.sym = entry.to.loc.sym;
      entry.plain.loc.sym_start = entry.to.loc.sym_start;
      entry.plain.loc.addr = b.to;
      entry.plain.first_addr = b.to;
      entry.plain.unresolved = !entry.to.loc.sym;
      type_stats.count(hist.add(entry));
    }
  };
  analysis::ReplayResult replayed = analysis::replay(*reader, machine, symbolizer, &preloader, handlers);

  auto thread_comm = [&](int32_t tid) -> const std::string* {
    const session::Thread* t = machine.find_thread(tid);
    return t ? t->comm() : nullptr;
  };
  const bool any = std::any_of(hists.begin(), hists.end(), [](const auto& h) { return h->total_samples() > 0; });
  if (!any) {
    output::print_report_header_hint(stdout);
    std::fflush(stdout);
    fmt::print(stderr, "Error:\nThe {} data has no samples!\n", cli.path);
  } else if (!cli.quiet) {
    output::print_report_preamble(stdout, replayed.lost_samples);
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
  bool with_branches = false, with_user_stacks = false;
  for (const perfdata::EventAttr& a : reader->attrs()) {
    with_branches |= (a.attr.sample_type & perfdata::kSampleBranchStack) != 0;
    with_user_stacks |= (a.attr.sample_type & perfdata::kSampleStackUser) != 0;
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
  *status = run_branch_report(options, std::move(reader));
  return true;
}

}  // namespace tperf::cli

#include "cli/report_mem.h"

#include <fmt/format.h>

#include <vector>

#include "analysis/mem_sort.h"
#include "analysis/report_builder.h"
#include "analysis/sample_path.h"
#include "cli/commands.h"
#include "output/mem_report.h"
#include "output/report_format.h"
#include "output/script_format.h"
#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "perfdata/sample.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"
#include "util/text.h"

namespace tperf::cli {

int run_mem_report(const MemReportCliOptions& cli, const symbols::SymbolizerOptions& so) {
  std::string sort_order = cli.sort.empty() ? analysis::kMemModeSortOrder : cli.sort;
  if (cli.plain) sort_order = cli.sort;
  // perf adds its (empty, without branch stacks) IPC column to a --sort that names "symbol".
  if (!cli.sort.empty() && cli.sort.find("symbol") != std::string::npos) sort_order += ",ipc_null";
  std::vector<analysis::MemKey> keys;
  if (auto bad = analysis::parse_mem_sort_keys(sort_order, &keys); !bad.empty()) {
    fmt::print(stderr, "tperf report: --mem-mode: unknown --sort key '{}'\n", bad);
    return 2;
  }
  // -F: its keys are the entries' keys, its order the columns'.
  std::vector<output::MemColumn> columns;
  if (!cli.fields.empty()) {
    if (!cli.sort.empty()) {
      fmt::print(stderr, "tperf report: --mem-mode: -F with --sort is not supported yet\n");
      return 2;
    }
    const std::vector<std::string> items = util::split_commas(cli.fields);
    if (items.empty() || items.front() != "overhead") {
      fmt::print(stderr, "tperf report: --mem-mode: -F must start with overhead (other orders are not supported yet)\n");
      return 2;
    }
    std::vector<analysis::MemKey> field_keys;
    for (size_t i = 1; i < items.size(); ++i) {
      if (items[i] == "sample") {
        columns.push_back({output::MemColumn::Kind::kSamples});
      } else if (items[i] == "period") {
        columns.push_back({output::MemColumn::Kind::kPeriod});
      } else {
        std::vector<analysis::MemKey> one;
        if (auto bad = analysis::parse_mem_sort_keys(items[i], &one); !bad.empty() || one.size() != 1) {
          fmt::print(stderr, "tperf report: Unknown --fields key: `{}'\n", items[i]);
          return 2;
        }
        columns.push_back({output::MemColumn::Kind::kKey, one[0]});
        field_keys.push_back(one[0]);
      }
    }
    keys = field_keys;
  }
  auto reader = perfdata::Reader::open(cli.path);
  // perf 6.1 refuses a file without data sources in --mem-mode (a pipe's events come later: it
  // reads those), with exit status 0.
  if (!cli.plain && !reader->is_pipe()) {
    bool data_src = false;
    for (const auto& ea : reader->attrs()) data_src = data_src || (ea.attr.sample_type & perfdata::kSampleDataSrc);
    if (!data_src) {
      std::fflush(stdout);
      fmt::print(stderr, "Error:\nSelected --mem-mode but no mem data. Did you call perf record without -d?\n");
      if (!cli.hint_replaced) output::print_report_header_hint(stdout);
      return 0;
    }
  }
  const std::unique_ptr<session::Machine> machine_owner = analysis::make_report_machine(*reader);
  session::Machine& machine = *machine_owner;
  symbols::Symbolizer symbolizer(machine, so);
  analysis::SymbolPreloader preloader(machine, symbolizer);
  const analysis::MemHists built = analysis::build_mem_hists(*reader, machine, symbolizer, preloader, keys, cli.plain, cli.jobs);
  const std::vector<analysis::MemHist>& hists = built.hists;
  const analysis::ReplayResult& replayed = built.replayed;
  const std::vector<std::string>& problems = replayed.problems;
  output::MemReportOptions mo;
  mo.show_samples = cli.show_samples;
  mo.columns = columns;
  mo.quiet = cli.quiet;
  mo.sort_order = sort_order;
  mo.plain = cli.plain;
  if (!cli.quiet) output::print_report_preamble(stdout, replayed.lost_samples, {}, !cli.hint_replaced);
  for (size_t i = 0; i < hists.size(); ++i) {
    if (hists[i].total_samples() == 0) continue;
    output::print_mem_report_section(stdout, output::script_event_name(reader->attrs()[i]), hists[i], mo);
  }
  // perf's closing tip block, which tperf leaves out, follows two empty lines.
  if (!hists.empty()) std::fputs("\n", stdout);
  std::fflush(stdout);
  int status = report_reader_problems("report", *reader);
  for (const auto& p : problems) {
    fmt::print(stderr, "tperf report: {}: {}\n", reader->path(), p);
    status = 2;
  }
  return status;
}

}  // namespace tperf::cli

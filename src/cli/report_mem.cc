#include "cli/report_mem.h"

#include <fmt/format.h>

#include <vector>

#include "analysis/mem_sort.h"
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

namespace {
// PERF_MEM_DATA_SRC_NONE: op, lvl, snoop, lock and dtlb NA.
constexpr uint64_t kDataSrcNone = 1 | 1ULL << 5 | 1ULL << 19 | 1ULL << 24 | 1ULL << 26;
}  // namespace

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
      output::print_report_header_hint(stdout);
      return 0;
    }
  }
  const std::unique_ptr<session::Machine> machine_owner = analysis::make_report_machine(*reader);
  session::Machine& machine = *machine_owner;
  symbols::Symbolizer symbolizer(machine, so);
  analysis::SymbolPreloader preloader(machine, symbolizer);
  std::vector<analysis::MemHist> hists;
  perfdata::Sample sample;
  analysis::ReplayHandlers handlers;
  handlers.jobs = cli.jobs;
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
    const int ai = reader->attr_index_of(rec);
    if (ai < 0) return;
    while (hists.size() < reader->attrs().size()) hists.emplace_back(keys);
    reader->decode_sample(rec, sample);
    session::Thread& thread = machine.findnew_thread(static_cast<int32_t>(sample.pid), static_cast<int32_t>(sample.tid));
    const uint8_t cpumode = rec.misc & perfdata::kMiscCpumodeMask;
    analysis::MemEntry e;
    const session::Map* map = analysis::find_sample_map(machine, symbolizer, &thread, cpumode, sample.ip);
    e.self = analysis::sample_entry(machine, symbolizer, thread, sample, cpumode, map);
    e.daddr = sample.addr;
    const session::Map* dmap = analysis::find_sample_map(machine, symbolizer, &thread, cpumode, sample.addr);
    e.data = analysis::locate(symbolizer, dmap, thread.pid(), cpumode, sample.addr, false);
    // A sample without DATA_SRC: perf's "none" value, every field N/A.
    e.data_src = sample.has(perfdata::kSampleDataSrc) ? sample.data_src : kDataSrcNone;
    // WEIGHT_STRUCT: weight (low 32 bits), instruction latency, pipeline stage cycles.
    if (sample.has(perfdata::kSampleWeightStruct)) {
      e.weight = sample.weight & 0xffffffffULL;
      e.ins_lat = (sample.weight >> 32) & 0xffff;
      e.p_stage_cyc = (sample.weight >> 48) & 0xffff;
    } else {
      e.weight = sample.weight;
    }
    const perfdata::PerfEventAttr& attr = reader->attrs()[static_cast<size_t>(ai)].attr;
    if (cli.plain) {
      e.period = sample.has(perfdata::kSamplePeriod) ? sample.period : attr.sample_period;
    } else {
      e.period = e.weight ? e.weight : 1;  // perf's mem mode: a sample costs its weight
    }
    hists[static_cast<size_t>(ai)].add(e);
  };
  const analysis::ReplayResult replayed = analysis::replay(*reader, machine, symbolizer, &preloader, handlers);
  const std::vector<std::string>& problems = replayed.problems;
  output::MemReportOptions mo;
  mo.show_samples = cli.show_samples;
  mo.columns = columns;
  mo.quiet = cli.quiet;
  mo.sort_order = sort_order;
  mo.plain = cli.plain;
  if (!cli.quiet) output::print_report_preamble(stdout, replayed.lost_samples);
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

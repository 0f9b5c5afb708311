// `tperf stats`: decodes every record and sample of a file and prints counts by record type
// (named as `perf report -D` names them), samples per event, lost records and the time span.
#include <fmt/format.h>

#include "analysis/record_census.h"
#include "cli/commands.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"

namespace tperf::cli {

namespace {

struct StatsOptions {
  InputOption input;
};

int run_stats(const StatsOptions& opt) {
  using namespace perfdata;
  auto reader = Reader::open(opt.input.get());
  const analysis::RecordCensus c = analysis::take_record_census(*reader, /*decode=*/true);
  const auto& st = reader->stats();
  fmt::print("# file: {} ({}{})\n", reader->path(),
             reader->is_directory() ? "directory" : reader->is_pipe() ? "pipe mode" : "file mode",
             reader->swapped() ? ", foreign byte order" : "");
  fmt::print("# records: {}, samples decoded: {}, callchain entries: {}\n", st.records,
             st.count(kRecordSample) - c.bad_samples - c.unattributed, c.callchain_frames);
  if (st.compressed_bytes) {
    fmt::print("# compressed: {} bytes unpacked to {} bytes\n", st.compressed_bytes, st.decompressed_bytes);
  }
  if (c.first_time <= c.last_time) {
    fmt::print("# time span: {}.{:06} .. {}.{:06} ({:.6f} s)\n", c.first_time / 1000000000,
               c.first_time % 1000000000 / 1000, c.last_time / 1000000000, c.last_time % 1000000000 / 1000,
               (c.last_time - c.first_time) / 1e9);
  }
  fmt::print("# lost: {} events in {} LOST records, {} samples in {} LOST_SAMPLES records\n", c.lost_events,
             st.count(kRecordLost), c.lost_samples, st.count(kRecordLostSamples));
  if (c.bad_samples) fmt::print("# malformed samples: {}\n", c.bad_samples);
  if (c.unattributed) fmt::print("# samples with an unknown event id: {}\n", c.unattributed);
  fmt::print("Aggregated stats:\n");
  fmt::print("{:>20} events: {:>10}\n", "TOTAL", st.records);
  auto print_type = [](uint32_t t, uint64_t n) {
    const char* name = record_type_name(t);
    std::string label = std::string_view(name) == "UNKNOWN" ? fmt::format("UNKNOWN({})", t) : std::string(name);
    fmt::print("{:>20} events: {:>10}\n", label, n);
  };
  for (uint32_t t = 1; t < st.by_type.size(); ++t) {
    if (st.by_type[t] != 0) print_type(t, st.by_type[t]);
  }
  for (const auto& [t, n] : st.other_types) print_type(t, n);
  if (st.unknown_records) fmt::print("# unknown record types skipped: {}\n", st.unknown_records);
  for (size_t i = 0; i < reader->attrs().size(); ++i) {
    fmt::print("{} stats:\n", reader->attrs()[i].name);
    fmt::print("{:>20} events: {:>10}\n", "SAMPLE", i < c.events.size() ? c.events[i].decoded : 0);
  }
  return report_reader_problems("stats", *reader);
}

}  // namespace

void add_stats_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<StatsOptions>();
  auto* cmd = app.add_subcommand("stats", "Count records by type, samples per event, lost records, time span");
  opt->input.add_to(*cmd);
  cmd->callback([opt, &status] { status = run_guarded("stats", opt->input.get(), [&] { return run_stats(*opt); }); });
}

}  // namespace tperf::cli

// `tperf stats`: decodes every record and sample of a file and prints counts by record type
// (named as `perf report -D` names them), samples per event, lost records and the time span.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

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
  Record rec;
  Sample sample;
  std::vector<uint64_t> samples_per_attr;
  uint64_t first_time = std::numeric_limits<uint64_t>::max(), last_time = 0;
  uint64_t lost_events = 0, lost_samples = 0, bad_samples = 0, unattributed = 0;
  uint64_t callchain_frames = 0;
  while (reader->next(rec)) {
    switch (rec.type) {
      case kRecordSample: {
        int idx = reader->attr_index_of(rec);
        if (idx < 0) {
          ++unattributed;
          break;
        }
        try {
          reader->decode_sample(rec, sample);
        } catch (const FormatError&) {
          ++bad_samples;
          break;
        }
        if (samples_per_attr.size() < reader->attrs().size()) samples_per_attr.resize(reader->attrs().size());
        ++samples_per_attr[static_cast<size_t>(idx)];
        callchain_frames += sample.callchain.size();
        if (sample.has(kSampleTime)) {
          first_time = std::min(first_time, sample.time);
          last_time = std::max(last_time, sample.time);
        }
        break;
      }
      case kRecordLost:
        lost_events += decode_lost(rec.body(), reader->swapped(), rec.offset + 8).lost;
        break;
      case kRecordLostSamples: {
        perfdata::ByteReader r(rec.body(), reader->swapped(), rec.offset + 8);
        lost_samples += r.u64("lost_samples count");
        break;
      }
      default:
        break;
    }
  }
  const auto& st = reader->stats();
  fmt::print("# file: {} ({}{})\n", reader->path(),
             reader->is_directory() ? "directory" : reader->is_pipe() ? "pipe mode" : "file mode",
             reader->swapped() ? ", foreign byte order" : "");
  fmt::print("# records: {}, samples decoded: {}, callchain entries: {}\n", st.records,
             st.count(kRecordSample) - bad_samples - unattributed, callchain_frames);
  if (st.compressed_bytes) {
    fmt::print("# compressed: {} bytes unpacked to {} bytes\n", st.compressed_bytes, st.decompressed_bytes);
  }
  if (first_time <= last_time) {
    fmt::print("# time span: {}.{:06} .. {}.{:06} ({:.6f} s)\n", first_time / 1000000000, first_time % 1000000000 / 1000,
               last_time / 1000000000, last_time % 1000000000 / 1000, (last_time - first_time) / 1e9);
  }
  fmt::print("# lost: {} events in {} LOST records, {} samples in {} LOST_SAMPLES records\n", lost_events,
             st.count(kRecordLost), lost_samples, st.count(kRecordLostSamples));
  if (bad_samples) fmt::print("# malformed samples: {}\n", bad_samples);
  if (unattributed) fmt::print("# samples with an unknown event id: {}\n", unattributed);
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
    fmt::print("{:>20} events: {:>10}\n", "SAMPLE", i < samples_per_attr.size() ? samples_per_attr[i] : 0);
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

// `tperf convert IN OUT`: rewrites any perf.data tperf reads as a file-mode perf.data that an older
// perf (6.1) accepts: attrs cut to the 128 bytes it knows, compressed data expanded, pipe mode and
// `--threads` directories turned into one file, records and features it would refuse left out
// (and counted on stderr).
#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "perfdata/reader.h"
#include "perfdata/writer.h"

namespace tperf::cli {

namespace {

using namespace perfdata;

struct ConvertOptions {
  std::string input;
  std::string output;
  uint32_t max_attr_size = kAttrSizeVer7;  // perf 6.1's sizeof(struct perf_event_attr)
};

// Record types perf 6.1 processes; anything else makes it stop with "failed to process type".
bool perf61_knows(uint32_t type) {
  return (type >= kRecordMmap && type <= kRecordAuxOutputHwId) ||
         (type >= kRecordHeaderAttr && type <= kRecordFinishedInit);
}

// Feature sections copied as they are. EVENT_DESC is regenerated from the cut attrs; COMPRESSED
// and DIR_FORMAT no longer hold; newer bits (and PMU_CAPS, whose layout changed after 6.1)
// would be misread by perf 6.1.
bool copy_feature(unsigned bit) {
  if (bit == kFeatReserved || bit == kFeatEventDesc || bit == kFeatCompressed || bit == kFeatDirFormat) return false;
  return bit < kFeatPmuCaps;
}

int convert(const ConvertOptions& opt) {
  auto reader = Reader::open(opt.input);
  Writer::Options wopt;
  wopt.swap = reader->swapped();
  Writer writer(wopt);
  writer.open(opt.output);

  bool attrs_added = false;
  auto add_attrs = [&] {
    if (attrs_added) return;
    attrs_added = true;
    for (const auto& ea : reader->attrs()) {
      PerfEventAttr attr = ea.attr;
      uint32_t size = attr.size == 0 ? kAttrSizeVer0 : attr.size;
      attr.size = std::min(size, opt.max_attr_size);
      writer.add_attr(attr, ea.ids, ea.name);
    }
  };

  std::map<uint32_t, uint64_t> dropped;
  std::vector<uint8_t> tracing_data;
  std::vector<BuildIdEntry> pipe_build_ids;
  std::vector<uint8_t> with_payload;
  Record rec;
  // Damage stops the reading but not the conversion: what came before it is written out, so a
  // cut recording perf cannot open becomes one it can (the error is still reported, status 2).
  std::optional<FormatError> damage;
  while (true) {
    try {
      if (!reader->next(rec)) break;
    } catch (const FormatError& e) {
      damage = e;
      break;
    }
    switch (rec.type) {
      case kRecordHeaderAttr:
      case kRecordHeaderFeature:
      case kRecordEventUpdate:
      case kRecordCompressed:
      case kRecordCompressed2:
        continue;  // carried by the file header / feature sections, or already unpacked
      case kRecordHeaderTracingData:
        tracing_data.assign(rec.payload.begin(), rec.payload.end());
        continue;
      case kRecordHeaderBuildId:
        continue;  // collected by the reader into features().build_ids
      default:
        break;
    }
    if (!perf61_knows(rec.type)) {
      ++dropped[rec.type];
      continue;
    }
    add_attrs();
    if (rec.payload_size > 0) {
      if (rec.payload.size() != rec.payload_size) {
        throw FormatError(rec.offset, fmt::format("{} payload of {} bytes is too large to convert",
                                                  record_type_name(rec.type), rec.payload_size));
      }
      with_payload.assign(rec.bytes.begin(), rec.bytes.end());
      with_payload.insert(with_payload.end(), rec.payload.begin(), rec.payload.end());
      writer.write_record(with_payload);
    } else {
      writer.write_record(rec.bytes);
    }
  }
  add_attrs();

  const Features& f = reader->features();
  for (const auto& [bit, payload] : f.raw) {
    if (copy_feature(bit)) writer.set_feature(bit, payload);
  }
  if (!tracing_data.empty()) writer.set_feature(kFeatTracingData, tracing_data);
  if (!f.build_ids.empty() && !f.raw.count(kFeatBuildId)) writer.set_build_ids(f.build_ids);
  writer.finish();

  for (const auto& [type, n] : dropped) {
    fmt::print(stderr, "tperf convert: left out {} {} record(s) (type {}) that perf 6.1 cannot process\n", n,
               record_type_name(type), type);
  }
  int status = report_reader_problems("convert", *reader);
  if (damage) {
    fmt::print(stderr, "tperf convert: {}: {}\n", opt.input, damage->what());
    status = 2;
  }
  if (status != 0) fmt::print(stderr, "tperf convert: wrote the records before the damage to {}\n", opt.output);
  return status;
}

// An output left half-written by a failure (say, a full disk) is removed so that no one mistakes
// it for a converted file.
int run_convert(const ConvertOptions& opt) {
  try {
    return convert(opt);
  } catch (...) {
    ::unlink(opt.output.c_str());
    throw;
  }
}

}  // namespace

void add_convert_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<ConvertOptions>();
  auto* cmd = app.add_subcommand("convert", "Rewrite a perf.data (any layout) as a file-mode perf.data perf 6.1 reads");
  cmd->add_option("input", opt->input, "input perf.data file, directory, or - for stdin")->required();
  cmd->add_option("output", opt->output, "output file")->required();
  cmd->add_option("--max-attr-size", opt->max_attr_size, "largest perf_event_attr size to write (default 128)")
      ->check(CLI::Range(64u, 1024u));
  cmd->callback([opt, &status] { status = run_guarded("convert", opt->input, [&] { return run_convert(*opt); }); });
}

}  // namespace tperf::cli

// `tperf convert IN OUT`: rewrites any perf.data tperf reads as a file-mode perf.data that an older
// perf (6.1) accepts: attrs cut to the 128 bytes it knows, compressed data expanded, pipe mode and
// `--threads` directories turned into one file, records and features it would refuse left out
// (and counted on stderr). `--pipe`, `-z` and `--directory` write the other layouts perf 6.1
// reads (a pipe-mode stream, zstd COMPRESSED records, a `perf record --threads` directory), so one
// recording can be read in every layout. Deferred user callchains (Linux 6.19+) are written
// merged into their samples, so perf 6.1 shows whole stacks of such a recording.
#include <fmt/format.h>

#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "cli/commands.h"
#include "perfdata/reader.h"
#include "perfdata/writer.h"
#include "session/ordered_events.h"

namespace tperf::cli {

namespace {

using namespace perfdata;

struct ConvertOptions {
  std::string input;
  std::string output;
  uint32_t max_attr_size = kAttrSizeVer7;  // perf 6.1's sizeof(struct perf_event_attr)
  bool pipe = false;                       // write a pipe-mode stream ("-": standard output)
  bool compress = false;                   // -z: zstd COMPRESSED records at level 1
  int compression_level = 0;               // > 0: zstd COMPRESSED records at this level
  unsigned directory = 0;                  // > 0: a --threads directory with this many data.N files
};

// The HEADER_TRACING_DATA record of a pipe: a 16-byte record (header, u32 size, pad) followed by
// the tracing data padded to 8 bytes, the size field giving the padded length.
std::vector<uint8_t> tracing_data_record(std::span<const uint8_t> data, bool swap) {
  const size_t padded = (data.size() + 7) & ~size_t{7};
  std::vector<uint8_t> out;
  put_record_header(out, kRecordHeaderTracingData, 0, 16, swap);
  uint32_t size = static_cast<uint32_t>(padded);
  if (swap) size = __builtin_bswap32(size);
  const auto* p = reinterpret_cast<const uint8_t*>(&size);
  out.insert(out.end(), p, p + 4);
  out.insert(out.end(), 4, 0);
  out.insert(out.end(), data.begin(), data.end());
  out.insert(out.end(), padded - data.size(), 0);
  return out;
}

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

bool has_deferred_callchains(const Reader& reader) {
  return std::any_of(reader.attrs().begin(), reader.attrs().end(),
                     [](const EventAttr& ea) { return ea.attr.flag(kFlagDeferCallchain); });
}

int convert(const ConvertOptions& opt) {
  auto reader = Reader::open(opt.input);
  Writer::Options wopt;
  wopt.swap = reader->swapped();
  wopt.pipe = opt.pipe;
  wopt.compression_level = opt.compression_level;
  Writer writer(wopt);
  // A directory: the header file `data` keeps the side-band records, the samples are dealt out
  // to data.0 .. data.N-1 in turn (each file in time order, as perf's reader threads write them).
  std::vector<std::unique_ptr<Writer>> data_files;
  if (opt.directory > 0) {
    if (::mkdir(opt.output.c_str(), 0755) != 0 && errno != EEXIST) {
      throw IoError(fmt::format("{}: cannot create the directory: {}", opt.output, std::strerror(errno)));
    }
    writer.open(opt.output + "/data");
    writer.set_dir_format(1);
    for (unsigned i = 0; i < opt.directory; ++i) {
      Writer::Options dwo = wopt;
      dwo.headerless = true;
      data_files.push_back(std::make_unique<Writer>(dwo));
      data_files.back()->open(fmt::format("{}/data.{}", opt.output, i));
    }
  } else if (opt.pipe && opt.output == "-") {
    writer.open_fd(STDOUT_FILENO, "standard output");
  } else {
    writer.open(opt.output);
  }
  size_t next_data_file = 0;
  auto write_sample = [&](std::span<const uint8_t> bytes) {
    if (data_files.empty()) return writer.write_record(bytes);
    data_files[next_data_file]->write_record(bytes);
    next_data_file = (next_data_file + 1) % data_files.size();
  };

  const Features& f = reader->features();
  std::vector<uint8_t> tracing_data;
  // A pipe carries its features in front of the data, so they are set with the attrs (a pipe
  // input has read its own by then); TRACING_DATA and BUILD_ID travel as records of their own.
  auto set_features = [&] {
    for (const auto& [bit, payload] : f.raw) {
      if (opt.pipe && (bit == kFeatTracingData || bit == kFeatBuildId)) continue;
      if (copy_feature(bit)) writer.set_feature(bit, payload);
    }
    if (opt.pipe) {
      if (tracing_data.empty()) {
        auto it = f.raw.find(kFeatTracingData);
        if (it != f.raw.end()) tracing_data = it->second;
      }
    } else {
      if (!tracing_data.empty()) writer.set_feature(kFeatTracingData, tracing_data);
      if (!f.build_ids.empty() && !f.raw.count(kFeatBuildId)) writer.set_build_ids(f.build_ids);
    }
  };

  bool attrs_added = false;
  auto add_attrs = [&] {
    if (attrs_added) return;
    attrs_added = true;
    const bool merged = has_deferred_callchains(*reader);
    for (const auto& ea : reader->attrs()) {
      PerfEventAttr attr = ea.attr;
      uint32_t size = attr.size == 0 ? kAttrSizeVer0 : attr.size;
      attr.size = std::min(size, opt.max_attr_size);
      if (merged) {
        // The samples written carry whole chains now: the file is a plain fp recording.
        attr.set_flag(kFlagDeferCallchain, false);
        attr.set_flag(kFlagDeferOutput, false);
      }
      writer.add_attr(attr, ea.ids, ea.name);
    }
    if (opt.pipe) {
      set_features();
      if (!tracing_data.empty()) writer.write_record(tracing_data_record(tracing_data, reader->swapped()));
      // The build ids go in front of the samples (as perf inject puts them), so a reader knows
      // which kernel and which files the samples were taken on before it resolves them.
      RecordBuilder rb({}, reader->swapped());
      for (const auto& e : f.build_ids) writer.write_record(rb.header_build_id(e));
    }
  };

  std::map<uint32_t, uint64_t> dropped;
  std::vector<BuildIdEntry> pipe_build_ids;
  std::vector<uint8_t> with_payload;
  auto convert_record = [&](const Record& rec) {
    switch (rec.type) {
      case kRecordHeaderAttr:
      case kRecordHeaderFeature:
      case kRecordEventUpdate:
      case kRecordCompressed:
      case kRecordCompressed2:
        return;  // carried by the file header / feature sections, or already unpacked
      case kRecordHeaderTracingData:
        tracing_data.assign(rec.payload.begin(), rec.payload.end());
        return;
      case kRecordHeaderBuildId:
        return;  // collected by the reader into features().build_ids
      default:
        break;
    }
    if (!perf61_knows(rec.type)) {
      ++dropped[rec.type];
      return;
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
    } else if (rec.type == kRecordSample) {
      write_sample(rec.bytes);
    } else {
      writer.write_record(rec.bytes);
    }
  };
  // Deferred user callchains are joined to their samples on the way (session::OrderedEvents), so
  // a perf without them (6.1 drops a chain with a marker it does not know) reads whole stacks.
  // That needs the records in time order: they are written as OrderedEvents delivers them, and
  // a FINISHED_ROUND only when no sample is held back, so that nothing written after a round is
  // older than what perf flushed at it.
  std::optional<session::OrderedEvents> ordered;
  bool merge_checked = false;
  auto deliver = [&](const Record& rec, uint64_t) {
    if (rec.type == kRecordFinishedRound && ordered->deferred_waiting() > 0) return;
    convert_record(rec);
  };
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
    // Pipe mode: the attrs have come by the first record that is not a header record.
    if (!ordered && !merge_checked && rec.type < kRecordHeaderAttr) {
      merge_checked = true;
      if (has_deferred_callchains(*reader)) ordered.emplace(*reader, deliver);
    }
    if (ordered) {
      ordered->push(rec);
    } else {
      convert_record(rec);
    }
  }
  if (ordered) ordered->flush_all();
  add_attrs();

  if (!opt.pipe) set_features();
  for (auto& d : data_files) d->finish();
  writer.finish();

  for (const auto& [type, n] : dropped) {
    fmt::print(stderr, "tperf convert: left out {} {} record(s) (type {}) that perf 6.1 cannot process\n", n,
               record_type_name(type), type);
  }
  int status = ordered ? report_reader_problems("convert", *reader, *ordered) : report_reader_problems("convert", *reader);
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
  cmd->add_option("output", opt->output, "output file (- for standard output with --pipe), or directory with --directory")
      ->required();
  cmd->add_option("--max-attr-size", opt->max_attr_size, "largest perf_event_attr size to write (default 128)")
      ->check(CLI::Range(64u, 1024u));
  cmd->add_flag("--pipe", opt->pipe, "write a pipe-mode stream, as perf record -o - does");
  cmd->add_flag("-z,--compress", opt->compress, "zstd-compress the data (level 1)");
  cmd->add_option("--compression-level", opt->compression_level, "zstd level 1..22")->check(CLI::Range(1, 22));
  cmd->add_option("--directory", opt->directory, "write a perf record --threads directory with N data files")
      ->check(CLI::Range(1u, 256u));
  cmd->callback([opt, &status] {
    if (opt->compress && opt->compression_level == 0) opt->compression_level = 1;
    if (opt->pipe && opt->directory > 0) {
      fmt::print(stderr, "tperf convert: --pipe and --directory: a pipe is one stream\n");
      status = 129;
      return;
    }
    status = run_guarded("convert", opt->input, [&] { return run_convert(*opt); });
  });
}

}  // namespace tperf::cli

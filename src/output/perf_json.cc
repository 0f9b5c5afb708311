#include "output/perf_json.h"

#include <fmt/format.h>

#include <iterator>

#include "output/json_text.h"
#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "perfdata/sample.h"
#include "session/machine.h"
#include "symbols/resolver.h"
#include "symbols/symbol_table.h"
#include "util/text.h"

namespace tperf::output {

namespace {

constexpr size_t kFlushAt = size_t{1} << 20;

// A new line at `depth` tabs, after a comma when `comma`: how perf's converter starts every
// value of an object or array.
void newline(std::string& out, bool comma, int depth) {
  if (comma) out += ',';
  out += '\n';
  out.append(static_cast<size_t>(depth), '\t');
}

void key(std::string& out, bool comma, int depth, std::string_view name) {
  newline(out, comma, depth);
  out += '"';
  out += name;
  out += "\": ";
}

void key_string(std::string& out, bool comma, int depth, std::string_view name, std::string_view value) {
  key(out, comma, depth, name);
  // perf escapes control characters with JSON's short forms where they have one. Bytes of 0x80
  // and up stay UTF-8 (perf writes each as "\uffffffXX", a sign-extended char, which is not the
  // byte: the one place this output differs from perf's on purpose).
  append_json_string(out, value, /*short_escapes=*/true);
}

template <class T>
void key_number(std::string& out, bool comma, int depth, std::string_view name, T value) {
  key(out, comma, depth, name);
  fmt::format_to(std::back_inserter(out), "{}", value);
}

}  // namespace

PerfJsonWriter::PerfJsonWriter(std::FILE* out) : out_(out) { buf_.reserve(kFlushAt + 4096); }

void PerfJsonWriter::begin(const perfdata::Reader& reader, std::optional<std::time_t> captured_on) {
  if (begun_) return;
  begun_ = true;
  const perfdata::Features& f = reader.features();
  const bool pipe = reader.is_pipe();
  std::string& o = buf_;
  o += '{';
  newline(o, false, 1);
  o += "\"linux-perf-json-version\": 1";
  newline(o, true, 1);
  o += "\"headers\": {";
  // perf's header version: 1 for the PERFILE2 magic, the only one read here.
  key_number(o, false, 2, "header-version", 1u);
  if (captured_on) {
    std::tm tm{};
    gmtime_r(&*captured_on, &tm);
    char when[64];
    std::strftime(when, sizeof(when), "%FT%TZ", &tm);
    key_string(o, true, 2, "captured-on", when);
  }
  const uint64_t data_offset = pipe ? 0 : reader.header().data.offset;
  const uint64_t data_size = pipe ? 0 : reader.header().data.size;
  key_number(o, true, 2, "data-offset", data_offset);
  key_number(o, true, 2, "data-size", data_size);
  key_number(o, true, 2, "feat-offset", pipe ? 0 : data_offset + data_size);
  key_string(o, true, 2, "hostname", f.hostname);
  key_string(o, true, 2, "os-release", f.osrelease);
  key_string(o, true, 2, "arch", f.arch);
  if (f.has(perfdata::kFeatCpudesc)) key_string(o, true, 2, "cpu-desc", f.cpudesc);
  key_string(o, true, 2, "cpuid", f.cpuid);
  key_number(o, true, 2, "nrcpus-online", f.nr_cpus_online);
  key_number(o, true, 2, "nrcpus-avail", f.nr_cpus_available);
  if (f.has(perfdata::kFeatClockData)) {
    key_number(o, true, 2, "clockid", f.clock_data.clockid);
    key_number(o, true, 2, "clock-time", f.clock_data.clockid_ns);
    key_number(o, true, 2, "real-time", f.clock_data.wall_clock_ns);
  }
  key_string(o, true, 2, "perf-version", f.version);
  key(o, true, 2, "cmdline");
  o += '[';
  for (size_t i = 0; i < f.cmdline.size(); ++i) {
    newline(o, i != 0, 3);
    append_json_string(o, f.cmdline[i], /*short_escapes=*/true);
  }
  newline(o, false, 2);
  o += ']';
  newline(o, false, 1);
  o += '}';
  newline(o, true, 1);
  o += "\"samples\": [";
  flush_if_full();
}

void PerfJsonWriter::entry(uint64_t ip, const symbols::Symbol* sym, const session::Dso* dso, bool comma) {
  std::string& o = buf_;
  if (comma) o += ',';
  o += "\n\t\t\t\t{\n\t\t\t\t\t\"ip\": \"0x";
  util::append_hex(o, ip);
  o += '"';
  if (sym && sym->name_len) {
    // The symbol's lines, escaped once per symbol and DSO.
    auto [it, made] = named_.try_emplace(NameKey{sym->name_ptr, sym->name_len, dso});
    if (made) {
      std::string& text = it->second;
      key_string(text, true, 5, "symbol", sym->name());
      const std::string_view dso_name = dso ? dso->short_name() : std::string_view();
      if (!dso_name.empty()) key_string(text, true, 5, "dso", dso_name);
    }
    o += it->second;
  }
  o += "\n\t\t\t\t}";
}

void PerfJsonWriter::add_sample(const perfdata::Sample& sample, uint8_t cpumode, bool with_cpu,
                                const session::Thread& thread, symbols::Resolver& resolver) {
  std::string& o = buf_;
  newline(o, samples_ != 0, 2);
  o += '{';
  ++samples_;
  // A sample without a time shows perf's "none" (-1 as a signed number).
  key_number(o, false, 3, "timestamp",
             sample.has(perfdata::kSampleTime) ? static_cast<int64_t>(sample.time) : int64_t{-1});
  key_number(o, true, 3, "pid", thread.pid());
  key_number(o, true, 3, "tid", thread.tid());
  if (with_cpu) {
    key_number(o, true, 3, "cpu", sample.has(perfdata::kSampleCpu) ? static_cast<int32_t>(sample.cpu) : -1);
  }
  const std::string* comm = thread.comm();
  if (comm) {
    key_string(o, true, 3, "comm", *comm);
  } else {
    key_string(o, true, 3, "comm", fmt::format(":{}", thread.tid()));
  }
  key(o, true, 3, "callchain");
  o += '[';
  auto resolved_entry = [&](uint8_t mode, uint64_t ip, bool comma) {
    const symbols::ResolvedFrame at = resolver.resolve(&thread, mode, ip);
    entry(ip, at.at.sym, at.map ? at.map->dso : nullptr, comma);
  };
  if (sample.has(perfdata::kSampleCallchain)) {
    uint8_t mode = perfdata::kMiscUser;
    bool first = true;
    for (const uint64_t ip : sample.chain()) {
      if (ip >= perfdata::kContextMax) {
        if (ip == perfdata::kContextHv) mode = perfdata::kMiscHypervisor;
        if (ip == perfdata::kContextKernel) mode = perfdata::kMiscKernel;
        if (ip == perfdata::kContextUser) mode = perfdata::kMiscUser;
        continue;  // another marker leaves the space as it was
      }
      resolved_entry(mode, ip, !first);
      first = false;
    }
  } else {
    resolved_entry(cpumode, sample.ip, false);
  }
  newline(o, false, 3);
  o += ']';
  newline(o, false, 2);
  o += '}';
  flush_if_full();
}

bool PerfJsonWriter::end() {
  std::string& o = buf_;
  newline(o, false, 1);
  o += ']';
  newline(o, false, 0);
  o += "}\n";
  return flush() && std::fflush(out_) == 0 && !failed_;
}

void PerfJsonWriter::flush_if_full() {
  if (buf_.size() >= kFlushAt) flush();
}

bool PerfJsonWriter::flush() {
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), out_) != buf_.size()) failed_ = true;
  written_ += buf_.size();
  buf_.clear();
  return !failed_;
}

}  // namespace tperf::output

// `perf data convert --to-json`'s format (perf 6.1, "linux-perf-json-version": 1): the file's
// headers, then every sample in time order with its thread, cpu, comm and callchain, each
// callchain entry with its symbol and the short name of its DSO when it has a symbol. Written
// byte for byte as perf writes it (tabs, one key per line), streamed through a buffer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tperf::perfdata {
class Reader;
struct Sample;
}  // namespace tperf::perfdata
namespace tperf::session {
class Thread;
struct Dso;
}  // namespace tperf::session
namespace tperf::symbols {
class Resolver;
struct Symbol;
}  // namespace tperf::symbols

namespace tperf::output {

class PerfJsonWriter {
 public:
  // Writes to `out` (not closed here).
  explicit PerfJsonWriter(std::FILE* out);

  // The opening of the document: the version, the "headers" object, and the start of the
  // "samples" array. `captured_on`: the input's modification time (perf's fstat of it); without
  // one the key is left out, as perf does when fstat fails. A pipe has no data or feature
  // sections (offsets and sizes 0) and brings its features as records: those the reader has
  // applied by now are written (the caller begins a pipe's document at its first sample). Once:
  // later calls do nothing.
  void begin(const perfdata::Reader& reader, std::optional<std::time_t> captured_on);

  // One sample of `thread` (the machine's thread of the sample's pid and tid at its time).
  // `cpumode`: the record's; `with_cpu`: some event of the file samples the cpu (perf looks at
  // the sample types of all events together, so a sample of an event without it shows -1).
  // Each callchain entry is looked up in the space the last context marker before it names (the
  // user's before any), as perf's converter does; a sample without a callchain shows its ip.
  void add_sample(const perfdata::Sample& sample, uint8_t cpumode, bool with_cpu, const session::Thread& thread,
                  symbols::Resolver& resolver);

  // The end of the document. Returns false when a write failed (now or before).
  bool end();

  uint64_t samples() const { return samples_; }
  // Bytes written so far, the buffered ones included.
  uint64_t bytes() const { return written_ + buf_.size(); }

 private:
  void entry(uint64_t ip, const symbols::Symbol* sym, const session::Dso* dso, bool comma);
  void flush_if_full();
  bool flush();

  std::FILE* out_;
  std::string buf_;
  uint64_t written_ = 0;
  uint64_t samples_ = 0;
  bool failed_ = false;
  bool begun_ = false;
  // The escaped "symbol" and "dso" lines of each symbol met, by its name's text (which its
  // table keeps in place as long as it lives, while a table that takes symbols late may reuse a
  // Symbol's place for another) and DSO.
  struct NameKey {
    const char* name;
    uint32_t len;
    const session::Dso* dso;
    bool operator==(const NameKey&) const = default;
  };
  struct NameKeyHash {
    size_t operator()(const NameKey& k) const {
      return std::hash<const void*>()(k.name) * 31 + std::hash<const void*>()(k.dso);
    }
  };
  std::unordered_map<NameKey, std::string, NameKeyHash> named_;
};

}  // namespace tperf::output

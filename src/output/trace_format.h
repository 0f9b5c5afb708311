// The `trace` field of perf script: a tracepoint's (or uprobe's) raw data printed through the
// event's print format, evaluated by libtraceevent (the library perf parses formats with) from
// the formats the recording's TRACING_DATA holds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct tep_handle;

namespace tperf::perfdata {
class Reader;
}
namespace tperf::session {
class Machine;
class Thread;
}
namespace tperf::symbols {
class Symbolizer;
}

namespace tperf::output {

class TraceFormatter {
 public:
  // A kernel address's function: its name and start address, or nullopt (for %ps / %pS).
  struct KernelSymbol {
    std::string name;
    uint64_t start = 0;
  };
  using KernelResolver = std::function<std::optional<KernelSymbol>(uint64_t addr)>;

  // Parses the TRACING_DATA payload (`offset`: its file offset, for errors). Throws
  // perfdata::FormatError when the payload's layout is malformed. An event format libtraceevent
  // cannot parse does not fail the whole: that event prints as libtraceevent's fallback
  // ("[FAILED TO PARSE]" and the raw field values).
  TraceFormatter(std::span<const uint8_t> tracing_data, uint64_t offset);
  ~TraceFormatter();
  TraceFormatter(const TraceFormatter&) = delete;
  TraceFormatter& operator=(const TraceFormatter&) = delete;

  // Where %ps / %pS find kernel function names (perf script resolves them against the kernel's
  // symbols of the machine being read). Without one, the addresses print as hex.
  void set_kernel_resolver(KernelResolver r);

  // Appends what perf script prints for the raw data of tracepoint `id` sampled on `cpu`: the
  // event's print format applied to the fields. Raw data shorter than the event's fields is
  // read as if zero-padded, never past its end. Returns false (and appends nothing) when the
  // TRACING_DATA has no format with that id.
  bool append(std::string& out, uint64_t id, int cpu, std::span<const uint8_t> raw);

 private:
  static char* resolve(void* priv, unsigned long long* addr, char** mod);

  tep_handle* tep_ = nullptr;
  KernelResolver resolver_;
  std::string resolved_name_;  // what resolve() last returned: libtraceevent copies it at once
  std::vector<uint8_t> scratch_;  // the raw data, zero-padded to the farthest any field reaches
  size_t scratch_used_ = 0;
};

// perf script's `trace` field for one input: the formatter is made from the reader's
// TRACING_DATA when the first sample needs it (a pipe delivers it as a record ahead of the
// samples); %ps / %pS resolve kernel functions through `symbolizer` (may be null: hex).
class ScriptTraceField {
 public:
  ScriptTraceField(const perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer* symbolizer)
      : reader_(reader), machine_(machine), symbolizer_(symbolizer) {}
  // Appends the trace text of one sample of tracepoint `id`. Nothing when the input has no
  // (readable) TRACING_DATA or no format for `id`; the reader has warned of a malformed one.
  void append(std::string& out, uint64_t id, int cpu, std::span<const uint8_t> raw, const session::Thread& thread);

 private:
  const perfdata::Reader& reader_;
  session::Machine& machine_;
  symbols::Symbolizer* symbolizer_;
  std::unique_ptr<TraceFormatter> formatter_;
  size_t made_from_size_ = 0;  // the TRACING_DATA size the formatter was made from (0: none yet)
  const session::Thread* thread_ = nullptr;  // the sample's, for the kernel map lookups
};

}  // namespace tperf::output

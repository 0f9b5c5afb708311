#include "output/trace_format.h"

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "perfdata/tracing_data.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"

namespace tperf::output {

namespace {

// No field of a sane event lies this far into its record; a format saying otherwise is not
// trusted with the raw data (the event prints nothing).
constexpr uint64_t kMaxFieldExtent = 1 << 20;
// A __data_loc / __rel_loc field holds a 16-bit offset and a 16-bit length, which libtraceevent
// follows without checking them against the record's size: the scratch copy reaches that far.
constexpr size_t kDynamicReach = 2 * 0x10000 + 16;

std::string owned(std::string_view v) { return std::string(v); }

// The farthest byte any field of `event` (its own or the common ones) says it occupies.
uint64_t field_extent(const tep_event* event) {
  uint64_t end = 0;
  for (const tep_format_field* f : {event->format.common_fields, event->format.fields}) {
    for (; f; f = f->next) {
      const uint64_t o = f->offset < 0 ? kMaxFieldExtent : static_cast<uint64_t>(f->offset);
      const uint64_t n = f->size < 0 ? kMaxFieldExtent : static_cast<uint64_t>(f->size);
      end = std::max(end, o + n);
    }
  }
  return end;
}

// printk formats: `0xADDR : "FORMAT"` per line, the format's escapes as the kernel printed them.
void register_printk_formats(tep_handle* tep, std::string_view text) {
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    size_t colon = line.find(" : ");
    if (colon == std::string_view::npos) continue;
    unsigned long long addr = std::strtoull(owned(line.substr(0, colon)).c_str(), nullptr, 16);
    std::string_view fmt = line.substr(colon + 3);
    if (fmt.size() >= 2 && fmt.front() == '"' && fmt.back() == '"') fmt = fmt.substr(1, fmt.size() - 2);
    // libtraceevent looks for a trailing "\n" two bytes before a format's last one: a shorter
    // format would make it read before its copy. Such a format says nothing anyway.
    if (fmt.size() < 3) continue;
    tep_register_print_string(tep, owned(fmt).c_str(), addr);
  }
}

// saved cmdlines: `PID COMM` per line.
void register_cmdlines(tep_handle* tep, std::string_view text) {
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0) continue;
    int pid = std::atoi(owned(line.substr(0, sp)).c_str());
    tep_register_comm(tep, owned(line.substr(sp + 1)).c_str(), pid);
  }
}

}  // namespace

TraceFormatter::TraceFormatter(std::span<const uint8_t> tracing_data, uint64_t offset) {
  perfdata::TracingDataLayout l = perfdata::tracing_data_layout(tracing_data, offset);
  // libtraceevent writes its own warnings to stderr on formats it cannot parse; perf script
  // prints the event's fallback text and nothing else.
  tep_set_loglevel(TEP_LOG_NONE);
  tep_ = tep_alloc();
  if (!tep_) throw perfdata::FormatError(offset, "TRACING_DATA: out of memory for its event formats");
  tep_set_file_bigendian(tep_, l.big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
  tep_set_local_bigendian(tep_, std::endian::native == std::endian::big ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
  tep_set_long_size(tep_, l.long_size);
  tep_set_page_size(tep_, static_cast<int>(l.page_size));
  // libtraceevent parses text it may change in place: each format gets a copy.
  std::string buf(l.header_page);
  if (tep_parse_header_page(tep_, buf.data(), buf.size(), l.long_size) == 0) {
    // perf's rule: the ring buffer page's commit field is a kernel long, whatever the header said.
    tep_set_long_size(tep_, tep_get_header_page_size(tep_));
  }
  size_t scratch = 0;
  auto parse = [&](const perfdata::TracingEventFormat& f, std::string_view system) {
    buf.assign(f.text);
    tep_event* event = nullptr;
    // A failed print format still adds the event (flagged FAILED); it prints as the fallback.
    tep_parse_format(tep_, &event, buf.data(), buf.size(), owned(system).c_str());
    if (event) scratch = std::max<size_t>(scratch, std::min<uint64_t>(field_extent(event), kMaxFieldExtent));
  };
  for (const auto& f : l.ftrace_formats) parse(f, "ftrace");
  for (const auto& f : l.events) parse(f, f.system);
  register_printk_formats(tep_, l.printk_formats);
  register_cmdlines(tep_, l.saved_cmdlines);
  scratch_.assign(scratch + kDynamicReach, 0);
}

TraceFormatter::~TraceFormatter() {
  if (tep_) tep_free(tep_);
}

void TraceFormatter::set_kernel_resolver(KernelResolver r) {
  resolver_ = std::move(r);
  if (resolver_) {
    tep_set_function_resolver(tep_, &TraceFormatter::resolve, this);
  } else {
    tep_reset_function_resolver(tep_);
  }
}

char* TraceFormatter::resolve(void* priv, unsigned long long* addr, char** mod) {
  auto* self = static_cast<TraceFormatter*>(priv);
  *mod = nullptr;
  std::optional<KernelSymbol> s = self->resolver_(*addr);
  if (!s) return nullptr;
  self->resolved_name_ = std::move(s->name);
  *addr = s->start;
  return self->resolved_name_.data();
}

bool TraceFormatter::append(std::string& out, uint64_t id, int cpu, std::span<const uint8_t> raw) {
  if (id > static_cast<uint64_t>(INT32_MAX)) return false;
  tep_event* event = tep_find_event(tep_, static_cast<int>(id));
  if (!event) return false;
  if (field_extent(event) >= kMaxFieldExtent) return true;
  // The raw data goes into the zeroed scratch buffer, so that a record cut short and any
  // dynamic field's offset stay inside memory that is ours (libtraceevent reads fixed fields
  // without checking the record's size); what the last record left past
  // this one's end is cleared.
  // (A record is under 64 KiB: the copy grows at most that far.)
  const size_t n = raw.size();
  if (n + kDynamicReach > scratch_.size()) scratch_.resize(n + kDynamicReach, 0);
  if (n) std::memcpy(scratch_.data(), raw.data(), n);
  if (scratch_used_ > n) std::memset(scratch_.data() + n, 0, scratch_used_ - n);
  scratch_used_ = n;

  tep_record record{};
  record.cpu = cpu;
  record.size = static_cast<int>(n);
  record.data = scratch_.data();
  // libtraceevent (like perf) prints the event the record's common_type names, which need not
  // be `id`'s: that one's fields must lie inside the copy too.
  if (const tep_event* named = tep_find_event_by_record(tep_, &record)) {
    if (field_extent(named) >= kMaxFieldExtent) return true;
  }
  trace_seq s;
  trace_seq_init(&s);
  tep_print_event(tep_, &s, &record, "%s", TEP_PRINT_INFO);
  trace_seq_terminate(&s);
  if (s.buffer) out.append(s.buffer, s.len);
  trace_seq_destroy(&s);
  return true;
}

void ScriptTraceField::append(std::string& out, uint64_t id, int cpu, std::span<const uint8_t> raw,
                              const session::Thread& thread) {
  std::span<const uint8_t> data = reader_.tracing_data();
  if (data.empty()) return;
  if (data.size() != made_from_size_) {
    made_from_size_ = data.size();
    formatter_.reset();
    try {
      formatter_ = std::make_unique<TraceFormatter>(data, reader_.tracing_data_offset());
    } catch (const perfdata::FormatError&) {
      return;  // the reader's warnings name it
    }
    // perf script sets its kernel function resolver when it opens the input: a pipe's
    // TRACING_DATA arrives later, so perf leaves %ps / %pS as addresses there.
    if (!reader_.is_pipe()) formatter_->set_kernel_resolver([this](uint64_t addr) -> std::optional<TraceFormatter::KernelSymbol> {
      if (!symbolizer_) return std::nullopt;
      const session::Map* map = thread_ ? machine_.find_map(thread_, perfdata::kMiscKernel, addr) : nullptr;
      if (!map) map = symbolizer_->widened_kernel_map(addr);
      if (!map || !map->dso) return std::nullopt;
      symbols::Resolved r = symbolizer_->resolve(*map, -1, addr);
      if (!r.sym) return std::nullopt;
      return TraceFormatter::KernelSymbol{std::string(r.sym->name()), addr - r.symoff()};
    });
  }
  if (!formatter_) return;
  thread_ = &thread;
  formatter_->append(out, id, cpu, raw);
  thread_ = nullptr;
}

}  // namespace tperf::output

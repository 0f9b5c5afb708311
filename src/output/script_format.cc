#include "util/text.h"
#include "output/script_format.h"

#include <sys/mman.h>

#include <fmt/format.h>
#include <sys/utsname.h>
#include <time.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <thread>

#include "analysis/branch_types.h"
#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "session/callchain.h"
#include "session/machine.h"
#include "symbols/dwarf_unwind.h"
#include "symbols/resolver.h"
#include "symbols/symbolizer.h"
#include "output/trace_format.h"
#include "util/async_writer.h"
#include "util/workqueue.h"

namespace tperf::output {

using perfdata::EventAttr;
using perfdata::PerfEventAttr;
using perfdata::Record;
using perfdata::Sample;

namespace {

struct FieldName {
  const char* name;
  uint64_t field;
};

// perf 6.1's all_output_options[], in its order (the order matters for nothing but help texts).
constexpr FieldName kFieldNames[] = {
    {"comm", kFieldComm},
    {"tid", kFieldTid},
    {"pid", kFieldPid},
    {"time", kFieldTime},
    {"cpu", kFieldCpu},
    {"event", kFieldEvent},
    {"trace", kFieldTrace},
    {"ip", kFieldIp},
    {"sym", kFieldSym},
    {"dso", kFieldDso},
    {"addr", kFieldAddr},
    {"symoff", kFieldSymoff},
    {"srcline", kFieldSrcline},
    {"period", kFieldPeriod},
    {"iregs", kFieldIregs},
    {"uregs", kFieldUregs},
    {"brstack", kFieldBrstack},
    {"brstacksym", kFieldBrstacksym},
    {"data_src", kFieldDataSrc},
    {"weight", kFieldWeight},
    {"bpf-output", kFieldBpfOutput},
    {"callindent", kFieldCallindent},
    {"insn", kFieldInsn},
    {"insnlen", kFieldInsnlen},
    {"brstackinsn", kFieldBrstackinsn},
    {"brstackoff", kFieldBrstackoff},
    {"synth", kFieldSynth},
    {"phys_addr", kFieldPhysAddr},
    {"metric", kFieldMetric},
    {"misc", kFieldMisc},
    {"srccode", kFieldSrccode},
    {"ipc", kFieldIpc},
    {"tod", kFieldTod},
    {"data_page_size", kFieldDataPageSize},
    {"code_page_size", kFieldCodePageSize},
    {"ins_lat", kFieldInsLat},
    {"brstackinsnlen", kFieldBrstackinsnlen},
    {"machine_pid", kFieldMachinePid},
    {"vcpu", kFieldVcpu},
};

constexpr uint64_t kDefaultHw = kFieldComm | kFieldTid | kFieldCpu | kFieldTime | kFieldEvent | kFieldIp | kFieldSym |
                                kFieldSymoff | kFieldDso | kFieldPeriod;

constexpr uint32_t kTypeSynth = 0x80000000u;  // PERF_TYPE_SYNTH
constexpr uint32_t kTypeMax = 6;              // PERF_TYPE_MAX

constexpr size_t kFlushBytes = 1 << 20;
// Samples formatted on other threads (ScriptWriter::sample) go in batches of at most this many,
// in this many bytes of records; fewer than kMinParallel held are formatted on this thread.
constexpr size_t kBatchSamples = 1024;
constexpr size_t kBatchBytes = 1 << 20;
constexpr size_t kMinParallel = 256;

bool is_dummy(const PerfEventAttr& a) { return a.type == perfdata::kTypeSoftware && a.config == perfdata::kSwDummy; }

}  // namespace

const char* script_field_name(uint64_t field) {
  for (const auto& f : kFieldNames) {
    if (f.field == field) return f.name;
  }
  return "";
}

uint64_t script_field_by_name(std::string_view name) {
  for (const auto& f : kFieldNames) {
    if (name == f.name) return f.field;
  }
  return 0;
}

uint64_t script_supported_fields() {
  return kFieldComm | kFieldTid | kFieldPid | kFieldTime | kFieldCpu | kFieldEvent | kFieldTrace | kFieldIp |
         kFieldSym | kFieldDso | kFieldAddr | kFieldSymoff | kFieldSrcline | kFieldPeriod | kFieldWeight | kFieldDataSrc | kFieldBpfOutput |
         kFieldIregs | kFieldUregs | kFieldBrstack | kFieldBrstacksym | kFieldCallindent | kFieldPhysAddr | kFieldMisc |
         kFieldTod | kFieldDataPageSize | kFieldCodePageSize | kFieldInsLat | kFieldMachinePid | kFieldVcpu |
         kFieldSrccode;
}

int script_output_type(uint32_t attr_type) {
  if (attr_type == kTypeSynth) return kOutSynth;
  if (attr_type < kTypeMax) return static_cast<int>(attr_type);
  return kOutOther;
}

const char* script_output_type_name(int type) {
  switch (type) {
    case kOutHardware:
      return "hardware";
    case kOutSoftware:
      return "software";
    case kOutTracepoint:
      return "tracepoint";
    case kOutHwCache:
      return "hardware-cache";
    default:
      return "unknown";
  }
}

ScriptFields::ScriptFields() {
  for (int t : {kOutHardware, kOutHwCache, kOutBreakpoint, kOutOther}) {
    sets[t].fields = kDefaultHw;
    sets[t].invalid = kFieldTrace | kFieldBpfOutput;
  }
  sets[kOutSoftware].fields = kDefaultHw | kFieldBpfOutput;
  sets[kOutSoftware].invalid = kFieldTrace;
  sets[kOutTracepoint].fields = kFieldComm | kFieldTid | kFieldCpu | kFieldTime | kFieldEvent | kFieldTrace;
  sets[kOutRaw].fields = kDefaultHw | kFieldAddr | kFieldDataSrc | kFieldWeight | kFieldPhysAddr | kFieldDataPageSize |
                         kFieldCodePageSize | kFieldInsLat;
  sets[kOutRaw].invalid = kFieldTrace | kFieldBpfOutput;
  sets[kOutSynth].fields = (kDefaultHw & ~kFieldPeriod) | kFieldSynth;
  sets[kOutSynth].invalid = kFieldTrace | kFieldBpfOutput;
}

bool ScriptFields::set_by_user() const {
  return std::any_of(sets.begin(), sets.end(), [](const ScriptFieldSet& s) { return s.user_set; });
}

std::string ScriptFields::parse(std::string_view arg, std::vector<std::string>* warnings) {
  auto warn = [&](std::string w) {
    if (warnings) warnings->push_back(std::move(w));
  };
  int type = -1;
  std::string_view list = arg;
  size_t colon = arg.find(':');
  auto has_plus_minus = [](std::string_view s) {
    return s.find('+') != std::string_view::npos || s.find('-') != std::string_view::npos;
  };
  if (colon != std::string_view::npos) {
    std::string_view t = arg.substr(0, colon);
    list = arg.substr(colon + 1);
    if (t == "hw") {
      type = kOutHardware;
    } else if (t == "sw") {
      type = kOutSoftware;
    } else if (t == "trace") {
      type = kOutTracepoint;
    } else if (t == "raw") {
      type = kOutRaw;
    } else if (t == "break") {
      type = kOutBreakpoint;
    } else if (t == "synth") {
      type = kOutSynth;
    } else {
      return "Invalid event type in field string.";
    }
    if (sets[type].user_set)
      warn(fmt::format("Overriding previous field request for {} events.", script_output_type_name(type)));
    if (!has_plus_minus(list)) {
      sets[type].fields = 0;
      sets[type].user_set = true;
      sets[type].wildcard_set = false;
    }
  } else {
    if (arg.empty()) return "Cannot set fields to 'none' for all event types.";
    if (!has_plus_minus(arg)) {
      if (set_by_user()) warn("Overriding previous field request for all events.");
      for (auto& s : sets) {
        s.fields = 0;
        s.user_set = true;
        s.wildcard_set = true;
      }
    }
  }

  enum { kDefault, kSet, kAdd, kRemove } change = kDefault;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string_view tok = list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? list.size() + 1 : comma + 1;
    if (tok.empty()) continue;  // strtok skips empty tokens
    if (tok[0] == '+') {
      if (change == kSet) return "Cannot mix +-field with overridden fields";
      change = kAdd;
      tok.remove_prefix(1);
    } else if (tok[0] == '-') {
      if (change == kSet) return "Cannot mix +-field with overridden fields";
      change = kRemove;
      tok.remove_prefix(1);
    } else {
      if (change != kSet && change != kDefault) return "Cannot mix +-field with overridden fields";
      change = kSet;
    }
    uint64_t field = script_field_by_name(tok);
    if (!field && tok == "flags") {
      print_flags = change != kRemove;
      continue;
    }
    if (!field) return "Invalid field requested.";
    // A field named or removed by the user, for one output type.
    auto apply = [&](ScriptFieldSet& s, uint64_t f) {
      if (change == kRemove) {
        s.fields &= ~f;
        s.user_set_fields &= ~f;
        s.user_unset_fields |= f;
      } else {
        s.fields |= f;
        s.user_set_fields |= f;
        s.user_unset_fields &= ~f;
      }
      s.user_set = true;
      s.wildcard_set = true;
    };
    if (type == -1) {
      for (int j = 0; j < kOutTypeCount; ++j) {
        ScriptFieldSet& s = sets[j];
        if (s.invalid & field) {
          // perf warns once per type it knows by name, and for the rest too.
          warn(fmt::format("'{}' not valid for {} events. Ignoring.", tok, script_output_type_name(j)));
          continue;
        }
        apply(s, field);
      }
    } else {
      ScriptFieldSet& s = sets[type];
      if (s.invalid & field) return fmt::format("'{}' not valid for {} events.", tok, script_output_type_name(type));
      apply(s, field);
    }
  }
  return "";
}

namespace {

// perf's evsel__check_attr for the first event of an output type. `named`, when given, is set
// when perf's check takes the event's name for a message (a default field dropped, or an error):
// perf names an event that has none from its attr then, for good.
std::string check_attr(ScriptFields& config, const EventAttr& ea, const ScriptCheckContext& ctx, bool* named = nullptr) {
  const PerfEventAttr& attr = ea.attr;
  if (is_dummy(attr) || ctx.has_stat) return "";
  ScriptFieldSet& set = config.sets[script_output_type(attr.type)];
  const bool allow_user_set = ctx.has_auxtrace;
  const uint64_t st = attr.sample_type;
  std::string error;
  auto check = [&](uint64_t field, uint64_t sample_bits, const char* msg, bool allow) {
    if (!error.empty() || !(set.fields & field) || (st & sample_bits)) return;
    if (named && !((set.user_set_fields & field) && allow)) *named = true;
    if (set.user_set_fields & field) {
      if (allow) return;
      error = fmt::format("Samples for '{}' event do not have {} attribute set. Cannot print '{}' field.",
                          script_event_name(ea), msg,
                          script_field_name(field));
      return;
    }
    set.fields &= ~field;  // a default the events cannot fill: dropped quietly
  };
  check(kFieldIp, perfdata::kSampleIp, "IP", false);
  check(kFieldAddr, perfdata::kSampleAddr, "ADDR", allow_user_set);
  check(kFieldDataSrc, perfdata::kSampleDataSrc, "DATA_SRC", allow_user_set);
  check(kFieldWeight, perfdata::kSampleWeight | perfdata::kSampleWeightStruct, "WEIGHT", allow_user_set);
  if (!error.empty()) return error;
  if ((set.fields & kFieldSym) && !(st & (perfdata::kSampleIp | perfdata::kSampleAddr))) {
    return "Display of symbols requested but neither sample IP nor sample address\navailable. Hence, no addresses "
           "to convert to symbols.";
  }
  if ((set.fields & kFieldSymoff) && !(set.fields & kFieldSym)) {
    return "Display of offsets requested but symbol is notselected.";
  }
  if ((set.fields & kFieldDso) && !(st & (perfdata::kSampleIp | perfdata::kSampleAddr))) {
    return "Display of DSO requested but no address to convert.";
  }
  if ((set.fields & (kFieldSrcline | kFieldSrccode)) && !(set.fields & kFieldIp)) {
    return "Display of source line number requested but sample IP is not\nselected. Hence, no address to lookup "
           "the source line number.";
  }
  check(kFieldTid | kFieldPid, perfdata::kSampleTid, "TID", false);
  check(kFieldTime, perfdata::kSampleTime, "TIME", false);
  check(kFieldCpu, perfdata::kSampleCpu, "CPU", allow_user_set);
  check(kFieldIregs, perfdata::kSampleRegsIntr, "IREGS", allow_user_set);
  check(kFieldUregs, perfdata::kSampleRegsUser, "UREGS", false);
  check(kFieldPhysAddr, perfdata::kSamplePhysAddr, "PHYS_ADDR", allow_user_set);
  check(kFieldDataPageSize, perfdata::kSampleDataPageSize, "DATA_PAGE_SIZE", false);
  check(kFieldCodePageSize, perfdata::kSampleCodePageSize, "CODE_PAGE_SIZE", false);
  check(kFieldInsLat, perfdata::kSampleWeightStruct, "WEIGHT_STRUCT", false);
  return error;
}

std::string unsupported_fields_error(const ScriptFields& config) {
  for (const auto& s : config.sets) {
    uint64_t bad = s.user_set_fields & ~script_supported_fields();
    if (bad) {
      return fmt::format("field '{}' is not supported by tperf script yet", script_field_name(bad & -bad));
    }
  }
  return "";
}

}  // namespace

ArrivedEventNames script_names_on_arrival(const ScriptFields& fields, const std::vector<EventAttr>& attrs) {
  ScriptFields config = fields;  // the checks drop defaults as they go
  ArrivedEventNames out;
  out.names.resize(attrs.size());
  for (size_t i = 0; i < attrs.size(); ++i) {
    const PerfEventAttr& attr = attrs[i].attr;
    if (attr.type >= kTypeMax && attr.type != kTypeSynth) continue;
    // Only the first event of its type is checked; the header's features (AUXTRACE, STAT) are
    // not known yet when the attrs arrive.
    const bool seen = std::any_of(attrs.begin(), attrs.begin() + static_cast<ptrdiff_t>(i),
                                  [&](const EventAttr& e) { return e.attr.type == attr.type; });
    if (seen || !attr.sample_type || !config.sets[script_output_type(attr.type)].fields) continue;
    // The name perf makes from the attr, which its messages show too.
    EventAttr unnamed = attrs[i];
    unnamed.named = false;
    unnamed.name = perfdata::default_event_name(attr);
    unnamed.name = script_event_name(unnamed);
    bool named = false;
    out.error = check_attr(config, unnamed, ScriptCheckContext{}, &named);
    if (named) out.names[i] = unnamed.name;
    if (!out.error.empty()) break;
  }
  return out;
}

std::string check_script_fields(ScriptFields& config, const std::vector<EventAttr>& attrs,
                                const ScriptCheckContext& ctx, bool* use_callchain) {
  if (auto e = unsupported_fields_error(config); !e.empty()) return e;
  bool tod = false;
  for (int t = 0; t < kOutTypeCount; ++t) {
    const EventAttr* first = nullptr;
    for (const auto& ea : attrs) {
      if (!is_dummy(ea.attr) && script_output_type(ea.attr.type) == t) {
        first = &ea;
        break;
      }
    }
    if (!first) continue;
    if (config.sets[t].fields) {
      if (auto e = check_attr(config, *first, ctx); !e.empty()) return e;
    }
    tod = tod || (config.sets[t].fields & kFieldTod);
  }
  bool callchain = !ctx.hide_callchain;
  if (callchain && !ctx.pipe) {
    callchain = std::any_of(attrs.begin(), attrs.end(),
                            [](const EventAttr& ea) { return ea.attr.has(perfdata::kSampleCallchain); });
  }
  if (callchain && !config.sets[kOutTracepoint].user_set) {
    for (const auto& ea : attrs) {
      if (ea.attr.type == perfdata::kTypeTracepoint && ea.attr.has(perfdata::kSampleCallchain)) {
        config.sets[kOutTracepoint].fields |= kFieldIp | kFieldSym | kFieldSymoff | kFieldDso;
        break;
      }
    }
  }
  if (tod && !ctx.has_clock_data) {
    return "Can't provide 'tod' time, missing clock data. Please record with -k/--clockid option.";
  }
  if (use_callchain) *use_callchain = callchain;
  return "";
}

std::string script_event_name(const EventAttr& ea) {
  const PerfEventAttr& a = ea.attr;
  // A name the file gives is perf's evsel name as it is; only a made-up one gets modifiers.
  if (ea.named || ea.name != perfdata::default_event_name(a)) return ea.name;
  if (a.type != perfdata::kTypeHardware && a.type != perfdata::kTypeSoftware && a.type != perfdata::kTypeRaw &&
      a.type != perfdata::kTypeHwCache) {
    return ea.name;
  }
  // perf's evsel__add_modifiers.
  std::string mods;
  bool exclude_guest_default = false;
  const bool ek = a.flag(perfdata::kFlagExcludeKernel), eu = a.flag(perfdata::kFlagExcludeUser),
             eh = a.flag(perfdata::kFlagExcludeHv);
  if (ek || eu || eh) {
    if (!ek) mods += 'k';
    if (!eu) mods += 'u';
    if (!eh) mods += 'h';
    exclude_guest_default = true;
  }
  if (a.precise_ip()) {
    mods.append(a.precise_ip(), 'p');
    exclude_guest_default = true;
  }
  const bool ehost = a.flag(perfdata::kFlagExcludeHost), eguest = a.flag(perfdata::kFlagExcludeGuest);
  if (ehost || eguest == exclude_guest_default) {
    if (!ehost) mods += 'H';
    if (!eguest) mods += 'G';
  }
  // A colon is written whenever a modifier was, even if all of them were then excluded.
  bool colon = (ek || eu || eh) || a.precise_ip() || ehost || eguest == exclude_guest_default;
  if (!colon) return ea.name;
  if (mods.empty()) {
    // perf reserved the ':' position without filling it: the name ends in a NUL there.
    return ea.name;
  }
  return ea.name + ":" + mods;
}

// --- line pieces -------------------------------------------------------------------------------

namespace {

// Every sample line starts with these pieces; fmt's format-string parsing cost more than the
// rest of a line whose callchain frames come from the frame cache, so the common cases are
// written by hand here.

// The decimal digits of v at the end of buf[0, 20); returns where they start.
char* decimal_digits(uint64_t v, char* end) {
  do {
    *--end = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  return end;
}

// "%*d" / "%-*d" of a signed value.
void append_int_padded(std::string& out, int64_t v, size_t width, bool left) {
  char buf[24];
  char* end = buf + sizeof buf;
  char* p = decimal_digits(v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v), end);
  if (v < 0) *--p = '-';
  size_t n = static_cast<size_t>(end - p);
  if (!left && n < width) out.append(width - n, ' ');
  out.append(p, n);
  if (left && n < width) out.append(width - n, ' ');
}

// "%0*u"
void append_uint_zero_padded(std::string& out, uint64_t v, size_t width) {
  char buf[24];
  char* end = buf + sizeof buf;
  char* p = decimal_digits(v, end);
  size_t n = static_cast<size_t>(end - p);
  if (n < width) out.append(width - n, '0');
  out.append(p, n);
}

}  // namespace

void append_time(std::string& out, uint64_t ns, bool nanosecs) {
  uint64_t sec = ns / 1000000000ULL, frac = ns % 1000000000ULL;
  if (nanosecs) {
    append_int_padded(out, static_cast<int64_t>(sec), 5, false);
    out += '.';
    append_uint_zero_padded(out, frac, 9);
    out += ": ";
  } else {
    // "%12s" of "sec.usec"
    char buf[32];
    char* end = buf + sizeof buf;
    uint64_t usec = frac / 1000;
    char* p = end;
    for (int i = 0; i < 6; ++i) {
      *--p = static_cast<char>('0' + usec % 10);
      usec /= 10;
    }
    *--p = '.';
    p = decimal_digits(sec, p);
    size_t n = static_cast<size_t>(end - p);
    if (n < 12) out.append(12 - n, ' ');
    out.append(p, n);
    out += ": ";
  }
}

void append_tod(std::string& out, uint64_t time, const ScriptStartStyle& style) {
  if (!style.has_clock) {
    out += "disabled ";
    return;
  }
  uint64_t tod = style.clock_tod_ns;
  if (time > style.clock_ref_ns) {
    tod += time - style.clock_ref_ns;
  } else {
    tod -= style.clock_ref_ns - time;
  }
  time_t sec = static_cast<time_t>(tod / 1000000000ULL);
  uint64_t nsec = tod - static_cast<uint64_t>(sec) * 1000000000ULL;
  struct tm lt;
  if (!localtime_r(&sec, &lt)) {
    out += "failed ";
    return;
  }
  char date[64];
  strftime(date, sizeof date, "%F %H:%M:%S", &lt);
  if (style.nanosecs) {
    util::append_format(out, "{}.{:09} ", date, nsec);
  } else {
    util::append_format(out, "{}.{:06} ", date, nsec / 1000);
  }
}

void append_misc(std::string& out, uint16_t misc, uint32_t record_type) {
  // perf tests each cpumode value as a bit pattern, so 3 (hypervisor) prints "KUH".
  size_t before = out.size();
  auto has = [&](uint16_t m) { return (misc & m) == m; };
  if (has(perfdata::kMiscKernel)) out += 'K';
  if (has(perfdata::kMiscUser)) out += 'U';
  if (has(perfdata::kMiscHypervisor)) out += 'H';
  if (has(perfdata::kMiscGuestKernel)) out += 'G';
  if (has(perfdata::kMiscGuestUser)) out += 'g';
  switch (record_type) {
    case perfdata::kRecordMmap:
    case perfdata::kRecordMmap2:
      if (has(perfdata::kMiscMmapData)) out += 'M';
      break;
    case perfdata::kRecordComm:
      if (has(perfdata::kMiscCommExec)) out += 'E';
      break;
    case perfdata::kRecordSwitch:
    case perfdata::kRecordSwitchCpuWide:
      if (has(perfdata::kMiscSwitchOut)) {
        out += 'S';
        if (misc & perfdata::kMiscSwitchOutPreempt) out += 'p';
      }
      break;
    default:
      break;
  }
  size_t n = out.size() - before;
  // printf("%*s", 6 - n, " "): at least the one space.
  out.append(n < 5 ? 6 - n : 1, ' ');
}

void append_line_start(std::string& out, uint64_t fields, const ScriptLineStart& s, const ScriptStartStyle& style) {
  if (fields & kFieldComm) {
    if (style.comm_unpadded) {
      out.append(s.comm);
      out += ' ';
    } else {
      util::append_padded(out, s.comm, 16, true);
      out += ' ';
    }
  }
  if ((fields & kFieldPid) && (fields & kFieldTid)) {
    append_int_padded(out, s.pid, 5, false);
    out += '/';
    append_int_padded(out, s.tid, 5, true);
    out += ' ';
  } else if (fields & kFieldPid) {
    append_int_padded(out, s.pid, 5, false);
    out += ' ';
  } else if (fields & kFieldTid) {
    append_int_padded(out, s.tid, 5, false);
    out += ' ';
  }
  if (fields & kFieldCpu) {
    if (s.cpu >= 0) {
      out += '[';
      append_uint_zero_padded(out, static_cast<uint64_t>(s.cpu), 3);
      out += "] ";
    } else {
      util::append_format(out, "[{:03}] ", s.cpu);
    }
  }
  if (fields & kFieldMisc) append_misc(out, s.misc, s.record_type);
  if (fields & kFieldTod) append_tod(out, s.time, style);
  if (fields & kFieldTime) append_time(out, s.time_shown, style.nanosecs);
}

void append_period(std::string& out, uint64_t period) {
  char buf[24];
  char* end = buf + sizeof buf;
  char* p = decimal_digits(period, end);
  size_t n = static_cast<size_t>(end - p);
  if (n < 10) out.append(10 - n, ' ');
  out.append(p, n);
  out += ' ';
}

void append_event_name(std::string& out, std::string_view name, int width) {
  util::append_padded(out, name, width > 0 ? static_cast<size_t>(width) : 0, true);
  out += ": ";
}

namespace {

void append_sym(std::string& out, const ScriptLocation& loc, bool symoff) {
  if (!loc.has_sym) {
    out += "[unknown]";
    return;
  }
  out += loc.sym;
  if (symoff) {
    out += "+0x";
    util::append_hex(out, loc.symoff);
  }
}

void append_dso(std::string& out, const ScriptLocation& loc) {
  out += " (";
  if (loc.has_map) {
    out.append(loc.dso);
  } else {
    out += "[unknown]";
  }
  out += ')';
}

}  // namespace

void append_ip(std::string& out, const ScriptLocation& loc, const ScriptIpOptions& o) {
  if (o.ip) util::append_format(out, "{:16x}", loc.ip);
  if (o.sym) {
    out += ' ';
    append_sym(out, loc, o.symoff);
  }
  if (o.dso) append_dso(out, loc);
  if (loc.has_srcline) {
    out += "\n  ";
    out += loc.srcline;
  }
}

// "%16lx" without fmt's format-string machinery: every callchain frame line starts with it.
void append_hex16(std::string& out, uint64_t v) {
  char buf[16];
  int n = 0;
  do {
    buf[15 - n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  out.append(16 - static_cast<size_t>(n) > 16 ? 0 : 16 - static_cast<size_t>(n), ' ');
  out.append(buf + 16 - n, static_cast<size_t>(n));
}

void append_frame(std::string& out, const ScriptLocation& loc, const ScriptIpOptions& o) {
  if (o.ip) {
    out += '\t';
    append_hex16(out, loc.ip);
  }
  if (o.sym) {
    out += ' ';
    append_sym(out, loc, o.symoff);
  }
  if (o.dso && !loc.inlined) append_dso(out, loc);
  if (loc.has_srcline) {
    out += "\n  ";
    out += loc.srcline;
  }
  if (loc.inlined) out += " (inlined)";
  out += '\n';
}

void append_addr(std::string& out, uint64_t addr, const ScriptLocation* loc, const ScriptIpOptions& o) {
  append_hex16(out, addr);
  if (!loc) return;
  if (o.sym) {
    out += ' ';
    append_sym(out, *loc, o.symoff);
  }
  if (o.dso) append_dso(out, *loc);
}

void append_page_size(std::string& out, uint64_t size) {
  // perf's unit_number__scnprintf: divides while the quotient is above 1 (so 1024 stays "1024B").
  if (!size) {
    out += " N/A";
    return;
  }
  static const char kUnits[] = "BKMG";
  int i = 0;
  while (size / 1024 > 1 && i < 3) {
    size /= 1024;
    ++i;
  }
  util::append_format(out, " {}{}", size, kUnits[i]);
}

std::string script_arch(std::string_view m) {
  if (m == "x86_64" || m == "amd64" || m == "x86" || (m.size() == 4 && m[0] == 'i' && m.substr(2) == "86"))
    return "x86";
  if (m == "aarch64" || m == "arm64") return "arm64";
  if (m.starts_with("arm")) return "arm";
  if (m.starts_with("ppc") || m.starts_with("powerpc")) return "powerpc";
  if (m.starts_with("s390")) return "s390";
  if (m.starts_with("riscv")) return "riscv";
  if (m.starts_with("mips")) return "mips";
  return std::string(m);
}

const char* script_register_name(std::string_view arch, unsigned id) {
  if (arch == "x86") {
    static const char* const kX86[] = {"AX", "BX", "CX", "DX", "SI", "DI", "BP",  "SP",  "IP",  "FLAGS", "CS",  "SS",
                                       "DS", "ES", "FS", "GS", "R8", "R9", "R10", "R11", "R12", "R13",   "R14", "R15"};
    if (id < std::size(kX86)) return kX86[id];
    // XMM registers take two slots each; perf names the first.
    static const char* const kXmm[] = {"XMM0", "XMM1", "XMM2",  "XMM3",  "XMM4",  "XMM5",  "XMM6",  "XMM7",
                                       "XMM8", "XMM9", "XMM10", "XMM11", "XMM12", "XMM13", "XMM14", "XMM15"};
    if (id >= 32 && id < 64 && id % 2 == 0) return kXmm[(id - 32) / 2];
    return "unknown";
  }
  if (arch == "arm64") {
    static const char* const kArm64[] = {"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
                                         "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
                                         "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "lr",  "sp",  "pc"};
    if (id < std::size(kArm64)) return kArm64[id];
    if (id == 46) return "vg";
    return "unknown";
  }
  if (arch == "arm") {
    static const char* const kArm[] = {"r0", "r1", "r2",  "r3", "r4", "r5", "r6", "r7",
                                       "r8", "r9", "r10", "fp", "ip", "sp", "lr", "pc"};
    if (id < std::size(kArm)) return kArm[id];
    return "unknown";
  }
  return "unknown";
}

void append_regs(std::string& out, const perfdata::RegsDump& regs, uint64_t mask, std::string_view arch) {
  if (regs.regs.empty()) return;
  util::append_format(out, " ABI:{} ", regs.abi);
  size_t i = 0;
  for (unsigned r = 0; r < 64; ++r) {
    if (!(mask & (1ULL << r))) continue;
    uint64_t v = i < regs.regs.size() ? regs.regs[i] : 0;
    ++i;
    util::append_format(out, "{:>5}:0x{:x} ", script_register_name(arch, r), v);
  }
}

void append_branch_flags(std::string& out, uint64_t flags) {
  const bool mispred = flags & 1, predicted = flags & 2, in_tx = flags & 4, abort = flags & 8;
  const unsigned cycles = (flags >> 4) & 0xffff;
  const unsigned type = (flags >> 20) & 0xf;
  // No type prints nothing; type 15 (EXTEND_ABI) is named by the new_type field, where perf 6.1
  // has eight names and prints printf's "(null)" for the others.
  const char* new_name = analysis::branch_new_type_name((flags >> 26) & 0xf);
  const char* type_name = type == 0 ? "" : type != 15 ? analysis::branch_type_name(type) : new_name ? new_name : "(null)";
  char pred = !(mispred || predicted) ? '-' : predicted ? 'P' : 'M';
  util::append_format(out, "/{}/{}/{}/{}/{} ", pred, in_tx ? 'X' : '-', abort ? 'A' : '-', cycles, type_name);
}

void append_comm_event(std::string& out, const perfdata::CommEvent& e) {
  util::append_format(out, "PERF_RECORD_COMM{}: {}:{}/{}\n", e.exec ? " exec" : "", e.comm, e.pid,
                 e.tid);
}

void append_task_event(std::string& out, uint32_t type, const perfdata::TaskEvent& e) {
  util::append_format(out, "PERF_RECORD_{}({}:{}):({}:{})\n",
                 type == perfdata::kRecordFork ? "FORK" : "EXIT", e.pid, e.tid, e.ppid, e.ptid);
}

namespace {
// C's "%#lx": "0" for zero.
void append_chex(std::string& out, uint64_t v) {
  if (v) {
    util::append_format(out, "{:#x}", v);
  } else {
    out += '0';
  }
}
}  // namespace

void append_mmap_event(std::string& out, const perfdata::MmapEvent& e) {
  util::append_format(out, "PERF_RECORD_MMAP {}/{}: [", e.pid, e.tid);
  append_chex(out, e.addr);
  out += '(';
  append_chex(out, e.len);
  out += ") @ ";
  append_chex(out, e.pgoff);
  util::append_format(out, "]: {} {}\n", (e.misc & perfdata::kMiscMmapData) ? 'r' : 'x', e.filename);
}

void append_mmap2_event(std::string& out, const perfdata::Mmap2Event& e) {
  util::append_format(out, "PERF_RECORD_MMAP2 {}/{}: [", e.pid, e.tid);
  append_chex(out, e.addr);
  out += '(';
  append_chex(out, e.len);
  out += ") @ ";
  append_chex(out, e.pgoff);
  if (e.misc & perfdata::kMiscMmapBuildId) {
    out += " <";
    for (uint8_t b : e.build_id) util::append_format(out, "{:02x}", b);
    out += '>';
  } else {
    util::append_format(out, " {:02x}:{:02x} {} {}", e.maj, e.min, e.ino, e.ino_generation);
  }
  util::append_format(out, "]: {}{}{}{} {}\n", (e.prot & 1) ? 'r' : '-', (e.prot & 2) ? 'w' : '-', (e.prot & 4) ? 'x' : '-',
                 (e.flags & 1) ? 's' : 'p', e.filename);
}

void append_switch_event(std::string& out, uint32_t type, uint16_t misc, const perfdata::SwitchCpuWideEvent& e) {
  bool out_ = misc & perfdata::kMiscSwitchOut;
  const char* in_out = !out_                                       ? "IN         "
                       : !(misc & perfdata::kMiscSwitchOutPreempt) ? "OUT        "
                                                                   : "OUT preempt";
  if (type == perfdata::kRecordSwitch) {
    util::append_format(out, "PERF_RECORD_SWITCH {}\n", in_out);
    return;
  }
  util::append_format(out, "PERF_RECORD_SWITCH_CPU_WIDE {}  {} pid/tid: {:5}/{:<5}\n", in_out,
                 out_ ? "next" : "prev", e.next_prev_pid, e.next_prev_tid);
}

void append_lost_event(std::string& out, const perfdata::LostEvent& e) {
  util::append_format(out, "PERF_RECORD_LOST lost {}\n", e.lost);
}

void append_namespaces_event(std::string& out, const perfdata::NamespacesEvent& e) {
  static constexpr const char* kNames[] = {"net", "uts", "ipc", "pid", "user", "mnt", "cgroup"};
  const size_t n = e.namespaces.size();
  // The count is a u32 in perf's line; with none, the bracket stays open and no newline follows.
  util::append_format(out, "PERF_RECORD_NAMESPACES {}/{} - nr_namespaces: {}\n\t\t[", e.pid, e.tid,
                      static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    if (i && i % 4 == 0) out += "\n\t\t ";
    const perfdata::NamespaceEntry& ns = e.namespaces[i];
    util::append_format(out, "{}/{}: {}/", i, i < std::size(kNames) ? kNames[i] : "UNKNOWN", ns.dev);
    append_chex(out, ns.ino);
    out += i + 1 != n ? ", " : "]\n";
  }
}

void append_cgroup_event(std::string& out, const perfdata::CgroupEvent& e) {
  util::append_format(out, "PERF_RECORD_CGROUP cgroup: {} {}\n", e.id, e.path);
}

void append_ksymbol_event(std::string& out, const perfdata::KsymbolEvent& e) {
  util::append_format(out, "PERF_RECORD_KSYMBOL addr {:x} len {} type {} flags 0x{:x} name {}\n", e.addr, e.len,
                      e.ksym_type, e.flags, e.name);
}

void append_bpf_event(std::string& out, const perfdata::BpfEvent& e) {
  util::append_format(out, "PERF_RECORD_BPF_EVENT type {}, flags {}, id {}\n", e.type, e.flags, e.id);
}

// --- filters -----------------------------------------------------------------------------------

std::string parse_cpu_list(std::string_view text, std::vector<bool>* cpus) {
  cpus->clear();
  if (text.empty()) return "empty cpu list";
  std::vector<int32_t> list;
  if (!util::parse_number_list(text, true, &list)) return fmt::format("invalid cpu list '{}'", text);
  for (int32_t c : list) {
    if (cpus->size() <= static_cast<size_t>(c)) cpus->resize(static_cast<size_t>(c) + 1, false);
    (*cpus)[static_cast<size_t>(c)] = true;
  }
  return "";
}

// --- ScriptWriter ----------------------------------------------------------------------------

ScriptWriter::ScriptWriter(const perfdata::Reader& reader, session::Machine& machine, ScriptOptions options, FILE* out)
    : reader_(reader),
      machine_(machine),
      options_(std::move(options)),
      selection_(options_.dsos, options_.symbols, options_.addr_range),
      file_(out) {
  jobs_ = util::job_count(options_.jobs);
  lanes_.push_back(std::make_unique<Lane>());
  lane0().out = &out_;
  // admit() decodes every sample into lane 0 on this thread while workers format others. The
  // callchain buffer, rewritten for every sample, is made here, before the machine's threads and
  // comms that the workers read are allocated: grown at the first sample instead, it lay next to
  // a thread's comm list, and that cache line went from core to core for every sample (half of
  // format_sample()'s time on the fp recipe at -j 2). 64 KiB: a longer chain grows it elsewhere.
  lane0().sample.callchain.reserve(8192);
  lane0().resolver = std::make_unique<symbols::Resolver>(machine_, options_.symbolizer);
  style_.nanosecs = options_.nanosecs;
  use_callchain_ = !options_.hide_callchain;
  out_.reserve(kFlushBytes + 4096);
}

ScriptWriter::~ScriptWriter() = default;

std::string ScriptWriter::start() {
  const auto& f = reader_.features();
  if (f.has(perfdata::kFeatClockData)) {
    style_.has_clock = true;
    style_.clock_tod_ns = f.clock_data.wall_clock_ns;
    style_.clock_ref_ns = f.clock_data.clockid_ns;
  }
  if (!options_.time.empty()) {
    const analysis::SampleTimeBounds bounds = analysis::sample_time_bounds(reader_);
    if (auto e = analysis::parse_time_ranges(options_.time, &options_.time_ranges, bounds); !e.empty()) {
      return fmt::format("--time {}: {}", options_.time, e);
    }
    // With --reltime perf takes the ranges as times from the first sample: it adds the first
    // sample's time to both ends of each, an open one too, and to the ranges percentages made.
    if (options_.time_base == ScriptOptions::TimeBase::kRelative) {
      if (bounds.first == 0 && bounds.last == 0) {
        return fmt::format("--time {} with --reltime: the file does not say when its first sample was "
                           "(no HEADER_SAMPLE_TIME feature)",
                           options_.time);
      }
      for (analysis::TimeRange& r : options_.time_ranges) {
        r.start += bounds.first;
        r.end += bounds.first;
      }
    }
  }
  // perf names registers after the recording machine, else after this one.
  if (f.has(perfdata::kFeatArch) && !f.arch.empty()) {
    arch_ = script_arch(f.arch);
  } else {
    struct utsname u;
    arch_ = uname(&u) == 0 ? script_arch(u.machine) : "unknown";
  }
  if (!reader_.is_pipe()) {
    for (const auto& b : f.build_ids) {
      uint16_t mode = b.misc & perfdata::kMiscCpumodeMask;
      if (mode == perfdata::kMiscKernel || mode == perfdata::kMiscGuestKernel)
        kernel_build_id_paths_.insert(b.filename);
    }
  }

  // Symbol lookups only when some output shows a symbol, an offset, a srcline or branch symbols.
  for (const auto& set : options_.fields.sets) {
    needs_symbols_ |= (set.fields & (kFieldSym | kFieldSymoff | kFieldSrcline | kFieldBrstacksym | kFieldCallindent |
                                      kFieldSrccode)) != 0;
    shows_dso_ |= (set.fields & kFieldDso) != 0;
  }
  ScriptCheckContext ctx;
  ctx.has_stat = f.has(perfdata::kFeatStat);
  ctx.has_auxtrace = f.has(perfdata::kFeatAuxtrace);
  ctx.has_clock_data = f.has(perfdata::kFeatClockData);
  ctx.pipe = reader_.is_pipe();
  ctx.hide_callchain = options_.hide_callchain;
  std::string err = check_script_fields(options_.fields, reader_.is_pipe() ? std::vector<EventAttr>{} : reader_.attrs(),
                                        ctx, &use_callchain_);
  if (!err.empty()) return err;
  if (options_.cpu_filter && !reader_.is_pipe()) {
    for (int t = 0; t < kOutTypeCount; ++t) {
      for (const auto& ea : reader_.attrs()) {
        if (script_output_type(ea.attr.type) != t || t >= static_cast<int>(kTypeMax)) continue;
        if (!ea.attr.has(perfdata::kSampleCpu)) return "File does not contain CPU events. Remove -C option to proceed.";
        break;
      }
    }
  }
  if (options_.cpu_filter) {
    // perf accepts only cpus below the file's count of available cpus (none yet in a pipe).
    size_t nr = reader_.is_pipe() || !f.has(perfdata::kFeatNrcpus) ? 0 : f.nr_cpus_available;
    for (size_t c = 0; c < options_.cpus.size(); ++c) {
      if (options_.cpus[c] && c >= nr)
        return fmt::format("Requested CPU {} too large. Consider raising MAX_NR_CPUS", c);
    }
  }
  attrs_seen_ = reader_.is_pipe() ? 0 : reader_.attrs().size();
  return "";
}

// Pipe mode: perf's process_attr, run as each ATTR record arrives.
void ScriptWriter::on_attr() {
  const auto& attrs = reader_.attrs();
  while (attrs_seen_ < attrs.size()) {
    size_t i = attrs_seen_++;
    const EventAttr& ea = attrs[i];
    int type = script_output_type(ea.attr.type);
    if (ea.attr.type >= kTypeMax && ea.attr.type != kTypeSynth) continue;
    bool first_of_type = true;
    for (size_t j = 0; j < i; ++j) {
      if (attrs[j].attr.type == ea.attr.type) first_of_type = false;
    }
    if (!first_of_type) continue;
    if (ea.attr.sample_type && fatal_.empty()) {
      ScriptCheckContext ctx;
      ctx.has_auxtrace = reader_.features().has(perfdata::kFeatAuxtrace);
      ctx.pipe = true;
      if (auto e = check_attr(options_.fields, ea, ctx); !e.empty()) fatal_ = e;
    }
    uint64_t combined = 0;
    for (size_t j = 0; j <= i; ++j) combined |= attrs[j].attr.sample_type;
    using namespace perfdata;
    if (use_callchain_ && ((combined & kSampleCallchain) || (combined & kSampleBranchStack) ||
                           ((combined & kSampleRegsUser) && (combined & kSampleStackUser)))) {
      ScriptFieldSet& s = options_.fields.sets[type];
      if (!(s.user_unset_fields & kFieldIp)) s.fields |= kFieldIp;
      if (!(s.user_unset_fields & kFieldSym)) {
        s.fields |= kFieldSym;
        needs_symbols_ = true;  // decided before the pipe named its events
      }
    }
  }
}

bool ScriptWriter::thread_filtered(const session::Thread& thread) const {
  if (!options_.comms.empty()) {
    const std::string* c = thread.comm();
    std::string name = c ? *c : fmt::format(":{}", thread.tid());
    if (std::find(options_.comms.begin(), options_.comms.end(), name) == options_.comms.end()) return true;
  }
  if (!options_.pids.empty() &&
      std::find(options_.pids.begin(), options_.pids.end(), thread.pid()) == options_.pids.end()) {
    return true;
  }
  if (!options_.tids.empty() &&
      std::find(options_.tids.begin(), options_.tids.end(), thread.tid()) == options_.tids.end()) {
    return true;
  }
  return false;
}

bool ScriptWriter::sample_selected(const session::Thread& thread, uint8_t cpumode, const perfdata::Sample& s) {
  const uint64_t ip = s.has(perfdata::kSampleIp) ? s.ip : 0;
  symbols::ResolvedFrame at;
  if (options_.symbolizer) {
    at = lane0().resolver->resolve(&thread, cpumode, ip);
  } else {
    at.map = lane0().resolver->find_map(&thread, cpumode, ip, true);
  }
  return selection_.dso_selected(at.map ? at.map->dso : nullptr) && selection_.symbol_selected(at.at.sym, at.map, ip);
}

ScriptLocation ScriptWriter::locate(Lane& lane, const session::Thread* thread, uint8_t cpumode, uint64_t addr,
                                    bool callchain_frame, bool srcline) const {
  ScriptLocation loc;
  loc.ip = addr;
  // Symbols only when some field shows them; the widened kernel map needs the kernel's symbols,
  // so it is only worth loading them when a symbol or a DSO name is shown.
  const bool symbols = needs_symbols_ && options_.symbolizer;
  symbols::ResolvedFrame at;
  if (thread) {
    if (symbols) {
      at = lane.resolver->resolve(thread, cpumode, addr);
    } else {
      at.map = lane.resolver->find_map(thread, cpumode, addr, shows_dso_);
    }
  }
  const session::Map* map = at.map;
  lane.last_map = map;
  if (!map || !map->dso) return loc;
  loc.has_map = true;
  const session::Dso& dso = *map->dso;
  // perf prints a user-space file by its path and a kernel module as "[name]", unless the file's
  // BUILD_ID table lists the module: perf then made its DSO from that entry, named by the path.
  std::string_view name = "[unknown]";
  if (dso.name) {
    name = *dso.name;
    if (dso.kernel && !kernel_build_id_paths_.count(*dso.name)) name = dso.short_name();
  }
  loc.dso = name;
  // perf 6.1 shows user-space callchain addresses as offsets into the mapped file.
  if (callchain_frame && !dso.kernel) loc.ip = map->map_ip(addr);
  if (symbols) {
    if (at.at.sym) {
      loc.has_sym = true;
      loc.sym = at.at.sym->name();
      loc.symoff = at.at.symoff();
    }
    if (srcline) {
      loc.srcline = options_.symbolizer->srcline(*map, dso.kernel ? -1 : thread->pid(), addr);
      loc.has_srcline = !loc.srcline.empty();
    }
  }
  return loc;
}

ScriptLocation ScriptWriter::locate_fb(Lane& lane, const session::Thread* thread, uint8_t cpumode,
                                       uint64_t addr) const {
  ScriptLocation loc = locate(lane, thread, cpumode, addr, false);
  if (loc.has_map) return loc;
  uint8_t implied = addr >= (1ULL << 63) ? perfdata::kMiscKernel : perfdata::kMiscUser;
  if (implied == cpumode) return loc;
  return locate(lane, thread, implied, addr, false);
}

void ScriptWriter::append_branches(Lane& lane, const Sample& s, const session::Thread& thread, uint8_t cpumode,
                                   uint64_t fields) const {
  std::string& out = *lane.out;
  const bool dso = fields & kFieldDso;
  auto dso_part = [&](const ScriptLocation& loc) {
    out += '(';
    if (loc.has_map) {
      out.append(loc.dso);
    } else {
      out += "[unknown]";
    }
    out += ')';
  };
  for (const perfdata::BranchEntry& b : s.branches) {
    if (fields & kFieldBrstack) {
      util::append_format(out, " 0x{:x}", b.from);
      if (dso) dso_part(locate_fb(lane, &thread, cpumode, b.from));
      util::append_format(out, "/0x{:x}", b.to);
      if (dso) dso_part(locate_fb(lane, &thread, cpumode, b.to));
    } else {
      // perf prints branch symbols with their offsets.
      auto sym_part = [&](const ScriptLocation& loc) {
        if (!loc.has_sym) {
          out += "[unknown]";
        } else {
          util::append_format(out, "{}+{:#x}", loc.sym, loc.symoff);
        }
      };
      ScriptLocation from = locate_fb(lane, &thread, cpumode, b.from);
      sym_part(from);
      if (dso) dso_part(from);
      out += '/';
      ScriptLocation to = locate_fb(lane, &thread, cpumode, b.to);
      sym_part(to);
      if (dso) dso_part(to);
    }
    append_branch_flags(out, b.flags);
  }
}

int ScriptWriter::sideband_attr(const Record& rec, Sample& id, bool* have_id) const {
  const auto& attrs = reader_.attrs();
  *have_id = false;
  if (attrs.empty()) return -1;
  try {
    *have_id = reader_.decode_sample_id(rec, id);
  } catch (const perfdata::FormatError&) {
    *have_id = false;
  }
  uint64_t idv = UINT64_MAX;
  if (*have_id) {
    if (id.has(perfdata::kSampleIdentifier)) {
      idv = id.identifier;
    } else if (id.has(perfdata::kSampleId)) {
      idv = id.id;
    }
  }
  // perf's evlist__id2evsel.
  if (attrs.size() == 1 || idv == 0) return 0;
  auto it = reader_.ids().find(idv);
  if (it != reader_.ids().end()) return static_cast<int>(it->second.attr_index);
  if (!attrs[0].attr.sample_id_all()) return 0;
  return -1;
}

bool ScriptWriter::print_sideband(const Record& rec, int32_t pid, int32_t tid, uint64_t event_time,
                                  bool have_event_time) {
  Sample id;
  bool have_id = false;
  int ai = sideband_attr(rec, id, &have_id);
  ScriptLineStart s;
  s.misc = rec.misc;
  s.record_type = rec.type;
  if (have_id) {
    if (id.has(perfdata::kSampleTid)) {
      s.pid = static_cast<int32_t>(id.pid);
      s.tid = static_cast<int32_t>(id.tid);
    }
    if (id.has(perfdata::kSampleTime)) s.time = id.time;
    if (id.has(perfdata::kSampleCpu)) s.cpu = static_cast<int32_t>(id.cpu);
  }
  if (ai >= 0 && !reader_.attrs()[static_cast<size_t>(ai)].attr.sample_id_all()) {
    s.cpu = 0;
    s.time = have_event_time ? event_time : 0;
    s.pid = pid;
    s.tid = tid;
  }
  if (options_.cpu_filter && s.cpu != -1) {
    size_t c = static_cast<uint32_t>(s.cpu);
    if (c >= options_.cpus.size() || !options_.cpus[c]) return false;
  }
  const session::Thread* thread = nullptr;
  std::string comm_buf;
  if (tid != -1) thread = &machine_.findnew_thread(pid, tid);
  if (thread) {
    const std::string* c = thread->comm();
    if (c) {
      s.comm = *c;
    } else {
      comm_buf = fmt::format(":{}", thread->tid());
      s.comm = comm_buf;
    }
  } else {
    s.comm = ":-1";
  }
  if (ai >= 0) {
    const EventAttr& ea = reader_.attrs()[static_cast<size_t>(ai)];
    uint64_t fields = options_.fields.sets[script_output_type(ea.attr.type)].fields;
    ScriptStartStyle style = style_;
    style.comm_unpadded = (fields & kFieldIp) && ea.attr.has(perfdata::kSampleCallchain) && use_callchain_;
    s.time_shown = (fields & kFieldTime) ? time_shown(s.time) : s.time;
    append_line_start(out_, fields, s, style);
  }
  return true;
}

bool ScriptWriter::keeps_held(const Record& rec) const {
  using namespace perfdata;
  switch (rec.type) {
    case kRecordFinishedRound:  // the threads it may release were copied
      return !options_.show_round_events;
    case kRecordThrottle:
    case kRecordUnthrottle:
      return true;
    case kRecordComm:
    case kRecordExit:
    case kRecordFork:
      return !options_.show_task_events;
    case kRecordMmap:
    case kRecordMmap2: {
      // A process's map (its copies hold the maps before it). The kernel's maps are not copied;
      // a build id may go to a DSO whose symbols are being read; a new DSO goes into the table
      // that a first kernel lookup may be reading. Without a field that shows symbols nothing is
      // looked up: the last two cannot be (-F comm,pid,tid,time,event,ip on the sys recipe
      // formatted every sample on this thread, its 42,294 MMAP2 records each waiting for the
      // batches on their way, since no kernel lookup ever took the kernel's DSO).
      const bool looks_up = needs_symbols_ && options_.symbolizer;
      if (options_.show_mmap_events || (rec.misc & kMiscCpumodeMask) != kMiscUser ||
          (looks_up && ((rec.misc & kMiscMmapBuildId) || options_.symbolizer->kernel_lookup_reads_machine()))) {
        return false;
      }
      const std::span<const uint8_t> body = rec.body();
      uint32_t pid;
      if (body.size() < sizeof pid) return false;
      std::memcpy(&pid, body.data(), sizeof pid);
      return pid != UINT32_MAX;  // -1: the kernel's, whatever the mode says
    }
    default:
      return false;
  }
}

const session::Thread* ScriptWriter::Copies::find_or_copy(const session::Thread& t) {
  const session::AddressSpace* space = t.maps();
  const uint64_t version = space ? space->version() : 0;
  auto version_of = [](const session::Thread& c) { return c.maps() ? c.maps()->version() : 0; };
  // Samples come in runs of one thread: the last copies are the ones to look at. A copy still
  // stands for the thread while what it copied is unchanged.
  const size_t n = live.size();
  for (size_t i = n; i > n - std::min<size_t>(n, 8); --i) {
    const session::Thread& c = threads[i - 1];
    if (live[i - 1] == &t && c.comm() == t.comm() && version_of(c) == version && c.exited() == t.exited() &&
        c.tid() == t.tid() && c.pid() == t.pid()) {
      return &c;
    }
  }
  session::AddressSpace* maps = nullptr;
  if (space) {
    // A version names one state of one space's maps.
    for (size_t i = 0; i < nr_spaces && !maps; ++i) {
      if (spaces[i].version() == version) maps = &spaces[i];
    }
    if (!maps) {
      if (nr_spaces == spaces.size()) spaces.emplace_back();
      maps = &spaces[nr_spaces++];
      *maps = *space;
    }
  }
  if (n == threads.size()) threads.emplace_back();
  session::Thread& copy = threads[n];
  t.copy_to(copy, maps);
  live.push_back(&t);
  return &copy;
}

void ScriptWriter::before_machine(const Record& rec, uint64_t) {
  using namespace perfdata;
  // The held samples print what the machine says now (or what their copies say).
  if (jobs_ > 1 && !keeps_held(rec)) format_held();
  ++changes_;
  // perf prints an exit before it forgets anything about the task.
  if (rec.type == kRecordExit && options_.show_task_events) {
    TaskEvent e = decode_task(rec.body(), rec.misc, reader_.swapped(), rec.offset + 8);
    if (print_sideband(rec, e.pid, e.tid, e.time, true)) append_task_event(out_, rec.type, e);
    flush_if_full();
  }
}

void ScriptWriter::after_machine(const Record& rec, uint64_t time) {
  using namespace perfdata;
  const bool swap = reader_.swapped();
  const uint64_t boff = rec.offset + 8;
  auto trailer = [&]() -> unsigned {
    const EventAttr* ea = reader_.attr_of(rec);
    return ea ? sample_id_trailer_size(ea->attr) : 0;
  };
  // What the line start of a switch or lost record names: the sample_id of its event.
  auto id_task = [&](int32_t* pid, int32_t* tid) {
    Sample id;
    bool have = false;
    sideband_attr(rec, id, &have);
    *pid = have && id.has(kSampleTid) ? static_cast<int32_t>(id.pid) : -1;
    *tid = have && id.has(kSampleTid) ? static_cast<int32_t>(id.tid) : -1;
  };
  switch (rec.type) {
    case kRecordComm:
      if (options_.show_task_events) {
        CommEvent e = decode_comm(rec.body(), rec.misc, trailer(), swap, boff);
        if (print_sideband(rec, e.pid, e.tid, 0, false)) append_comm_event(out_, e);
      }
      break;
    case kRecordFork:
      if (!srccode_states_.empty() || options_.show_task_events) {
        const TaskEvent e = decode_task(rec.body(), rec.misc, swap, boff);
        // A new thread: perf's srccode state is its thread's, made afresh.
        srccode_states_.erase(thread_key(e.pid, e.tid));
        if (options_.show_task_events && print_sideband(rec, e.pid, e.tid, e.time, true)) {
          append_task_event(out_, rec.type, e);
        }
      }
      break;
    case kRecordMmap:
      if (options_.show_mmap_events) {
        MmapEvent e = decode_mmap(rec.body(), rec.misc, trailer(), swap, boff);
        if (print_sideband(rec, e.pid, e.tid, 0, false)) append_mmap_event(out_, e);
      }
      break;
    case kRecordMmap2:
      if (options_.show_mmap_events) {
        Mmap2Event e = decode_mmap2(rec.body(), rec.misc, trailer(), swap, boff);
        if (print_sideband(rec, e.pid, e.tid, 0, false)) append_mmap2_event(out_, e);
      }
      break;
    case kRecordSwitch:
    case kRecordSwitchCpuWide:
      if (options_.show_switch_events) {
        SwitchCpuWideEvent e = decode_switch(rec.body(), rec.misc, rec.type == kRecordSwitchCpuWide, swap, boff);
        int32_t pid, tid;
        id_task(&pid, &tid);
        if (print_sideband(rec, pid, tid, 0, false)) append_switch_event(out_, rec.type, rec.misc, e);
      }
      break;
    case kRecordLost:
      if (options_.show_lost_events) {
        LostEvent e = decode_lost(rec.body(), swap, boff);
        int32_t pid, tid;
        id_task(&pid, &tid);
        if (print_sideband(rec, pid, tid, 0, false)) append_lost_event(out_, e);
      }
      break;
    case kRecordNamespaces:
      if (options_.show_namespace_events) {
        NamespacesEvent e = decode_namespaces(rec.body(), swap, boff);
        if (print_sideband(rec, e.pid, e.tid, 0, false)) append_namespaces_event(out_, e);
      }
      break;
    case kRecordCgroup:
      if (options_.show_cgroup_events) {
        CgroupEvent e = decode_cgroup(rec.body(), trailer(), swap, boff);
        int32_t pid, tid;
        id_task(&pid, &tid);
        if (print_sideband(rec, pid, tid, 0, false)) append_cgroup_event(out_, e);
      }
      break;
    case kRecordKsymbol:
    case kRecordBpfEvent:
      if (options_.show_bpf_events) {
        int32_t pid, tid;
        id_task(&pid, &tid);
        if (rec.type == kRecordKsymbol) {
          KsymbolEvent e = decode_ksymbol(rec.body(), rec.misc, trailer(), swap, boff);
          if (print_sideband(rec, pid, tid, 0, false)) append_ksymbol_event(out_, e);
        } else {
          BpfEvent e = decode_bpf_event(rec.body(), rec.misc, swap, boff);
          if (print_sideband(rec, pid, tid, 0, false)) append_bpf_event(out_, e);
        }
      }
      break;
    case kRecordFinishedRound:
      // No line start: perf prints the record alone.
      if (options_.show_round_events) out_ += "PERF_RECORD_FINISHED_ROUND\n";
      break;
    case kRecordCallchainDeferred:
      on_callchain_deferred(rec, time);  // reaches here only unmerged (--no-merge-callchains)
      break;
    case kRecordHeaderAttr:
      on_attr();
      break;
    case kRecordHeaderBuildId: {
      Features one;
      one.parse(kFeatBuildId, rec.bytes, swap, rec.offset);
      for (const auto& b : one.build_ids) {
        uint16_t mode = b.misc & kMiscCpumodeMask;
        if (mode == kMiscKernel || mode == kMiscGuestKernel) kernel_build_id_paths_.insert(b.filename);
      }
      break;
    }
    default:
      break;
  }
  flush_if_full();
}

void ScriptWriter::sample(const Record& rec) {
  // perf makes a sample of each counter value a SAMPLE_READ record carries.
  if (const perfdata::EventAttr* ea = reader_.attr_of(rec); ea && analysis::SampleReadSplitter::applies(ea->attr)) {
    format_held();
    if (!read_splitter_) read_splitter_ = std::make_unique<analysis::SampleReadSplitter>(reader_);
    reader_.decode_sample(rec, lane0().sample);
    const std::vector<analysis::ReadDelivery> deliveries = read_splitter_->split(lane0().sample);
    for (const auto& d : deliveries) on_sample(rec, &d);
  } else {
    on_sample(rec);
  }
  flush_if_full();
}

void ScriptWriter::on_sample(const Record& rec, const analysis::ReadDelivery* read) {
  const int ai = read ? read->attr_index : reader_.attr_index_of(rec);
  if (ai < 0) return;  // perf skips samples of unknown ids
  const uint64_t fields = options_.fields.sets[script_output_type(reader_.attrs()[static_cast<size_t>(ai)].attr.type)].fields;
  // A sample formatted elsewhere is decoded again there: here its chain need not be read.
  const bool anywhere = !read && formats_anywhere(ai, fields);
  session::Thread* thread =
      admit(rec, fields, anywhere ? perfdata::SampleParts::kWithoutCallchain : perfdata::SampleParts::kAll);
  if (!thread) return;
  if (anywhere) {
    hold(rec, ai, *thread);
    return;
  }
  if (jobs_ > 1) format_held();
  lane0().time_shown = admitted_time_shown_;
  format_sample(lane0(), rec, read, ai, reader_.attrs()[static_cast<size_t>(ai)], *thread);
}

uint64_t ScriptWriter::time_shown(uint64_t time) {
  switch (options_.time_base) {
    case ScriptOptions::TimeBase::kAbsolute:
      return time;
    case ScriptOptions::TimeBase::kRelative:
      if (initial_time_ == 0) initial_time_ = time;
      return time - initial_time_;
    case ScriptOptions::TimeBase::kDelta: {
      const uint64_t shown = previous_time_ ? time - previous_time_ : 0;
      previous_time_ = time;
      return shown;
    }
  }
  return time;
}

session::Thread* ScriptWriter::admit(const Record& rec, uint64_t fields, perfdata::SampleParts parts) {
  using namespace perfdata;
  if (!fields) return nullptr;
  Sample& s = lane0().sample;
  reader_.decode_sample(rec, s, parts);  // throws FormatError: the replay driver reports it
  // As the line start has them (format_sample): -1 and UINT64_MAX where the sample has none.
  const uint64_t time = s.has(kSampleTime) ? s.time : UINT64_MAX;
  const int32_t cpu = s.has(kSampleCpu) ? static_cast<int32_t>(s.cpu) : -1;
  if (analysis::time_skipped(options_.time_ranges, time)) return nullptr;
  if (options_.cpu_filter && cpu != -1) {
    size_t c = static_cast<uint32_t>(cpu);
    if (c >= options_.cpus.size() || !options_.cpus[c]) return nullptr;
  }
  const int32_t pid = s.has(kSampleTid) ? static_cast<int32_t>(s.pid) : -1;
  const int32_t tid = s.has(kSampleTid) ? static_cast<int32_t>(s.tid) : -1;
  session::Thread& thread = machine_.findnew_thread(pid, tid);
  if (thread_filtered(thread)) return nullptr;
  if ((selection_.selects_dsos() || selection_.selects_symbols()) &&
      !sample_selected(thread, static_cast<uint8_t>(rec.misc & kMiscCpumodeMask), s)) {
    return nullptr;
  }
  ++samples_printed_;
  admitted_time_shown_ = (fields & kFieldTime) ? time_shown(time) : time;
  if ((fields & kFieldEvent) && name_width_ < 0) {
    names_.clear();
    name_width_ = 0;
    for (const auto& a : reader_.attrs()) {
      if (reader_.is_pipe() && a.named_by_position) {
        // perf script names the event from its attr there (see EventAttr::named_by_position).
        perfdata::EventAttr unnamed = a;
        unnamed.named = false;
        unnamed.name = perfdata::default_event_name(a.attr);
        names_.push_back(script_event_name(unnamed));
      } else {
        names_.push_back(script_event_name(a));
      }
      name_width_ = std::max(name_width_, static_cast<int>(names_.back().size()));
    }
  }
  return &thread;
}

void ScriptWriter::format_sample(Lane& lane, const Record& rec, const analysis::ReadDelivery* read, int ai,
                                 const EventAttr& ea, const session::Thread& thread) {
  using namespace perfdata;
  const uint64_t fields = options_.fields.sets[script_output_type(ea.attr.type)].fields;
  std::string& out = *lane.out;
  const Sample& s = lane.sample;
  ScriptLineStart start;
  start.misc = rec.misc;
  start.record_type = kRecordSample;
  if (s.has(kSampleTid)) {
    start.pid = static_cast<int32_t>(s.pid);
    start.tid = static_cast<int32_t>(s.tid);
  }
  if (s.has(kSampleCpu)) start.cpu = static_cast<int32_t>(s.cpu);
  if (s.has(kSampleTime)) start.time = s.time;
  start.time_shown = lane.time_shown;
  const uint64_t period = read ? read->period : s.has(kSamplePeriod) ? s.period : ea.attr.sample_period;

  std::string comm_buf;
  if (const std::string* c = thread.comm()) {
    start.comm = *c;
  } else {
    comm_buf = fmt::format(":{}", thread.tid());
    start.comm = comm_buf;
  }
  const bool has_callchain = ea.attr.has(kSampleCallchain);
  // The kernel's chain is walked first (it writes nothing) so that the frame cache's slots of
  // all its frames are on their way from memory while the line start is formatted: probed one
  // after the other, each random slot of the cache was a miss the next had to wait for.
  ScriptIpOptions ipo;
  ipo.ip = fields & kFieldIp;
  ipo.sym = fields & kFieldSym;
  ipo.symoff = fields & kFieldSymoff;
  ipo.dso = fields & kFieldDso;
  const bool srcline = (fields & kFieldSrcline) && options_.symbolizer;
  const bool prints_chain = (fields & kFieldIp) && use_callchain_ && has_callchain;
  bool chain_ok = false;
  if (prints_chain) {
    chain_ok = session::resolve_callchain(machine_, nullptr, s, options_.max_stack, &lane.chain_frames);
    if (lane.frame_cache && !options_.inline_callchains) {
      for (const session::CallchainFrame& f : lane.chain_frames) {
        // The slot's head and the rest of a typical line (about 60 characters). Here, in the loop:
        // a function that only prefetches has no effect the compiler keeps a call for.
        if (const char* slot = cached_frame_slot(lane, thread, f.cpumode, f.ip, ipo, srcline)) {
          __builtin_prefetch(slot);
          __builtin_prefetch(slot + 64);
        }
      }
    }
  }
  ScriptStartStyle style = style_;
  style.comm_unpadded = prints_chain;
  append_line_start(out, fields, start, style);

  if (fields & kFieldPeriod) append_period(out, period);
  if (fields & kFieldEvent) {
    std::string_view name = static_cast<size_t>(ai) < names_.size() ? std::string_view(names_[static_cast<size_t>(ai)])
                                                                    : std::string_view(ea.name);
    append_event_name(out, name, name_width_);
  }
  if (options_.fields.print_flags) out += "                        ";  // "  %-21s " of no flags
  if ((fields & kFieldTrace) && s.has(kSampleRaw)) {
    if (!trace_) trace_ = std::make_unique<ScriptTraceField>(reader_, machine_, options_.symbolizer);
    trace_->append(out, ea.attr.config, start.cpu, s.raw, thread);
  }

  const uint8_t cpumode = rec.misc & kMiscCpumodeMask;

  if (fields & kFieldAddr) {
    // Page-fault addresses are data addresses: perf resolves them (with a kernel/user fallback).
    const bool correlates =
        ea.attr.type == kTypeSoftware &&
        (ea.attr.config == kSwPageFaults || ea.attr.config == kSwPageFaultsMin || ea.attr.config == kSwPageFaultsMaj);
    if (correlates) {
      ScriptLocation loc = locate(lane, &thread, cpumode, s.addr, false);
      if (!loc.has_map) {
        uint8_t alt = s.addr >= (1ULL << 63) ? kMiscKernel : kMiscUser;
        if (alt != cpumode) loc = locate(lane, &thread, alt, s.addr, false);
      }
      append_addr(out, s.addr, &loc, ipo);
    } else {
      append_addr(out, s.addr, nullptr, ipo);
    }
  }
  if (fields & kFieldDataSrc) data_src_column_.append(out, s.data_src);
  // WEIGHT_STRUCT packs weight (low 32 bits) and instruction latency (next 16).
  const bool weight_struct = s.has(kSampleWeightStruct);
  if (fields & kFieldWeight) {
    util::append_format(out, "{:16}", weight_struct ? (s.weight & 0xffffffffULL) : s.weight);
  }
  if (fields & kFieldInsLat) {
    util::append_format(out, "{:16}", weight_struct ? (s.weight >> 32) & 0xffff : 0);
  }

  if (fields & kFieldIp) {
    if (prints_chain) {
      out += '\n';
      // --stop-bt: the chain ends after the first line whose function is listed, whether the
      // line shows it or not (perf compares the frame's symbol, an inlined function's included).
      const bool stops = !options_.stop_bt.empty();
      bool stopped = false;
      auto stop_at = [&](std::string_view name) {
        if (!name.empty() && std::find(options_.stop_bt.begin(), options_.stop_bt.end(), name) != options_.stop_bt.end()) {
          stopped = true;
        }
      };
      // The symbol of a frame locate() just placed, looked up when the fields did not ask for it.
      auto symbol_name = [&](const ScriptLocation& loc, uint8_t mode, uint64_t ip) -> std::string_view {
        if (loc.has_sym) return loc.sym;
        if (!options_.symbolizer || !lane.last_map) return {};
        const symbols::Symbol* sym = lane.resolver->resolve(&thread, mode, ip).at.sym;
        return sym ? sym->name() : std::string_view();
      };
      // One frame, or its inline chain (innermost first) when `expand_inlines` and it has one.
      auto frame = [&](uint8_t mode, uint64_t ip, bool expand_inlines) {
        if (stopped) return;
        if (!expand_inlines && !stops) {
          append_callchain_frame(lane, thread, mode, ip, ipo, srcline);  // the cached line
          return;
        }
        ScriptLocation loc = locate(lane, &thread, mode, ip, true, srcline);
        if (expand_inlines) {
          bool has_sym = loc.has_sym;
          if (!needs_symbols_ && lane.last_map && options_.symbolizer) {
            // perf names every frame it expands (its unwinder does, whatever the fields), so an
            // inline chain shows as addresses marked " (inlined)" without a symbol field too.
            has_sym = lane.resolver->resolve(&thread, mode, ip).at.sym != nullptr;
          }
          if (has_sym && lane.last_map && options_.symbolizer) {
            const session::Map* map = lane.last_map;
            auto chain =
                options_.symbolizer->inline_frames(*map, map->dso && map->dso->kernel ? -1 : thread.pid(), ip);
            if (!chain.empty()) {
              for (const auto& f : chain) {
                if (stopped) break;
                ScriptLocation il = loc;
                il.sym = f.function;
                il.inlined = f.inlined;
                // perf (6.1.192) prints each expanded frame's own line: the call's line in the
                // outer frames, "??:0" included.
                if (srcline) {
                  il.srcline = f.srcline;
                  il.has_srcline = !f.srcline.empty();
                }
                append_frame(out, il, ipo);
                if (stops) stop_at(f.function);
              }
              return;
            }
          }
        }
        append_frame(out, loc, ipo);
        if (stops) stop_at(symbol_name(loc, mode, ip));
      };
      // The kernel's chain as every command walks it (context markers, --max-stack); a chain
      // with a context perf does not know is dropped, as perf drops it.
      // No thread: no map is looked up for the frames here (most lines come from the frame cache).
      if (options_.inline_callchains || stops) {
        // --inline-callchains: a frame inside inlined code becomes its inline chain.
        for (const session::CallchainFrame& f : lane.chain_frames) frame(f.cpumode, f.ip, options_.inline_callchains);
      } else {
        // Most frames of most files: the cached line, without the lambda's frame around it.
        for (const session::CallchainFrame& f : lane.chain_frames) {
          append_callchain_frame(lane, thread, f.cpumode, f.ip, ipo, srcline);
        }
      }
      if (chain_ok && !stopped && s.deferred_callchain && lane.chain_frames.size() < options_.max_stack) {
        // A deferred chain not merged (--no-merge-callchains): its last word is the cookie that
        // names the CALLCHAIN_DEFERRED record, shown as perf 6.19 shows it.
        ScriptLocation loc = locate(lane, &thread, kMiscUser, s.deferred_cookie, true);
        loc.has_sym = true;
        loc.sym = "(cookie)";
        ScriptIpOptions cookie_ipo = ipo;
        cookie_ipo.symoff = false;
        append_frame(out, loc, cookie_ipo);
      }
      // --call-graph dwarf: the user part comes from unwinding the stack copy, after the
      // kernel's frames, with --max-stack frames of its own. perf always expands the inline
      // chains of these frames (its unwinder appends them as it goes).
      if (chain_ok && options_.unwinder && symbols::DwarfUnwinder::wants(ea.attr, s)) {
        lane.unwound.clear();
        options_.unwinder->unwind(thread, s, options_.max_stack, &lane.unwound);
        for (const auto& f : lane.unwound) frame(f.cpumode, f.ip, options_.unwound_inline_frames || options_.inline_callchains);
      }
    } else {
      out += ' ';
      ScriptLocation loc = locate(lane, &thread, cpumode, s.ip, false, srcline);
      loc.ip = s.ip;
      append_ip(out, loc, ipo);
    }
  }
  if (fields & kFieldIregs) append_regs(out, s.regs_intr, ea.attr.sample_regs_intr, arch_);
  if (fields & kFieldUregs) append_regs(out, s.regs_user, ea.attr.sample_regs_user, arch_);
  if (fields & (kFieldBrstack | kFieldBrstacksym)) append_branches(lane, s, thread, cpumode, fields);
  if (fields & kFieldPhysAddr) util::append_format(out, "{:16x}", s.phys_addr);
  if (fields & kFieldDataPageSize) append_page_size(out, s.data_page_size);
  if (fields & kFieldCodePageSize) append_page_size(out, s.code_page_size);
  out += '\n';
  if (fields & kFieldSrccode) append_srccode(out, thread, cpumode, s.ip);
}

const ScriptWriter::SourceText* ScriptWriter::source_text(const std::string& path) {
  auto [it, made] = sources_.try_emplace(path);
  if (made) {
    // perf reads a source file whole, once, and keeps its lines; one it cannot read gives none.
    std::ifstream in(path, std::ios::binary);
    if (in) {
      auto text = std::make_unique<SourceText>();
      text->bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      for (size_t at = 0; at < text->bytes.size();) {
        text->lines.push_back(at);
        const size_t nl = text->bytes.find('\n', at);
        at = nl == std::string::npos ? text->bytes.size() : nl + 1;
      }
      it->second = std::move(text);
    }
  }
  return it->second.get();
}

void ScriptWriter::append_srccode(std::string& out, const session::Thread& thread, uint8_t cpumode, uint64_t ip) {
  // perf's srccode field: the source line of the sample's ip, after the sample, when it is not
  // the line printed last for this thread (perf keeps that per thread: a new one starts afresh).
  if (!options_.symbolizer) return;
  const session::Map* map = lane0().resolver->find_map(&thread, cpumode, ip, false);
  if (!map || !map->dso) return;
  std::string file;
  unsigned line = 0;
  if (!options_.symbolizer->source_position(*map, thread.pid(), ip, &file, &line)) return;
  SrccodeState& last = srccode_states_[thread_key(thread.pid(), thread.tid())];
  if (last.line == line && last.file == file && !last.file.empty()) return;
  const SourceText* text = source_text(file);
  if (!text || line == 0 || line > text->lines.size()) return;
  const size_t begin = text->lines[line - 1];
  size_t end = text->bytes.find('\n', begin);
  if (end == std::string::npos) end = text->bytes.size();
  util::append_format(out, "|{:<8} ", line);
  out.append(text->bytes, begin, end - begin);
  out += '\n';
  last.file = std::move(file);
  last.line = line;
}

// perf 6.19's line for a CALLCHAIN_DEFERRED record: the line start of its sample_id, the
// cookie, then the user frames (plain user addresses, no context marker).
void ScriptWriter::on_callchain_deferred(const Record& rec, uint64_t time) {
  using namespace perfdata;
  if (analysis::time_skipped(options_.time_ranges, time)) return;
  const bool swap = reader_.swapped();
  Sample id;
  bool have = false;
  int ai = sideband_attr(rec, id, &have);
  if (ai < 0) return;
  const EventAttr& ea = reader_.attrs()[static_cast<size_t>(ai)];
  std::span<const uint8_t> body = rec.body();
  if (ea.attr.sample_id_all()) {
    const size_t trailer = sample_id_trailer_size(ea.attr);
    if (trailer > body.size()) throw FormatError(rec.offset, "CALLCHAIN_DEFERRED shorter than its sample_id");
    body = body.first(body.size() - trailer);
  }
  CallchainDeferredEvent e = decode_callchain_deferred(body, rec.misc, swap, rec.offset + 8);
  const uint64_t fields = options_.fields.sets[script_output_type(ea.attr.type)].fields;
  if (!fields) return;
  int32_t pid = have && id.has(kSampleTid) ? static_cast<int32_t>(id.pid) : -1;
  int32_t tid = have && id.has(kSampleTid) ? static_cast<int32_t>(id.tid) : -1;
  if (tid != -1 && thread_filtered(machine_.findnew_thread(pid, tid))) return;
  if (!print_sideband(rec, pid, tid, 0, false)) return;
  util::append_format(out_, "DEFERRED CALLCHAIN [cookie: {:x}]", e.cookie);
  if (fields & kFieldIp) {
    ScriptIpOptions ipo;
    ipo.ip = true;
    ipo.sym = fields & kFieldSym;
    ipo.symoff = fields & kFieldSymoff;
    ipo.dso = fields & kFieldDso;
    const session::Thread* thread = tid != -1 ? &machine_.findnew_thread(pid, tid) : nullptr;
    if (use_callchain_ && thread) {
      out_ += '\n';
      unsigned entries = 0;
      for (uint64_t ip : e.ips) {
        if (entries++ >= options_.max_stack) break;
        append_callchain_frame(lane0(), *thread, kMiscUser, ip, ipo, false);
      }
    } else {
      out_ += ' ';
      ScriptLocation loc;
      append_ip(out_, loc, ipo);
    }
  }
  out_ += '\n';
}

void ScriptWriter::FreeDeleter::operator()(FrameSlot* p) const {
  if (p) ::munmap(p, sizeof(FrameSlot) << kFrameSlotBits);
}

void ScriptWriter::append_callchain_frame(Lane& lane, const session::Thread& thread, uint8_t mode, uint64_t ip,
                                          const ScriptIpOptions& ipo, bool srcline) const {
  // The frame's text depends on the map and the symbols found for ip in the space the mode
  // selects (the same lookups locate() does), and nothing else that changes during a session:
  // a map change renews the space's version, a KSYMBOL record the kernel's (the replay driver).
  const session::AddressSpace* space = frame_space(thread, mode);
  if (space && lane.frame_cache) {
    // The hit, which most frames are, kept apart from the rest so that it costs no more than
    // the probe and the copy.
    const uint64_t tag = frame_tag(space->version(), ipo, srcline);
    const FrameSlot& slot = lane.frame_cache[frame_slot(tag, ip)];
    if (slot.tag == tag && slot.ip == ip) {
      lane.out->append(slot.text, slot.len);
      return;
    }
  }
  append_uncached_frame(lane, thread, space, mode, ip, ipo, srcline);
}

const session::AddressSpace* ScriptWriter::frame_space(const session::Thread& thread, uint8_t mode) const {
  if (mode == perfdata::kMiscKernel) return &machine_.kernel_maps();
  if (mode == perfdata::kMiscUser) return thread.maps();
  return nullptr;
}

const char* ScriptWriter::cached_frame_slot(const Lane& lane, const session::Thread& thread, uint8_t mode,
                                            uint64_t ip, const ScriptIpOptions& ipo, bool srcline) const {
  const session::AddressSpace* space = frame_space(thread, mode);
  if (!space) return nullptr;
  return reinterpret_cast<const char*>(&lane.frame_cache[frame_slot(frame_tag(space->version(), ipo, srcline), ip)]);
}

void ScriptWriter::append_uncached_frame(Lane& lane, const session::Thread& thread,
                                         const session::AddressSpace* space, uint8_t mode, uint64_t ip,
                                         const ScriptIpOptions& ipo, bool srcline) const {
  std::string& out = *lane.out;
  if (!space) {
    append_frame(out, locate(lane, &thread, mode, ip, true, srcline), ipo);
    return;
  }
  if (!lane.frame_cache) {
    // Zeroed and populated at once: touched a slot at a time, each page would first map the zero
    // page (the probe reads) and then be copied on the write, a TLB shootdown on every CPU of
    // this multi-threaded process each time.
    // Huge pages where the kernel gives them (transparent_hugepage=madvise): a probe is one
    // random access into 2 MB, which with 4 KiB pages is a TLB miss nearly every time.
    const size_t bytes = sizeof(FrameSlot) << kFrameSlotBits;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
    if (::madvise(p, bytes, MADV_POPULATE_WRITE) != 0)
#endif
    {
      std::memset(p, 0, bytes);  // kernels before 5.14: the write faults them in
    }
    lane.frame_cache.reset(static_cast<FrameSlot*>(p));
  }
  const size_t begin = out.size();
  append_frame(out, locate(lane, &thread, mode, ip, true, srcline), ipo);
  const size_t len = out.size() - begin;
  // locate() may have changed the space (a kernel map widened from kallsyms): key by what it
  // is now, so the entry is never taken for the space it was before.
  const uint64_t tag = frame_tag(space->version(), ipo, srcline);
  FrameSlot& slot = lane.frame_cache[frame_slot(tag, ip)];
  if (len <= sizeof(slot.text)) {
    slot.tag = tag;
    slot.ip = ip;
    slot.len = static_cast<uint32_t>(len);
    std::memcpy(slot.text, out.data() + begin, len);
  }
}

bool ScriptWriter::formats_anywhere(int ai, uint64_t fields) const {
  if (jobs_ < 2) return false;
  if (fields & kFieldSrccode) return false;  // whether a line shows depends on the line before it
  const PerfEventAttr& attr = reader_.attrs()[static_cast<size_t>(ai)].attr;
  if (fields & kFieldDataSrc) return false;  // its width is the widest printed before
  if ((fields & kFieldTrace) && attr.has(perfdata::kSampleRaw)) return false;  // one trace formatter
  if (options_.unwinder && symbols::DwarfUnwinder::copies_stacks(attr)) return false;  // one unwinder
  return true;
}

void ScriptWriter::hold(const Record& rec, int ai, session::Thread& thread) {
  if (!filling_) {
    std::lock_guard lock(batches_mu_);
    if (spare_batches_.empty()) {
      filling_ = std::make_unique<Batch>();
    } else {
      filling_ = std::move(spare_batches_.back());
      spare_batches_.pop_back();
    }
  }
  Batch& b = *filling_;
  // The batch's own copy of the event: a pipe announces events as it goes, and the reader adds
  // them (moving the ones it has) when it reads their record, while batches are formatted.
  uint32_t event = 0;
  while (event < b.events.size() && b.events[event].first != ai) ++event;
  if (event == b.events.size()) {
    const EventAttr& a = reader_.attrs()[static_cast<size_t>(ai)];
    EventAttr copy;
    copy.attr = a.attr;
    copy.name = a.name;
    copy.named = a.named;
    copy.named_by_position = a.named_by_position;
    b.events.emplace_back(ai, std::move(copy));
  }
  const session::Thread* copy = b.copies.copy_of(thread, changes_);
  if (rec.stable) {
    b.held.push_back({perfdata::RecordMeta::of(rec), rec.bytes.data(), 0, event, copy, admitted_time_shown_});
  } else {
    const size_t at = b.bytes.append(rec.bytes.data(), rec.bytes.size());
    b.held.push_back({perfdata::RecordMeta::of(rec), nullptr, at, event, copy, admitted_time_shown_});
  }
  if (b.held.size() >= kBatchSamples || b.bytes.size() >= kBatchBytes) queue_batch();
}

void ScriptWriter::queue_batch() {
  if (!filling_) return;
  if (!formatters_) {
    formatters_ = std::make_unique<util::WorkQueue>(jobs_, util::WorkQueueOptions{.name = "tperf-fmt"});
    std::lock_guard lock(batches_mu_);
    // A lane for each worker and one for this thread when it formats a batch: not lane 0,
    // which admit() decodes into meanwhile.
    for (unsigned i = 0; i < formatters_->nr_threads(); ++i) {
      auto lane = std::make_unique<Lane>();
      lane->out = &out_;
      lane->resolver = std::make_unique<symbols::Resolver>(machine_, options_.symbolizer);
      free_lanes_.push_back(lane.get());
      lanes_.push_back(std::move(lane));
    }
  }
  bool idle;
  {
    std::lock_guard lock(batches_mu_);
    idle = batches_.empty() && !writing_;
  }
  // What this thread wrote since the last batches (side-band lines, samples it formatted
  // itself) goes out first: the batches are written by the threads that format them.
  if (idle) write_buffered();
  util::handoff_publish();
  {
    std::lock_guard lock(batches_mu_);
    filling_->state = Batch::State::kQueued;
    batches_.push_back(std::move(filling_));
  }
  formatters_->queue_work([this] { format_queued_batch(); });
  // Bounded: at most two batches per thread on their way. This thread, which also applies the
  // records and holds the samples, formats one of them only while more are queued than the
  // workers take next. Formatting whenever more than one per thread were on their way, it took
  // the batch a worker would have taken next: on the sys recipe that worker was idle a third of
  // the time while this thread set the pace (2 kHz profile), and sys script took 0.203-0.235 s
  // against 0.198-0.208 s now (median of 8 alternating sets of 5 runs: 0.214 against 0.203).
  const size_t workers = formatters_->nr_threads() - 1;  // (0: this thread formats them all)
  wait_for_batches(2 * jobs_, workers);
}

void ScriptWriter::wait_for_batches(size_t at_most, size_t leave) {
  // Only this thread queues batches: once none is left queued, none comes before the wait ends.
  auto done = [&] { return batches_.size() <= at_most && (at_most > 0 || !writing_); };
  auto queued = [&] {
    size_t n = 0;
    for (const auto& b : batches_) n += b->state == Batch::State::kQueued;
    return n;
  };
  for (;;) {
    bool take;
    {
      std::lock_guard lock(batches_mu_);
      if (done()) break;
      take = queued() > leave;
    }
    if (!take || !format_queued_batch()) {
      std::unique_lock lock(batches_mu_);
      batch_done_.wait(lock, done);
    }
  }
  std::lock_guard lock(batches_mu_);
  if (batch_error_) std::rethrow_exception(std::exchange(batch_error_, nullptr));
}

void ScriptWriter::write_buffered() {
  if (async_) {
    if (!out_.empty()) async_->submit(out_);
    async_->drain();
  } else if (!out_.empty()) {
    std::fwrite(out_.data(), 1, out_.size(), file_);
  }
  out_.clear();
}

bool ScriptWriter::format_queued_batch() {
  Batch* b = nullptr;
  Lane* lane = nullptr;
  {
    std::lock_guard lock(batches_mu_);
    for (auto& q : batches_) {
      if (q->state == Batch::State::kQueued) {
        b = q.get();
        break;
      }
    }
    if (!b) return false;
    b->state = Batch::State::kFormatting;
    lane = free_lanes_.back();
    free_lanes_.pop_back();
    b->lane = lane;
    if (!lane->texts.empty()) {
      b->text = std::move(lane->texts.back());
      lane->texts.pop_back();
    }
  }
  lane->out = &b->text;
  try {
    format_batch(*lane, *b);
  } catch (...) {
    b->error = std::current_exception();
  }
  lane->out = &out_;
  std::unique_lock lock(batches_mu_);
  free_lanes_.push_back(lane);
  b->state = Batch::State::kDone;
  write_done_batches(lock);
  batch_done_.notify_all();
  return true;
}

void ScriptWriter::format_batch(Lane& lane, const Batch& b) {
  perfdata::Record rec;
  for (const Held& h : b.held) {
    h.meta.fill(rec, h.bytes ? h.bytes : b.bytes.data() + h.at);
    const auto& [ai, ea] = b.events[h.event];
    // admit() decoded it once already: this cannot fail.
    perfdata::decode_sample(rec.body(), reader_.swapped(), rec.offset + 8, ea.attr, lane.sample);
    lane.time_shown = h.time_shown;
    format_sample(lane, rec, nullptr, ai, ea, *h.thread);
  }
}

void ScriptWriter::write_done_batches(std::unique_lock<std::mutex>& lock) {
  if (writing_) return;
  writing_ = true;
  while (!batches_.empty() && batches_.front()->state == Batch::State::kDone) {
    std::unique_ptr<Batch> b = std::move(batches_.front());
    batches_.pop_front();
    lock.unlock();
    if (!b->error) std::fwrite(b->text.data(), 1, b->text.size(), file_);
    b->text.clear();
    b->held.clear();
    b->bytes.clear();
    b->events.clear();
    b->copies.clear();
    lock.lock();
    if (b->error && !batch_error_) batch_error_ = b->error;
    b->error = nullptr;
    b->lane->texts.push_back(std::move(b->text));
    spare_batches_.push_back(std::move(b));
  }
  writing_ = false;
}

void ScriptWriter::format_held() {
  // The batches on their way first (this thread formats those still queued), then what is held:
  // a few samples here, into out_ (written before the next batch is queued), where handing them to
  // a worker and waiting for it would cost more than formatting them (on a system-wide recording
  // every new process and every exit ends a batch).
  if (formatters_) wait_for_batches(0);
  if (!filling_) return;
  if (filling_->held.size() >= kMinParallel) {
    queue_batch();
    wait_for_batches(0);
    return;
  }
  Batch& b = *filling_;
  format_batch(lane0(), b);
  b.held.clear();
  b.bytes.clear();
  b.events.clear();
  b.copies.clear();
  {
    std::lock_guard lock(batches_mu_);
    spare_batches_.push_back(std::move(filling_));
  }
  flush_if_full();
}

void ScriptWriter::flush_if_full() {
  if (out_.size() >= kFlushBytes) {
    if (!async_) async_ = std::make_unique<util::AsyncWriter>(file_);
    async_->submit(out_);
    if (out_.capacity() < kFlushBytes + 4096) out_.reserve(kFlushBytes + 4096);
  }
}

void ScriptWriter::finish() {
  format_held();
  write_buffered();
  async_.reset();
  std::fflush(file_);
}

}  // namespace tperf::output

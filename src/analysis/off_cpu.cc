#include "analysis/off_cpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "analysis/sample_path.h"
#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "perfdata/tracing_data.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"

namespace tperf::analysis {

namespace {

// The text after "key:" up to ';' in a field line, trimmed.
std::string_view attr_value(std::string_view line, std::string_view key) {
  size_t at = line.find(key);
  if (at == std::string_view::npos) return {};
  at += key.size();
  size_t end = line.find(';', at);
  if (end == std::string_view::npos) end = line.size();
  std::string_view v = line.substr(at, end - at);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

bool parse_u32(std::string_view s, uint32_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// A field of the RAW data, or nullopt when the record is too short for it (untrusted bytes).
std::optional<int64_t> read_field(std::span<const uint8_t> raw, const TraceField& f, bool swap) {
  if (f.size == 0 || f.offset > raw.size() || f.size > raw.size() - f.offset) return std::nullopt;
  const uint8_t* p = raw.data() + f.offset;
  switch (f.size) {
    case 1:
      return f.is_signed ? static_cast<int64_t>(static_cast<int8_t>(*p)) : static_cast<int64_t>(*p);
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      if (swap) v = __builtin_bswap16(v);
      return f.is_signed ? static_cast<int64_t>(static_cast<int16_t>(v)) : static_cast<int64_t>(v);
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      if (swap) v = __builtin_bswap32(v);
      return f.is_signed ? static_cast<int64_t>(static_cast<int32_t>(v)) : static_cast<int64_t>(v);
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      if (swap) v = __builtin_bswap64(v);
      return static_cast<int64_t>(v);
    }
    default:
      return std::nullopt;
  }
}

bool usable(const TraceField& f) { return f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8; }

}  // namespace

std::unordered_map<std::string, TraceField> parse_trace_fields(std::string_view format) {
  std::unordered_map<std::string, TraceField> fields;
  size_t pos = 0;
  while (pos < format.size()) {
    size_t end = format.find('\n', pos);
    if (end == std::string_view::npos) end = format.size();
    const std::string_view line = format.substr(pos, end - pos);
    pos = end + 1;
    const std::string_view decl = attr_value(line, "field:");
    if (decl.empty()) continue;
    // "pid_t prev_pid", "char prev_comm[16]": the name is the last word, before any '['.
    std::string_view field_name = decl.substr(0, decl.find('['));
    const size_t space = field_name.find_last_of(" \t*");
    if (space != std::string_view::npos) field_name.remove_prefix(space + 1);
    TraceField f;
    if (!parse_u32(attr_value(line, "offset:"), &f.offset) || !parse_u32(attr_value(line, "size:"), &f.size)) continue;
    f.is_signed = attr_value(line, "signed:") == "1";
    fields[std::string(field_name)] = f;
  }
  return fields;
}

uint64_t parse_trace_id(std::string_view format) {
  size_t pos = 0;
  while (pos < format.size()) {
    size_t end = format.find('\n', pos);
    if (end == std::string_view::npos) end = format.size();
    const std::string_view line = format.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, 3) == "ID:") {
      std::string_view v = line.substr(3);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      uint64_t id = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
      return ec == std::errc() ? id : 0;
    }
  }
  return 0;
}

std::optional<SchedSwitchLayout> sched_switch_layout(std::string_view format) {
  const auto fields = parse_trace_fields(format);
  SchedSwitchLayout l;
  auto get = [&](const char* n, TraceField* out) {
    auto it = fields.find(n);
    if (it == fields.end() || !usable(it->second)) return false;
    *out = it->second;
    return true;
  };
  if (!get("prev_pid", &l.prev_pid) || !get("prev_state", &l.prev_state) || !get("next_pid", &l.next_pid)) {
    return std::nullopt;
  }
  l.id = parse_trace_id(format);
  l.from_file = true;
  return l;
}

SchedSwitchLayout builtin_sched_switch_layout() {
  SchedSwitchLayout l;
  l.prev_pid = {24, 4, true};
  l.prev_state = {32, 8, true};
  l.next_pid = {56, 4, true};
  return l;
}

OffCpuState off_cpu_state(uint64_t prev_state) {
  // The kernel reports one TASK_REPORT bit (S 0x1, D 0x2, T 0x4, t 0x8, X 0x10, Z 0x20, P 0x40,
  // I 0x80), 0 for a task still running (it yielded), and TASK_REPORT_MAX (0x100, "R+") for a
  // preempted one.
  if (prev_state == 0 || (prev_state & 0x100) != 0) return OffCpuState::kRunnable;
  if ((prev_state & 0x30) != 0) return OffCpuState::kDead;
  return OffCpuState::kSleeping;
}

const char* off_cpu_state_name(OffCpuState s) {
  switch (s) {
    case OffCpuState::kRunnable:
      return "runnable";
    case OffCpuState::kSleeping:
      return "sleeping";
    case OffCpuState::kDead:
      return "exited";
  }
  return "?";
}

OffCpuTracker::OffCpuTracker(const perfdata::Reader& reader) : reader_(reader), layout_(builtin_sched_switch_layout()) {
  const perfdata::Features& f = reader.features();
  if (auto it = f.raw.find(perfdata::kFeatTracingData); it != f.raw.end() && !it->second.empty()) {
    // Feature sections do not keep their file offset here: messages count from the section.
    if (auto format = perfdata::tracing_data_event_format(it->second, "sched", "sched_switch", 0)) {
      if (auto l = sched_switch_layout(*format)) layout_ = *l;
    }
  }
}

// Attrs are asked for as they are: a pipe announces its events (HEADER_ATTR) and names them
// (TRACING_DATA, EVENT_UPDATE) as the stream goes.
bool OffCpuTracker::switch_attr(const perfdata::EventAttr& ea) const {
  if (ea.attr.type != perfdata::kTypeTracepoint) return false;
  return layout_.id != 0 ? ea.attr.config == layout_.id : ea.name == "sched:sched_switch";
}

// perf's BPF way: a bpf-output event named "offcpu-time" whose period is the blocked time.
bool OffCpuTracker::offcpu_attr(const perfdata::EventAttr& ea) { return ea.name == "offcpu-time"; }

// tperf's offcpu-time event has two ids: samples of runnable waits carry the second.
uint64_t OffCpuTracker::runnable_id_of(const perfdata::EventAttr& ea) {
  return offcpu_attr(ea) && ea.ids.size() >= 2 ? ea.ids[1] : 0;
}

uint64_t OffCpuTracker::runnable_id(int attr_index) const {
  if (attr_index < 0) return 0;
  const auto i = static_cast<size_t>(attr_index);
  if (finished_) return i < runnable_id_.size() ? runnable_id_[i] : 0;
  const auto& attrs = reader_.attrs();
  return i < attrs.size() ? runnable_id_of(attrs[i]) : 0;
}

OffCpuSource OffCpuTracker::source() const {
  if (finished_) return final_source_;
  const auto& attrs = reader_.attrs();
  if (std::any_of(attrs.begin(), attrs.end(), [&](const auto& ea) { return offcpu_attr(ea); })) {
    return OffCpuSource::kOffcpuTimeEvent;
  }
  if (std::any_of(attrs.begin(), attrs.end(), [&](const auto& ea) { return switch_attr(ea); })) return OffCpuSource::kSchedSwitch;
  if (any_switch_records_) return OffCpuSource::kSwitchRecords;
  return OffCpuSource::kNone;
}

bool OffCpuTracker::is_switch_event(int attr_index) const {
  if (finished_) {
    return attr_index >= 0 && static_cast<size_t>(attr_index) < switch_attr_.size() && switch_attr_[static_cast<size_t>(attr_index)];
  }
  const auto& attrs = reader_.attrs();
  return attr_index >= 0 && static_cast<size_t>(attr_index) < attrs.size() && switch_attr(attrs[static_cast<size_t>(attr_index)]);
}

bool OffCpuTracker::is_offcpu_time_event(int attr_index) const {
  if (finished_) {
    return attr_index >= 0 && static_cast<size_t>(attr_index) < offcpu_attr_.size() && offcpu_attr_[static_cast<size_t>(attr_index)];
  }
  const auto& attrs = reader_.attrs();
  return attr_index >= 0 && static_cast<size_t>(attr_index) < attrs.size() && offcpu_attr(attrs[static_cast<size_t>(attr_index)]);
}

OffCpuTracker::RecordKey OffCpuTracker::key_of(const perfdata::Record& rec) {
  return {rec.offset, rec.from_compressed ? rec.stream_offset : ~uint64_t{0}, rec.file_index};
}

void OffCpuTracker::open(int32_t pid, int32_t tid, uint64_t time, OffCpuState state, const perfdata::Record* rec) {
  OffCpuInterval iv;
  iv.pid = pid;
  iv.tid = tid;
  iv.start = time;
  iv.end = time;
  iv.state = state;
  if (rec) {
    iv.switch_offset = rec->offset;
    by_record_[key_of(*rec)] = intervals_.size();
  }
  open_[tid] = intervals_.size();
  intervals_.push_back(iv);
}

void OffCpuTracker::close(int32_t tid, uint64_t time, bool late) {
  auto it = open_.find(tid);
  if (it == open_.end()) return;
  OffCpuInterval& iv = intervals_[it->second];
  // Events of one time stamp may come in either order; an interval never ends before it began.
  iv.end = std::max(iv.start, time);
  iv.closed_late = late;
  open_.erase(it);
}

OffCpuState OffCpuTracker::offcpu_time_state(const perfdata::Sample& sample, int attr_index) const {
  if (!is_offcpu_time_event(attr_index)) return OffCpuState::kSleeping;
  const uint64_t runnable = runnable_id(attr_index);
  const uint64_t id = sample.has(perfdata::kSampleIdentifier) ? sample.identifier : sample.id;
  return runnable != 0 && id == runnable ? OffCpuState::kRunnable : OffCpuState::kSleeping;
}

void OffCpuTracker::on_sample(const perfdata::Record& rec, const perfdata::Sample& sample, int attr_index) {
  if (is_offcpu_time_event(attr_index)) {
    // Totals written at the end, stamped after every real sample: they say nothing of when
    // threads ran, so they neither move the clock nor close intervals.
    const int i = offcpu_time_state(sample, attr_index) == OffCpuState::kRunnable ? 1 : 0;
    offcpu_runnable_seen_ = offcpu_runnable_seen_ || i == 1;
    offcpu_ns_[i] += sample.period;
    ++offcpu_samples_[i];
    return;
  }
  last_time_ = std::max(last_time_, sample.time);
  const auto tid = static_cast<int32_t>(sample.tid);
  if (!is_switch_event(attr_index)) {
    // A thread seen running was switched in by now, whether the switch-in was recorded or not.
    if (tid > 0) close(tid, sample.time, true);
    return;
  }
  const bool swap = reader_.swapped();
  const auto prev_pid = read_field(sample.raw, layout_.prev_pid, swap);
  const auto prev_state = read_field(sample.raw, layout_.prev_state, swap);
  const auto next_pid = read_field(sample.raw, layout_.next_pid, swap);
  if (!prev_pid || !prev_state || !next_pid) {
    throw perfdata::FormatError(rec.offset, fmt::format("sched_switch sample with {} bytes of raw data, too short for "
                                                        "prev_pid/prev_state/next_pid",
                                                        sample.raw.size()));
  }
  const auto out_tid = static_cast<int32_t>(*prev_pid);
  const auto in_tid = static_cast<int32_t>(*next_pid);
  if (in_tid > 0) close(in_tid, sample.time, false);
  if (out_tid <= 0) return;  // the idle task is never off-CPU
  close(out_tid, sample.time, true);  // it ran since its last switch-out
  const OffCpuState state = off_cpu_state(static_cast<uint64_t>(*prev_state));
  if (state == OffCpuState::kDead) return;
  // The sample is taken in the outgoing task: its pid is the process of prev_pid.
  const int32_t pid = out_tid == tid ? static_cast<int32_t>(sample.pid) : -1;
  open(pid, out_tid, sample.time, state, &rec);
}

void OffCpuTracker::on_other(const perfdata::Record& rec, uint64_t time) {
  last_time_ = std::max(last_time_, time);
  switch (rec.type) {
    case perfdata::kRecordHeaderTracingData:
      // A pipe's event formats: sched_switch's fields are where this kernel put them.
      if (!rec.payload.empty() && rec.payload.size() == rec.payload_size) {
        if (auto format = perfdata::tracing_data_event_format(rec.payload, "sched", "sched_switch", rec.offset + rec.bytes.size())) {
          if (auto l = sched_switch_layout(*format)) layout_ = *l;
        }
      }
      return;
    case perfdata::kRecordSwitch:
    case perfdata::kRecordSwitchCpuWide: {
      any_switch_records_ = true;
      perfdata::Sample id;
      if (!reader_.decode_sample_id(rec, id)) return;
      const auto tid = static_cast<int32_t>(id.tid);
      if (tid <= 0) return;
      if ((rec.misc & perfdata::kMiscSwitchOut) == 0) {
        close(tid, time, false);
        return;
      }
      // With sched_switch samples in the file they open the intervals (with a stack and state).
      if (source() != OffCpuSource::kSwitchRecords) return;
      if (exited_.count(tid)) return;  // the final switch of an exited thread
      close(tid, time, true);
      const OffCpuState state =
          (rec.misc & perfdata::kMiscSwitchOutPreempt) != 0 ? OffCpuState::kRunnable : OffCpuState::kSleeping;
      open(static_cast<int32_t>(id.pid), tid, time, state, nullptr);
      return;
    }
    case perfdata::kRecordExit: {
      const perfdata::TaskEvent e = perfdata::decode_task(rec.body(), rec.misc, reader_.swapped(), rec.offset + 8);
      close(e.tid, time, true);
      exited_.insert(e.tid);
      return;
    }
    case perfdata::kRecordFork: {
      const perfdata::TaskEvent e = perfdata::decode_task(rec.body(), rec.misc, reader_.swapped(), rec.offset + 8);
      exited_.erase(e.tid);  // a reused tid
      return;
    }
    default:
      return;
  }
}

void OffCpuTracker::finish() {
  if (finished_) return;
  // What the events are, as the whole input named them: the later passes read the input anew
  // with a reader of their own.
  final_source_ = source();
  for (const perfdata::EventAttr& ea : reader_.attrs()) {
    switch_attr_.push_back(switch_attr(ea));
    offcpu_attr_.push_back(offcpu_attr(ea));
    runnable_id_.push_back(runnable_id_of(ea));
  }
  finished_ = true;
  for (const auto& [tid, index] : open_) {
    OffCpuInterval& iv = intervals_[index];
    iv.end = std::max(iv.start, last_time_);
    iv.open_at_end = true;
  }
  open_.clear();
}

const OffCpuInterval* OffCpuTracker::interval_of(const perfdata::Record& rec) const {
  auto it = by_record_.find(key_of(rec));
  return it == by_record_.end() ? nullptr : &intervals_[it->second];
}

OffCpuTracker track_off_cpu(perfdata::Reader& reader, std::vector<std::string>* problems) {
  OffCpuTracker tracker(reader);
  session::Machine machine;
  symbols::Symbolizer symbolizer(machine, {});
  perfdata::Sample sample;
  ReplayHandlers handlers;
  // Only what says when threads come and go; no maps, no symbols: the stacks are resolved by the
  // pass that prints them.
  handlers.applies = [](const perfdata::Record& rec) {
    return rec.type == perfdata::kRecordSwitch || rec.type == perfdata::kRecordSwitchCpuWide ||
           rec.type == perfdata::kRecordExit || rec.type == perfdata::kRecordFork ||
           rec.type == perfdata::kRecordHeaderTracingData;
  };
  handlers.on_other = [&](const perfdata::Record& rec, uint64_t time) { tracker.on_other(rec, time); };
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
    const int ai = reader.attr_index_of(rec);
    if (ai < 0) return;
    reader.decode_sample(rec, sample);
    tracker.on_sample(rec, sample, ai);
  };
  ReplayResult result = replay(reader, machine, symbolizer, nullptr, handlers);
  if (problems) *problems = std::move(result.problems);
  tracker.finish();
  return tracker;
}

std::string describe_off_cpu(const OffCpuTracker& tracker) {
  switch (tracker.source()) {
    case OffCpuSource::kNone:
      return "no off-CPU data: record with `tperf record --off-cpu` (or `-e sched:sched_switch -g --switch-events`)";
    case OffCpuSource::kOffcpuTimeEvent:
      return "off-CPU time from the offcpu-time event (aggregated in the kernel by BPF)";
    case OffCpuSource::kSwitchRecords:
      return "only SWITCH records, no sched:sched_switch samples: the switched-out time has no stack to weigh; "
             "record with `tperf record --off-cpu` (or add -e sched:sched_switch -g)";
    case OffCpuSource::kSchedSwitch:
      break;
  }
  size_t open_at_end = 0, late = 0;
  for (const OffCpuInterval& iv : tracker.intervals()) {
    open_at_end += iv.open_at_end;
    late += iv.closed_late && !iv.open_at_end;
  }
  std::string s = fmt::format("off-CPU time from sched:sched_switch samples ({} layout)",
                              tracker.layout().from_file ? "TRACING_DATA" : "built-in sched_switch");
  s += fmt::format(", {} intervals", tracker.intervals().size());
  if (open_at_end) s += fmt::format(", {} still open at the end (closed at the last time stamp)", open_at_end);
  if (late) s += fmt::format(", {} without a recorded switch-in (ended at the thread's next event)", late);
  return s;
}

std::string describe_off_cpu_states(const OffCpuTracker& tracker) {
  uint64_t ns[2] = {0, 0}, n[2] = {0, 0};
  if (tracker.source() == OffCpuSource::kOffcpuTimeEvent) {
    auto part = [&](int i, const char* name) {
      return fmt::format("{} {:.3f} ms in {} total{}", name, static_cast<double>(tracker.offcpu_ns_[i]) / 1e6,
                         tracker.offcpu_samples_[i], tracker.offcpu_samples_[i] == 1 ? "" : "s");
    };
    return part(0, "sleeping") + ", " + part(1, "runnable");
  }
  for (const OffCpuInterval& iv : tracker.intervals()) {
    const int i = iv.state == OffCpuState::kRunnable ? 1 : 0;
    ns[i] += iv.duration();
    ++n[i];
  }
  auto part = [&](int i, const char* name) {
    return fmt::format("{} {:.3f} ms in {} interval{}", name, static_cast<double>(ns[i]) / 1e6, n[i], n[i] == 1 ? "" : "s");
  };
  return part(0, "sleeping") + ", " + part(1, "runnable");
}

}  // namespace tperf::analysis

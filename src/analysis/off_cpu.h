// Off-CPU time: the intervals each thread spends switched out, computed from the sched_switch
// tracepoint's samples (their RAW data: who goes out, in which state, who comes in; their
// callchain: where the thread blocked) and from SWITCH records, or taken as they are from the
// `offcpu-time` samples perf's BPF way (--off-cpu, 5.19+) writes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tperf::perfdata {
class Reader;
struct EventAttr;
struct Record;
struct Sample;
}  // namespace tperf::perfdata

namespace tperf::analysis {

// One field of a tracepoint's RAW record: where it is and how wide.
struct TraceField {
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
};

// Where sched_switch keeps what off-CPU analysis needs.
struct SchedSwitchLayout {
  uint64_t id = 0;  // the tracepoint id (an attr's config); 0 when not known
  TraceField prev_pid, prev_state, next_pid;
  bool from_file = false;  // read from the file's TRACING_DATA, not the built-in layout
};

// The fields of a tracepoint format text ("field:pid_t prev_pid; offset:24; size:4; signed:1;").
std::unordered_map<std::string, TraceField> parse_trace_fields(std::string_view format);
// The "ID:" line of a format text, 0 when absent.
uint64_t parse_trace_id(std::string_view format);

// The layout from a format text; nullopt when a needed field is missing or of an unusable size.
std::optional<SchedSwitchLayout> sched_switch_layout(std::string_view format);
// The layout of Linux 4.x-6.x on 64-bit hosts (prev_pid at 24, prev_state a long at 32, next_pid
// at 56), used when the file has no format for the event (pipe files, stripped TRACING_DATA).
SchedSwitchLayout builtin_sched_switch_layout();

// What a thread waits in while switched out, from prev_state as the kernel reports it: still
// runnable (preempted, or yielded with state 0), sleeping (S, D, I, T, ...), or gone (its final
// switch, X or Z: no interval follows it).
enum class OffCpuState : uint8_t { kRunnable, kSleeping, kDead };
OffCpuState off_cpu_state(uint64_t prev_state);
const char* off_cpu_state_name(OffCpuState s);

// One stretch of a thread switched out.
struct OffCpuInterval {
  int32_t pid = -1;
  int32_t tid = -1;
  uint64_t start = 0;
  uint64_t end = 0;
  OffCpuState state = OffCpuState::kSleeping;
  // The sample it started with (its callchain is the stack the thread blocked in); ~0 when it
  // started with a SWITCH record (no stack).
  uint64_t switch_offset = ~uint64_t{0};
  // Not seen ending: closed at the last timestamp of the recording.
  bool open_at_end = false;
  // No switch-in was recorded for it: it was closed at the thread's next sample or SWITCH record
  // (per-task sched_switch recordings without --switch-events), so it includes the run time
  // before that event.
  bool closed_late = false;
  uint64_t duration() const { return end - start; }
};

// How a file's off-CPU time was recorded.
enum class OffCpuSource : uint8_t { kNone, kSchedSwitch, kSwitchRecords, kOffcpuTimeEvent };

// Follows the switches of every thread through a replay, in time order (a handler of
// analysis::replay: feed it every sample and every SWITCH/SWITCH_CPU_WIDE/EXIT record).
class OffCpuTracker {
 public:
  // Finds the sched_switch and offcpu-time events of `reader`'s file and the sched_switch layout
  // (from TRACING_DATA, a pipe's HEADER_TRACING_DATA record, else builtin_sched_switch_layout()).
  // Throws perfdata::FormatError on a malformed TRACING_DATA.
  explicit OffCpuTracker(const perfdata::Reader& reader);

  OffCpuSource source() const;
  const SchedSwitchLayout& layout() const { return layout_; }
  // The attr indexes whose samples are switches (sched_switch) or already off-CPU time.
  bool is_switch_event(int attr_index) const;
  bool is_offcpu_time_event(int attr_index) const;

  // A decoded sample of attr `attr_index` (any event: every sample of a thread shows it running).
  // Throws perfdata::FormatError when a sched_switch sample's RAW data is too short.
  void on_sample(const perfdata::Record& rec, const perfdata::Sample& sample, int attr_index);
  // A non-sample record (SWITCH, SWITCH_CPU_WIDE, EXIT matter; others only advance the clock).
  void on_other(const perfdata::Record& rec, uint64_t time);
  // Closes what is still open at the last timestamp seen. Call once, after the replay; from then
  // on the tracker no longer uses the reader.
  void finish();

  // The state of an offcpu-time sample. tperf's BPF way (record/offcpu_time_event.h) gives that
  // event two ids, the second for runnable time; perf's own files use the first for every sample
  // (its layout keeps no state), so theirs count as sleeping.
  OffCpuState offcpu_time_state(const perfdata::Sample& sample, int attr_index) const;
  // Whether some offcpu-time sample carried the runnable id (tperf's files): the states are known.
  bool offcpu_time_states_known() const { return offcpu_runnable_seen_; }

  const std::vector<OffCpuInterval>& intervals() const { return intervals_; }
  // The interval a switch-out sample started, or nullptr (a final switch, or not a switch-out
  // sample). `rec`: the same record read again, by a later pass over the same file.
  const OffCpuInterval* interval_of(const perfdata::Record& rec) const;
  uint64_t last_time() const { return last_time_; }

 private:
  // Where a record is: unique in a file, records unpacked from one COMPRESSED record included.
  struct RecordKey {
    uint64_t offset, stream_offset;
    uint32_t file_index;
    bool operator==(const RecordKey&) const = default;
  };
  struct RecordKeyHash {
    size_t operator()(const RecordKey& k) const {
      return static_cast<size_t>((k.offset * 0x9e3779b97f4a7c15ull) ^ (k.stream_offset * 0xff51afd7ed558ccdull) ^ k.file_index);
    }
  };
  static RecordKey key_of(const perfdata::Record& rec);
  bool switch_attr(const perfdata::EventAttr& ea) const;
  static bool offcpu_attr(const perfdata::EventAttr& ea);
  static uint64_t runnable_id_of(const perfdata::EventAttr& ea);
  uint64_t runnable_id(int attr_index) const;
  void open(int32_t pid, int32_t tid, uint64_t time, OffCpuState state, const perfdata::Record* rec);
  void close(int32_t tid, uint64_t time, bool late);

  const perfdata::Reader& reader_;
  SchedSwitchLayout layout_;
  bool any_switch_records_ = false;
  // Set by finish(), after which the reader is not used again (it may be gone).
  OffCpuSource final_source_ = OffCpuSource::kNone;
  std::vector<bool> switch_attr_, offcpu_attr_;
  std::vector<OffCpuInterval> intervals_;
  std::unordered_map<int32_t, size_t> open_;                 // tid -> open interval
  std::unordered_map<RecordKey, size_t, RecordKeyHash> by_record_;         // switch-out sample -> interval
  std::unordered_set<int32_t> exited_;                       // tids whose EXIT went by
  uint64_t last_time_ = 0;
  bool finished_ = false;
  std::vector<uint64_t> runnable_id_;  // per attr: the offcpu-time event's second id, 0 if none
  // offcpu-time totals by state ([0] sleeping, [1] runnable): nanoseconds and samples.
  uint64_t offcpu_ns_[2] = {0, 0}, offcpu_samples_[2] = {0, 0};
  bool offcpu_runnable_seen_ = false;
  friend std::string describe_off_cpu_states(const OffCpuTracker& tracker);
};

// Reads `reader`'s file once through analysis::replay (side-band records other than switches and
// exits skipped) and returns the finished tracker. `problems` receives the records that could not
// be decoded. The reader is consumed: open the file again for another pass.
OffCpuTracker track_off_cpu(perfdata::Reader& reader, std::vector<std::string>* problems);

// One line saying how the file's off-CPU time was recorded and what was estimated, for the
// head of a report; for a file without usable off-CPU data (OffCpuSource kNone or
// kSwitchRecords: the report weighs switch-out samples, SWITCH records have no stack) why not.
std::string describe_off_cpu(const OffCpuTracker& tracker);

// The off-CPU time by state, for the head of a report: "sleeping 12.345 ms in 3 intervals,
// runnable 0.500 ms in 1 interval".
std::string describe_off_cpu_states(const OffCpuTracker& tracker);

}  // namespace tperf::analysis

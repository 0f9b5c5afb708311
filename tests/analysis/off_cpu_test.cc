// The pieces of off-CPU analysis that read untrusted bytes: the TRACING_DATA blob (built here by
// hand in trace-cmd's layout), tracepoint format texts (as this kernel's tracefs prints them), and
// the meaning of sched_switch's prev_state; and the intervals of a hand-built file of switches.
#include "analysis/off_cpu.h"
#include "perfdata/tracing_data.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "perfdata/record_builder.h"
#include "perfdata/sample.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::analysis {
namespace {

// sched_switch's format as Linux 6.18's tracefs prints it (print fmt shortened).
const std::string kSchedSwitchFormat =
    "name: sched_switch\n"
    "ID: 372\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n";

const std::string kWakeupFormat =
    "name: sched_wakeup\n"
    "ID: 370\n"
    "format:\n"
    "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n";

void put_str(std::vector<uint8_t>& b, const std::string& s, bool nul = true) {
  b.insert(b.end(), s.begin(), s.end());
  if (nul) b.push_back(0);
}
template <class T>
void put(std::vector<uint8_t>& b, T v) {
  uint8_t bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  b.insert(b.end(), bytes, bytes + sizeof v);
}

// A little-endian blob: header page and event texts, one ftrace format, then the systems given.
std::vector<uint8_t> blob(const std::vector<std::pair<std::string, std::vector<std::string>>>& systems) {
  std::vector<uint8_t> b;
  put_str(b, std::string("\x17\x08" "Dtracing", 10), false);
  put_str(b, "0.6");
  b.push_back(0);  // little endian
  b.push_back(8);  // long size
  put<uint32_t>(b, 4096);
  put_str(b, "header_page");
  put<uint64_t>(b, 5);
  put_str(b, "hpage", false);
  put_str(b, "header_event");
  put<uint64_t>(b, 3);
  put_str(b, "hev", false);
  put<uint32_t>(b, 1);
  put<uint64_t>(b, 11);
  put_str(b, "name: ftrac", false);
  put<uint32_t>(b, static_cast<uint32_t>(systems.size()));
  for (const auto& [sys, formats] : systems) {
    put_str(b, sys);
    put<uint32_t>(b, static_cast<uint32_t>(formats.size()));
    for (const auto& f : formats) {
      put<uint64_t>(b, f.size());
      put_str(b, f, false);
    }
  }
  put<uint32_t>(b, 0);
  put<uint32_t>(b, 0);
  put<uint64_t>(b, 0);
  return b;
}

TEST(OffCpuTracingData, FindsTheEventFormatAmongSystems) {
  auto b = blob({{"irq", {"name: irq_handler_entry\nID: 1\n"}}, {"sched", {kWakeupFormat, kSchedSwitchFormat}}});
  auto f = perfdata::tracing_data_event_format(b, "sched", "sched_switch", 0);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(*f, kSchedSwitchFormat);
  EXPECT_EQ(perfdata::tracing_data_event_format(b, "sched", "sched_wakeup", 0), kWakeupFormat);
  EXPECT_FALSE(perfdata::tracing_data_event_format(b, "sched", "sched_process_exit", 0).has_value());
  // The same event name in another system is not it.
  EXPECT_FALSE(perfdata::tracing_data_event_format(b, "irq", "sched_switch", 0).has_value());
}

TEST(OffCpuTracingData, TruncatedBlobIsAnErrorWithItsOffset) {
  auto b = blob({{"sched", {kSchedSwitchFormat}}});
  // Every cut before the sched_switch format is whole throws; none reads past the end (ASan).
  const size_t whole = b.size() - 16 - 4;  // the trailing kallsyms/printk/cmdlines sizes
  for (size_t n = 0; n < whole; ++n) {
    std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<ptrdiff_t>(n));
    try {
      auto f = perfdata::tracing_data_event_format(cut, "sched", "sched_switch", 0x1000);
      ADD_FAILURE() << "a blob cut at " << n << " bytes was accepted";
    } catch (const perfdata::FormatError& e) {
      EXPECT_GE(e.offset(), 0x1000u) << n;
      EXPECT_LE(e.offset(), 0x1000u + n) << n;
    }
  }
}

TEST(OffCpuTracingData, HugeSizeIsAnError) {
  auto b = blob({{"sched", {kSchedSwitchFormat}}});
  // The header_page size, 10 + 4 + 2 + 4 + 12 bytes in, made absurd.
  const uint64_t huge = ~uint64_t{0} - 3;
  std::memcpy(b.data() + 32, &huge, 8);
  EXPECT_THROW(perfdata::tracing_data_event_format(b, "sched", "sched_switch", 0), perfdata::FormatError);
}

TEST(OffCpuTracingData, BadMagicIsAnError) {
  auto b = blob({});
  b[2] = 'X';
  EXPECT_THROW(perfdata::tracing_data_event_format(b, "sched", "sched_switch", 0), perfdata::FormatError);
}

TEST(OffCpuFormat, SchedSwitchLayoutFromTheFormatText) {
  auto l = sched_switch_layout(kSchedSwitchFormat);
  ASSERT_TRUE(l.has_value());
  EXPECT_TRUE(l->from_file);
  EXPECT_EQ(l->id, 372u);
  EXPECT_EQ(l->prev_pid.offset, 24u);
  EXPECT_EQ(l->prev_pid.size, 4u);
  EXPECT_TRUE(l->prev_pid.is_signed);
  EXPECT_EQ(l->prev_state.offset, 32u);
  EXPECT_EQ(l->prev_state.size, 8u);
  EXPECT_EQ(l->next_pid.offset, 56u);
  EXPECT_EQ(l->next_pid.size, 4u);
  // The built-in layout is this kernel's.
  const SchedSwitchLayout b = builtin_sched_switch_layout();
  EXPECT_EQ(b.prev_pid.offset, 24u);
  EXPECT_EQ(b.prev_state.offset, 32u);
  EXPECT_EQ(b.next_pid.offset, 56u);
  EXPECT_FALSE(b.from_file);
}

TEST(OffCpuFormat, ArrayAndMissingFields) {
  auto fields = parse_trace_fields(kSchedSwitchFormat);
  ASSERT_EQ(fields.count("prev_comm"), 1u);
  EXPECT_EQ(fields["prev_comm"].offset, 8u);
  EXPECT_EQ(fields["prev_comm"].size, 16u);
  EXPECT_EQ(fields.count("common_pid"), 1u);
  EXPECT_EQ(fields.size(), 11u);
  // Without next_pid, or with a prev_state of a size no integer has, there is no layout.
  EXPECT_FALSE(sched_switch_layout(kWakeupFormat).has_value());
  std::string odd = kSchedSwitchFormat;
  odd.replace(odd.find("offset:32;\tsize:8;"), 18, "offset:32;\tsize:3;");
  EXPECT_FALSE(sched_switch_layout(odd).has_value());
  EXPECT_EQ(parse_trace_id("name: x\nformat:\n"), 0u);
}

TEST(OffCpuState, FromPrevState) {
  EXPECT_EQ(off_cpu_state(0), OffCpuState::kRunnable);      // R: yielded
  EXPECT_EQ(off_cpu_state(0x100), OffCpuState::kRunnable);  // R+: preempted
  EXPECT_EQ(off_cpu_state(0x1), OffCpuState::kSleeping);    // S
  EXPECT_EQ(off_cpu_state(0x2), OffCpuState::kSleeping);    // D
  EXPECT_EQ(off_cpu_state(0x80), OffCpuState::kSleeping);   // I
  EXPECT_EQ(off_cpu_state(0x4), OffCpuState::kSleeping);    // T
  EXPECT_EQ(off_cpu_state(0x10), OffCpuState::kDead);       // X
  EXPECT_EQ(off_cpu_state(0x20), OffCpuState::kDead);       // Z
}

// A file of sched_switch samples (attr config 372, as in the TRACING_DATA format) with RAW data
// laid out as kSchedSwitchFormat says, plus SWITCH and EXIT records.
class SwitchFile {
 public:
  explicit SwitchFile(const test::TempDir& dir) : path_(dir.file("switches.data")) {
    perfdata::PerfEventAttr a;
    a.type = perfdata::kTypeTracepoint;
    a.size = perfdata::kAttrSizeVer7;
    a.config = 372;
    a.sample_period = 1;
    a.sample_type = perfdata::kSampleIp | perfdata::kSampleTid | perfdata::kSampleTime | perfdata::kSampleCpu |
                    perfdata::kSamplePeriod | perfdata::kSampleRaw | perfdata::kSampleIdentifier;
    a.set_flag(perfdata::kFlagSampleIdAll);
    a.set_flag(perfdata::kFlagTask);
    a.set_flag(perfdata::kFlagContextSwitch);
    w_.open(path_);
    w_.add_attr(a, {7}, "sched:sched_switch");
    w_.set_feature(perfdata::kFeatTracingData, blob({{"sched", {kSchedSwitchFormat}}}));
    rb_ = w_.builder(0);
  }
  // prev (going out, in `state`) -> next, at `time`; `raw_size` cuts the RAW data.
  void sched_switch(int32_t prev, uint64_t state, int32_t next, uint64_t time, size_t raw_size = 64) {
    std::vector<uint8_t> raw(64, 0);
    std::memcpy(raw.data() + 24, &prev, 4);
    std::memcpy(raw.data() + 32, &state, 8);
    std::memcpy(raw.data() + 56, &next, 4);
    raw.resize(raw_size);
    perfdata::Sample smp;
    smp.identifier = 7;
    smp.ip = 0xffffffff81000000;
    smp.pid = smp.tid = static_cast<uint32_t>(prev);
    smp.time = time;
    smp.period = 1;
    smp.raw = raw;
    w_.write_record(rb_.sample(smp, perfdata::kMiscKernel));
  }
  void switch_record(bool out, int32_t tid, uint64_t time) { w_.write_record(rb_.switch_event(out, false, sid(tid, time))); }
  void exit(int32_t tid, uint64_t time) {
    perfdata::TaskEvent e;
    e.pid = e.tid = tid;
    e.ppid = e.ptid = 1;
    e.time = time;
    w_.write_record(rb_.exit(e, sid(tid, time)));
  }
  std::string finish() {
    w_.finish();
    return path_;
  }

 private:
  perfdata::SampleId sid(int32_t tid, uint64_t time) const {
    return {.pid = static_cast<uint32_t>(tid), .tid = static_cast<uint32_t>(tid), .time = time, .id = 7, .cpu = 0};
  }
  std::string path_;
  perfdata::Writer w_;
  perfdata::RecordBuilder rb_;
};

TEST(OffCpuTracker, IntervalsFromSwitchesSwitchRecordsAndExits) {
  test::TempDir dir;
  SwitchFile f(dir);
  f.sched_switch(10, 0x1, 11, 1000);    // 10 sleeps; 11 comes in
  f.sched_switch(11, 0x100, 10, 5000);  // 11 preempted; 10 back after 4000 ns asleep
  f.switch_record(false, 11, 5500);     // 11 back after 500 ns runnable
  f.sched_switch(12, 0x2, 0, 6000);     // 12 in D; its switch-in is never recorded...
  f.sched_switch(12, 0x10, 0, 9000);    // ...it shows up again at its final switch (X)
  f.sched_switch(13, 0x1, 0, 7000);     // 13 sleeps to the end
  f.exit(99, 10000);                    // the last time stamp
  const std::string path = f.finish();

  auto reader = perfdata::Reader::open(path);
  std::vector<std::string> problems;
  OffCpuTracker t = track_off_cpu(*reader, &problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(t.source(), OffCpuSource::kSchedSwitch);
  EXPECT_TRUE(t.layout().from_file);
  EXPECT_TRUE(t.is_switch_event(0));
  ASSERT_EQ(t.intervals().size(), 4u);
  auto find = [&](int32_t tid) {
    for (const OffCpuInterval& iv : t.intervals()) {
      if (iv.tid == tid) return iv;
    }
    ADD_FAILURE() << "no interval of " << tid;
    return OffCpuInterval{};
  };
  const OffCpuInterval a = find(10), b = find(11), c = find(12), d = find(13);
  EXPECT_EQ(a.start, 1000u);
  EXPECT_EQ(a.duration(), 4000u);
  EXPECT_EQ(a.state, OffCpuState::kSleeping);
  EXPECT_FALSE(a.closed_late || a.open_at_end);
  EXPECT_EQ(a.pid, 10);
  EXPECT_EQ(b.duration(), 500u);
  EXPECT_EQ(b.state, OffCpuState::kRunnable);
  EXPECT_FALSE(b.closed_late || b.open_at_end);
  EXPECT_EQ(c.duration(), 3000u);
  EXPECT_EQ(c.state, OffCpuState::kSleeping);
  EXPECT_TRUE(c.closed_late);
  EXPECT_EQ(d.end, 10000u);
  EXPECT_TRUE(d.open_at_end);
  EXPECT_EQ(describe_off_cpu(t),
            "off-CPU time from sched:sched_switch samples (TRACING_DATA layout), 4 intervals, 1 still open at the end "
            "(closed at the last time stamp), 1 without a recorded switch-in (ended at the thread's next event)");
  // Asleep: 4000 + 3000 + 3000 ns; runnable: 500 ns.
  EXPECT_EQ(describe_off_cpu_states(t), "sleeping 0.010 ms in 3 intervals, runnable 0.001 ms in 1 interval");
}

TEST(OffCpuTracker, ShortRawDataIsAnErrorWithTheRecordOffset) {
  test::TempDir dir;
  SwitchFile f(dir);
  f.sched_switch(10, 0x1, 11, 1000);
  f.sched_switch(11, 0x1, 10, 2000, 40);  // cut before next_pid
  const std::string path = f.finish();
  auto reader = perfdata::Reader::open(path);
  std::vector<std::string> problems;
  OffCpuTracker t = track_off_cpu(*reader, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("bytes of raw data, too short for prev_pid/prev_state/next_pid"), std::string::npos) << problems[0];
  EXPECT_EQ(problems[0].rfind("offset 0x", 0), 0u) << problems[0];
  // The good switch before it still opened its interval (closed at the end).
  ASSERT_EQ(t.intervals().size(), 1u);
  EXPECT_TRUE(t.intervals()[0].open_at_end);
}

}  // namespace
}  // namespace tperf::analysis

namespace tperf::analysis {
namespace {

// offcpu-time files: the state is the sample id (the attr's second id: runnable), as tperf's BPF
// way writes them; perf's files use the first id for every sample and keep no state. The
// totals (time stamps from ~0 << 32) do not move the clock of the intervals.
std::string offcpu_time_file(const test::TempDir& dir, const char* name, const std::vector<uint64_t>& sample_ids) {
  const std::string path = dir.path() + "/" + name;
  perfdata::Writer w;
  w.open(path);
  perfdata::PerfEventAttr clock;
  clock.type = perfdata::kTypeSoftware;
  clock.size = perfdata::kAttrSizeVer7;
  clock.sample_type = perfdata::kSampleIdentifier | perfdata::kSampleIp | perfdata::kSampleTid | perfdata::kSampleTime |
                      perfdata::kSamplePeriod;
  clock.set_flag(perfdata::kFlagSampleIdAll);
  clock.set_flag(perfdata::kFlagTask);
  perfdata::PerfEventAttr off = clock;
  off.config = perfdata::kSwBpfOutput;
  off.sample_type |= perfdata::kSampleCallchain;
  w.add_attr(clock, {5}, "cpu-clock");
  w.add_attr(off, {6, 7}, "offcpu-time");
  const perfdata::RecordBuilder on_rb = w.builder(0);
  const perfdata::RecordBuilder rb = w.builder(1);
  perfdata::Sample on;
  on.identifier = 5;
  on.pid = on.tid = 10;
  on.time = 1000;
  on.period = 250000;
  w.write_record(on_rb.sample(on, perfdata::kMiscUser));
  uint64_t period = 1000000;  // 1 ms, then 2 ms, ...
  uint64_t time = ~uint64_t{0} << 32;
  for (uint64_t id : sample_ids) {
    perfdata::Sample s;
    s.identifier = id;
    s.pid = s.tid = 10;
    s.time = time++;
    s.period = period;
    s.callchain = {perfdata::kContextUser, 0x401000};
    s.ip = 0x401000;
    w.write_record(rb.sample(s, perfdata::kMiscUser));
    period += 1000000;
  }
  w.finish();
  return path;
}

TEST(OffCpuTracker, OffcpuTimeStateFromTheSampleId) {
  test::TempDir dir;
  auto reader = perfdata::Reader::open(offcpu_time_file(dir, "tperf.data", {6, 7, 6}));
  std::vector<std::string> problems;
  OffCpuTracker t = track_off_cpu(*reader, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(t.source(), OffCpuSource::kOffcpuTimeEvent);
  EXPECT_TRUE(t.is_offcpu_time_event(1));
  EXPECT_TRUE(t.offcpu_time_states_known());
  EXPECT_EQ(t.last_time(), 1000u);  // the totals' time stamps are no time
  // Sleeping: 1 + 3 ms; runnable: 2 ms.
  EXPECT_EQ(describe_off_cpu_states(t), "sleeping 4.000 ms in 2 totals, runnable 2.000 ms in 1 total");
  perfdata::Sample s;
  s.present = perfdata::kSampleIdentifier;
  s.identifier = 7;
  EXPECT_EQ(t.offcpu_time_state(s, 1), OffCpuState::kRunnable);
  s.identifier = 6;
  EXPECT_EQ(t.offcpu_time_state(s, 1), OffCpuState::kSleeping);
}

TEST(OffCpuTracker, PerfOffcpuTimeFileKeepsNoState) {
  test::TempDir dir;
  auto reader = perfdata::Reader::open(offcpu_time_file(dir, "perf.data", {6, 6}));
  OffCpuTracker t = track_off_cpu(*reader, nullptr);
  EXPECT_EQ(t.source(), OffCpuSource::kOffcpuTimeEvent);
  EXPECT_FALSE(t.offcpu_time_states_known());
}

}  // namespace
}  // namespace tperf::analysis

// The pieces of off-CPU analysis that read untrusted bytes: the TRACING_DATA blob (built here by
// hand in trace-cmd's layout), tracepoint format texts (as this kernel's tracefs prints them), and
// the meaning of sched_switch's prev_state.
#include "analysis/off_cpu.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "perfdata/error.h"

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
  auto f = tracing_data_event_format(b, "sched", "sched_switch", 0);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(*f, kSchedSwitchFormat);
  EXPECT_EQ(tracing_data_event_format(b, "sched", "sched_wakeup", 0), kWakeupFormat);
  EXPECT_FALSE(tracing_data_event_format(b, "sched", "sched_process_exit", 0).has_value());
  // The same event name in another system is not it.
  EXPECT_FALSE(tracing_data_event_format(b, "irq", "sched_switch", 0).has_value());
}

TEST(OffCpuTracingData, TruncatedBlobIsAnErrorWithItsOffset) {
  auto b = blob({{"sched", {kSchedSwitchFormat}}});
  // Every cut before the sched_switch format is whole throws; none reads past the end (ASan).
  const size_t whole = b.size() - 16 - 4;  // the trailing kallsyms/printk/cmdlines sizes
  for (size_t n = 0; n < whole; ++n) {
    std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<ptrdiff_t>(n));
    try {
      auto f = tracing_data_event_format(cut, "sched", "sched_switch", 0x1000);
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
  EXPECT_THROW(tracing_data_event_format(b, "sched", "sched_switch", 0), perfdata::FormatError);
}

TEST(OffCpuTracingData, BadMagicIsAnError) {
  auto b = blob({});
  b[2] = 'X';
  EXPECT_THROW(tracing_data_event_format(b, "sched", "sched_switch", 0), perfdata::FormatError);
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

}  // namespace
}  // namespace tperf::analysis

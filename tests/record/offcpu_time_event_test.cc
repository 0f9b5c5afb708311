// The offcpu-time samples of the BPF way of `record --off-cpu`, against layouts worked out by
// hand from perf's (tools/perf/util/bpf_off_cpu.c: off_cpu_write, OFFCPU_SAMPLE_TYPES): the
// attr, and each sample's words in sample_type order with the callchain's context markers.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "perfdata/abi.h"
#include "record/offcpu_time_event.h"

namespace tperf::record {
namespace {

using namespace perfdata;

std::vector<uint64_t> words_of(const std::vector<uint8_t>& bytes) {
  std::vector<uint64_t> w(bytes.size() / 8);
  std::memcpy(w.data(), bytes.data(), w.size() * 8);
  return w;
}

TEST(OffcpuTimeEvent, AttrIsPerfsBpfOutputEvent) {
  PerfEventAttr like;
  like.sample_type = kSampleIdentifier | kSampleIp | kSampleTid | kSampleTime | kSamplePeriod;
  like.set_flag(kFlagSampleIdAll);
  const PerfEventAttr a = offcpu_time_attr(like);
  EXPECT_EQ(a.type, 1u);     // PERF_TYPE_SOFTWARE
  EXPECT_EQ(a.config, 10u);  // PERF_COUNT_SW_BPF_OUTPUT
  EXPECT_TRUE(a.freq());
  EXPECT_EQ(a.sample_period, 1u);
  // IDENTIFIER (1<<16) | IP (1) | TID (2) | TIME (4) | CALLCHAIN (1<<5) | PERIOD (1<<8)
  EXPECT_EQ(a.sample_type, 0x10127u);
  EXPECT_TRUE(a.sample_id_all());
  // Within perf's OFFCPU_SAMPLE_TYPES: IDENTIFIER IP TID TIME ID CPU PERIOD CALLCHAIN CGROUP.
  EXPECT_EQ(a.sample_type & ~uint64_t{0x10000 | 0x1 | 0x2 | 0x4 | 0x40 | 0x80 | 0x100 | 0x20 | 0x200000}, 0u);
  like.sample_type |= kSampleCpu;  // -a: the CPU word comes too
  EXPECT_EQ(offcpu_time_attr(like).sample_type, 0x101a7u);
}

TEST(OffcpuTimeEvent, KernelAndUserStackSample) {
  PerfEventAttr like;
  const PerfEventAttr attr = offcpu_time_attr(like);
  OffCpuTotal t;
  t.pid = 100;
  t.tid = 101;
  t.runnable = true;
  t.ns = 5000;
  t.count = 3;
  t.kernel_stack = {0xffffffff81000010, 0xffffffff81000020};
  t.user_stack = {0x401000};
  const std::vector<uint64_t> expected = {
      // header: type 9 (SAMPLE), misc 1 (kernel: there is a kernel stack), size 12 * 8 = 96
      0x0060'0001'0000'0009,
      43,                  // IDENTIFIER
      0xffffffff81000010,  // IP: the callchain's first entry
      101ull << 32 | 100,  // TID: pid 100 (low half), tid 101
      0xffffffff00000003,  // TIME
      5000,                // PERIOD: off-CPU ns
      5,                   // callchain nr
      0xffffffffffffff80,  // PERF_CONTEXT_KERNEL
      0xffffffff81000010,
      0xffffffff81000020,
      0xfffffffffffffe00,  // PERF_CONTEXT_USER
      0x401000,
  };
  EXPECT_EQ(words_of(offcpu_time_sample(attr, t, 43, kOffcpuTimestamp + 3)), expected);
}

TEST(OffcpuTimeEvent, UserOnlyStackWithCpu) {
  PerfEventAttr like;
  like.sample_type = kSampleCpu;
  const PerfEventAttr attr = offcpu_time_attr(like);
  OffCpuTotal t;
  t.pid = 7;
  t.tid = 7;
  t.ns = 123456789;
  t.user_stack = {0x1234, 0x5678};
  const std::vector<uint64_t> expected = {
      0x0058'0002'0000'0009,  // misc 2 (user: no kernel stack), size 11 * 8 = 88
      9,                      // IDENTIFIER
      0x1234,                 // IP
      7ull << 32 | 7,         // TID
      0xffffffff00000000,     // TIME
      0,                      // CPU (and its reserved half): a total spans every CPU
      123456789,              // PERIOD
      3,                      // callchain nr
      0xfffffffffffffe00,     // PERF_CONTEXT_USER
      0x1234,
      0x5678,
  };
  EXPECT_EQ(words_of(offcpu_time_sample(attr, t, 9, kOffcpuTimestamp)), expected);
}

TEST(OffcpuTimeEvent, NoStackAtAll) {
  const PerfEventAttr attr = offcpu_time_attr(PerfEventAttr{});
  OffCpuTotal t;
  t.pid = 1;
  t.tid = 2;
  t.ns = 10;
  const std::vector<uint64_t> expected = {0x0038'0002'0000'0009, 5, 0, 2ull << 32 | 1, 0xffffffff00000000, 10, 0};
  EXPECT_EQ(words_of(offcpu_time_sample(attr, t, 5, kOffcpuTimestamp)), expected);
}

}  // namespace
}  // namespace tperf::record

// Event names of files that store none (no EVENT_DESC, as perf before 3.x or other writers
// leave them): perf names the event from its attr and adds the modifiers its exclude bits and
// precise_ip give ("cycles:u", "task-clock:HG", "cache-misses:kuH"), in report's section line as
// in script's event field. Files made with our writer, one per set of bits, against perf 6.1.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

using namespace tperf::perfdata;

struct Case {
  uint32_t type;
  uint64_t config;
  std::vector<AttrFlagBit> bits;
  unsigned precise;
};

std::string write_file(const TempDir& dir, const Case& c, int index) {
  PerfEventAttr attr = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod);
  attr.type = c.type;
  attr.config = c.config;
  attr.flags &= ~((1ULL << kFlagExcludeKernel) | (1ULL << kFlagExcludeUser) | (1ULL << kFlagExcludeHv) |
                  (1ULL << kFlagExcludeGuest) | (1ULL << kFlagExcludeHost) | (3ULL << kFlagPreciseIp0));
  for (auto b : c.bits) attr.set_flag(b);
  attr.flags |= static_cast<uint64_t>(c.precise) << kFlagPreciseIp0;
  RecordBuilder rb(attr);
  Writer::Options opts;
  opts.event_desc = false;  // no stored name: perf makes one from the attr
  Writer w(opts);
  std::string path = dir.file(fmt::format("ev{}.data", index));
  w.open(path);
  w.add_attr(attr, {1}, "");
  CommEvent comm;
  comm.pid = comm.tid = 42;
  comm.comm = "named";
  SampleId sid;
  sid.pid = sid.tid = 42;
  sid.time = 1000;
  w.write_record(rb.comm(comm, sid));
  for (int i = 0; i < 3; ++i) {
    Sample s;
    s.pid = s.tid = 42;
    s.time = 2000 + i;
    s.period = 100;
    s.ip = 0xffffffff81000000ULL + 0x10 * i;
    w.write_record(rb.sample(s, kMiscKernel));
  }
  w.finish();
  return path;
}

TEST(ReportEventName, NamedFromAttrWithModifiersAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  const std::vector<Case> cases = {
      {kTypeHardware, 0, {}, 0},                                                      // cycles:HG
      {kTypeHardware, 0, {kFlagExcludeKernel, kFlagExcludeHv}, 0},                    // cycles:u
      {kTypeHardware, 0, {kFlagExcludeGuest}, 3},                                     // cycles:ppp
      {kTypeHardware, 3, {kFlagExcludeKernel, kFlagExcludeHv, kFlagExcludeGuest}, 0}, // cache-misses
      {kTypeHardware, 1, {kFlagExcludeUser}, 0},
      {kTypeHardware, 1, {kFlagExcludeHost}, 0},
      {kTypeSoftware, kSwTaskClock, {kFlagExcludeKernel, kFlagExcludeHv}, 0},
      {kTypeSoftware, kSwCpuClock, {kFlagExcludeGuest}, 0},
      {kTypeSoftware, kSwCpuClock, {}, 1},
      {kTypeSoftware, kSwPageFaults, {kFlagExcludeKernel, kFlagExcludeUser, kFlagExcludeHv}, 0},
  };
  TempDir dir;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string file = write_file(dir, cases[i], static_cast<int>(i));
    SCOPED_TRACE(file);
    for (auto [sub, tail] : {std::pair<const char*, const char*>{"report --stdio", " 2>/dev/null | grep '^# Samples'"},
                             {"script -F event", " 2>/dev/null"}}) {
      SCOPED_TRACE(sub);
      ComparedOutputs c = compare_outputs(fmt::format("perf {} -i {}{}", sub, shell_quote(file), tail),
                                          fmt::format("{} {} -i {}{}", TPERF_BINARY, sub, shell_quote(file), tail),
                                          file);
      EXPECT_EQ(c.diff, "") << "diff perf tperf";
      EXPECT_GE(c.perf_lines, 1u) << "perf printed nothing";
    }
  }
}

}  // namespace
}  // namespace tperf::test::e2e

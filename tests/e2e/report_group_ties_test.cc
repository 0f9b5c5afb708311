// The order of `tperf report` entries that cost the same, for an event group, against perf report
// 6.1 on files made with our writer. Recordings of real programs only now and then have entries
// whose leader values tie while the other member's differ (it takes a loaded machine), so a CI
// run found an order bug that the recordings made here had never shown. These files are made of
// many small callchains over a few addresses, threads and comms, so that ties of every kind
// (leader equal, member different; same thread or not; caller and callee of equal cost) are
// certain, and perf decides the order.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

using namespace tperf::perfdata;

constexpr uint64_t kBase = 0x400000;  // where the (missing) program is mapped

constexpr uint64_t kSampleType = kSampleIp | kSampleTid | kSampleTime | kSampleId | kSampleCpu | kSamplePeriod |
                                 kSampleCallchain;

PerfEventAttr member_attr(uint64_t config) {
  PerfEventAttr a = test::cpu_clock_attr(kSampleType);
  a.config = config;
  return a;
}

// GROUP_DESC with one group of `members` events led by the first attr.
std::vector<uint8_t> group_desc(uint32_t members) {
  std::vector<uint8_t> out;
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  u32(1);
  std::vector<uint8_t> name = feature_string("{cpu-clock,task-clock}");
  out.insert(out.end(), name.begin(), name.end());
  u32(0);
  u32(members);
  return out;
}

struct Task {
  int32_t pid, tid;
  const char* comm;
};

// `samples` samples of a {cpu-clock,task-clock} group with random callchains; the same seed
// gives the same file everywhere (raw mt19937 output, no distributions).
std::string write_group_file(const TempDir& dir, uint32_t seed, int samples, bool varied_periods) {
  const PerfEventAttr leader = member_attr(kSwCpuClock), member = member_attr(kSwTaskClock);
  RecordBuilder rb(leader);
  // Two threads of one process, another process with the same comm, and one with its own.
  const std::vector<Task> tasks = {{100, 100, "alpha"}, {100, 101, "alpha"}, {200, 200, "beta"}, {300, 300, "alpha"}};
  std::vector<std::vector<uint8_t>> records;
  uint64_t now = 1000;
  for (const Task& t : tasks) {
    SampleId sid;
    sid.pid = t.pid;
    sid.tid = t.tid;
    sid.time = ++now;
    sid.id = 1;
    CommEvent comm;
    comm.pid = t.pid;
    comm.tid = t.tid;
    comm.comm = t.comm;
    records.push_back(rb.comm(comm, sid));
    if (t.pid != t.tid) continue;
    Mmap2Event m;
    m.pid = m.tid = t.pid;
    m.addr = kBase;
    m.len = 0x10000;
    m.prot = 5;
    m.filename = "/nonexistent/tperf-ties/app";
    records.push_back(rb.mmap2(m, sid));
  }
  std::mt19937 rng(seed);
  const uint64_t addrs[] = {kBase + 0x1100, kBase + 0x1200, kBase + 0x1300, kBase + 0x1400, kBase + 0x1500};
  for (int i = 0; i < samples; ++i) {
    const Task& t = tasks[rng() % tasks.size()];
    Sample s;
    s.pid = static_cast<uint32_t>(t.pid);
    s.tid = static_cast<uint32_t>(t.tid);
    s.time = ++now;
    s.cpu = static_cast<uint32_t>(rng() % 2);
    s.id = 1 + rng() % 2;
    s.period = varied_periods ? 1000 * (1 + rng() % 3) : 1000;
    s.callchain.push_back(kContextUser);
    const size_t depth = 1 + rng() % 4;
    for (size_t d = 0; d < depth; ++d) s.callchain.push_back(addrs[(d + rng() % 2) % std::size(addrs)] + d * 0x10);
    s.ip = s.callchain[1];
    records.push_back(rb.sample(s, kMiscUser));
  }
  std::string path = dir.file(fmt::format("ties-{}.data", seed));
  Writer w;
  w.open(path);
  w.add_attr(leader, {1}, "cpu-clock");
  w.add_attr(member, {2}, "task-clock");
  w.set_feature(kFeatGroupDesc, group_desc(2));
  for (const auto& r : records) w.write_record(r);
  w.finish();
  return path;
}

TEST(ReportGroupTies, EqualCostEntriesInPerfsOrder) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    std::string file = write_group_file(dir, seed, 60 + 40 * static_cast<int>(seed), seed % 2 == 0);
    for (const char* args : {"", "-G", "-g caller", "--no-children", "-g folded", "-n --show-total-period",
                             "-s sym", "-s pid,sym", "--no-group"}) {
      SCOPED_TRACE(fmt::format("seed {} args '{}'", seed, args));
      ComparedOutputs c = compare_outputs(
          fmt::format("perf report --stdio -q -i {} {} 2>/dev/null | grep -v '^$'", shell_quote(file), args),
          fmt::format("{} report --stdio -q -i {} {} | grep -v '^$'", TPERF_BINARY, shell_quote(file), args), file);
      EXPECT_EQ(c.diff, "") << "diff perf tperf";
      EXPECT_GE(c.perf_lines, 20u) << "perf printed too little";
    }
  }
}

}  // namespace
}  // namespace tperf::test::e2e

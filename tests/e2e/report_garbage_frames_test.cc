// Entries of frames outside every map (the garbage a broken frame-pointer walk leaves in a
// callchain: 0xbe552274c0854800, 0x1a1a1a1a1a1a1a1a) against perf report 6.1, on files made
// with our writer. perf keys such an address by the sign of its 64-bit difference from another
// one, which is no order once the addresses lie more than 2^63 apart: its walk down the entry
// tree can then miss an equal entry and make a second one (perf lists the frame twice), and where
// it puts entries depends on the tree's shape. Fresh-clone runs hit this on real recordings now
// and then (ReportE2E.EventGroupsSideBySide, the sys recipe's children report); these files make
// it certain, and perf decides.
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

// `samples` samples of one process with random callchains mixing the program's addresses and
// garbage ones on both sides of 2^63; the same seed gives the same file everywhere (raw mt19937
// output, no distributions).
std::string write_garbage_file(const TempDir& dir, uint32_t seed, int samples) {
  const PerfEventAttr attr = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSampleId | kSampleCpu |
                                                  kSamplePeriod | kSampleCallchain);
  RecordBuilder rb(attr);
  std::vector<std::vector<uint8_t>> records;
  uint64_t now = 1000;
  SampleId sid;
  sid.pid = sid.tid = 100;
  sid.time = ++now;
  sid.id = 1;
  CommEvent comm;
  comm.pid = comm.tid = 100;
  comm.comm = "walker";
  records.push_back(rb.comm(comm, sid));
  const Mmap2Event m = test::executable_map(100, kBase, "/nonexistent/tperf-garbage/app");
  sid.time = ++now;
  records.push_back(rb.mmap2(m, sid));
  std::mt19937 rng(seed);
  // The program's addresses, and garbage: fixed words of broken walks and random 64-bit ones,
  // about half of them above 2^63.
  std::vector<uint64_t> addrs = {kBase + 0x1100, kBase + 0x1200, kBase + 0x1300, 0xbe552274c0854800ULL,
                                 0x1a1a1a1a1a1a1a1aULL, 0xa3cee80574ff8548ULL};
  for (int k = 0; k < 24; ++k) addrs.push_back(static_cast<uint64_t>(rng()) << 32 | rng());
  for (int i = 0; i < samples; ++i) {
    Sample s;
    s.pid = s.tid = 100;
    s.time = ++now;
    s.cpu = static_cast<uint32_t>(rng() % 2);
    s.id = 1;
    s.period = 1000;
    s.callchain.push_back(kContextUser);
    const size_t depth = 1 + rng() % 6;
    for (size_t d = 0; d < depth; ++d) s.callchain.push_back(addrs[rng() % addrs.size()]);
    s.ip = s.callchain[1];
    records.push_back(rb.sample(s, kMiscUser));
  }
  std::string path = dir.file(fmt::format("garbage-{}.data", seed));
  Writer w;
  w.open(path);
  w.add_attr(attr, {1}, "cpu-clock");
  for (const auto& r : records) w.write_record(r);
  w.finish();
  return path;
}

TEST(ReportGarbageFrames, EntriesAsPerfWhereItsTreeMissesEqualOnes) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    std::string file = write_garbage_file(dir, seed, 400 + 200 * static_cast<int>(seed));
    for (const char* args : {"", "--no-children", "-g none", "-s sym", "-s comm,sym", "-s dso,sym -g none",
                             "--no-children -s sym,dso"}) {
      SCOPED_TRACE(fmt::format("seed {} args '{}'", seed, args));
      ComparedOutputs c = compare_outputs(
          fmt::format("perf report --stdio -q -n -i {} {} 2>/dev/null | grep -v '^$'", shell_quote(file), args),
          fmt::format("{} report --stdio -q -n -i {} {} | grep -v '^$'", TPERF_BINARY, shell_quote(file), args), file);
      EXPECT_EQ(c.diff, "") << "diff perf tperf";
      EXPECT_GE(c.perf_lines, 8u) << "perf printed too little";
    }
  }
}

}  // namespace
}  // namespace tperf::test::e2e

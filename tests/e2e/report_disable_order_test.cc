// `tperf report --disable-order` against `perf report --disable-order` (perf 6.1), which keeps
// the time order: perf turns it off only when it dumps the records (-D). A file written with
// our writer has samples that come before their thread's COMM in the file and after it in time
// (applied in file order, they would keep the thread's pid-made name), in file and pipe mode.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::run;

void write_file(const std::string& path, bool pipe) {
  Writer w(Writer::Options{.pipe = pipe});
  w.open(path);
  PerfEventAttr a =
      test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSampleCpu | kSamplePeriod | kSampleIdentifier, 1000);
  a.set_flag(kFlagExcludeGuest);
  w.add_attr(a, {42}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  auto sample = [&](uint32_t pid, uint64_t ip, uint32_t cpu, uint64_t time) {
    Sample s{.identifier = 42, .ip = ip, .pid = pid, .tid = pid, .time = time, .cpu = cpu, .period = 1000};
    w.write_record(rb.sample(s, kMiscUser));
  };
  const uint64_t t = 1'000'000'000;
  w.write_record(rb.comm({.pid = 7, .tid = 7, .comm = "app", .exec = true}, {.pid = 7, .tid = 7, .time = t, .id = 42}));
  w.write_record(rb.finished_round());
  // CPU 1's buffer, then CPU 0's: pid 9's sample is written before its COMM, which is older.
  sample(9, 0x401000, 1, t + 10'000);
  sample(9, 0x401000, 1, t + 11'000);
  w.write_record(
      rb.comm({.pid = 9, .tid = 9, .comm = "late", .exec = true}, {.pid = 9, .tid = 9, .time = t + 5'000, .id = 42}));
  sample(7, 0x402000, 0, t + 3'000);
  w.write_record(rb.finished_round());
  sample(9, 0x401000, 1, t + 20'000);
  w.write_record(rb.finished_round());
  w.finish();
}

std::string report(const std::string& tool, const std::string& path, const std::string& args) {
  const std::string extra = tool == "perf" ? "" : " --no-unwind-summary";
  CommandResult r = run(fmt::format("{} report --stdio{} {} -i {} 2>/dev/null | {}", tool, extra, args, shell_quote(path),
                                    test::e2e::kStripPerfTip));
  return r.out;
}

TEST(ReportDisableOrder, TimeOrderKeptAsInPerf) {
  TPERF_REQUIRE_PERF();
  test::TempDir dir;
  for (bool pipe : {false, true}) {
    const std::string path = dir.file(pipe ? "order.pipe.data" : "order.data");
    write_file(path, pipe);
    test::e2e::KeepOnFailure keep({path});
    for (const char* keys : {"-s comm", "-s comm,pid", ""}) {
      const std::string args = fmt::format("--disable-order {}", keys);
      const std::string perf = report("perf", path, args);
      EXPECT_EQ(report(TPERF_BINARY, path, args), perf) << args << (pipe ? " (pipe)" : "");
      // The option changes nothing.
      EXPECT_EQ(report(TPERF_BINARY, path, keys), perf) << keys << (pipe ? " (pipe)" : "");
      EXPECT_NE(perf.find("late"), std::string::npos) << perf;
    }
  }
}

}  // namespace
}  // namespace tperf::perfdata

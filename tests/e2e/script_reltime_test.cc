// `tperf script --reltime` and `--deltatime` against `perf script` (perf 6.1), byte for byte: the
// time field counted from the first line that shows one (side-band lines included), or from the
// line before; with --ns, with -F lists with and without the time field, with the side-band
// lines of --show-task-events/--show-mmap-events, with filters that leave lines out, and with
// --time, whose ranges --reltime makes relative to the first sample (perf adds the first
// sample's time to both ends of each range). The samples are formatted in batches on other
// threads (-j 2) while the times are worked out in record order: the output must not depend on it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::run;

void expect_same_as_perf(const std::string& input, const std::string& args, const std::string& jobs,
                         size_t min_lines) {
  test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
      fmt::format("perf script {} -i {} 2>/dev/null", args, shell_quote(input)),
      fmt::format("{} script {} {} -i {}", TPERF_BINARY, jobs, args, shell_quote(input)), input);
  test::e2e::expect_same_outputs(c, "perf script " + args + " vs tperf " + jobs, min_lines);
}

// Two threads of a process and a shell around it: samples of several tids, and task events.
const test::e2e::Recording& recording() {
  static const test::e2e::Recording r = [] {
    std::string error;
    const std::string spin = test::e2e::workload("spin", &error);
    if (spin.empty()) return test::e2e::Recording{"", "cannot build the workload: " + error};
    const std::string path = test::e2e::scratch_dir() + "/script-reltime.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock -g -o {} -- sh -c '{} 0.3; /bin/true'", shell_quote(path),
                    spin),
        path);
  }();
  return r;
}

TEST(ScriptRelTime, RelativeAndDeltaTimesEqualPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  for (const char* jobs : {"-j 1", "-j 2"}) {
    for (const char* base : {"--reltime", "--deltatime"}) {
      for (const char* more : {"", "--ns", "--show-task-events --show-mmap-events", "-F comm,tid,time",
                               "-F comm,tid,period", "-F comm,tid,time -G --show-task-events", "--comms spin"}) {
        expect_same_as_perf(rec.path, fmt::format("{} {}", base, more), jobs, 100);
      }
    }
  }
}

TEST(ScriptRelTime, TimeRangesFollowPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  // Relative seconds; an open end (perf closes it at the first sample); percentages (perf adds the
  // first sample's time to their range as well, so nothing is left).
  expect_same_as_perf(rec.path, "--reltime --time 0.05,0.15", "-j 2", 100);
  expect_same_as_perf(rec.path, "--reltime --time ,0.1 --show-task-events", "-j 2", 100);
  for (const char* empty : {"--reltime --time 0.05,", "--reltime --time 20%-40%"}) {
    CommandResult perf = run(fmt::format("perf script {} -i {} 2>/dev/null", empty, shell_quote(rec.path)));
    CommandResult ours = run(fmt::format("{} script {} -i {}", TPERF_BINARY, empty, shell_quote(rec.path)));
    EXPECT_EQ(perf.out, "") << empty << ": perf printed lines; this test's premise changed";
    EXPECT_EQ(ours.out, perf.out) << empty;
    EXPECT_EQ(ours.status, 0) << empty << ": " << ours.err;
  }
}

TEST(ScriptRelTime, PipeModeFileEqualsPerf) {
  TPERF_REQUIRE_PERF();
  const std::string pipe = test::corpus_dir() + "/quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8";
  ASSERT_TRUE(fs::exists(pipe)) << "set-up failed: corpus file missing: " << pipe;
  for (const char* args : {"--reltime", "--deltatime --show-task-events --show-mmap-events", "--reltime --ns"}) {
    expect_same_as_perf(pipe, args, "-j 2", 10);
  }
}

TEST(ScriptRelTime, RefusalsNameTheProblem) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  CommandResult both = run(fmt::format("{} script --reltime --deltatime -i {}", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_EQ(both.status, 2);
  EXPECT_EQ(both.out, "");
  EXPECT_NE(both.err.find("--reltime and --deltatime"), std::string::npos) << both.err;
  // A pipe does not say when its first sample was: relative ranges cannot be placed.
  const std::string pipe = test::corpus_dir() + "/quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8";
  ASSERT_TRUE(fs::exists(pipe)) << "set-up failed: corpus file missing: " << pipe;
  CommandResult r = run(fmt::format("{} script --reltime --time 0.1,0.2 -i {}", TPERF_BINARY, shell_quote(pipe)));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("first sample"), std::string::npos) << r.err;
  // perf refuses it too (its "HINT: no first/last sample time found"), printing no line.
  CommandResult perf = run(fmt::format("perf script --reltime --time 0.1,0.2 -i {} 2>&1", shell_quote(pipe)));
  EXPECT_NE(perf.out.find("no first/last sample time"), std::string::npos) << perf.out;
}

}  // namespace
}  // namespace tperf

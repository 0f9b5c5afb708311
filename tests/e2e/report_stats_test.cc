// `tperf report --stats` against `perf report --stats` (perf 6.1), byte for byte: the records of
// each type with their share, the AUX-area note, each event's samples and LOST_SAMPLES records,
// the names of a pipe's events (made from their attrs), on every corpus file perf reads and on a
// fresh recording of three events; with -q, --header, --header-only and -I; and the refusal of
// --stats with --tasks.
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

// perf 6.1 reads this file's report but stops in --stats ("Couldn't decompress data").
constexpr const char* kPerfStatsFails = "linux-perf-data/sleep.compressed.pipe.data";

void expect_same_as_perf(const std::string& input, const std::string& args, size_t min_lines) {
  test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
      fmt::format("perf report {} -i {} 2>/dev/null", args, shell_quote(input)),
      fmt::format("{} report {} -i {}", TPERF_BINARY, args, shell_quote(input)), input);
  test::e2e::expect_same_outputs(c, input + ": perf report " + args + " vs tperf", min_lines);
}

const test::e2e::Recording& three_events() {
  static const test::e2e::Recording r = [] {
    const std::string path = test::e2e::scratch_dir() + "/report-stats.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock -e page-faults -e context-switches:u -o {} -- "
                    "sh -c 'for i in 1 2 3; do ls / > /dev/null; done'",
                    shell_quote(path)),
        path);
  }();
  return r;
}

TEST(ReportStats, CorpusEqualsPerf) {
  TPERF_REQUIRE_PERF();
  ASSERT_TRUE(fs::exists(test::corpus_dir())) << "set-up failed: corpus not found at " << test::corpus_dir();
  size_t compared = 0;
  for (const std::string& rel : test::corpus_files_perf_reads()) {
    if (rel == kPerfStatsFails) continue;
    expect_same_as_perf(test::corpus_dir() + "/" + rel, "--stats", 4);
    ++compared;
  }
  EXPECT_GE(compared, size_t{10});
}

TEST(ReportStats, FreshRecordingAndHeaderOptionsEqualPerf) {
  TPERF_REQUIRE_RECORDING(rec, three_events());
  const std::string pipe = test::corpus_dir() + "/quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8";
  ASSERT_TRUE(fs::exists(pipe)) << "set-up failed: corpus file missing: " << pipe;
  for (const std::string& input : {rec.path, pipe}) {
    for (const char* args : {"--stats", "--stats -q", "--stats --header", "--stats --header-only", "--stats -I",
                             "--stats --header -q", "--stats --header-only -q", "--stats --header -I"}) {
      expect_same_as_perf(input, args, 4);
    }
  }
  // The three events each have a block of their own.
  CommandResult t = run(fmt::format("{} report --stats -i {}", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_NE(t.out.find("page-faults stats:"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("cpu-clock stats:"), std::string::npos) << t.out;
}

TEST(ReportStats, TasksAndStatsTogetherAreRefused) {
  TPERF_REQUIRE_RECORDING(rec, three_events());
  for (const char* mode : {"--tasks", "--mmaps"}) {
    CommandResult t = run(fmt::format("{} report --header --stats {} -i {}", TPERF_BINARY, mode, shell_quote(rec.path)));
    EXPECT_EQ(t.status, 2) << mode;
    EXPECT_EQ(t.out, "") << mode;
    EXPECT_NE(t.err.find("can't be used together with --stats"), std::string::npos) << t.err;
  }
}

}  // namespace
}  // namespace tperf

// `tperf script --header`, `--header-only` and `-I` against perf 6.1, byte for byte: on file-mode
// corpus files and a recording of this machine (the header block, then the samples), and
// --header-only on pipe-mode files (the block alone: perf stops before the features the stream
// holds). --header on a pipe is refused with a message naming what to use instead.
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

void expect_same_as_perf(const std::string& input, const std::string& args, size_t min_lines) {
  test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
      fmt::format("perf script {} -i {} 2>/dev/null", args, shell_quote(input)),
      fmt::format("{} script {} -i {}", TPERF_BINARY, args, shell_quote(input)), input);
  test::e2e::expect_same_outputs(c, fmt::format("perf script {} on {}", args, input), min_lines);
}

std::string corpus(const std::string& rel) {
  const std::string path = test::corpus_dir() + "/" + rel;
  EXPECT_TRUE(fs::exists(path)) << "set-up failed: corpus file missing: " << path;
  return path;
}

TEST(ScriptHeader, FileModeEqualsPerf) {
  TPERF_REQUIRE_PERF();
  for (const char* rel : {"quipper/testdata/perf.data.group_desc-4.14", "quipper/testdata/perf.data.ctx_switch_namespaces-4.14",
                          "quipper/testdata/perf.data.branch-4.14"}) {
    const std::string path = corpus(rel);
    expect_same_as_perf(path, "--header-only", 15);
    expect_same_as_perf(path, "--header-only -I", 15);
    expect_same_as_perf(path, "--header", 15);
    expect_same_as_perf(path, "--header -I -F comm,tid,time,ip", 15);
    // -I alone adds nothing.
    expect_same_as_perf(path, "-I", 1);
  }
}

const test::e2e::Recording& recording() {
  static const test::e2e::Recording r = [] {
    const std::string path = test::e2e::scratch_dir() + "/script-header.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock -g -o {} -- sh -c 'ls / >/dev/null'", shell_quote(path)), path);
  }();
  return r;
}

TEST(ScriptHeader, RecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  expect_same_as_perf(rec.path, "--header", 25);
  expect_same_as_perf(rec.path, "--header -I --show-task-events", 25);
  expect_same_as_perf(rec.path, "--header-only -I", 25);
}

TEST(ScriptHeader, PipeHeaderOnlyEqualsPerfAndHeaderIsRefused) {
  TPERF_REQUIRE_PERF();
  for (const char* rel : {"quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8",
                          "linux-perf-data/fibo.compressed2.pipe.data"}) {
    const std::string path = corpus(rel);
    expect_same_as_perf(path, "--header-only", 8);
    expect_same_as_perf(path, "--header-only -I", 8);
    CommandResult r = run(fmt::format("{} script --header -i {}", TPERF_BINARY, shell_quote(path)));
    EXPECT_EQ(r.status, 2) << rel;
    EXPECT_EQ(r.out, "") << rel;
    EXPECT_NE(r.err.find("--header on a pipe-mode input is not supported"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tperf

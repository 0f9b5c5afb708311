// `tperf script --header`, `--header-only` and `-I` against perf 6.1, byte for byte: on file-mode
// corpus files and a recording of this machine (the header block, then the samples), and
// pipe-mode files: --header-only (the block alone: perf stops before the features the stream
// holds), --header (the block, then the features as the stream brings them, the group line with
// the names perf gave the events by then) and -I alone (the features alone), from a path and on
// standard input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;

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

// `perf record -q -e EVENTS -g` of `ls /`, made once per test program: into a file, or through
// standard output (a pipe-mode file).
const test::e2e::Recording& ls_recording(const std::string& name, const std::string& events, bool pipe) {
  static std::map<std::string, test::e2e::Recording> made;
  auto it = made.find(name);
  if (it != made.end()) return it->second;
  const std::string path = test::e2e::scratch_dir() + "/" + name + ".data";
  const std::string cmd = fmt::format("timeout 60 perf record -q -e {} -g -o {} -- sh -c 'ls / >/dev/null'{}", events,
                                      pipe ? "-" : shell_quote(path), pipe ? " > " + shell_quote(path) : "");
  return made.emplace(name, test::e2e::record_with_perf(cmd, path)).first->second;
}

TEST(ScriptHeader, RecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, ls_recording("script-header", "cpu-clock", false));
  expect_same_as_perf(rec.path, "--header", 25);
  expect_same_as_perf(rec.path, "--header -I --show-task-events", 25);
  expect_same_as_perf(rec.path, "--header-only -I", 25);
}

TEST(ScriptHeader, PipeModeEqualsPerf) {
  TPERF_REQUIRE_PERF();
  // perf 6.1 reads the block of a stream of a newer perf, not its records.
  const std::string newer = corpus("linux-perf-data/fibo.compressed2.pipe.data");
  expect_same_as_perf(newer, "--header-only", 8);
  expect_same_as_perf(newer, "--header-only -I", 8);
  // An event group: perf names the leader from its attr as it arrives ("cycles:uH", its
  // default fields without CPU), the member from the EVENT_DESC feature ("instructions:u").
  const std::string group = corpus("quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8");
  expect_same_as_perf(group, "--header-only", 8);
  expect_same_as_perf(group, "--header-only -I", 8);
  expect_same_as_perf(group, "--header", 30);
  expect_same_as_perf(group, "--header -I -F comm,tid,time,ip", 30);
  expect_same_as_perf(group, "-I", 30);
  // Fields that drop no default: no early name, the group line has the EVENT_DESC names.
  expect_same_as_perf(group, "--header -F comm,ip", 30);
}

TEST(ScriptHeader, PipeRecordingEqualsPerfFromPathAndStandardInput) {
  TPERF_REQUIRE_RECORDING(rec, ls_recording("script-header-pipe", "'{cpu-clock:u,task-clock:u}'", true));
  expect_same_as_perf(rec.path, "--header", 25);
  expect_same_as_perf(rec.path, "--header -I", 25);
  expect_same_as_perf(rec.path, "-I", 20);
  expect_same_as_perf(rec.path, "--header -F comm,tid,ip,sym", 25);
  // A field the events cannot fill: perf stops at the ATTR record, after the block; the message
  // names the event as perf named it from its attr.
  test::e2e::ComparedOutputs bad = test::e2e::compare_outputs(
      fmt::format("perf script --header -F +cpu -i {} 2>/dev/null", shell_quote(rec.path)),
      fmt::format("{} script --header -F +cpu -i {} 2>/dev/null", TPERF_BINARY, shell_quote(rec.path)), rec.path);
  EXPECT_EQ(bad.diff, "");
  EXPECT_GE(bad.perf_lines, 8u);  // the block
  const test::e2e::CommandResult r =
      test::e2e::run(fmt::format("{} script --header -F +cpu -i {}", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("Samples for 'cpu-clock:uH' event do not have CPU attribute set. Cannot print 'cpu' field."),
            std::string::npos)
      << r.err;
  // Standard input is read twice (the header, then the samples) from a copy; "captured on" is
  // the time of what standard input is (here the file), as perf shows it.
  for (const char* args : {"--header", "-I"}) {
    test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
        fmt::format("perf script {} -i - < {} 2>/dev/null", args, shell_quote(rec.path)),
        fmt::format("{} script {} -i - < {}", TPERF_BINARY, args, shell_quote(rec.path)), rec.path);
    test::e2e::expect_same_outputs(c, fmt::format("perf script {} on standard input", args), 25);
  }
}

}  // namespace
}  // namespace tperf

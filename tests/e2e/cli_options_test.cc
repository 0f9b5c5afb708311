// Command lines tperf cannot parse: every command refuses an unknown option, an option without
// its value or with a malformed one, with one line on stderr naming it and perf's usage exit
// status (perf itself is the oracle of that status); record refuses them before it starts the
// workload or writes anything, and passes the workload's own options through untouched.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kTperf = TPERF_BINARY;

// The exit status perf 6.1 gives a command line it cannot parse (its usage_with_options()).
int perf_usage_status() {
  static const int status = run("perf report --bogus").status;
  return status;
}

size_t count_lines(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  if (!text.empty() && text.back() != '\n') ++n;
  return n;
}

// Runs `tperf ARGS` in `dir` and checks the refusal: perf's usage status, nothing on stdout, one
// line on stderr that starts with "tperf COMMAND: " and names `option`.
void expect_refused(const std::string& dir, const std::string& command, const std::string& args,
                    const std::string& option) {
  SCOPED_TRACE(fmt::format("tperf {} {}", command, args));
  CommandResult r = run(fmt::format("cd {} && {} {} {} < /dev/null", shell_quote(dir), kTperf, command, args));
  EXPECT_EQ(r.status, perf_usage_status()) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("tperf " + command + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
}

TEST(CliOptions, PerfExitsWith129OnAnUnknownOption) {
  TPERF_REQUIRE_PROGRAM("perf");
  CommandResult r = run("perf report --bogus");
  EXPECT_EQ(r.status, 129);
  EXPECT_NE(r.err.find("Error: unknown option `bogus'"), std::string::npos) << r.err;
  EXPECT_EQ(run("perf script --bogus").status, 129);
  EXPECT_EQ(run("perf record --bogus -- true").status, 129);
}

TEST(CliOptions, EveryCommandRefusesAnUnknownOption) {
  TPERF_REQUIRE_PROGRAM("perf");
  ASSERT_EQ(perf_usage_status(), 129);
  TempDir dir;
  for (const char* command : {"dump", "header", "stats", "convert", "script", "record", "report", "diff", "collapse", "export"}) {
    expect_refused(dir.path(), command, "--bogus", "'--bogus'");
    expect_refused(dir.path(), command, "-Y", "'-Y'");
  }
  // After a valid option too, and in the long form with a value.
  expect_refused(dir.path(), "report", "--stdio --bogus=1", "--bogus");
  expect_refused(dir.path(), "script", "-F ip --bogus", "'--bogus'");
}

TEST(CliOptions, MissingAndMalformedValuesAreRefused) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  // Named by the option's long name.
  expect_refused(dir.path(), "report", "-i", "--input");
  expect_refused(dir.path(), "script", "-F", "--fields");
  expect_refused(dir.path(), "dump", "-i", "--input");
  expect_refused(dir.path(), "record", "-o", "--output");
  expect_refused(dir.path(), "record", "-F abc -- true", "--freq");
  expect_refused(dir.path(), "record", "-c abc -- true", "--count");
  expect_refused(dir.path(), "diff", "-c", "--compute");
  expect_refused(dir.path(), "collapse", "-o", "--output");
  expect_refused(dir.path(), "export", "--format", "--format");
  expect_refused(dir.path(), "export", "--format svg", "--format");
  expect_refused(dir.path(), "export", "-i perf.data", "--format");
  EXPECT_TRUE(fs::is_empty(dir.path())) << "a refused command line wrote a file";
}

// record: an unknown option before the workload is refused before anything runs or is written;
// the workload never starts (its marker file is not made).
TEST(CliOptions, RecordRefusesUnknownOptionsBeforeTheWorkload) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  const std::string marker = dir.file("ran");
  // Each command line with the option the refusal names (not looked for in the line: the
  // scratch directory's random name once held "-X").
  const std::pair<std::string, std::string> cases[] = {
      {fmt::format("--off-cpu-bogus -- touch {}", shell_quote(marker)), "'--off-cpu-bogus'"},
      {fmt::format("--off-cpu-bogus touch {}", shell_quote(marker)), "'--off-cpu-bogus'"},
      {fmt::format("-q --bogus -e cpu-clock -- touch {}", shell_quote(marker)), "'--bogus'"},
      {fmt::format("-e cpu-clock -X -- touch {}", shell_quote(marker)), "'-X'"}};
  for (const auto& [args, option] : cases) {
    expect_refused(dir.path(), "record", args, option);
    EXPECT_FALSE(fs::exists(marker)) << args << ": the workload ran";
    EXPECT_FALSE(fs::exists(dir.file("perf.data"))) << args << ": perf.data was written";
  }
}

// The workload's own options, after its name or after --, reach it untouched.
TEST(CliOptions, RecordPassesTheWorkloadsOptionsThrough) {
  TPERF_REQUIRE_PERF();
  TempDir dir;
  const std::string out = shell_quote(dir.file("w.data"));
  // sh prints its arguments: what the workload received.
  const std::string echo = "sh -c 'printf \"%s|\" \"$@\"' sh";
  CommandResult a = run(fmt::format("{} record -q -o {} -- {} -l --bogus -- -F 1", kTperf, out, echo));
  EXPECT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, "-l|--bogus|--|-F|1|");
  CommandResult b = run(fmt::format("{} record -q -o {} {} -l --color=never -o x", kTperf, out, echo));
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.out, "-l|--color=never|-o|x|");
  // ls -l, both ways, lists the directory with the recording in it.
  for (const char* sep : {"-- ", ""}) {
    CommandResult l = run(fmt::format("{} record -q -o {} {}ls -l {}", kTperf, out, sep, shell_quote(dir.path())));
    EXPECT_EQ(l.status, 0) << sep << l.err;
    EXPECT_NE(l.out.find("total "), std::string::npos) << l.out;
    EXPECT_NE(l.out.find("w.data"), std::string::npos) << l.out;
  }
  // perf reads the recordings tperf made of them.
  CommandResult p = run("perf report --stdio -q -i " + out);
  EXPECT_EQ(p.status, 0) << p.err;
}

TEST(CliOptions, HelpStillExitsZero) {
  for (const char* command : {"dump", "header", "stats", "convert", "script", "record", "report", "diff", "collapse", "export"}) {
    CommandResult r = run(fmt::format("{} {} --help", kTperf, command));
    EXPECT_EQ(r.status, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find(command), std::string::npos) << r.out;
  }
  CommandResult r = run(kTperf + " --help");
  EXPECT_EQ(r.status, 0) << r.err;
}

}  // namespace
}  // namespace tperf::test::e2e

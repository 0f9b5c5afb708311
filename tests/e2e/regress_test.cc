// The regression corpus (tests/regress/, one directory per case, README.md says what each pins):
// small perf.data files recorded by perf 6.1 with perf 6.1's output on them saved next to them.
// tperf runs on the saved files and must print the saved text byte for byte. Unlike the e2e tests
// that record anew on every run, these do not depend on the machine's load, so a difference
// found once by a recording stays pinned. perf is not needed to run them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "test_util.h"

namespace tperf {
namespace {

using test::shell_quote;

struct RegressCase {
  const char* dir;       // under tests/regress/
  const char* args;      // tperf's arguments, run in that directory
  const char* expected;  // perf 6.1's output, saved in that directory
};

std::string regress_dir(const char* dir) { return fmt::format("{}/tests/regress/{}", TPERF_SOURCE_DIR, dir); }

void expect_as_saved(const RegressCase& c) {
  SCOPED_TRACE(fmt::format("{}: tperf {}", c.dir, c.args));
  const std::string dir = regress_dir(c.dir);
  const std::string expected_path = dir + "/" + c.expected;
  ASSERT_TRUE(std::filesystem::exists(expected_path)) << expected_path;
  const std::string expected = test::read_file(expected_path);
  // An empty HOME: no build-id cache (~/.debug, which perf record fills on this machine) gives
  // tperf symbols that perf's --symfs run that made the expected text did not use.
  test::TempDir home;
  int status = -1;
  const std::string out = test::run_command(
      fmt::format("cd {} && HOME={} {} {} 2>/dev/null", shell_quote(dir), shell_quote(home.path()), TPERF_BINARY, c.args),
      &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, expected);
}

// perf diff merges the entries without a symbol that agree on the other keys, where perf report
// lists one per address; the entries that have a symbol stay apart. The files need no symbols
// but those of symfs/ (libmix.so has the exported `named` and two hidden loops without one).
TEST(Regress, DiffMergesUnresolvedEntries) {
  for (const RegressCase& c : {
           RegressCase{"diff-unresolved", "diff --symfs symfs old.data new.data", "expected-default.txt"},
           RegressCase{"diff-unresolved", "diff --symfs symfs -s sym old.data new.data", "expected-sym.txt"},
           RegressCase{"diff-unresolved", "diff --symfs symfs -s sym,dso old.data new.data", "expected-sym-dso.txt"},
           RegressCase{"diff-unresolved", "diff --symfs symfs -s comm,dso,sym -c ratio old.data new.data",
                       "expected-comm-dso-sym-ratio.txt"},
       }) {
    expect_as_saved(c);
  }
}

// script's trace field: each tracepoint's print format evaluated (sched, raw_syscalls, syscalls
// and a uprobe, whose text is its address), where tperf printed nothing after the event name;
// in a file, in a pipe-mode file and on standard input.
TEST(Regress, TracepointTraceField) {
  for (const RegressCase& c : {
           RegressCase{"tracepoint-trace", "script -i file.data", "expected-file.txt"},
           RegressCase{"tracepoint-trace", "script -F comm,tid,event,trace -i file.data", "expected-file-fields.txt"},
           RegressCase{"tracepoint-trace", "script -i pipe.data", "expected-pipe.txt"},
           RegressCase{"tracepoint-trace", "script -i - < pipe.data", "expected-pipe.txt"},
           // report: perf's default sort of an all-tracepoint file is `trace`; its column grows
           // only by the texts perf made while comparing entries, the others are cut to it.
           RegressCase{"tracepoint-trace", "report --stdio --no-unwind-summary -i file.data", "expected-report.txt"},
           RegressCase{"tracepoint-trace", "report --stdio --no-unwind-summary -s comm,trace -i pipe.data",
                       "expected-report-pipe-comm-trace.txt"},
       }) {
    expect_as_saved(c);
  }
}

}  // namespace
}  // namespace tperf

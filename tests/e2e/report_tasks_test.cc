// `tperf report --tasks` and `--mmaps` against `perf report --tasks` / `--mmaps` (perf 6.1): on
// fresh recordings of a fork/exec/exit-heavy shell, a multi-threaded program and the whole
// system, and on every corpus file perf reads. The task tree (order, indentation, ppids, exited
// tasks) and the maps under each task must be the same text.
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

test::e2e::ComparedOutputs compare(const std::string& input, const std::string& mode) {
  return test::e2e::compare_outputs(fmt::format("perf report --{} -i {}", mode, shell_quote(input)),
                                    fmt::format("{} report --{} -i {}", TPERF_BINARY, mode, shell_quote(input)), input);
}

#define EXPECT_SAME_AS_PERF(input, mode, min_lines)                                   \
  do {                                                                                \
    test::e2e::ComparedOutputs c_ = compare(input, mode);                             \
    EXPECT_EQ(c_.diff, "") << "perf report --" << (mode) << " vs tperf (diff perf tperf)"; \
    EXPECT_GE(c_.perf_lines, size_t{min_lines}) << "perf listed too little";          \
    EXPECT_EQ(c_.tperf_status, 0) << c_.tperf_err;                                    \
  } while (0)

// Records `workload` with perf into the scratch directory; *error says why when it could not
// (a set-up failure of the test).
std::string record(const std::string& name, const std::string& perf_args, std::string* error) {
  if (const std::string& why = test::e2e::perf_unavailable_reason(); !why.empty()) {
    *error = why;
    return "";
  }
  std::string path = test::e2e::scratch_dir() + "/" + name + ".data";
  CommandResult r = run(fmt::format("timeout 60 perf record -q -o {} {}", shell_quote(path), perf_args));
  if (r.status != 0 || !fs::exists(path)) *error = "perf record failed: " + r.err;
  return path;
}

TEST(ReportTasks, ForkExecExitShellEqualsPerf) {
  std::string failure;
  // Exec'd children, a subshell with its own child (depth 2), a background task that outlives
  // its parent's wait, and tasks that exit before the end.
  std::string path = record("tasks-shell", "-e cpu-clock -- sh -c 'for i in 1 2 3 4 5; do /bin/true; done; "
                                           "(sleep 0.05 & wait); (sh -c \"/bin/true; sleep 0.01\"); sleep 0.1'",
                            &failure);
  ASSERT_TRUE(failure.empty()) << "set-up failed: " << failure;
  EXPECT_SAME_AS_PERF(path, "tasks", 12);
  EXPECT_SAME_AS_PERF(path, "mmaps", 40);
  // Every exited task is listed: five true from the loop and one from the nested shell.
  CommandResult t = run(fmt::format("{} report --tasks -i {} | grep -c ' true$'", TPERF_BINARY, shell_quote(path)));
  EXPECT_EQ(t.out, "6\n");
}

TEST(ReportTasks, ThreadsOfAProcessEqualPerf) {
  std::string error;
  std::string spin = test::e2e::workload("spin", &error);
  ASSERT_FALSE(spin.empty()) << error;
  std::string failure;
  std::string path = record("tasks-threads", "-e cpu-clock -- " + shell_quote(spin) + " 0.1", &failure);
  ASSERT_TRUE(failure.empty()) << "set-up failed: " << failure;
  EXPECT_SAME_AS_PERF(path, "tasks", 3);
  EXPECT_SAME_AS_PERF(path, "mmaps", 8);
}

TEST(ReportTasks, SystemWideEqualsPerf) {
  std::string failure;
  std::string path =
      record("tasks-system", "-a -e cpu-clock -- sh -c 'for i in $(seq 30); do /bin/true; done; sleep 0.1'", &failure);
  ASSERT_TRUE(failure.empty()) << "set-up failed: " << failure;
  // The synthesized tasks of the whole machine (kernel threads under kthreadd, init's tree) and
  // the ones the workload started.
  EXPECT_SAME_AS_PERF(path, "tasks", 60);
  EXPECT_SAME_AS_PERF(path, "mmaps", 200);
}

TEST(ReportTasks, CorpusFilesEqualPerf) {
  TPERF_REQUIRE_CORPUS();
  TPERF_REQUIRE_PROGRAM("perf");
  for (const auto& rel : test::corpus_files_perf_reads()) {
    SCOPED_TRACE(rel);
    std::string path = test::corpus_dir() + "/" + rel;
    if (rel == "linux-perf-data/sleep.compressed.pipe.data") {
      // perf 6.1's report fails to decompress this pipe ("Couldn't decompress data") and prints
      // nothing; perf report -D shows the task records tperf lists (corpus_test counts them).
      CommandResult t = run(fmt::format("{} report --tasks -i {}", TPERF_BINARY, shell_quote(path)));
      EXPECT_EQ(t.status, 0) << t.err;
      EXPECT_NE(t.out.find("-1 |sleep\n"), std::string::npos) << t.out;
      continue;
    }
    EXPECT_SAME_AS_PERF(path, "tasks", 2);
    EXPECT_SAME_AS_PERF(path, "mmaps", 2);
  }
}

TEST(ReportTasks, DamagedInputIsReportedNotCrashed) {
  test::TempDir dir;
  std::string path = dir.file("cut.data");
  // A file cut inside its header.
  run(fmt::format("head -c 100 /bin/ls > {}", shell_quote(path)));
  CommandResult t = run(fmt::format("{} report --tasks -i {}", TPERF_BINARY, shell_quote(path)));
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.err.find(path), std::string::npos) << t.err;
}

}  // namespace
}  // namespace tperf

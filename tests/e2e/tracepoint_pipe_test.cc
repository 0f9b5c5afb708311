// Tracepoints recorded by perf 6.1 into a pipe: named in script's event field and report's
// section lines as perf names them (perf 6.1 writes EVENT_UPDATE names into the pipe; a pipe
// without them is named from its TRACING_DATA, see tracepoint_names_test.cc), and report's
// entries of an all-tracepoint pipe sorted as perf 6.1 sorts them (comm, dso, sym: perf 6.1
// picks its default sort before a pipe's events are known; a file of tracepoints alone sorts by
// trace, see tracepoint_trace_test.cc). Against perf 6.1 on a perf recording.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

TEST(TracepointPipe, NamesFromTracingDataAsPerf) {
  TPERF_REQUIRE_PERF();
  ASSERT_EQ(ensure_tracefs(), "") << "set-up failed";
  const std::string path = scratch_dir() + "/tracepoint-pipe.data";
  TPERF_REQUIRE_RECORDING(
      rec, record_with_perf(fmt::format("timeout 60 perf record -q -e sched:sched_switch -e sched:sched_process_exec "
                                        "-o - -- sleep 0.05 > {}",
                                        shell_quote(path)),
                            path));
  for (auto [perf_cmd, tperf_cmd] : {
           std::pair<std::string, std::string>{"perf script -F comm,tid,event -i {}", "{} script -F comm,tid,event -i {}"},
           {"perf report --stdio -i {} 2>/dev/null | grep -v '^#' | grep -v '^$'",
            "{} report --stdio -i {} | grep -v '^#' | grep -v '^$'"},
           {"perf report --stdio -i {} 2>/dev/null | grep '^# Samples'", "{} report --stdio -i {} | grep '^# Samples'"},
       }) {
    SCOPED_TRACE(tperf_cmd);
    ComparedOutputs c = compare_outputs(fmt::format(fmt::runtime(perf_cmd), shell_quote(rec.path)),
                                        fmt::format(fmt::runtime(tperf_cmd), TPERF_BINARY, shell_quote(rec.path)),
                                        rec.path);
    EXPECT_EQ(c.diff, "") << "diff perf tperf";
    EXPECT_GE(c.perf_lines, 2u) << "perf printed too little";
  }
  CommandResult t = run(fmt::format("{} script -F event -i {}", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_NE(t.out.find("sched:sched_process_exec:"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("tracepoint:"), std::string::npos) << t.out;
}

}  // namespace
}  // namespace tperf::test::e2e

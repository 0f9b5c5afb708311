// The vDSO under --symfs: perf finds a [vdso] image only in the build-id cache, which --symfs
// moves under the symfs too, so there its addresses stay unresolved; tperf took the running
// kernel's image and named them (__vdso_clock_gettime), and with names instead of addresses the
// entries also went into perf's tree elsewhere. A workload that reads the clock all the time,
// recorded anew, reported with an empty symfs and an empty HOME on both sides.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

TEST(VdsoSymfs, UnresolvedUnderSymfsAsPerf) {
  TPERF_REQUIRE_PERF();
  TempDir dir;
  const std::string data = dir.file("clock.data");
  const std::string symfs = dir.file("symfs");
  const std::string home = dir.file("home");
  CommandResult rec = run(fmt::format(
      "mkdir -p {} {} && timeout 60 perf record -q -e cpu-clock:u -c 20000 -o {} -- python3 -c "
      "'import time\nfor i in range(400000): time.monotonic()'",
      shell_quote(symfs), shell_quote(home), shell_quote(data)));
  ASSERT_EQ(rec.status, 0) << "set-up failed: perf record: " << rec.err;
  const std::string in = fmt::format("--symfs {} -i {}", shell_quote(symfs), shell_quote(data));
  // The recording must have samples in the vDSO, or this compares nothing of it.
  CommandResult dsos = run(fmt::format("HOME={} perf report --stdio -q -s dso {} 2>/dev/null", shell_quote(home), in));
  ASSERT_NE(dsos.out.find("[vdso]"), std::string::npos) << "no sample in the vDSO:\n" << dsos.out;
  for (const char* args : {"report --stdio -s dso,sym -n", "report --stdio -s sym -n", "script -F comm,ip,sym,dso"}) {
    SCOPED_TRACE(args);
    const bool report = std::string(args).starts_with("report");
    const std::string filter = report ? " | grep -v '^# (Tip' | grep -v '^#$' | grep -v '^$'" : "";
    ComparedOutputs c = compare_outputs(
        fmt::format("HOME={} perf {} {} 2>/dev/null{}", shell_quote(home), args, in, filter),
        fmt::format("HOME={} {} {}{} {} 2>/dev/null{}", shell_quote(home), TPERF_BINARY, args,
                    report ? " --no-unwind-summary" : "", in, filter),
        data);
    EXPECT_EQ(c.diff, "") << "diff perf tperf; kept in " << c.kept;
    EXPECT_GE(c.perf_lines, 5u);
  }
}

}  // namespace
}  // namespace tperf::test::e2e

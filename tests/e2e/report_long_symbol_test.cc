// A symbol longer than 1023 characters (C++ template instantiations reach that: a node.js
// function of the sys recipe has 3584): perf formats each column name of the header line into a
// 1024-byte buffer, so the Symbol column's name line stops at 1023 characters while the rule of
// dots below it and the rows keep the full width. A workload whose hot function has such a name,
// recorded by perf 6.1, against perf report.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

const Recording& long_symbol_recording() {
  static const Recording r = [] {
    const std::string dir = scratch_dir();
    const std::string name = "hot_" + std::string(1200, 'x');
    const std::string src = dir + "/long_symbol.c";
    const std::string bin = dir + "/long_symbol";
    {
      std::string code = fmt::format(
          "#include <stdlib.h>\n"
          "static volatile unsigned long sink;\n"
          "__attribute__((noinline)) void {0}(long n) {{ for (long i = 0; i < n; i++) sink += i; }}\n"
          "int main(int argc, char** argv) {{ {0}(argc > 1 ? atol(argv[1]) : 100000000); return 0; }}\n",
          name);
      FILE* f = std::fopen(src.c_str(), "w");
      if (f) {
        std::fputs(code.c_str(), f);
        std::fclose(f);
      }
    }
    CommandResult c = run(fmt::format("gcc -O1 -g -o {} {}", shell_quote(bin), shell_quote(src)));
    if (c.status != 0) {
      Recording failed;
      failed.error = "cannot build the workload: " + c.err;
      return failed;
    }
    const std::string path = dir + "/long_symbol.data";
    return record_with_perf(fmt::format("perf record -q -e cpu-clock -c 200000 -o {} -- {} 60000000", shell_quote(path),
                                        shell_quote(bin)),
                            path);
  }();
  return r;
}

TEST(ReportLongSymbol, HeaderNameLineCutAt1023AsPerf) {
  TPERF_REQUIRE_RECORDING(rec, long_symbol_recording());
  for (const char* args : {"--stdio", "--stdio -s sym", "--stdio -s dso,sym -n"}) {
    ComparedOutputs c = compare_outputs(
        fmt::format("perf report -i {} {} 2>/dev/null | grep -v '^# (Tip' | sed '${{/^#$/d}}' | sed '${{/^#$/d}}'",
                    shell_quote(rec.path), args),
        fmt::format("{} report --no-unwind-summary -i {} {}", TPERF_BINARY, shell_quote(rec.path), args), rec.path);
    EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
    EXPECT_GT(c.perf_lines, 8u) << args;
    EXPECT_EQ(c.diff, "") << "perf report " << args;
  }
  // The long name is the hot one: the case is there.
  CommandResult t = run(fmt::format("{} report --no-unwind-summary -i {} --stdio -s sym", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_NE(t.out.find("hot_" + std::string(1200, 'x')), std::string::npos);
}

}  // namespace
}  // namespace tperf::test::e2e

// Options perf 6.1 takes that change nothing in a --stdio report or in script's text (they serve
// its annotation, its TUI, its raw dump, or fields tperf has not): tperf takes them too, and its
// output with each equals perf's with it, and its own without it. The values perf refuses, tperf
// refuses (status 2, a message naming the option).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf {
namespace {

using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::run;

const test::e2e::Recording& recording() {
  static const test::e2e::Recording r = [] {
    const std::string path = test::e2e::scratch_dir() + "/compat-options.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock -F 2000 -g -o {} -- sh -c 'ls -R /usr/lib >/dev/null'",
                    shell_quote(path)),
        path);
  }();
  return r;
}

TEST(CompatOptions, ReportOptionsThatChangeNothingEqualPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  const std::string q = shell_quote(rec.path);
  const std::string plain = run(fmt::format("{} report --stdio --no-unwind-summary -i {}", TPERF_BINARY, q)).out;
  for (const char* opt : {"--percent-type local-period", "--percent-type global-hits", "--prefix /x", "--prefix /x --prefix-strip 2",
                          "--objdump /bin/false", "--asm-raw", "-M att", "--source", "--no-source", "--samples 5",
                          "--pretty raw", "--ignore-vmlinux", "--ns", "--show-on-off-events"}) {
    const std::string args = fmt::format("--stdio {}", opt);
    test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
        fmt::format("perf report {} -i {} 2>/dev/null | {}", args, q, test::e2e::kStripPerfTip),
        fmt::format("{} report --no-unwind-summary {} -i {}", TPERF_BINARY, args, q), rec.path);
    test::e2e::expect_same_outputs(c, "report " + args, 20);
    EXPECT_EQ(run(fmt::format("{} report --stdio --no-unwind-summary {} -i {}", TPERF_BINARY, opt, q)).out, plain) << opt;
  }
}

TEST(CompatOptions, ReportRefusesWhatPerfRefuses) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  const std::string q = shell_quote(rec.path);
  for (const char* opt : {"--percent-type bogus", "--prefix-strip 1"}) {
    CommandResult perf = run(fmt::format("perf report --stdio {} -i {}", opt, q));
    EXPECT_NE(perf.status, 0) << opt << ": perf took it; this test's premise changed";
    CommandResult ours = run(fmt::format("{} report --stdio {} -i {}", TPERF_BINARY, opt, q));
    EXPECT_EQ(ours.status, 2) << opt;
    EXPECT_EQ(ours.out, "") << opt;
    const std::string name = std::string(opt).substr(0, std::string(opt).find(' '));
    EXPECT_NE(ours.err.find(name), std::string::npos) << ours.err;
  }
}

TEST(CompatOptions, ScriptOptionsThatChangeNothingEqualPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  for (const char* opt : {"--show-kernel-path", "--max-blocks 3", "-a"}) {
    test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
        fmt::format("perf script {} -i {} 2>/dev/null", opt, shell_quote(rec.path)),
        fmt::format("{} script {} -i {}", TPERF_BINARY, opt, shell_quote(rec.path)), rec.path);
    test::e2e::expect_same_outputs(c, fmt::format("script {}", opt), 20);
  }
}

// perf takes the last of a value option given more than once.
TEST(CompatOptions, ValueOptionGivenTwiceTakesTheLastAsPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  const std::string q = shell_quote(rec.path);
  for (const char* args : {"--stdio -s dso -s comm -g none", "--stdio --no-children -s sym -s dso,sym --percent-limit 5 "
                                                             "--percent-limit 1 -g none"}) {
    test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
        fmt::format("perf report {} -i {} 2>/dev/null | {}", args, q, test::e2e::kStripPerfTip),
        fmt::format("{} report --no-unwind-summary {} -i {}", TPERF_BINARY, args, q), rec.path);
    test::e2e::expect_same_outputs(c, std::string("report ") + args, 8);
  }
  test::e2e::ComparedOutputs script = test::e2e::compare_outputs(
      fmt::format("perf script --max-stack 3 --max-stack 2 -i {} 2>/dev/null", q),
      fmt::format("{} script --max-stack 3 --max-stack 2 -i {}", TPERF_BINARY, q), rec.path);
  test::e2e::expect_same_outputs(script, "script --max-stack 3 --max-stack 2", 20);
}

}  // namespace
}  // namespace tperf

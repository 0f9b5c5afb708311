// `tperf script -F +srccode` against perf 6.1, byte for byte: the source line of each sample's ip
// after the sample, printed when it is not the line printed last for that thread. On recordings
// of workloads built here (position-independent and not, frame pointers and --call-graph dwarf),
// at -j 1 and -j 2, and with the source file gone (no lines, as perf).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

namespace fs = std::filesystem;

// Builds `source` (a copy of a workload's source in the scratch directory, so that it can be
// taken away) with `flags` and records it with `perf_options`.
Recording record_built(const std::string& name, const std::string& source, const std::string& flags,
                       const std::string& perf_options) {
  Recording r;
  const std::string bin = scratch_dir() + "/" + name;
  CommandResult c = run(fmt::format("gcc -O1 -g -fno-omit-frame-pointer -pthread {} -o {} {}", flags, shell_quote(bin),
                                    shell_quote(source)));
  if (c.status != 0) {
    r.error = "compiling " + source + " failed: " + c.err;
    return r;
  }
  const std::string path = scratch_dir() + "/" + name + ".data";
  return record_with_perf(
      fmt::format("timeout 60 perf record -q {} -o {} -- {} 0.3", perf_options, shell_quote(path), shell_quote(bin)), path);
}

std::string workload_copy(const std::string& name) {
  const std::string copy = scratch_dir() + "/" + name + "-copy.c";
  fs::copy_file(std::string(TPERF_SOURCE_DIR) + "/tests/e2e/workloads/" + name + ".c", copy,
                fs::copy_options::overwrite_existing);
  return copy;
}

void expect_same(const std::string& path, const std::string& args, size_t min_lines, size_t min_code_lines) {
  for (const char* jobs : {"-j 1", "-j 2"}) {
    const ComparedOutputs c = compare_outputs(fmt::format("perf script {} -i {}", args, shell_quote(path)),
                                              fmt::format("{} script {} {} -i {}", TPERF_BINARY, jobs, args, shell_quote(path)),
                                              path);
    expect_same_outputs(c, fmt::format("script {} {}", jobs, args), min_lines);
  }
  // The source lines are there (a comparison of two outputs without any would check little).
  const std::string out = run(fmt::format("perf script {} -i {} 2>/dev/null", args, shell_quote(path))).out;
  size_t code = 0;
  for (size_t at = out.find("\n|"); at != std::string::npos; at = out.find("\n|", at + 1)) ++code;
  EXPECT_GE(code, min_code_lines) << args;
}

TEST(ScriptSrccode, PositionIndependentEqualsPerf) {
  TPERF_REQUIRE_PERF();
  const Recording rec = record_built("srccode-pie", workload_copy("spin"), "", "-e cpu-clock -c 100000 -g");
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;
  // Two threads in the same loop: each thread's line is printed for it (the lines depend on where
  // the samples fell, hence only one is required; the outputs must be equal).
  expect_same(rec.path, "-F +srccode", 300, 1);
  expect_same(rec.path, "-F ip,sym,srccode -G", 300, 1);
  expect_same(rec.path, "-F comm,tid,ip,sym,srcline,srccode", 300, 1);
}

TEST(ScriptSrccode, NotPositionIndependentEqualsPerf) {
  TPERF_REQUIRE_PERF();
  const Recording rec = record_built("srccode-nopie", workload_copy("spin"), "-no-pie", "-e cpu-clock -c 100000 -g");
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;
  expect_same(rec.path, "-F +srccode", 300, 1);
}

TEST(ScriptSrccode, DwarfCallchainsEqualPerf) {
  TPERF_REQUIRE_PERF();
  const Recording rec =
      record_built("srccode-dwarf", workload_copy("deep_nofp"), "-fomit-frame-pointer", "-e cpu-clock -c 200000 --call-graph dwarf,8192");
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;
  expect_same(rec.path, "-F +srccode", 100, 1);
}

TEST(ScriptSrccode, MissingSourceShowsNoLines) {
  TPERF_REQUIRE_PERF();
  const std::string source = workload_copy("spin");
  const Recording rec = record_built("srccode-gone", source, "", "-e cpu-clock -c 100000 -g");
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;
  fs::remove(source);
  for (const char* jobs : {"-j 1", "-j 2"}) {
    const ComparedOutputs c = compare_outputs(fmt::format("perf script -F +srccode -i {}", shell_quote(rec.path)),
                                              fmt::format("{} script {} -F +srccode -i {}", TPERF_BINARY, jobs, shell_quote(rec.path)),
                                              rec.path);
    expect_same_outputs(c, fmt::format("script {} -F +srccode, source removed", jobs), 300);
  }
  const std::string out = run(fmt::format("{} script -F +srccode -i {}", TPERF_BINARY, shell_quote(rec.path))).out;
  EXPECT_EQ(out.find("\n|"), std::string::npos);
}

}  // namespace
}  // namespace tperf::test::e2e

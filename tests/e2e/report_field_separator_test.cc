// perf report -t/--field-separator against perf 6.1 byte for byte: the column names joined by the
// separator without the rule under them, each value after one space and padded on the right
// (unpadded in the last column), key cells as wide as without it but the separator's first
// character in them turned into '.' (C++ names with ',' under -t ,), no DSO column widened for
// unresolved entries, folded chains joined by the separator, separators of several characters,
// -F layouts, event groups; on a frame-pointer recording, a system-wide one, a --call-graph dwarf
// one and the corpus files perf reads. With --hierarchy it is refused by name (not done yet).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

void expect_same(const std::string& path, const std::string& args, size_t min_lines) {
  const ComparedOutputs c = compare_outputs(
      fmt::format("perf report --stdio {} -i {} | {}", args, shell_quote(path), kStripPerfTip),
      fmt::format("{} report --stdio --no-unwind-summary {} -i {}", TPERF_BINARY, args, shell_quote(path)), path);
  expect_same_outputs(c, "report " + args, min_lines);
}

const std::vector<std::string>& option_sets() {
  static const std::vector<std::string> s = {
      "-t ';' -g none",
      "-t '|' --no-children -n --show-total-period -g none",
      "-t , --no-children",
      "-t , -g folded --no-children",
      "-t '|' -s pid,dso -g none",
      "-t , -F overhead,sample,sym -g none",
      "-t , -F sym,overhead -g none",
      "-t '::' -s dso,sym -g none --show-cpu-utilization",
  };
  return s;
}

TEST(ReportFieldSeparator, FramePointerRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("sep-fp", "deep_nofp", "-e cpu-clock -c 100000 -g"));
  for (const std::string& args : option_sets()) expect_same(rec.path, args, 8);
}

TEST(ReportFieldSeparator, SystemWideRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("sep-sys", "spin", "-a -g -e cpu-clock -c 100000"));
  for (const std::string& args : option_sets()) expect_same(rec.path, args, 8);
  expect_same(rec.path, "-t '|' -s cpu,comm -g none", 8);
}

TEST(ReportFieldSeparator, CxxNamesKeepTheSeparatorOutOfTheirText) {
  // Demangled C++ names hold commas (argument lists, template arguments): perf turns each into
  // '.' under -t , (and each '<' under -t '<').
  TPERF_REQUIRE_PERF();
  TempDir dir;
  const std::string src = dir.file("pairs.cpp"), bin = dir.file("pairs"), data = dir.file("pairs.data");
  {
    std::FILE* f = std::fopen(src.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "#include <cstdlib>\n"
        "template <class A, class B> struct Pair {\n"
        "  __attribute__((noinline)) static long mix(A a, B b) { volatile long s = 0;"
        " for (long i = 0; i < a; i++) s += i ^ b; return s; }\n"
        "};\n"
        "__attribute__((noinline)) long spin(long n, int k) { return Pair<long, int>::mix(n, k) + Pair<long, char>::mix(n, 'a'); }\n"
        "int main(int argc, char** argv) { long n = (argc > 1 ? std::atol(argv[1]) : 30) * 1000000L;"
        " return static_cast<int>(spin(n, 3) & 1); }\n",
        f);
    std::fclose(f);
  }
  ASSERT_EQ(run(fmt::format("g++ -O1 -g -fno-omit-frame-pointer -o {} {}", shell_quote(bin), shell_quote(src))).status, 0);
  const Recording rec = record_with_perf(
      fmt::format("perf record -q -e cpu-clock -c 100000 -g -o {} -- {} 40", shell_quote(data), shell_quote(bin)), data);
  ASSERT_TRUE(rec.error.empty()) << rec.error;
  const CommandResult names = run(fmt::format("perf report --stdio -q -s sym -g none -i {}", shell_quote(data)));
  ASSERT_NE(names.out.find("Pair<long, int>::mix"), std::string::npos) << names.out;
  for (const char* args : {"-t , -g none", "-t , -g folded --no-children", "-t '<' -s sym -g none"}) {
    expect_same(data, args, 4);
  }
}

TEST(ReportFieldSeparator, DwarfRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("sep-dwarf", "deep_nofp", "-e cpu-clock -c 200000 --call-graph dwarf,8192"));
  for (const char* args : {"-t ';'", "-t , --no-children -n"}) expect_same(rec.path, args, 8);
}

TEST(ReportFieldSeparator, CorpusEqualsPerf) {
  TPERF_REQUIRE_CORPUS();
  size_t compared = 0;
  for (const std::string& rel : corpus_files_perf_reads()) {
    // Branch stacks make perf's branch mode; perf decodes the Intel PT trace into samples of its own.
    if (rel.find("branch") != std::string::npos || rel.find("intel_pt") != std::string::npos) continue;
    expect_same(corpus_dir() + "/" + rel, "-t ,", 1);
    expect_same(corpus_dir() + "/" + rel, "-t '|' --no-children -g none", 1);
    ++compared;
  }
  EXPECT_GE(compared, 10u);
}

TEST(ReportFieldSeparator, HierarchyIsRefusedByName) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("sep-fp", "deep_nofp", "-e cpu-clock -c 100000 -g"));
  const CommandResult r = run(fmt::format("{} report --stdio -t , --hierarchy -i {}", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("-t/--field-separator with --hierarchy"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tperf::test::e2e

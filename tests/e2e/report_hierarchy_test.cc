// perf report --hierarchy against perf 6.1 byte for byte: the sort keys as levels of a tree
// (each level's entries by overhead under the one above, its key cell left-aligned after the
// level's indent), the header's " / " names and its rule, Self values only (the chains in the
// order perf chose for Children unless --no-children), -n and --show-total-period, other key
// orders (sym first: the chains skip their first frame), --percent-limit with its "no entry"
// lines, callchain graphs under the leaves; on a frame-pointer recording, a system-wide one, a
// --call-graph dwarf one and the corpus files perf reads. A pipe-mode input, on which perf 6.1
// finds no samples, gives what perf gives for its file-mode copy. What tperf does not do yet
// (hierarchy with filters, -F) is refused by name.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
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
      "--hierarchy",
      "--hierarchy --no-children",
      "--hierarchy -g none",
      "--hierarchy -n --show-total-period -g none",
      "--hierarchy -s dso,sym -g none --percent-limit 5",
      "--hierarchy -s sym,pid --percent-limit 1",
      "--hierarchy -s sym --no-children",
      "--hierarchy -s dso,comm,pid,sym -g caller,0.5,2",
      "--hierarchy -s cpu,comm -g none -q",
      "--hierarchy -g folded --no-children",
  };
  return s;
}

TEST(ReportHierarchy, FramePointerRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("hier-fp", "deep_nofp", "-e cpu-clock -c 100000 -g"));
  for (const std::string& args : option_sets()) {
    if (args.find("cpu") != std::string::npos) continue;  // no cpu in these samples
    expect_same(rec.path, args, 8);
  }
}

TEST(ReportHierarchy, SystemWideRecordingEqualsPerf) {
  // Many commands, DSOs and both spaces: several entries per level, ties among them.
  TPERF_REQUIRE_RECORDING(rec, workload_recording("hier-sys", "spin", "-a -g -e cpu-clock -c 100000"));
  for (const std::string& args : option_sets()) {
    // Known difference: with symbols alone at the top, addresses without a symbol of equal period
    // are not always in perf's order (perf keeps its collapse's order there, which tperf follows
    // only in part); a system-wide recording may have such ties, the others here do not.
    if (args == "--hierarchy -s sym --no-children") continue;
    expect_same(rec.path, args, 8);
  }
  // The flat report's Pid:Command of a thread without comm (a system-wide recording has samples
  // of tid -1, which perf names ":-1"; tperf printed no name there before).
  expect_same(rec.path, "-s pid,dso -g none", 8);
}

TEST(ReportHierarchy, DwarfRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("hier-dwarf", "deep_nofp", "-e cpu-clock -c 200000 --call-graph dwarf,8192"));
  for (const char* args : {"--hierarchy", "--hierarchy --no-children -n", "--hierarchy -s sym,dso -g flat"}) {
    expect_same(rec.path, args, 8);
  }
}

TEST(ReportHierarchy, CorpusEqualsPerf) {
  TPERF_REQUIRE_CORPUS();
  size_t compared = 0;
  for (const std::string& rel : corpus_files_perf_reads()) {
    const std::string path = corpus_dir() + "/" + rel;
    // perf 6.1 finds no samples in a pipe with --hierarchy (below), and prints no report at all
    // for the Intel PT file (its synthesized samples); branch stacks make perf's branch mode,
    // which tperf does not show as a hierarchy yet.
    const CommandResult probe = run(fmt::format("perf report --stdio --hierarchy -g none -i {} 2>/dev/null", shell_quote(path)));
    if (probe.out.find("Overhead") == std::string::npos) continue;
    if (rel.find("branch") != std::string::npos) continue;
    for (const char* args : {"--hierarchy", "--hierarchy --no-children -n -s sym,comm --percent-limit 1"}) {
      expect_same(path, args, 1);
      ++compared;
    }
  }
  EXPECT_GE(compared, 16u);
}

TEST(ReportHierarchy, PipeGivesWhatPerfGivesForTheFile) {
  // perf 6.1 reads a pipe's events after it set the hierarchy up and says "has no samples";
  // tperf shows the stream as perf shows its file-mode copy.
  TPERF_REQUIRE_RECORDING(rec, workload_recording("hier-fp", "deep_nofp", "-e cpu-clock -c 100000 -g"));
  TempDir dir;
  const std::string pipe = dir.path() + "/pipe.data";
  ASSERT_EQ(run(fmt::format("{} convert --pipe {} {}", TPERF_BINARY, shell_quote(rec.path), shell_quote(pipe))).status, 0);
  for (const char* args : {"--hierarchy", "--hierarchy --no-children -n"}) {
    const ComparedOutputs c = compare_outputs(
        fmt::format("perf report --stdio {} -i {} | {}", args, shell_quote(rec.path), kStripPerfTip),
        fmt::format("cat {} | {} report --stdio --no-unwind-summary {} -i -", shell_quote(pipe), TPERF_BINARY, args),
        rec.path);
    expect_same_outputs(c, fmt::format("report {} on a pipe", args), 8);
  }
}

// -n makes the samples one of perf's sort keys, after the level's own: siblings of equal period
// whose keys compare equal (addresses without a symbol) go by samples, more first. A file of our
// writer: two processes, no maps, each with 0x1000 once at period 200 and 0x2000 twice at 100, so
// that the address order (tperf's before, 3,769 lines of the sys recipe's `--hierarchy -n` in
// another order than perf's) and the samples order differ.
TEST(ReportHierarchy, EqualPeriodsGoBySamplesWithN) {
  using namespace tperf::perfdata;
  const PerfEventAttr attr = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod);
  RecordBuilder rb(attr);
  TempDir dir;
  const std::string path = dir.file("ties.data");
  Writer w;
  w.open(path);
  w.add_attr(attr, {}, "cpu-clock");
  for (int pid : {70, 71}) {
    CommEvent comm;
    comm.pid = comm.tid = pid;
    comm.comm = pid == 70 ? "first" : "second";
    w.write_record(rb.comm(comm, SampleId{}));
  }
  uint64_t time = 100;
  for (int pid : {70, 71}) {
    for (auto [ip, period] : {std::pair<uint64_t, uint64_t>{0x1000, 200}, {0x2000, 100}, {0x2000, 100}}) {
      Sample smp;
      smp.pid = smp.tid = pid;
      smp.time = time += 100;
      smp.period = period;
      smp.ip = ip;
      w.write_record(rb.sample(smp, kMiscUser));
    }
  }
  w.finish();
  for (const char* args : {"--hierarchy -n -g none", "--hierarchy -n -s sym -g none", "--hierarchy -n -s sym,comm -g none",
                           "--hierarchy -n --show-total-period -s comm,dso,sym -g none"}) {
    expect_same(path, args, 4);
  }
}

TEST(ReportHierarchy, WhatIsNotDoneIsRefusedByName) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("hier-fp", "deep_nofp", "-e cpu-clock -c 100000 -g"));
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {Case{"-F overhead,sym", "--hierarchy and --fields options cannot be used together"},
                        Case{"--comm deep_nofp", "--hierarchy with --comm, --dso, --pid, --tid, -S or -x is not supported"},
                        Case{"--dso libc.so.6", "--hierarchy with --comm, --dso, --pid, --tid, -S or -x is not supported"},
                        Case{"--mem-mode", "--hierarchy with --mem-mode, weight sort keys or -b is not supported"}}) {
    const CommandResult r =
        run(fmt::format("{} report --stdio --hierarchy {} -i {}", TPERF_BINARY, c.args, shell_quote(rec.path)));
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace tperf::test::e2e

// `tperf report --stdio` against `perf report --stdio` (perf 6.1), line for line, on recordings
// made here of a static, stripped fork/exec/thread workload (neither tool has symbols for it,
// so both print addresses; symbol names come with the symbolizer) and on the corpus files
// whose histograms need no symbol lookup. perf's random "(Tip: ...)" block is left out.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::run;

using test::e2e::kStripPerfTip;

using Compared = test::e2e::ComparedOutputs;

Compared compare(const std::string& input, const std::string& args) {
  return test::e2e::compare_outputs(
      fmt::format("perf report --stdio -i {} {} 2>/dev/null | {}", shell_quote(input), args, kStripPerfTip),
      // The unwinding quality block is tperf's own (unwind_summary_test.cc checks it).
      fmt::format("{} report -i {} --no-unwind-summary {}", TPERF_BINARY, shell_quote(input), args), input);
}

#define EXPECT_SAME_REPORT(input, args, min_lines)                                          \
  do {                                                                                      \
    Compared c_ = compare(input, args);                                                     \
    EXPECT_EQ(c_.diff, "") << "perf report --stdio " << (args) << " vs tperf (diff perf tperf)"; \
    EXPECT_GE(c_.perf_lines, size_t{min_lines}) << "perf printed too little";               \
    EXPECT_EQ(c_.tperf_status, 0) << c_.tperf_err;                                          \
  } while (0)

struct Recordings {
  std::string error;  // why the recordings could not be made (a set-up failure)
  std::map<std::string, std::string> files;
};

const Recordings& recordings() {
  static const Recordings r = [] {
    Recordings out;
    if (const std::string& why = test::e2e::perf_unavailable_reason(); !why.empty()) {
      out.error = why;
      return out;
    }
    std::string dir = test::e2e::scratch_dir();
    std::string bin = dir + "/report_forkexec";
    CommandResult cc = run(fmt::format("gcc -O1 -static -s -fno-omit-frame-pointer -pthread -o {} {}/tests/e2e/workloads/stripped_hot_loops.c",
                                       shell_quote(bin), TPERF_SOURCE_DIR));
    if (cc.status != 0) {
      out.error = "cannot build a static workload: " + cc.err;
      return out;
    }
    // The same program with its symbols, dynamically linked (libc, ld.so and the kernel too).
    std::string with_symbols = dir + "/report_hot_loops";
    cc = run(fmt::format("gcc -O1 -g -fno-omit-frame-pointer -pthread -o {} {}/tests/e2e/workloads/stripped_hot_loops.c",
                         shell_quote(with_symbols), TPERF_SOURCE_DIR));
    if (cc.status != 0) {
      out.error = "cannot build the workload: " + cc.err;
      return out;
    }
    const std::map<std::string, std::pair<std::string, std::string>> how = {
        {"user", {"-e cpu-clock:u", bin}},
        {"user-fp", {"-e cpu-clock:u -g", bin}},
        {"two-events", {"-e cpu-clock:u,task-clock:u", bin}},
        {"symbols-fp", {"-e cpu-clock -g", with_symbols}},
        // -c: the samples carry no PERIOD; each stands for the event's fixed period.
        {"fixed-period", {"-e cpu-clock:u -c 100000", bin}},
        // An event group: perf 6.1 shows its members side by side by default.
        {"group", {"-e '{cpu-clock:u,task-clock:u}'", bin}},
        {"group-fp", {"-e '{cpu-clock:u,task-clock:u}' -g", bin}},
    };
    for (const auto& [name, how_to] : how) {
      const auto& [args, program] = how_to;
      std::string path = dir + "/report-" + name + ".data";
      CommandResult rec = run(fmt::format("timeout 60 perf record -q {} -o {} -- {}", args, shell_quote(path), shell_quote(program)));
      if (rec.status != 0) {
        out.error = fmt::format("perf record {} failed: {}", args, rec.err);
        return out;
      }
      out.files[name] = path;
    }
    return out;
  }();
  return r;
}

#define REQUIRE_RECORDINGS()         \
  const Recordings& rec = recordings(); \
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;

TEST(ReportE2E, DefaultSortWithoutCallchains) {
  REQUIRE_RECORDINGS();
  EXPECT_SAME_REPORT(rec.files.at("user"), "", 14);
  EXPECT_SAME_REPORT(rec.files.at("two-events"), "", 28);
}

// -q: no '#' lines at all (perf's quiet mode), and no unwinding block.
TEST(ReportE2E, QuietHasNoHeaderLines) {
  REQUIRE_RECORDINGS();
  for (const char* args : {"-q", "-q -s comm,pid,dso,sym -n"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at("user"), args, 3);
  }
  EXPECT_SAME_REPORT(rec.files.at("user-fp"), "-q -g none", 3);
}

TEST(ReportE2E, FixedPeriodCountsTheAttrsPeriod) {
  REQUIRE_RECORDINGS();
  EXPECT_SAME_REPORT(rec.files.at("fixed-period"), "", 12);
  EXPECT_SAME_REPORT(rec.files.at("fixed-period"), "-n --show-total-period -s comm,dso", 8);
}

// Event groups: one section per group with a column per member (--group, perf's default for
// them), per-member Samples/Period, the leader's callchain graphs; --no-group splits them.
TEST(ReportE2E, EventGroupsSideBySide) {
  REQUIRE_RECORDINGS();
  for (const char* args : {"", "-n --show-total-period", "-s comm,pid", "--no-group", "--group -g none",
                           "-F overhead,sample,comm", "-F comm,period,overhead -s comm"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at("group"), args, 12);
  }
  // With callchains (report_group_ties_test.cc orders entries of equal cost).
  for (const char* args : {"", "--percent-limit 5 -g folded", "--no-children", "--no-children -g none -n",
                           "--no-group --no-children"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at("group-fp"), args, 12);
  }
}

TEST(ReportE2E, SortKeysAndColumns) {
  REQUIRE_RECORDINGS();
  for (const char* args : {"-s comm,pid,dso,sym -n", "-s sym,comm", "-s pid", "-s cpu,dso -n --show-total-period",
                           "-s dso,comm --percent-limit 5", "-s pid,comm -n"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at("user"), args, 12);
  }
}

TEST(ReportE2E, ChildrenAndSelfThroughCallchains) {
  REQUIRE_RECORDINGS();
  for (const char* args : {"-g none", "--no-children -g none", "-g none -s comm,pid,dso,sym -n"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at("user-fp"), args, 14);
  }
}

// The callchain graphs under the entries: caller graphs with Children (the default), callee
// graphs without, the threshold, and an explicit caller order without children.
TEST(ReportE2E, CallchainGraphs) {
  REQUIRE_RECORDINGS();
  // Entries of equal weight come in the order of perf's red-black tree (the recordings have
  // several: the chains of the main thread and the worker often cost the same).
  for (const char* args : {"", "-g graph,2", "-s comm,pid,dso,sym -n", "--percent-limit 1", "--no-children",
                           "--no-children -g graph,0.5,caller", "--no-children -s sym"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at("user-fp"), args, 14);
  }
}

// --max-stack keeps the frames perf's walk reaches first: the innermost for callee order, the
// outermost for caller order (children mode's default); perf 6.1's -G asks for caller order
// whatever -g says.
TEST(ReportE2E, MaxStackAndInvertedFollowTheWalkOrder) {
  REQUIRE_RECORDINGS();
  for (const char* file : {"user-fp", "symbols-fp"}) {
    for (const char* args : {"--max-stack 3", "--max-stack 2 -g folded", "--max-stack 3 --no-children",
                             "--max-stack 3 --no-children -g caller", "-G", "-G --no-children", "-G -g callee",
                             "--max-stack 2 -G"}) {
      SCOPED_TRACE(fmt::format("{} {}", file, args));
      EXPECT_SAME_REPORT(rec.files.at(file), args, 14);
    }
  }
}

TEST(ReportE2E, FoldedCallchains) {
  REQUIRE_RECORDINGS();
  for (const char* args : {"-g folded", "-g folded,0.1", "--no-children -g folded", "--no-children -g folded,2"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at("user-fp"), args, 14);
  }
}

// Filters leave samples out but not the totals; a single --comm or --dso is named in the
// preamble and its column left out.
TEST(ReportE2E, Filters) {
  REQUIRE_RECORDINGS();
  for (const char* args : {"--comm exe", "--comm exe,report_forkexec -s comm,dso", "--dso report_forkexec -s comm,dso,sym",
                           "--comm exe -n", "--comm exe -g none --no-children"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at(std::string(args).find("-g") != std::string::npos ? "user-fp" : "user"), args, 12);
  }
  // --tid with one of the threads perf itself lists under -s pid.
  CommandResult pids = run(fmt::format("perf report --stdio -i {} -s pid 2>/dev/null | grep -o '[0-9]*:report_forkexe' | head -1",
                                       shell_quote(rec.files.at("user"))));
  std::string tid = pids.out.substr(0, pids.out.find(':'));
  ASSERT_FALSE(tid.empty()) << pids.out;
  EXPECT_SAME_REPORT(rec.files.at("user"), "--tid " + tid + " -s pid", 12);
}

// With symbols: the program's functions, libc's and ld.so's (their build ids checked), the
// kernel's from kallsyms, in every layout.
TEST(ReportE2E, SymbolsEqualPerf) {
  REQUIRE_RECORDINGS();
  for (const char* args : {"", "--no-children", "-g folded", "-g none -s comm,pid,dso,sym -n", "-s dso,sym -g none",
                           "--no-children -s sym", "-g graph,0.1 --no-children"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(rec.files.at("symbols-fp"), args, 14);
  }
  Compared c = compare(rec.files.at("symbols-fp"), "--no-children -g none");
  EXPECT_EQ(c.diff, "");
  EXPECT_NE(run(fmt::format("{} report -i {} --no-children -g none | grep -c '\\[\\.\\] spin'", TPERF_BINARY,
                            shell_quote(rec.files.at("symbols-fp")))).out, "0\n");
}

TEST(ReportE2E, CorpusFilesWithoutSymbolLookupsEqualPerf) {
  TPERF_REQUIRE_CORPUS();
  TPERF_REQUIRE_PROGRAM("perf");
  // The corpus files whose samples perf cannot symbolize here either (other machines' kernels and
  // binaries, identified by build id), without branch stacks.
  for (const char* rel : {"quipper/testdata/perf.data.armv7-3.4", "quipper/testdata/perf.data.ctx_switch_namespaces-4.14",
                          "quipper/testdata/perf.data.forkexit-3.8", "quipper/testdata/perf.data.hybrid_topology",
                          "quipper/testdata/perf.data.i686-3.4", "quipper/testdata/perf.data.singleprocess-3.8",
                          // Event groups (GROUP_DESC), shown side by side.
                          "quipper/testdata/perf.data.group_desc-4.14", "quipper/testdata/perf.data.lost_samples-4.4"}) {
    SCOPED_TRACE(rel);
    std::string path = test::corpus_dir() + "/" + rel;
    EXPECT_SAME_REPORT(path, "-g none", 12);
    EXPECT_SAME_REPORT(path, "-g none -s comm,pid,dso,sym -n", 12);
  }
  // A Chrome OS system-wide recording with kernel and user callchains (odd frames included):
  // Children/Self, the caller graphs and their threshold, and the folded lines.
  std::string path = test::corpus_dir() + "/quipper/testdata/perf.data.callgraph-3.8";
  for (const char* args : {"", "--no-children", "-g folded", "-g none -s comm,pid,dso,sym -n"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(path, args, 1000);
  }
}

TEST(ReportE2E, BadInputAndBadOptions) {
  test::TempDir dir;
  std::string path = dir.file("cut.data");
  run(fmt::format("head -c 100 /bin/ls > {}", shell_quote(path)));
  CommandResult t = run(fmt::format("{} report -i {}", TPERF_BINARY, shell_quote(path)));
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.err.find(path), std::string::npos) << t.err;
  t = run(fmt::format("{} report -i {} -s nosuchkey", TPERF_BINARY, shell_quote(path)));
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.err.find("unknown --sort key 'nosuchkey'"), std::string::npos) << t.err;
}

// A recording cut inside its last record: report and script show what came before it (perf 6.1
// shows nothing: "failed to process sample") and end with status 2 and a line naming the file
// and the offset where the data stops.
TEST(ReportE2E, RecordingCutInsideARecordKeepsWhatCameBefore) {
  TPERF_REQUIRE_PROGRAM("perf");
  test::TempDir dir;
  const std::string whole = dir.file("whole.data");
  CommandResult rec = run(fmt::format("perf record -q -e cpu-clock -c 1000000 -o {} -- {} 2>&1", shell_quote(whole),
                                      "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'"));
  ASSERT_EQ(rec.status, 0) << rec.out;
  const CommandResult samples = run(fmt::format("perf script -F ip -i {} | wc -l", shell_quote(whole)));
  const unsigned long n = std::stoul(samples.out);
  ASSERT_GT(n, 20u) << "set-up: too few samples";
  // Cut 16 bytes into the last sample of the file (the largest offset of perf's raw dump).
  const CommandResult offsets =
      run(fmt::format("perf report -D -i {} | awk '/PERF_RECORD_SAMPLE/ {{print $2}}'", shell_quote(whole)));
  unsigned long long at = 0;
  std::istringstream lines(offsets.out);
  for (std::string line; std::getline(lines, line);) at = std::max(at, std::stoull(line, nullptr, 16));
  ASSERT_GT(at, 0u) << offsets.out;
  const std::string cut = dir.file("cut.data");
  run(fmt::format("head -c {} {} > {}", at + 16, shell_quote(whole), shell_quote(cut)));
  CommandResult t = run(fmt::format("{} report --stdio -i {}", TPERF_BINARY, shell_quote(cut)));
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.out.find("# Samples: "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("%  sh "), std::string::npos) << t.out;
  EXPECT_NE(t.err.find(fmt::format("{}: offset {:#x}: ", cut, at)), std::string::npos) << t.err;
  t = run(fmt::format("{} script -F ip -i {} | wc -l", TPERF_BINARY, shell_quote(cut)));
  EXPECT_EQ(std::stoul(t.out), n - 1);
}

}  // namespace
}  // namespace tperf

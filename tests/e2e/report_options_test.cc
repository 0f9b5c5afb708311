// `tperf report` options beyond the histogram basics, each against `perf report --stdio`
// (perf 6.1) on recordings made here: --time (ranges and percent slices), -S/--symbols,
// --percentage, the flat and fractal callchain modes, -p/--parent, -x and the parent and srcline
// sort keys.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf {
namespace {

using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::run;

using test::e2e::kStripPerfTip;

test::e2e::ComparedOutputs compare(const std::string& input, const std::string& args) {
  return test::e2e::compare_outputs(
      fmt::format("perf report --stdio -i {} {} 2>/dev/null | {}", shell_quote(input), args, kStripPerfTip),
      fmt::format("{} report -i {} --no-unwind-summary {}", TPERF_BINARY, shell_quote(input), args), input);
}

#define EXPECT_SAME_REPORT(input, args, min_lines)                                               \
  do {                                                                                           \
    test::e2e::ComparedOutputs c_ = compare(input, args);                                        \
    EXPECT_EQ(c_.diff, "") << "perf report --stdio " << (args) << " vs tperf (diff perf tperf)"; \
    EXPECT_GE(c_.perf_lines, size_t{min_lines}) << "perf printed too little";                    \
    EXPECT_EQ(c_.tperf_status, 0) << c_.tperf_err;                                               \
  } while (0)

struct Recordings {
  std::string error;  // why the recordings could not be made (a set-up failure)
  std::map<std::string, std::string> files;
};

// The report workload (a thread, a fork that execs itself, hot loops) with symbols, and
// stripped and static so that both tools print addresses; with and without callchains.
const Recordings& recordings() {
  static const Recordings r = [] {
    Recordings out;
    if (const std::string& why = test::e2e::perf_unavailable_reason(); !why.empty()) {
      out.error = why;
      return out;
    }
    const std::string dir = test::e2e::scratch_dir();
    const std::string src = std::string(TPERF_SOURCE_DIR) + "/tests/e2e/workloads/stripped_hot_loops.c";
    const std::string stripped = dir + "/options_stripped";
    const std::string with_symbols = dir + "/options_hot_loops";
    for (const auto& [bin, flags] : {std::pair{stripped, "-static -s"}, std::pair{with_symbols, "-g"}}) {
      CommandResult cc = run(fmt::format("gcc -O1 {} -fno-omit-frame-pointer -pthread -o {} {}", flags,
                                         shell_quote(bin), shell_quote(src)));
      if (cc.status != 0) {
        out.error = "cannot build the workload: " + cc.err;
        return out;
      }
    }
    const std::map<std::string, std::pair<std::string, std::string>> how = {
        {"user", {"-e cpu-clock:u", stripped}},
        {"user-fp", {"-e cpu-clock:u -g", stripped}},
        {"symbols-fp", {"-e cpu-clock -g", with_symbols}},
        {"symbols", {"-e cpu-clock", with_symbols}},
        // One copy pinned to each of CPUs 0 and 1, so that both filters find samples on a busy
        // machine too (unpinned, the scheduler may keep the workload off CPU 0 for its run).
        {"symbols-cpu", {"-e cpu-clock -g --sample-cpu", fmt::format("sh -c 'taskset -c 0 {0} & taskset -c 1 {0}; wait'", with_symbols)}},
    };
    for (const auto& [name, how_to] : how) {
      const auto& [args, program] = how_to;
      std::string path = dir + "/options-" + name + ".data";
      const std::string command = program.rfind("sh -c", 0) == 0 ? program : shell_quote(program);
      CommandResult rec = run(fmt::format("timeout 60 perf record -q {} -o {} -- {}", args, shell_quote(path), command));
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

#define REQUIRE_RECORDINGS()            \
  const Recordings& rec = recordings(); \
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;

// perf's "time of first/last sample" header lines, in seconds with six decimals.
std::pair<double, double> sample_time_bounds(const std::string& path) {
  CommandResult h = run(fmt::format("perf report --header-only -i {} 2>/dev/null | grep 'time of .* sample' | awk '{{print $NF}}'",
                                    shell_quote(path)));
  double first = 0, last = 0;
  if (std::sscanf(h.out.c_str(), "%lf %lf", &first, &last) != 2) return {0, 0};
  return {first, last};
}

// --time drops samples before anything counts them (the "# Samples" and "# Event count" lines
// shrink too, and name the slices); percentages are of the span between the first and last sample.
TEST(ReportOptionsE2E, TimeRangesAndPercentSlices) {
  REQUIRE_RECORDINGS();
  for (const char* file : {"symbols-fp", "user", "user-fp"}) {
    SCOPED_TRACE(file);
    const std::string& path = rec.files.at(file);
    auto [first, last] = sample_time_bounds(path);
    ASSERT_LT(first, last) << "perf names no sample times for " << path;
    const double mid = (first + last) / 2;
    const double quarter = (last - first) / 4;
    // A narrow slice (a quarter of the run, or a percent slice) may hold no sample when the
    // loaded machine left the workload waiting that long: perf then prints its header hint alone
    // (2 lines), and tperf must too. Seen for "first + quarter, mid" during a full suite at -j 2.
    // Most of them hold samples. Each half holds the first or the last sample, so it has rows.
    size_t narrow_reports = 0, narrow_with_rows = 0;
    for (const std::string& slice :
         {fmt::format("{:.6f},", mid), fmt::format(",{:.6f}", mid), fmt::format("{:.6f},{:.6f}", first + quarter, mid),
          fmt::format("'{:.6f},{:.6f} {:.6f},{:.6f}'", first, first + quarter, mid, mid + quarter),
          std::string("10%/2"), std::string("25%/4"), std::string("0%-10%,30%-40%"), std::string("50%")}) {
      SCOPED_TRACE(slice);
      const bool half = slice.ends_with(',') || slice.starts_with(',');
      // (No graphs for the recording with symbols: a slice can make the tiny ld.so branches of
      // its start-up big.)
      for (const std::string& args : {"--time " + slice + (std::string(file) == "symbols-fp" ? " -g none" : ""),
                                      "--time " + slice + " -g none --no-children -n -s comm,pid,dso,sym"}) {
        test::e2e::ComparedOutputs c = compare(path, args);
        EXPECT_EQ(c.diff, "") << "perf report --stdio " << args << " vs tperf (diff perf tperf)";
        EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
        EXPECT_GE(c.perf_lines, size_t{half ? 10u : 2u}) << "perf printed too little";
        if (!half) {
          ++narrow_reports;
          if (c.perf_lines >= 10) ++narrow_with_rows;
        }
      }
    }
    EXPECT_GE(2 * narrow_with_rows, narrow_reports) << "perf printed rows for " << narrow_with_rows << " of the "
                                                    << narrow_reports << " reports of narrow slices";
    // With the other filters, which keep their samples in the totals.
    EXPECT_SAME_REPORT(path, "--time 50%/2 --comm exe -g none", 8);
  }
}

// A slice without samples: perf prints its header hint and stops (with an error on stderr).
TEST(ReportOptionsE2E, TimeRangeWithoutSamples) {
  REQUIRE_RECORDINGS();
  EXPECT_SAME_REPORT(rec.files.at("user"), "--time 1,2", 2);
  CommandResult t = run(fmt::format("{} report -i {} --time 1,2", TPERF_BINARY, shell_quote(rec.files.at("user"))));
  EXPECT_NE(t.err.find("has no samples"), std::string::npos) << t.err;
  t = run(fmt::format("{} report -i {} --time abc", TPERF_BINARY, shell_quote(rec.files.at("user"))));
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.err.find("--time abc"), std::string::npos) << t.err;
}

// perf report adds an IPC column (empty without branch stacks) when the --sort text says
// "symbol" rather than "sym", and its output sort compares that column as its input trees compare
// symbols: by address, which orders the unresolved entries of equal share (the stripped files).
TEST(ReportOptionsE2E, SymbolSpelledOutAddsTheIpcColumn) {
  REQUIRE_RECORDINGS();
  for (const char* file : {"user", "user-fp", "symbols-fp"}) {
    SCOPED_TRACE(file);
    const std::string& path = rec.files.at(file);
    const bool chains = std::string(file) != "user";
    for (const char* args : {"-s symbol --no-children -n", "-s comm,dso,symbol -g none", "-s symbol,dso --no-children -g folded"}) {
      if (!chains && std::string(args).find("folded") != std::string::npos) continue;  // perf refuses -g there
      SCOPED_TRACE(args);
      EXPECT_SAME_REPORT(path, args, 8);
    }
  }
  const CommandResult t = run(fmt::format("{} report --stdio -i {} -s symbol", TPERF_BINARY, shell_quote(rec.files.at("user"))));
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("IPC   [IPC Coverage]"), std::string::npos);
}

// --branch-history on recordings without branch stacks: the callchains alone, keyed by address
// (a frame per return address, with its srcline after the symbol) and sorted by srcline,symbol,dso.
// Thresholds of 2% keep out the one-sample siblings of different DSOs, which perf orders by where
// its DSO objects are in its memory. Children mode, with -s sym,dso: the order of tied one-sample
// caller entries there differed from perf's on a recording of this workload (perf 6.1.192's sym
// key leaves the DSO to the dso key; tests/regress/sym-key-dso-key keeps that recording and
// Regress.SymKeyLeavesTheDsoToTheDsoKey pins it).
TEST(ReportOptionsE2E, BranchHistoryOnCallchains) {
  REQUIRE_RECORDINGS();
  for (const char* file : {"symbols-fp", "user-fp"}) {
    SCOPED_TRACE(file);
    const std::string& path = rec.files.at(file);
    for (const char* args : {"--branch-history --no-children", "--branch-history --no-children -g graph,2",
                             "--branch-history --no-children -s sym,dso -g graph,2",
                             "--branch-history --no-children -g caller,2", "--branch-history --no-children -g folded,2",
                             "--branch-history -s sym,dso -g graph,2"}) {
      SCOPED_TRACE(args);
      EXPECT_SAME_REPORT(path, args, 8);
    }
  }
}

// -S keeps the samples of the named symbols; like the other filters it hides the entries the
// other samples created (perf keeps an entry's state from its first sample, so the callers of a
// listed symbol show up too) and, by default (absolute), keeps every sample in the totals.
// --percentage relative takes the "# Samples"/"# Event count" lines and the entry percentages
// of what is shown; the callchain percentages stay absolute in perf 6.1.
TEST(ReportOptionsE2E, SymbolFilterAndPercentage) {
  REQUIRE_RECORDINGS();
  for (const char* file : {"symbols-fp", "symbols"}) {
    SCOPED_TRACE(file);
    const std::string& path = rec.files.at(file);
    const bool chains = std::string(file) == "symbols-fp";
    // Graphs with a threshold of 2% or more (see above).
    for (const char* args : {"-S spin -g graph,2", "-S spin,spin2 -g graph,2", "-S spin,spin2 --percentage relative -g graph,2",
                             "-S spin2 -s dso,sym -n -g graph,3", "-S spin --percentage relative -g graph,5",
                             "-S spin,spin2 --percentage relative -g folded,2", "--comm exe --percentage relative -g graph,10",
                             "--dso libc.so.6 -g graph,2", "--dso libc.so.6 --percentage relative -g graph,2",
                             "-S spin -g none --no-children --show-total-period", "--comm exe --dso options_hot_loops -S spin -g none",
                             "--comm exe --percentage relative -g none", "--dso libc.so.6 -g none",
                             "--dso libc.so.6 --percentage relative -g none -n", "--percentage relative --comm exe --percent-limit 10 -g none",
                             "--percentage absolute -S spin,main -g none"}) {
      if (!chains && std::string(args).find("-g none") == std::string::npos) continue;
      std::string a = args;
      if (!chains) a.erase(a.find("-g none"), 7);
      SCOPED_TRACE(a);
      EXPECT_SAME_REPORT(path, a, 10);
    }
  }
  // Stripped: no sample has a symbol, so -S hides every entry.
  EXPECT_SAME_REPORT(rec.files.at("user-fp"), "-S main", 10);
  CommandResult t = run(fmt::format("{} report -i {} --percentage some", TPERF_BINARY, shell_quote(rec.files.at("user"))));
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.err.find("--percentage some"), std::string::npos) << t.err;
}

// -g flat: each chain end on its own, its frames one a line; -g fractal: graph branches as
// percentages of their parent, with a per-level threshold and "[...]" for what it cut.
TEST(ReportOptionsE2E, FlatAndFractalCallchains) {
  REQUIRE_RECORDINGS();
  // perf's "[...]" symbol is allocated without being cleared, and its garbage "inlined" bit
  // sometimes adds " (inlined)": left out of perf's side (tperf prints the cleared symbol).
  auto compare_fractal = [](const std::string& path, const std::string& args) {
    return test::e2e::compare_outputs(
        fmt::format("perf report --stdio -i {} {} 2>/dev/null | {} | sed 's/\\[\\.\\.\\.\\] (inlined)$/[...]/'",
                    shell_quote(path), args, kStripPerfTip),
        fmt::format("{} report -i {} --no-unwind-summary {}", TPERF_BINARY, shell_quote(path), args), path);
  };
  // With symbols, flat chains only (thresholds of 2% or more, see TimeRangesAndPercentSlices):
  // fractal percentages make the tiny ld.so branches big, and among equal ones tperf does not
  // follow perf's order yet (perf orders siblings of different DSOs by the DSOs' addresses).
  for (const char* file : {"user-fp", "symbols-fp"}) {
    SCOPED_TRACE(file);
    const std::string& path = rec.files.at(file);
    const bool symbols = std::string(file) == "symbols-fp";
    for (const char* args : {"-g flat", "-g flat,2", "--no-children -g flat", "--no-children -g flat,0.5,caller",
                             "-g flat,3 -s comm,pid,dso,sym -n", "-g fractal", "-g fractal,5", "--no-children -g fractal",
                             "--no-children -g fractal,10,caller", "--no-children -g fractal,20", "-g fractal,30 -s sym"}) {
      std::string a = args;
      if (symbols && a.find("fractal") != std::string::npos) continue;
      if (symbols && a.find(',') == std::string::npos) a = a.replace(a.find("-g ") + 3, std::string::npos, a.substr(a.find("-g ") + 3) + ",2");
      SCOPED_TRACE(a);
      test::e2e::ComparedOutputs c = compare_fractal(path, a);
      EXPECT_EQ(c.diff, "") << "perf report --stdio " << a << " vs tperf (diff perf tperf)";
      EXPECT_GE(c.perf_lines, size_t{14});
      EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
    }
  }
}

// The parent key: the first symbol the pattern matches on the callchain walked in display order
// (from the root in children mode, from the sample without), "[other]" without a match; -p adds
// the key, -x hides the entries without a parent (still counted in the totals).
TEST(ReportOptionsE2E, ParentKeyAndExcludeOther) {
  REQUIRE_RECORDINGS();
  const std::string& path = rec.files.at("symbols-fp");
  for (const char* args : {"-s comm,parent --no-children -g none", "-p 'spin|main' --no-children -g none",
                           "-p 'spin|main' -x --no-children -g none", "-p 'spin|main' -g none", "-p spin -x",
                           "-p 'spin|main' --no-children", "-s parent,sym -p '^spin2?$' -g none -n"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(path, args, 12);
  }
  // -x without the parent key: no entry has a parent, so none is shown.
  EXPECT_SAME_REPORT(path, "-x -g none", 8);
  CommandResult shown = run(fmt::format("{} report -i {} -q -p '^spin$' -x --no-children -g none", TPERF_BINARY,
                                        shell_quote(path)));
  ASSERT_EQ(shown.status, 0) << shown.err;
  size_t rows = 0;
  for (size_t at = 0, end; at < shown.out.size(); at = end + 1) {
    end = shown.out.find('\n', at);
    if (end == std::string::npos) end = shown.out.size();
    const std::string line = shown.out.substr(at, end - at);
    if (line.empty()) continue;
    ++rows;
    EXPECT_EQ(line.find("[other]"), std::string::npos) << line;
    EXPECT_NE(line.find(" spin "), std::string::npos) << line;
  }
  EXPECT_GT(rows, 0u);
}

// Without callchains there is no parent to find: a clear error, not a column of "[other]".
TEST(ReportOptionsE2E, ParentNeedsCallchains) {
  REQUIRE_RECORDINGS();
  for (const char* args : {"-s comm,parent", "-p spin"}) {
    CommandResult r = run(fmt::format("{} report -i {} {}", TPERF_BINARY, shell_quote(rec.files.at("symbols")), args));
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.err.find("needs callchains"), std::string::npos) << r.err;
  }
  CommandResult bad = run(fmt::format("{} report -i {} -p '('", TPERF_BINARY, shell_quote(rec.files.at("symbols-fp"))));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("not a valid regular expression"), std::string::npos) << bad.err;
}

// The srcline key: "file.c:LINE" from DWARF, "sym+OFFSET" where there is no debug file (the
// kernel), and perf 6.1's offsets from raw addresses for the callchain entries of children mode.
// Only the workload and the kernel are shown: in glibc's debug files, addresses inside a unit but
// without a line row get names from binutils' addr2line (which perf runs) by rules tperf does not
// follow yet (DwarfLines.GlibcLoaderLinesEqualBinutilsAddr2line counts them).
TEST(ReportOptionsE2E, SrclineKey) {
  REQUIRE_RECORDINGS();
  const std::string dsos = "-d options_hot_loops,[kernel.kallsyms]";
  for (const auto& [file, args] :
       {std::pair{"symbols", "-s srcline"}, std::pair{"symbols", "-s sym,srcline -n"},
        std::pair{"symbols", "-s srcline,comm,sym"}, std::pair{"symbols-fp", "-s sym,srcline -g none"},
        std::pair{"symbols-fp", "-s dso,srcline --no-children -g none"}}) {
    const std::string a = fmt::format("{} {}", args, dsos);
    SCOPED_TRACE(fmt::format("{} {}", file, a));
    EXPECT_SAME_REPORT(rec.files.at(file), a, 12);
  }
  CommandResult r = run(fmt::format("{} report -i {} -q -s srcline {}", TPERF_BINARY,
                                    shell_quote(rec.files.at("symbols")), dsos));
  EXPECT_NE(r.out.find("stripped_hot_loops.c:"), std::string::npos) << r.out;
}

// --cpu drops the other CPUs' samples before anything counts them: the "# Samples" line and the
// percentages are of the chosen CPUs only (unlike --comm or --dso, whose hidden entries stay in
// the totals).
TEST(ReportOptionsE2E, CpuFilter) {
  REQUIRE_RECORDINGS();
  const std::string& path = rec.files.at("symbols-cpu");
  for (const char* args : {"--cpu 0 -g none", "--cpu 1 --no-children", "-s cpu,sym --no-children -g none --cpu 1",
                           "-s cpu,comm --no-children -g none --cpu 0-1"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(path, args, 9);
  }
  // A file whose samples carry no CPU cannot be filtered by it (perf: "File does not contain CPU
  // events").
  CommandResult r = run(fmt::format("{} report -i {} --cpu 0", TPERF_BINARY, shell_quote(rec.files.at("symbols"))));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("carry no CPU"), std::string::npos) << r.err;
}

// -F: the columns in the order given; the rows sorted by --sort's keys (and -p's parent), then
// by the -F fields in their order; keys -F lacks get columns at the end; the callchain graphs
// keep their first frame.
TEST(ReportOptionsE2E, OutputFields) {
  REQUIRE_RECORDINGS();
  const std::string& fp = rec.files.at("symbols-fp");
  for (const char* args : {"-F overhead,sym --no-children -g none", "-F sym,overhead --no-children -g none",
                           "-F overhead,sample,period,comm,dso --no-children -g none", "-F comm,overhead_children -g none",
                           "-F overhead,comm -s sym --no-children -g none", "-F comm,overhead -s sym,comm -g none",
                           "-F overhead_children,overhead,sym -g none", "-F sym -g none", "-F overhead,sym -p spin -g none",
                           "-F overhead,sym", "-F sym,overhead --no-children", "-F overhead,comm,sym -g folded"}) {
    SCOPED_TRACE(args);
    EXPECT_SAME_REPORT(fp, args, 10);
  }
  EXPECT_SAME_REPORT(rec.files.at("symbols"), "-F pid,overhead,period", 10);
  CommandResult bad = run(fmt::format("{} report -i {} -F overhead,bogus", TPERF_BINARY, shell_quote(fp)));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("Unknown --fields key: `bogus'"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tperf

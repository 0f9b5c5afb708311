// perf report's -g argument read as perf reads it (print_type,threshold[,print_limit],order,
// sort_key[,branch],value; words in any order, any prefix of a word), against perf 6.1 byte for
// byte: the print limit, the period and count values, chains keyed by address (frames with their
// srclines) and by srcline (frames of one source line alike whatever function they are in, each
// node shown as the chain that made it), abbreviations, on a frame-pointer recording and a
// --call-graph dwarf one, with and without --children, with the unwinding block and without it
// (-q: the dwarf chains must not depend on it); the count value also on a -F recording (periods
// that differ) with entries collapsed by comm, at -j 1 too. Words perf does not know are refused
// by name.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

// perf 6.1 makes the "[...]" line of a fractal graph from memory it does not clear, so whether
// it says "(inlined)" after it depends on what that memory held; tperf prints the cleared text.
const char* kStripRemainderInlined = "sed 's/--\\[\\.\\.\\.\\] (inlined)$/--[...]/'";

void expect_same(const std::string& path, const std::string& g, const std::string& mode, size_t min_lines) {
  const std::string quiet = mode.find("-q") != std::string::npos ? "" : " --no-unwind-summary";
  const ComparedOutputs c = compare_outputs(
      fmt::format("perf report --stdio {} -g '{}' -i {} | {} | {}", mode, g, shell_quote(path), kStripPerfTip,
                  kStripRemainderInlined),
      fmt::format("{} report --stdio {}{} -g '{}' -i {}", TPERF_BINARY, mode, quiet, g, shell_quote(path)), path);
  expect_same_outputs(c, fmt::format("report {} -g {}", mode, g), min_lines);
}

const std::vector<std::string>& specs() {
  static const std::vector<std::string> s = {
      // The print limit: children drawn per node, chains listed, frames of the top run.
      "graph,0.5,2", "graph,0,1", "fractal,0.5,3", "flat,0,2", "folded,0,4", "graph,0.5,caller,3",
      // The period and count values, in every mode (fractal's "[...]" counts the samples left).
      "graph,0.5,callee,function,period", "fractal,0.5,callee,period", "flat,0,period", "folded,0,period",
      "count", "graph,0.5,callee,count", "fractal,0.5,count", "flat,0,count", "folded,0,count", "fractal,0,1,co",
      // Chains keyed by address: frames told apart by address, each with its srcline.
      "graph,0.5,caller,address", "address", "callee,address,period",
      // Chains keyed by srcline: frames alike by their source line; kernel frames and others
      // without a line (perf 6.1 has no text there) by function, before those with one.
      "graph,0.5,caller,srcline", "srcline", "callee,srcline,period", "fractal,0.5,srcline", "flat,0,srcline",
      "folded,0,srcline",
      // Abbreviations, words in any order, a threshold read as far as it is a number.
      "fr,c,0.5x,3", "g,1,a,pe", "graph,,callee", "caller,function,percent", "graph,0.1,callee,5,period",
  };
  return s;
}

TEST(ReportCallchainOptions, FramePointerRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("g-fp", "spin", "-e cpu-clock -c 100000 -g"));
  for (const std::string& g : specs()) {
    for (const char* mode : {"--no-children", "--children"}) expect_same(rec.path, g, mode, 12);
  }
}

TEST(ReportCallchainOptions, DwarfRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("g-dwarf", "deep_nofp", "-e cpu-clock -c 200000 --call-graph dwarf,8192"));
  for (const std::string& g : specs()) {
    for (const char* mode : {"--no-children", "--children"}) expect_same(rec.path, g, mode, 12);
  }
  // The unwound frames are there whatever else is shown: without the unwinding block (-q) flat
  // chains and the parent key found none before.
  for (const char* g : {"flat", "flat,0,2", "folded,0,4", "graph,0.5,2"}) {
    for (const char* mode : {"--no-children -q", "--children -q"}) expect_same(rec.path, g, mode, 12);
  }
  // The srcline key beside the srcline sort key: a callchain entry's entry (--children) takes
  // its frame's text where the chain has one.
  for (const char* mode : {"--children -s sym,srcline", "--no-children -s dso,srcline"}) {
    expect_same(rec.path, "caller,srcline", mode, 12);
  }
  const ComparedOutputs parent = compare_outputs(
      fmt::format("perf report --stdio -q -s parent -g none -i {}", shell_quote(rec.path)),
      fmt::format("{} report --stdio -q -s parent -g none -i {}", TPERF_BINARY, shell_quote(rec.path)), rec.path);
  expect_same_outputs(parent, "report -q -s parent -g none", 1);
}

TEST(ReportCallchainOptions, CountsOfSamplesOfDifferentPeriodsEqualPerf) {
  // -F: every sample has a period of its own, so a node's count is not its period over one.
  TPERF_REQUIRE_RECORDING(rec, workload_recording("g-freq", "spin", "-F 999 -g"));
  for (const char* g : {"count", "fractal,0.5,count", "flat,0,count", "folded,0,count"}) {
    for (const char* mode : {"--no-children", "--children", "--children -s comm", "--no-children -s comm,dso"}) {
      expect_same(rec.path, g, mode, 8);
      // One thread: the trees built where the samples are added.
      const ComparedOutputs c = compare_outputs(
          fmt::format("perf report --stdio {} -g '{}' -i {} | {}", mode, g, shell_quote(rec.path), kStripPerfTip),
          fmt::format("{} report -j 1 --stdio {} --no-unwind-summary -g '{}' -i {}", TPERF_BINARY, mode, g,
                      shell_quote(rec.path)),
          rec.path);
      expect_same_outputs(c, fmt::format("report -j 1 {} -g {}", mode, g), 8);
    }
  }
}

TEST(ReportCallchainOptions, WhatIsNotDoneIsRefusedByName) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("g-fp", "spin", "-e cpu-clock -c 100000 -g"));
  struct Case {
    const char* g;
    const char* message;
  };
  for (const Case& c : {Case{"graph,xyz", "'xyz' is neither a word perf knows nor a threshold"},
                        Case{"graph,0.5,x", "'x' is neither a word perf knows nor a print limit"}}) {
    const CommandResult r = run(fmt::format("{} report --stdio -g '{}' -i {}", TPERF_BINARY, c.g, shell_quote(rec.path)));
    EXPECT_EQ(r.status, 2) << c.g;
    EXPECT_EQ(r.out, "") << c.g;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.g << ": " << r.err;
  }
  // perf takes any prefix of "none" for none, whatever follows it.
  const ComparedOutputs none = compare_outputs(
      fmt::format("perf report --stdio -g n,caller -i {} | {}", shell_quote(rec.path), kStripPerfTip),
      fmt::format("{} report --stdio --no-unwind-summary -g n,caller -i {}", TPERF_BINARY, shell_quote(rec.path)), rec.path);
  expect_same_outputs(none, "report -g n,caller", 12);
}

}  // namespace
}  // namespace tperf::test::e2e

// `tperf script --dsos`, `-S/--symbols` (with `--addr-range`) and `--stop-bt`, and `tperf
// report -S`, against perf 6.1 byte for byte, on a --call-graph dwarf recording of
// deep_nofp.c (ten functions f0..f9 under main, with kernel frames and libc's qsort).
// perf applies --dsos and -S to the sample's own address; an -S entry that reads as a hex
// number ("f0", "0x1234") is an address there, not a name, so `-S f0` selects no f0 sample,
// and the report header names the one name left. --stop-bt cuts each chain after the first
// frame named in it, inline frames included. At -j 1 and -j 2. And `report -U`: the samples
// without a symbol left out of the totals, and the chain frames without one, on that recording and
// on a -g one of the same program built without frame pointers (its chains walk into garbage)
// followed by `ls -R`, whose own code (stripped) has no symbols.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>
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
    std::string error;
    const std::string deep = test::e2e::workload("deep_nofp", &error);
    if (deep.empty()) return test::e2e::Recording{"", "cannot build the workload: " + error};
    const std::string path = test::e2e::scratch_dir() + "/script-select.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock --call-graph dwarf,8192 -o {} -- {} 0.3", shell_quote(path),
                    shell_quote(deep)),
        path);
  }();
  return r;
}

void expect_script_as_perf(const std::string& input, const std::string& args, size_t min_lines) {
  for (const char* jobs : {"-j 1", "-j 2"}) {
    test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
        fmt::format("perf script {} -i {} 2>/dev/null", args, shell_quote(input)),
        fmt::format("{} script {} {} -i {}", TPERF_BINARY, jobs, args, shell_quote(input)), input);
    test::e2e::expect_same_outputs(c, fmt::format("perf script {} vs tperf {}", args, jobs), min_lines);
  }
}

size_t lines_of(const std::string& cmd) {
  CommandResult r = run(cmd);
  size_t n = 0;
  for (char c : r.out) n += c == '\n';
  return n;
}

TEST(ScriptSelect, DsosAndSymbolsEqualPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  const std::string q = shell_quote(rec.path);
  expect_script_as_perf(rec.path, "--dsos deep_nofp -F comm,tid,ip,sym,dso -G", 50);
  expect_script_as_perf(rec.path, "--dsos '[kernel.kallsyms]' -F comm,tid,ip,sym", 1);
  expect_script_as_perf(rec.path, "-S main", 1);
  expect_script_as_perf(rec.path, "-S main,f3 -F ip,sym -G", 1);
  // "f0" reads as 0xf0: perf selects nothing by that name.
  EXPECT_EQ(lines_of(fmt::format("perf script -S f0 -F ip,sym -G -i {} 2>/dev/null", q)), 0u)
      << "perf took f0 as a name: this test's premise changed";
  EXPECT_GT(lines_of(fmt::format("perf script -F ip,sym -G -i {} 2>/dev/null | grep -w f0", q)), 0u)
      << "no sample in f0: the check above is vacuous";
  expect_script_as_perf(rec.path, "-S f0,main -F ip,sym -G", 1);

  // An address: the first sample's own, exactly and as the start of a range.
  CommandResult first = run(fmt::format("perf script -F ip -G -i {} 2>/dev/null | head -1", q));
  std::string ip;
  std::istringstream(first.out) >> ip;
  ASSERT_FALSE(ip.empty()) << "set-up failed: perf printed no sample address";
  expect_script_as_perf(rec.path, fmt::format("-S 0x{} -F ip,sym -G", ip), 1);
  expect_script_as_perf(rec.path, fmt::format("-S {} --addr-range 256 -F ip,sym -G", ip), 1);
}

TEST(ScriptSelect, StopBtEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  expect_script_as_perf(rec.path, "--stop-bt f3", 100);
  expect_script_as_perf(rec.path, "--stop-bt f5,main -F ip,sym,dso", 100);
  expect_script_as_perf(rec.path, "--stop-bt f3 --no-inline", 100);
  // Without the sym field the chain still stops at the frame of a listed function, the inlined
  // frames of unwound stacks included: perf compares the frame's symbol, shown or not.
  expect_script_as_perf(rec.path, "--stop-bt f3 -F ip", 100);
  expect_script_as_perf(rec.path, "--stop-bt f5,main -F ip,dso", 100);
  // Not vacuous: the chains are shorter than without it.
  const std::string q = shell_quote(rec.path);
  EXPECT_LT(lines_of(fmt::format("{} script --stop-bt f3 -i {}", TPERF_BINARY, q)),
            lines_of(fmt::format("{} script -i {}", TPERF_BINARY, q)));
}

TEST(ReportSelect, HexLookingSymbolsAreAddressesAsInPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  for (const char* mode : {"", "--no-children", "-s dso"}) {
    for (const char* list : {"f0", "main", "f3,main", "main,f5", "0x1422"}) {
      const std::string args = fmt::format("--stdio {} -S {}", mode, list);
      test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
          fmt::format("perf report {} -i {} 2>/dev/null | {}", args, shell_quote(rec.path), test::e2e::kStripPerfTip),
          fmt::format("{} report --no-unwind-summary {} -i {}", TPERF_BINARY, args, shell_quote(rec.path)), rec.path);
      test::e2e::expect_same_outputs(c, "report " + args, 5);
    }
  }
}

const test::e2e::Recording& fp_recording() {
  static const test::e2e::Recording r = [] {
    std::string error;
    const std::string deep = test::e2e::workload("deep_nofp", &error);
    if (deep.empty()) return test::e2e::Recording{"", "cannot build the workload: " + error};
    const std::string path = test::e2e::scratch_dir() + "/report-hide-unresolved.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock -g -o {} -- sh -c '{} 0.3; ls -R /usr/lib >/dev/null'",
                    shell_quote(path), deep),
        path);
  }();
  return r;
}

TEST(ReportHideUnresolved, EqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  TPERF_REQUIRE_RECORDING(fp, fp_recording());
  for (const std::string& path : {rec.path, fp.path}) {
    const std::string q = shell_quote(path);
    for (const char* mode : {"", "--no-children", "--no-children -g caller", "-g folded", "-s dso,sym", "-s comm"}) {
      const std::string args = fmt::format("--stdio -U {}", mode);
      test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
          fmt::format("perf report {} -i {} 2>/dev/null | {}", args, q, test::e2e::kStripPerfTip),
          fmt::format("{} report --no-unwind-summary {} -i {}", TPERF_BINARY, args, q), path);
      test::e2e::expect_same_outputs(c, "report " + args, 5);
    }
  }
  // Not vacuous: the -g recording has samples without a symbol (in ls), which -U leaves out of
  // the count.
  const std::string q = shell_quote(fp.path);
  CommandResult all = run(fmt::format("perf report --stdio -i {} 2>/dev/null | grep '^# Event count'", q));
  CommandResult shown = run(fmt::format("perf report --stdio -U -i {} 2>/dev/null | grep '^# Event count'", q));
  EXPECT_NE(all.out, shown.out) << "no sample without a symbol: the comparison above is vacuous";
}

}  // namespace
}  // namespace tperf

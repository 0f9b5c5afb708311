// Value cells wider than their column, against perf report 6.1 on a file made with our writer:
// with --dso and --percentage relative the callers' Children share is taken of the filtered
// entries' total and passes 1000% (a CI run met one at 9400%), and a period of 15 digits is
// wider than the Period column. perf then pushes the row right instead of dropping the
// cell's leading space.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

using namespace tperf::perfdata;

constexpr uint64_t kApp = 0x555555554000, kLib = 0x7f0000000000;
constexpr int32_t kPid = 777;

// A program whose functions the samples' callers are in (its symbols resolve) and a library
// without a file where most samples land.
std::string write_file(const TempDir& dir, const std::string& binary, const std::map<std::string, uint64_t>& syms,
                       bool wide_period) {
  const PerfEventAttr attr = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCallchain);
  RecordBuilder rb(attr);
  std::vector<std::vector<uint8_t>> records;
  uint64_t now = 1000;
  auto sid = [&] {
    SampleId s;
    s.pid = s.tid = kPid;
    s.time = ++now;
    return s;
  };
  CommEvent comm;
  comm.pid = comm.tid = kPid;
  comm.comm = "wide";
  records.push_back(rb.comm(comm, sid()));
  records.push_back(rb.mmap2(test::executable_map(kPid, kApp, binary), sid()));
  records.push_back(rb.mmap2(test::executable_map(kPid, kLib, "/nonexistent/tperf-wide/libgone.so"), sid()));
  auto sample = [&](uint64_t ip, std::vector<uint64_t> callers, uint64_t period) {
    Sample s;
    s.pid = s.tid = kPid;
    s.time = ++now;
    s.period = period;
    s.ip = ip;
    s.callchain = {kContextUser, ip};
    s.callchain.insert(s.callchain.end(), callers.begin(), callers.end());
    records.push_back(rb.sample(s, kMiscUser));
  };
  auto at = [&](const char* name) { return kApp + syms.at(name) + 1; };
  // 94 samples in the library without a file, called from the program's burn <- main; one in
  // burn itself: with --dso on the program and relative percentages, burn's and main's Children
  // are 95 times the one sample the program's entries keep.
  // The sample in burn comes first: an entry keeps the filter state of the sample that made it
  // (perf's rule), so burn's and main's entries stay shown while the others add to them.
  sample(at("burn"), {at("main")}, 1000000);
  for (int i = 0; i < 94; ++i) sample(kLib + 0x1100 + 0x10 * (i % 3), {at("burn"), at("main")}, 1000000);
  // One sample of a period wider than the Period column (in a file of its own: it would make
  // every other share round to nothing).
  if (wide_period) sample(at("leaf"), {at("burn"), at("main")}, 123456789012345);
  std::string path = dir.file(wide_period ? "wide-period.data" : "wide-percent.data");
  Writer w;
  w.open(path);
  w.add_attr(attr, {1}, "cpu-clock");
  for (const auto& r : records) w.write_record(r);
  w.finish();
  return path;
}

TEST(ReportWideValues, CellsWiderThanTheirColumnAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  std::string err;
  const std::string binary = workload("forkexec", &err);
  ASSERT_FALSE(binary.empty()) << "set-up failed: " << err;
  const auto syms = nm_symbols(binary);
  for (const char* s : {"main", "burn", "leaf"}) {
    ASSERT_TRUE(syms.count(s)) << "set-up failed: nm did not list " << s << " in " << binary;
  }
  TempDir dir;
  const std::string percent_file = write_file(dir, binary, syms, false);
  const std::string period_file = write_file(dir, binary, syms, true);
  const std::string dso = binary.substr(binary.rfind('/') + 1);
  for (std::string args : {"--dso DSO --percentage relative -g none -n", "--dso DSO --percentage relative",
                           "--dso DSO --percentage relative -F overhead,overhead_children,sample,period,sym",
                           "P -n --show-total-period -g none", "P --no-children -n --show-total-period",
                           "P -F overhead,sample,period,sym"}) {
    if (size_t p = args.find("DSO"); p != std::string::npos) args.replace(p, 3, dso);
    std::string file = percent_file;
    if (args.starts_with("P ")) {
      file = period_file;
      args = args.substr(2);
    }
    SCOPED_TRACE(args);
    ComparedOutputs c = compare_outputs(
        fmt::format("perf report --stdio -i {} {} 2>/dev/null | grep -v '^#' | grep -v '^$'", shell_quote(file), args),
        fmt::format("{} report --stdio --no-unwind-summary -i {} {} | grep -v '^#' | grep -v '^$'", TPERF_BINARY,
                    shell_quote(file), args),
        file);
    EXPECT_EQ(c.diff, "") << "diff perf tperf";
    EXPECT_GE(c.perf_lines, 2u) << "perf printed too little";
  }
  // The cases are there: a share over 1000% and the 15-digit period.
  CommandResult t = run(fmt::format("{} report --stdio -q -i {} --dso {} --percentage relative -g none", TPERF_BINARY,
                                    shell_quote(percent_file), dso));
  EXPECT_NE(t.out.find("9500.00%"), std::string::npos) << t.out;
  CommandResult n = run(fmt::format("{} report --stdio -q -i {} -n --show-total-period -g none", TPERF_BINARY,
                                    shell_quote(period_file)));
  EXPECT_NE(n.out.find("123456789012345"), std::string::npos) << n.out;
}

}  // namespace
}  // namespace tperf::test::e2e

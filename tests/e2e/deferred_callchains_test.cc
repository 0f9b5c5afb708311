// Deferred user callchains end to end, on files made with our writer (the kernel here, 6.18,
// cannot record them): `tperf script` merged and raw (--no-merge-callchains), the report's
// graphs and its unwinding-quality block, a `tperf convert`ed copy read by perf 6.1, and
// `tperf record --call-graph fp,defer` on a kernel without deferral. The expected stacks are
// written out below from the merge rules (perf-abi.md §6.2), by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/reader.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

using test::run_command;
using test::shell_quote;

constexpr uint64_t K = kContextKernel;
constexpr uint64_t U = kContextUser;
constexpr uint64_t D = kContextUserDeferred;

PerfEventAttr deferred_attr() {
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = kAttrSizeVer7;
  a.config = kSwCpuClock;
  a.sample_period = 250000;
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleCallchain | kSamplePeriod;
  for (auto bit : {kFlagSampleIdAll, kFlagComm, kFlagTask, kFlagMmap, kFlagMmap2, kFlagCommExec, kFlagExcludeGuest,
                   kFlagDeferCallchain, kFlagDeferOutput}) {
    a.set_flag(bit);
  }
  return a;
}

// Process 100 "app" with threads 100 and 101 ("worker"), its program mapped at 0x400000.
// Kernel ips k1.. = 0xffffffff81000100, ..0200, ...; user ips in the program.
//
//   round 1: S1 tid 100 @10us [k1 k2, D, c1]      S2 tid 101 @20us [k3, D, c2]
//            S3 tid 100 @30us [k4, D, c1]         S4 tid 101 @40us [k5, U 405000 406000] (not deferred)
//            R  tid 100 @50us c1 [401000 402000 403000]
//            S5 tid 100 @60us [k6, D, c3]         LOST @70us (c3's record)
//            S6 tid 100 @80us [k7, D, c4]         R  tid 100 @90us c4 [404000]
//   round 2: R  tid 101 @200us c2 [407000 408000]  (written before S7, stamped after it)
//   round 3: S7 tid 101 @150us [k8, D, c2]        S8 tid 100 @300us [k9, D, c5] (never completed)
void write_file(const std::string& path, bool pipe = false) {
  Writer::Options options;
  options.pipe = pipe;
  Writer w(options);
  w.open(path);
  w.add_attr(deferred_attr(), {}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  const uint64_t base = 1'000'000'000;
  auto sid = [&](uint32_t tid, uint64_t us) {
    return SampleId{.pid = 100, .tid = tid, .time = base + us * 1000, .id = 0, .cpu = 0};
  };
  auto sample = [&](uint32_t tid, uint64_t us, std::vector<uint64_t> chain) {
    Sample s{.ip = chain.at(1), .pid = 100, .tid = tid, .time = base + us * 1000, .period = 250000};
    s.callchain = std::move(chain);
    w.write_record(rb.sample(s, kMiscKernel));
  };
  auto deferred = [&](uint32_t tid, uint64_t us, uint64_t cookie, std::vector<uint64_t> ips) {
    w.write_record(rb.callchain_deferred({.cookie = cookie, .ips = std::move(ips)}, sid(tid, us)));
  };
  auto k = [](unsigned n) { return 0xffffffff81000000ULL + n * 0x100; };
  w.write_record(rb.comm({.pid = 100, .tid = 100, .comm = "app", .exec = true}, sid(100, 1)));
  w.write_record(rb.fork({.pid = 100, .ppid = 100, .tid = 101, .ptid = 100, .time = base + 2000}, sid(101, 2)));
  w.write_record(rb.comm({.pid = 100, .tid = 101, .comm = "worker"}, sid(101, 3)));
  w.write_record(rb.mmap2({.pid = 100, .tid = 100, .addr = 0x400000, .len = 0x10000, .filename = "/opt/deferred/app"},
                          sid(100, 4)));
  sample(100, 10, {K, k(1), k(2), D, 0xc1});
  sample(101, 20, {K, k(3), D, 0xc2});
  sample(100, 30, {K, k(4), D, 0xc1});
  sample(101, 40, {K, k(5), U, 0x405000, 0x406000});
  deferred(100, 50, 0xc1, {0x401000, 0x402000, 0x403000});
  sample(100, 60, {K, k(6), D, 0xc3});
  w.write_record(rb.lost(0, 1, sid(100, 70)));
  sample(100, 80, {K, k(7), D, 0xc4});
  deferred(100, 90, 0xc4, {0x404000});
  w.write_record(rb.finished_round());
  deferred(101, 200, 0xc2, {0x407000, 0x408000});
  w.write_record(rb.finished_round());
  sample(101, 150, {K, k(8), D, 0xc2});
  sample(100, 300, {K, k(9), D, 0xc5});
  w.write_record(rb.finished_round());
  w.finish();
}

std::string run_ok(const std::string& cmd) {
  int status = -1;
  std::string out = run_command(cmd, &status);
  return status == 0 ? out : "exit status " + std::to_string(status) + "\n" + out;
}

std::string script(const std::string& tool, const std::string& path, const std::string& args) {
  return run_ok(fmt::format("{} script -i {} {} 2>&1", tool, shell_quote(path), args));
}

class DeferredE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("deferred.data");
    write_file(path_);
  }
  test::TempDir dir_;
  std::string path_;
};

// With -F ip and no dso, perf (and tperf) print a user frame as its offset in the mapping:
// 0x401000 in /opt/deferred/app at 0x400000 shows as "1000".
//
// Merged, in delivery order: a waiting sample goes out when the record of its tid comes (after
// the samples of other tasks stamped in between), with its kernel part, then the record's user
// ips; S5's record was lost, so the next record (c4) leaves it its kernel part alone; S8 never
// got one.
const char* const kMerged =
    "worker   101     1.000040: \n"  // S4: not deferred, not held
    "\tffffffff81000500\n"
    "\t            5000\n"
    "\t            6000\n"
    "\n"
    "app   100     1.000010: \n"  // S1 + R(c1)
    "\tffffffff81000100\n"
    "\tffffffff81000200\n"
    "\t            1000\n"
    "\t            2000\n"
    "\t            3000\n"
    "\n"
    "app   100     1.000030: \n"  // S3 + R(c1)
    "\tffffffff81000400\n"
    "\t            1000\n"
    "\t            2000\n"
    "\t            3000\n"
    "\n"
    "app   100     1.000060: \n"  // S5: cookie c3, record c4: kernel part alone
    "\tffffffff81000600\n"
    "\n"
    "app   100     1.000080: \n"  // S6 + R(c4)
    "\tffffffff81000700\n"
    "\t            4000\n"
    "\n"
    "worker   101     1.000020: \n"  // S2 + R(c2), whose record is in the file before S7
    "\tffffffff81000300\n"
    "\t            7000\n"
    "\t            8000\n"
    "\n"
    "worker   101     1.000150: \n"  // S7 + R(c2)
    "\tffffffff81000800\n"
    "\t            7000\n"
    "\t            8000\n"
    "\n"
    "app   100     1.000300: \n"  // S8: never completed
    "\tffffffff81000900\n"
    "\n";

// The same stacks in time order: what a reader of the converted copy (no deferral left) shows.
const char* const kMergedTimeOrder =
    "app   100     1.000010: \n"
    "\tffffffff81000100\n"
    "\tffffffff81000200\n"
    "\t            1000\n"
    "\t            2000\n"
    "\t            3000\n"
    "\n"
    "worker   101     1.000020: \n"
    "\tffffffff81000300\n"
    "\t            7000\n"
    "\t            8000\n"
    "\n"
    "app   100     1.000030: \n"
    "\tffffffff81000400\n"
    "\t            1000\n"
    "\t            2000\n"
    "\t            3000\n"
    "\n"
    "worker   101     1.000040: \n"
    "\tffffffff81000500\n"
    "\t            5000\n"
    "\t            6000\n"
    "\n"
    "app   100     1.000060: \n"
    "\tffffffff81000600\n"
    "\n"
    "app   100     1.000080: \n"
    "\tffffffff81000700\n"
    "\t            4000\n"
    "\n"
    "worker   101     1.000150: \n"
    "\tffffffff81000800\n"
    "\t            7000\n"
    "\t            8000\n"
    "\n"
    "app   100     1.000300: \n"
    "\tffffffff81000900\n"
    "\n";

// --no-merge-callchains, as perf 6.19 prints it: time order, each deferred sample ends with its
// cookie, each record is a line of its own with the user frames.
const char* const kRaw =
    "app   100     1.000010: \n"
    "\tffffffff81000100\n"
    "\tffffffff81000200\n"
    "\t              c1\n"
    "\n"
    "worker   101     1.000020: \n"
    "\tffffffff81000300\n"
    "\t              c2\n"
    "\n"
    "app   100     1.000030: \n"
    "\tffffffff81000400\n"
    "\t              c1\n"
    "\n"
    "worker   101     1.000040: \n"
    "\tffffffff81000500\n"
    "\t            5000\n"
    "\t            6000\n"
    "\n"
    "app   100     1.000050: DEFERRED CALLCHAIN [cookie: c1]\n"
    "\t            1000\n"
    "\t            2000\n"
    "\t            3000\n"
    "\n"
    "app   100     1.000060: \n"
    "\tffffffff81000600\n"
    "\t              c3\n"
    "\n"
    "app   100     1.000080: \n"
    "\tffffffff81000700\n"
    "\t              c4\n"
    "\n"
    "app   100     1.000090: DEFERRED CALLCHAIN [cookie: c4]\n"
    "\t            4000\n"
    "\n"
    "worker   101     1.000150: \n"
    "\tffffffff81000800\n"
    "\t              c2\n"
    "\n"
    "worker   101     1.000200: DEFERRED CALLCHAIN [cookie: c2]\n"
    "\t            7000\n"
    "\t            8000\n"
    "\n"
    "app   100     1.000300: \n"
    "\tffffffff81000900\n"
    "\t              c5\n"
    "\n";

// The blocks of a script output (one per sample), sorted: the same stacks in any order.
std::vector<std::string> sorted_blocks(const std::string& text) {
  std::vector<std::string> blocks;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find("\n\n", pos);
    if (end == std::string::npos) end = text.size();
    blocks.push_back(text.substr(pos, end - pos));
    pos = end + 2;
  }
  std::sort(blocks.begin(), blocks.end());
  return blocks;
}

std::string convert(const std::string& in, const std::string& out) {
  return run_ok(fmt::format("{} convert {} {} 2>&1", TPERF_BINARY, shell_quote(in), shell_quote(out)));
}

TEST_F(DeferredE2E, ScriptShowsMergedStacks) {
  EXPECT_EQ(script(TPERF_BINARY, path_, "-F comm,tid,time,ip"), kMerged);
  // --merge-callchains is the default, spelled out.
  EXPECT_EQ(script(TPERF_BINARY, path_, "-F comm,tid,time,ip --merge-callchains"), kMerged);
}

TEST_F(DeferredE2E, ScriptNoMergeCallchainsShowsTheRawRecords) {
  EXPECT_EQ(script(TPERF_BINARY, path_, "-F comm,tid,time,ip --no-merge-callchains"), kRaw);
  // With symbols asked for, the cookie is named as perf 6.19 names it, never as an address.
  std::string out = script(TPERF_BINARY, path_, "-F comm,tid,time,ip,sym,dso --no-merge-callchains");
  EXPECT_NE(out.find("\t              c1 (cookie) ([unknown])\n"), std::string::npos) << out;
  EXPECT_NE(out.find("app   100     1.000050: DEFERRED CALLCHAIN [cookie: c1]\n"
                     "\t            1000 [unknown] (/opt/deferred/app)\n"),
            std::string::npos)
      << out;
  // Merged, the cookie never shows.
  std::string merged = script(TPERF_BINARY, path_, "-F comm,tid,time,ip,sym,dso");
  EXPECT_EQ(merged.find("(cookie)"), std::string::npos) << merged;
  EXPECT_EQ(merged.find("DEFERRED CALLCHAIN"), std::string::npos) << merged;
}

TEST_F(DeferredE2E, DumpShowsTheRawRecords) {
  std::string out = run_ok(fmt::format("{} dump {} 2>&1", TPERF_BINARY, shell_quote(path_)));
  size_t n = 0;
  for (size_t p = out.find("CALLCHAIN_DEFERRED"); p != std::string::npos; p = out.find("CALLCHAIN_DEFERRED", p + 1)) ++n;
  EXPECT_EQ(n, 3u) << out;
  EXPECT_NE(out.find("deferred cookie: 0xc5"), std::string::npos) << out;
}

// perf 6.1 cannot read the file as it is (unknown attr bits, a marker it drops the chain for,
// record 22 it stops at); the converted copy it reads whole, with the stacks merged.
TEST_F(DeferredE2E, ConvertedCopyShowsWholeStacksInPerf61) {
  TPERF_REQUIRE_PROGRAM("perf");
  std::string raw_perf = script("perf", path_, "-F comm,tid,time,ip");
  EXPECT_EQ(raw_perf.find("\t            1000\n"), std::string::npos) << raw_perf;

  std::string conv = dir_.file("converted.data");
  test::e2e::KeepOnFailure keep({path_, conv});
  EXPECT_EQ(convert(path_, conv), "");
  int status = -1;
  std::string perf_out = run_command(fmt::format("perf script -i {} -F comm,tid,time,ip 2>/dev/null", shell_quote(conv)), &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(perf_out, kMergedTimeOrder);
  std::string perf_err = run_command(fmt::format("perf script -i {} 2>&1 >/dev/null", shell_quote(conv)));
  EXPECT_EQ(perf_err.find("Reserved bits"), std::string::npos) << perf_err;
  EXPECT_EQ(perf_err.find("unknown events"), std::string::npos) << perf_err;
  EXPECT_EQ(script(TPERF_BINARY, conv, "-F comm,tid,time,ip"), kMergedTimeOrder);
  // Symbols and DSOs too: the merged stacks tperf shows for the original are perf's for the copy
  // (in another order: perf sorts the copy by time).
  const std::string fields = "-F comm,tid,time,ip,sym,dso";
  std::string ours = script(TPERF_BINARY, path_, fields);
  std::string theirs = run_command(fmt::format("perf script -i {} {} 2>/dev/null", shell_quote(conv), fields));
  EXPECT_EQ(sorted_blocks(ours), sorted_blocks(theirs)) << ours << "\n----\n" << theirs;
  // No deferral is left in the copy.
  auto reader = Reader::open(conv);
  for (const auto& ea : reader->attrs()) {
    EXPECT_FALSE(ea.attr.flag(kFlagDeferCallchain));
    EXPECT_FALSE(ea.attr.flag(kFlagDeferOutput));
  }
}

// Pipe mode announces the attrs as records: the stage (and convert) find the deferred events
// all the same.
TEST_F(DeferredE2E, PipeModeInput) {
  std::string pipe = dir_.file("deferred.pipe.data");
  write_file(pipe, /*pipe=*/true);
  // (-F ip alone prints the symbol column too for a pipe, as perf does: compare with sym.)
  std::string from_pipe =
      run_ok(fmt::format("cat {} | {} script -i - -F comm,tid,time,ip,sym 2>&1", shell_quote(pipe), TPERF_BINARY));
  EXPECT_EQ(from_pipe, script(TPERF_BINARY, path_, "-F comm,tid,time,ip,sym"));
  EXPECT_NE(from_pipe.find("\tffffffff81000200 [unknown]\n\t            1000 [unknown]\n"), std::string::npos)
      << from_pipe;
  std::string conv = dir_.file("converted.data");
  test::e2e::KeepOnFailure keep({pipe, conv});
  EXPECT_EQ(convert(pipe, conv), "");
  EXPECT_EQ(script(TPERF_BINARY, conv, "-F comm,tid,time,ip"), kMergedTimeOrder);
  if (test::have_program("perf")) {
    EXPECT_EQ(run_command(fmt::format("perf script -i {} -F comm,tid,time,ip 2>/dev/null", shell_quote(conv))),
              kMergedTimeOrder);
  }
}

TEST_F(DeferredE2E, ReportGraphsEqualPerfsOnTheConvertedCopy) {
  TPERF_REQUIRE_PROGRAM("perf");
  std::string conv = dir_.file("converted.data");
  test::e2e::KeepOnFailure keep({path_, conv});
  ASSERT_EQ(convert(path_, conv), "");
  for (const char* args : {"--stdio", "--stdio --no-children", "--stdio --no-children -g caller", "--stdio -s dso"}) {
    std::string ours = run_ok(fmt::format("{} report -i {} {} --no-unwind-summary 2>/dev/null", TPERF_BINARY,
                                          shell_quote(path_), args));
    // perf's output without its random tip block ("#", "# (Tip: ...)", "#" at the end).
    std::string theirs = run_ok(fmt::format(
        "perf report -i {} {} 2>/dev/null | awk '/^# \\(Tip/ {{tip=NR}} {{l[NR]=$0}} END {{for (i=1;i<=NR;i++) if "
        "(!(tip && i>=tip-1 && i<=tip+1)) print l[i]}}'",
        shell_quote(conv), args));
    EXPECT_EQ(ours, theirs) << args;
  }
  // Not vacuous: the graph goes from the kernel frames into the user part.
  std::string graph = run_ok(fmt::format("{} report -i {} --stdio --no-children -g caller --no-unwind-summary 2>/dev/null",
                                         TPERF_BINARY, shell_quote(path_)));
  EXPECT_NE(graph.find("0x403000"), std::string::npos) << graph;
  EXPECT_NE(graph.find("0x408000"), std::string::npos) << graph;
}

TEST_F(DeferredE2E, ReportSummaryCountsTheDeferredSamples) {
  std::string out = run_ok(fmt::format("{} report -i {} --stdio 2>/dev/null", TPERF_BINARY, shell_quote(path_)));
  // 7 deferred samples (S1-S3, S5-S8), 3 records: S1, S3, S6, S2, S7 merged; S5 mismatched; S8 never.
  EXPECT_NE(out.find("#   deferred user callchains: 7 samples waited for 3 CALLCHAIN_DEFERRED records\n"
                     "#            5 ( 71.43%) merged with their user part\n"
                     "#            1 ( 14.29%) met a record with another cookie (theirs was lost): kernel part alone\n"
                     "#            1 ( 14.29%) were never completed (no record before the end): kernel part alone\n"),
            std::string::npos)
      << out;
  // A file without deferred samples has no such block.
  std::string plain = dir_.file("plain.data");
  ASSERT_EQ(convert(path_, plain), "");
  std::string plain_out = run_ok(fmt::format("{} report -i {} --stdio 2>/dev/null", TPERF_BINARY, shell_quote(plain)));
  EXPECT_EQ(plain_out.find("deferred user callchains"), std::string::npos) << plain_out;
}

// A task that stays in one kernel entry for thousands of samples: all wait, one record
// completes them; with a lower bound the oldest are let go early (kernel part alone).
TEST(DeferredE2EMany, ThousandsOfWaitingSamples) {
  test::TempDir dir;
  std::string path = dir.file("many.data");
  {
    Writer w;
    w.open(path);
    w.add_attr(deferred_attr(), {}, "cpu-clock");
    RecordBuilder rb = w.builder(0);
    w.write_record(rb.comm({.pid = 100, .tid = 100, .comm = "app", .exec = true},
                           {.pid = 100, .tid = 100, .time = 1'000'000'000}));
    for (uint64_t i = 0; i < 3000; ++i) {
      Sample s{.ip = 0xffffffff81000100, .pid = 100, .tid = 100, .time = 1'000'001'000 + i * 1000, .period = 250000};
      s.callchain = {K, 0xffffffff81000100, D, 0x77};
      w.write_record(rb.sample(s, kMiscKernel));
      if (i % 100 == 99) w.write_record(rb.finished_round());
    }
    w.write_record(rb.callchain_deferred({.cookie = 0x77, .ips = {0x401000, 0x402000}},
                                         {.pid = 100, .tid = 100, .time = 1'010'000'000}));
    w.finish();
  }
  std::string out = script(TPERF_BINARY, path, "-F tid,ip");
  const std::string merged_block = "\tffffffff81000100\n\t          401000\n\t          402000\n\n";
  size_t n = 0;
  for (size_t p = out.find(merged_block); p != std::string::npos; p = out.find(merged_block, p + 1)) ++n;
  EXPECT_EQ(n, 3000u) << out.substr(0, 2000);
  std::string report = run_ok(fmt::format("{} report -i {} --stdio 2>/dev/null", TPERF_BINARY, shell_quote(path)));
  EXPECT_NE(report.find("#   deferred user callchains: 3000 samples waited for 1 CALLCHAIN_DEFERRED records\n"
                        "#         3000 (100.00%) merged with their user part\n"),
            std::string::npos)
      << report;
}

// This kernel (6.18) has no deferred callchains: one line says so, then a plain fp recording.
TEST(DeferredE2ERecord, FallsBackToFramePointersWithOneLine) {
  TPERF_REQUIRE_PROGRAM("perf");
  test::TempDir dir;
  std::string path = dir.file("fp.data");
  std::string err = dir.file("err.txt");
  int status = -1;
  run_command(fmt::format("{} record --call-graph fp,defer -o {} -- true 2>{}", TPERF_BINARY, shell_quote(path),
                          shell_quote(err)),
              &status);
  ASSERT_EQ(status, 0) << test::read_file(err);
  std::string messages = test::read_file(err);
  size_t defer_lines = 0;
  for (size_t p = messages.find("deferred"); p != std::string::npos; p = messages.find("deferred", p + 1)) ++defer_lines;
  EXPECT_EQ(defer_lines, 1u) << messages;
  EXPECT_NE(messages.find("tperf record: this kernel does not accept deferred user callchains (Linux 6.19+): "
                          "recording plain fp callchains\n"),
            std::string::npos)
      << messages;
  auto reader = Reader::open(path);
  ASSERT_FALSE(reader->attrs().empty());
  for (const auto& ea : reader->attrs()) {
    EXPECT_TRUE(ea.attr.sample_type & kSampleCallchain);
    EXPECT_FALSE(ea.attr.flag(kFlagDeferCallchain));
    EXPECT_FALSE(ea.attr.flag(kFlagDeferOutput));
  }
  std::string perf_err = dir.file("perf_err.txt");
  std::string out = run_command(fmt::format("perf script -i {} 2>{}", shell_quote(path), shell_quote(perf_err)), &status);
  EXPECT_EQ(status, 0) << test::read_file(perf_err);
  EXPECT_EQ(test::read_file(perf_err), "");
  EXPECT_NE(out.find("true "), std::string::npos) << out;
  // Other modes refuse deferral, as perf does.
  std::string bad = run_command(fmt::format("{} record --call-graph dwarf,defer -o {} -- true 2>&1", TPERF_BINARY,
                                            shell_quote(dir.file("x.data"))),
                                &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(bad.find("deferred callchain only works with FP"), std::string::npos) << bad;
}

}  // namespace
}  // namespace tperf::perfdata

// Branch stacks (PERF_SAMPLE_BRANCH_STACK) against perf 6.1 on files made with our writer (this
// machine has no LBR to record them): `perf report` in its branch mode (each branch one entry,
// the from/to columns, the branch sort keys, --no-branch-stack, -b on a pipe) and `perf script -F
// brstack,brstacksym`, with and without hw_index, in file and pipe mode. The branches go between
// functions of a real binary (their symbols resolve), a library that does not exist (addresses
// without a symbol) and the kernel, with every flag: predicted, mispredicted, neither, in_tx,
// abort, cycles (one above 32767, which perf prints as a negative short) and branch types.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

using namespace tperf::perfdata;

constexpr uint64_t kApp = 0x555555554000, kLib = 0x7f0000000000, kKernel = 0xffffffff81234560;
constexpr int32_t kPid = 4242;
constexpr uint64_t kBranchAny = 1ULL << 3;  // PERF_SAMPLE_BRANCH_ANY

uint64_t flags(bool mispred, bool predicted, bool in_tx, bool abort, unsigned cycles, unsigned type) {
  return (mispred ? 1u : 0u) | (predicted ? 2u : 0u) | (in_tx ? 4u : 0u) | (abort ? 8u : 0u) |
         (static_cast<uint64_t>(cycles & 0xffff) << 4) | (static_cast<uint64_t>(type & 0xf) << 20);
}

// The records of one process with the real binary at kApp and a library that does not exist at
// kLib: its COMM, a second thread (named `worker_comm` when given), the two maps, then samples in
// time order; written with the attr and the branch-stack feature.
class BranchRecords {
 public:
  BranchRecords(const PerfEventAttr& attr, bool swap, const std::string& binary, const char* comm,
                const char* worker_comm)
      : attr_(attr), rb_(attr, swap) {
    CommEvent c;
    c.pid = c.tid = kPid;
    c.comm = comm;
    records_.push_back(rb_.comm(c, sid(kPid)));
    TaskEvent fork;
    fork.pid = kPid;
    fork.tid = kPid + 1;
    fork.ppid = kPid;
    fork.ptid = kPid;
    records_.push_back(rb_.fork(fork, sid(kPid + 1)));
    if (worker_comm) {
      c.tid = kPid + 1;
      c.comm = worker_comm;
      records_.push_back(rb_.comm(c, sid(kPid + 1)));
    }
    records_.push_back(rb_.mmap2(test::executable_map(kPid, kApp, binary), sid(kPid)));
    records_.push_back(rb_.mmap2(test::executable_map(kPid, kLib, "/nonexistent/tperf-branch/libgone.so"), sid(kPid)));
  }

  void sample(int32_t tid, uint64_t ip, std::vector<BranchEntry> branches, std::vector<uint64_t> chain = {},
              uint16_t misc = kMiscUser) {
    Sample s;
    s.pid = kPid;
    s.tid = static_cast<uint32_t>(tid);
    s.time = ++now_;
    s.period = 100000;
    s.cpu = static_cast<uint32_t>(tid % 2);
    s.ip = ip;
    s.callchain = std::move(chain);
    s.branches = std::move(branches);
    s.branch_hw_idx = 7;
    records_.push_back(rb_.sample(s, misc));
  }

  std::string write(const std::string& path, bool pipe, bool swap = false) const {
    Writer::Options options;
    options.pipe = pipe;
    options.swap = swap;
    Writer w(options);
    w.open(path);
    w.add_attr(attr_, {1}, "cpu-clock");
    w.set_feature(kFeatBranchStack, {});
    for (const auto& r : records_) w.write_record(r);
    w.finish();
    return path;
  }

 private:
  SampleId sid(int32_t tid) {
    SampleId s;
    s.pid = kPid;
    s.tid = tid;
    s.time = ++now_;
    return s;
  }

  PerfEventAttr attr_;
  RecordBuilder rb_;
  std::vector<std::vector<uint8_t>> records_;
  uint64_t now_ = 1000;
};

// One process (two threads, the second renamed) whose samples carry branch stacks.
// `all_types`: one more sample whose branches have the other types (9 to 15) and the fields after
// the type (spec, new_type, priv).
std::string write_file(const TempDir& dir, const std::string& binary, const std::map<std::string, uint64_t>& syms,
                       bool hw_index, bool pipe, bool all_types = false, bool swap = false) {
  PerfEventAttr attr = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCpu |
                                            kSampleBranchStack);
  attr.branch_sample_type = kBranchAny | (hw_index ? kBranchHwIndex : 0);
  BranchRecords r(attr, swap, binary, "brapp", "brworker");
  auto at = [&](const char* name, uint64_t off) { return kApp + syms.at(name) + off; };
  const uint64_t main1 = at("main", 0x10), burn1 = at("burn", 0x4), burn2 = at("burn", 0x1c), leaf1 = at("leaf", 0x8);
  for (int i = 0; i < 6; ++i) {
    r.sample(kPid, burn1,
             {{burn2, burn1, flags(false, true, false, false, 3 + i % 2, 1)},
              {main1, burn1, flags(false, true, false, false, 12, 4)},
              {leaf1, main1, flags(true, false, false, false, 40, 6)},
              {kLib + 0x1230, leaf1, flags(false, true, false, false, 0, 0)}});
  }
  for (int i = 0; i < 4; ++i) {
    r.sample(kPid + 1, kLib + 0x1240,
             {{leaf1, kLib + 0x1200, flags(false, false, false, false, 0, 5)},
              {kLib + 0x1210 + 0x10 * (i % 2), kLib + 0x1300, flags(true, false, true, false, 7, 2)},
              {burn2, leaf1, flags(false, true, true, true, 40000, 1)},
              {kKernel, burn1, flags(false, true, false, false, 2, 8)}});
  }
  // A kernel sample whose branches came from user space, and one without branches.
  r.sample(kPid, kKernel + 0x10, {{main1, kKernel, flags(false, true, false, false, 9, 7)}}, {}, kMiscKernel);
  r.sample(kPid, main1, {});
  if (all_types) {
    std::vector<BranchEntry> branches;
    for (unsigned type = 9; type < 16; ++type) {
      const uint64_t more = (uint64_t{type % 4} << 24) | (uint64_t{type - 9} << 26) | (uint64_t{type % 8} << 30);
      branches.push_back({main1 + type, burn1, flags(type % 2, type % 3 == 0, false, false, type, type) | more});
    }
    r.sample(kPid, main1, branches);
  }
  return r.write(dir.file(fmt::format("branch{}{}{}{}.data", hw_index ? "-hwidx" : "", pipe ? "-pipe" : "",
                                      all_types ? "-types" : "", swap ? "-swapped" : "")),
                 pipe, swap);
}

class ReportBranch : public ::testing::Test {
 protected:
  void SetUp() override {
    TPERF_REQUIRE_PERF();
    std::string err;
    binary_ = workload("forkexec", &err);
    ASSERT_FALSE(binary_.empty()) << "set-up failed: " << err;
    syms_ = nm_symbols(binary_);
    for (const char* s : {"main", "burn", "leaf"}) {
      ASSERT_TRUE(syms_.count(s)) << "set-up failed: nm did not list " << s << " in " << binary_;
    }
  }
  std::string binary_;
  std::map<std::string, uint64_t> syms_;
  TempDir dir_;
};

// perf's lines that are not the report: its random tip and blank or lone '#' lines.
constexpr const char* kReportLines = "grep -v '^# (Tip' | grep -v '^#$' | grep -v '^$'";

// `perf report --stdio ARGS` and tperf's on `file` print the same, tperf ends cleanly and perf
// printed at least `min_perf_lines`. `perf_setup`: shell words run before perf (a trap).
// `on_stdin`: both read the file (a pipe-mode one) from standard input, `-i -`.
void expect_report_as_perf(const std::string& file, const std::string& args, size_t min_perf_lines,
                           const std::string& perf_setup = "", bool on_stdin = false) {
  const std::string input = on_stdin ? "- < " + shell_quote(file) : shell_quote(file);
  ComparedOutputs c = compare_outputs(
      fmt::format("{}perf report --stdio {} -i {} 2>/dev/null | {}", perf_setup, args, input, kReportLines),
      fmt::format("{} report --stdio --no-unwind-summary {} -i {} | {}", TPERF_BINARY, args, input, kReportLines),
      file);
  EXPECT_EQ(c.diff, "") << "diff perf tperf";
  EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
  EXPECT_GE(c.perf_lines, min_perf_lines) << "perf printed too little";
}

// The same for each of `args_list`, perf run with SIGPIPE ignored: with srcline texts of files
// that are not here, perf 6.1's addr2line child exits and perf dies writing to it at random.
void expect_reports_as_perf(const std::string& file, std::initializer_list<const char*> args_list, size_t min_perf_lines) {
  for (const char* args : args_list) {
    SCOPED_TRACE(args);
    expect_report_as_perf(file, args, min_perf_lines, "trap '' PIPE; ");
  }
}

TEST_F(ReportBranch, ReportAsPerfInBranchMode) {
  for (bool hw_index : {false, true}) {
    const std::string file = write_file(dir_, binary_, syms_, hw_index, false);
    for (const char* args :
         {"", "-n", "-n --show-total-period", "--no-branch-stack", "--no-branch-stack -n", "-b", "-s dso,sym",
          "-s comm,dso", "-s dso_from", "-s dso_to", "-s mispredict", "-s in_tx", "-s abort", "-s cycles",
          "-s addr_from", "-s addr_to", "-s comm,dso_from,dso_to,cycles,in_tx,abort", "-s comm,mispredict,dso_from", "-s cycles,mispredict", "-s pid,dso_to,cycles",
          "--percent-limit 5"}) {
      SCOPED_TRACE(fmt::format("hw_index {} report {}", hw_index, args));
      expect_report_as_perf(file, args, 5);
    }
  }
}

// The srcline_from/srcline_to keys: each end's "file.c:LINE" from the binary's line tables,
// "libgone.so[1230]" where the file is missing, "??:0" where no map has the address. perf 6.1
// dies of SIGPIPE at random on this file (in about half the runs): its addr2line child for the
// missing library exits, and perf writes to it. With the signal ignored the write fails instead,
// perf goes on, and its output is the same every time, so perf runs with SIGPIPE ignored here.
TEST_F(ReportBranch, SrclineFromAndToAsPerf) {
  for (bool hw_index : {false, true}) {
    const std::string file = write_file(dir_, binary_, syms_, hw_index, false);
    for (const char* args : {"-s srcline_from", "-s srcline_to", "-s comm,srcline_from,srcline_to",
                             "-s srcline_to,dso_from -n", "-s srcline_from,cycles --percent-limit 10",
                             "-s mispredict,srcline_to"}) {
      SCOPED_TRACE(fmt::format("hw_index {} report {}", hw_index, args));
      expect_report_as_perf(file, args, 8, "trap '' PIPE; ");
    }
    // The texts themselves, from outside tperf: addr2line names the lines of the binary.
    const CommandResult a2l = run(fmt::format("addr2line -e {} {:#x}", shell_quote(binary_), syms_.at("main") + 0x10));
    ASSERT_EQ(a2l.status, 0) << a2l.err;
    std::string line = a2l.out.substr(a2l.out.rfind('/') + 1);
    line = line.substr(0, line.find_first_of(" \n"));  // without " (discriminator N)"
    ASSERT_NE(line.find("forkexec.c:"), std::string::npos) << a2l.out;
    const CommandResult t = run(fmt::format("{} report --stdio -q -i {} -s srcline_from", TPERF_BINARY, shell_quote(file)));
    EXPECT_NE(t.out.find(line), std::string::npos) << line << " not in\n" << t.out;
    EXPECT_NE(t.out.find("libgone.so[1230]"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("??:0"), std::string::npos) << t.out;
    // perf 6.1 dies of SIGSEGV with a srcline key beside symbol_from or symbol_to; tperf reads on.
    const CommandResult both =
        run(fmt::format("{} report --stdio -q -i {} -s srcline_from,symbol_to", TPERF_BINARY, shell_quote(file)));
    EXPECT_EQ(both.status, 0) << both.err;
    EXPECT_NE(both.out.find(line + " "), std::string::npos) << both.out;
    EXPECT_NE(both.out.find("[.] burn"), std::string::npos) << both.out;
  }
}

// The same keys on a real LBR recording (the corpus' perf.data.branch-4.14, kernel and ld.so
// branches whose files are not here: "[kernel.kallsyms][ffffffffb420a473]", "ld-2.23.so[1a5c2]").
// With a srcline key after another key, perf 6.1 prints "(null)" for entries whose comparisons
// never reached it (it looks the text up in the comparison alone): 145 such rows of 228 with
// `srcline_to,srcline_from`.
TEST(ReportBranchCorpus, SrclineFromAndToAsPerf) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_CORPUS();
  expect_reports_as_perf(test::corpus_dir() + "/quipper/testdata/perf.data.branch-4.14",
                         {"-b -s srcline_from", "-b -s srcline_to,cycles", "-b -s comm,srcline_from,srcline_to -n",
                          "-b -s srcline_to,srcline_from", "-b -s cycles,srcline_from,dso_to",
                          "-b -s dso_to,dso_from,srcline_from,srcline_to"},
                         100);
}

// Kernel modules without their files: perf's srcline of a module address is the module's name
// and the offset in it ("[ath9k][13220]"), of the kernel's own addresses the address itself;
// tperf printed the absolute address for both. The corpus' callgraph recording has module
// samples and chains through modules (--branch-history shows each chain frame's srcline).
TEST(ReportBranchCorpus, ModuleSrclinesAsPerf) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_CORPUS();
  const std::string file = test::corpus_dir() + "/quipper/testdata/perf.data.callgraph-3.8";
  expect_reports_as_perf(file,
                         {"-s srcline --no-children -g none", "-s dso,srcline -g none", "--branch-history",
                          "--branch-history -g callee --no-children"},
                         100);
  const CommandResult t = run(fmt::format("{} report --stdio -q -i {} -s srcline --no-children -g none", TPERF_BINARY,
                                          shell_quote(file)));
  EXPECT_NE(t.out.find("[ath9k][13220]"), std::string::npos) << t.out;
}

// perf 6.1's mispredict key answers "differs" as "goes right" both ways, so what merges depends on
// its tree's shape. Worked out by hand for this file's 41 branches: 18 predicted ones (the first
// six samples) stay at the root A; the 6 mispredicted go right of it (B); the first branch of
// neither kind goes right of B (C, the tree rotates to B over A and C); then the predicted
// ones of the last five samples walk B, C and make D (9), the mispredicted ones join B (10) and
// the others C (4). perf prints the last text again for a branch of neither kind.
TEST_F(ReportBranch, MispredictKeyAsPerfsTree) {
  const std::string file = write_file(dir_, binary_, syms_, false, false);
  CommandResult r = run(fmt::format("{} report -i {} -q --sort mispredict", TPERF_BINARY, shell_quote(file)));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("    43.90%  N                  \n"
                       "    24.39%  Y                  \n"
                       "    21.95%  N                  \n"
                       "     9.76%  N                  \n"),
            std::string::npos)
      << r.out;
}

// The branch mode's numbers, worked out from the file: 6 samples of 4 branches, 4 of 4, 1 of 1
// (41 branches); burn+0x1c -> burn+0x4 is 6 of them.
TEST_F(ReportBranch, BranchesAreTheEntries) {
  const std::string file = write_file(dir_, binary_, syms_, false, false);
  CommandResult r = run(fmt::format("{} report -i {} -n -q --sort symbol_from,symbol_to", TPERF_BINARY, shell_quote(file)));
  ASSERT_EQ(r.status, 0) << r.err;
  CommandResult h = run(fmt::format("{} report -i {} --no-unwind-summary", TPERF_BINARY, shell_quote(file)));
  EXPECT_NE(h.out.find("# Samples: 41  of event 'cpu-clock'"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("# Event count (approx.): 41\n"), std::string::npos) << h.out;
  // 6/41 = 14.63%
  EXPECT_NE(r.out.find("14.63%             6  [.] burn  "), std::string::npos) << r.out;
}

// The other branch types in the statistics block, and the bits after the type left alone.
TEST_F(ReportBranch, EveryBranchTypeAsPerf) {
  const std::string file = write_file(dir_, binary_, syms_, false, false, /*all_types=*/true);
  for (const char* args : {"", "-s dso,sym -n"}) {
    SCOPED_TRACE(args);
    expect_report_as_perf(file, args, 20);
  }
}

// A file of the other byte order (a big-endian machine's): the flags' bitfields as that
// machine's compiler lays them out.
TEST_F(ReportBranch, OtherByteOrderAsPerf) {
  const std::string file = write_file(dir_, binary_, syms_, true, false, /*all_types=*/true, /*swap=*/true);
  for (const char* cmd : {"report --stdio", "report --stdio -s mispredict,in_tx,abort,cycles", "script -F brstack"}) {
    SCOPED_TRACE(cmd);
    const bool report = std::string(cmd).starts_with("report");
    ComparedOutputs c = compare_outputs(
        fmt::format("perf {} -i {} 2>/dev/null | {}", cmd, shell_quote(file), kReportLines),
        fmt::format("{} {} {} -i {} | {}", TPERF_BINARY, cmd, report ? "--no-unwind-summary" : "", shell_quote(file),
                    kReportLines),
        file);
    EXPECT_EQ(c.diff, "") << "diff perf tperf";
    EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
    EXPECT_GE(c.perf_lines, 5u) << "perf printed too little";
  }
}

TEST_F(ReportBranch, PipeModeAsPerf) {
  for (bool hw_index : {false, true}) {
    const std::string file = write_file(dir_, binary_, syms_, hw_index, true);
    // A pipe's header does not say it has branch stacks: perf gives the plain report, and the
    // branch mode with -b.
    for (const char* args : {"", "-b", "-b -n -s dso_from,cycles,in_tx", "--no-branch-stack"}) {
      for (bool stdin_pipe : {false, true}) {
        SCOPED_TRACE(fmt::format("hw_index {} stdin {} report {}", hw_index, stdin_pipe, args));
        const std::string in = stdin_pipe ? "-" : shell_quote(file);
        const std::string feed = stdin_pipe ? fmt::format("cat {} | ", shell_quote(file)) : "";
        ComparedOutputs c = compare_outputs(
            fmt::format("{}perf report --stdio -i {} {} 2>/dev/null | {}", feed, in, args, kReportLines),
            fmt::format("{}{} report --stdio --no-unwind-summary -i {} {} | {}", feed, TPERF_BINARY, in, args,
                        kReportLines),
            file);
        EXPECT_EQ(c.diff, "") << "diff perf tperf";
        EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
        EXPECT_GE(c.perf_lines, 5u) << "perf printed too little";
      }
    }
  }
}

// A named FIFO is read once: branch mode is not looked for in it before the report reads it.
TEST_F(ReportBranch, NamedFifoAsPerf) {
  const std::string file = write_file(dir_, binary_, syms_, false, true);
  const std::string fifo = dir_.file("branch.fifo");
  ASSERT_EQ(run(fmt::format("mkfifo {}", shell_quote(fifo))).status, 0) << "set-up failed: mkfifo";
  ComparedOutputs c = compare_outputs(
      fmt::format("perf report --stdio -i {} 2>/dev/null | {}", shell_quote(file), kReportLines),
      fmt::format("cat {} > {} & {} report --stdio --no-unwind-summary -i {} | {}", shell_quote(file), shell_quote(fifo),
                  TPERF_BINARY, shell_quote(fifo), kReportLines),
      file);
  EXPECT_EQ(c.diff, "") << "diff perf tperf";
  EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
  EXPECT_GE(c.perf_lines, 5u) << "perf printed too little";
}

TEST_F(ReportBranch, ScriptBrstackAsPerf) {
  for (bool pipe : {false, true}) {
    for (bool hw_index : {false, true}) {
      const std::string file = write_file(dir_, binary_, syms_, hw_index, pipe, /*all_types=*/true);
      for (const char* fields : {"brstack", "brstacksym", "ip,brstack,dso", "brstacksym,dso", "tid,ip,sym,brstacksym"}) {
        SCOPED_TRACE(fmt::format("pipe {} hw_index {} -F {}", pipe, hw_index, fields));
        ComparedOutputs c =
            compare_outputs(fmt::format("perf script -i {} -F {}", shell_quote(file), fields),
                            fmt::format("{} script -i {} -F {}", TPERF_BINARY, shell_quote(file), fields), file);
        EXPECT_EQ(c.diff, "") << "diff perf tperf";
        EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
        EXPECT_GE(c.perf_lines, 10u) << "perf printed too little";
      }
    }
  }
}

// perf 6.1 adds its ipc_lbr key to a branch-mode --sort that says "symbol" and then dies of SIGSEGV
// (on this file and on the corpus' LBR recording alike), so `-b -s symbol_from` has no perf report
// to compare with. tperf prints the report (without the IPC column perf never got to print); its
// counts are checked against perf script's branches: each row's branches are those taken from
// that function, the rows without a symbol together are script's "[unknown]" ones.
TEST_F(ReportBranch, SymbolKeysWherePerfCrashes) {
  const std::string file = write_file(dir_, binary_, syms_, false, false, /*all_types=*/true);
  const CommandResult script = run(fmt::format(
      "perf script -F brstacksym -i {} 2>/dev/null | tr ' ' '\\n' | grep / | "
      "awk -F/ '{{s=$1; sub(/\\+.*/,\"\",s); n[s]++}} END {{for (k in n) print k, n[k]}}'",
      shell_quote(file)));
  ASSERT_EQ(script.status, 0) << script.err;
  std::map<std::string, uint64_t> want;
  std::istringstream in(script.out);
  for (std::string name; in >> name;) in >> want[name];
  ASSERT_EQ(want.size(), 4u) << script.out;  // main, burn, leaf, [unknown]
  const CommandResult t =
      run(fmt::format("{} report --stdio -q -n -i {} -b -s symbol_from", TPERF_BINARY, shell_quote(file)));
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(t.out.find("IPC"), std::string::npos) << t.out;
  std::map<std::string, uint64_t> got;
  std::istringstream rows(t.out);
  for (std::string line; std::getline(rows, line);) {
    std::istringstream row(line);
    std::string pct, level, sym;
    uint64_t n = 0;
    if (!(row >> pct >> n >> level >> sym) || pct.back() != '%') continue;
    got[sym.rfind("0x", 0) == 0 ? "[unknown]" : sym] += n;
  }
  EXPECT_EQ(got, want) << t.out;
}

// Branch stacks with loops in them, for --branch-history: perf drops a run of branches taken from
// the same addresses as the run before it and counts the iteration ("iter:N avg_cycles:N", shown
// once a chain went through the frame twice). Three alike samples of a three-times repeated
// branch, two of a loop of two branches, and one without a loop.
std::string write_loop_file(const TempDir& dir, const std::string& binary, const std::map<std::string, uint64_t>& syms) {
  PerfEventAttr attr = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCpu |
                                            kSampleBranchStack);
  attr.branch_sample_type = kBranchAny;
  RecordBuilder rb(attr, false);
  std::vector<std::vector<uint8_t>> records;
  uint64_t now = 1000;
  SampleId id;
  id.pid = id.tid = kPid;
  CommEvent comm;
  comm.pid = comm.tid = kPid;
  comm.comm = "looper";
  id.time = ++now;
  records.push_back(rb.comm(comm, id));
  id.time = ++now;
  records.push_back(rb.mmap2(test::executable_map(kPid, kApp, binary), id));
  auto at = [&](const char* name, uint64_t off) { return kApp + syms.at(name) + off; };
  auto sample = [&](uint64_t ip, std::vector<BranchEntry> branches) {
    Sample s;
    s.pid = s.tid = kPid;
    s.time = ++now;
    s.period = 100000;
    s.cpu = 0;
    s.ip = ip;
    s.branches = std::move(branches);
    records.push_back(rb.sample(s, kMiscUser));
  };
  const uint64_t main1 = at("main", 0x10), burn1 = at("burn", 0x4), burn2 = at("burn", 0x1c), leaf1 = at("leaf", 0x8);
  for (int i = 0; i < 3; ++i) {
    sample(burn1, {{burn2, burn1, flags(false, true, false, false, 5 + i, 1)},
                   {burn2, burn1, flags(false, true, false, false, 6, 1)},
                   {burn2, burn1, flags(false, false, false, false, 7, 1)},
                   {main1, burn1, flags(false, true, false, false, 12, 4)},
                   {leaf1, main1, flags(true, false, false, false, 40, 6)}});
  }
  for (int i = 0; i < 2; ++i) {
    sample(leaf1, {{main1, leaf1, flags(false, true, false, false, 3, 4)},
                   {leaf1 + 4, main1 + 8, flags(false, true, false, false, 4, 6)},
                   {main1, leaf1, flags(false, true, false, false, 5 + i, 4)},
                   {leaf1 + 4, main1 + 8, flags(false, true, false, false, 6, 6)},
                   {main1, leaf1, flags(false, true, false, false, 7, 4)},
                   {burn2, main1, flags(false, false, false, true, 8, 6)}});
  }
  sample(main1, {{burn2, main1, flags(false, true, false, false, 9, 6)}, {main1 + 2, burn1, flags(false, true, false, false, 2, 4)}});
  std::string path = dir.file("branch-loops.data");
  Writer w(Writer::Options{});
  w.open(path);
  w.add_attr(attr, {1}, "cpu-clock");
  w.set_feature(kFeatBranchStack, {});
  for (const auto& r : records) w.write_record(r);
  w.finish();
  return path;
}

// Samples with both branch stacks and callchains (perf record -b -g), for --branch-history: perf
// puts the branches first in the chain and walks fewer callchain entries after them. From the
// leaf, for each branch it steps over the next entry if that is a context marker or the branch's
// return address (source at most 8 bytes before), and stops as many entries short of the root as
// it kept branches; from the root it leaves out as many innermost entries. Samples: user ones
// whose first branches are the chain's return addresses; kernel ones whose kernel frames that
// walk from the leaf takes for user addresses (the kernel marker is stepped over); a chain
// shorter than the branches; a loop; an empty branch stack; 130 branches, which perf skips as
// corrupted (four such samples).
std::string write_chain_branch_file(const TempDir& dir, const std::string& binary,
                                    const std::map<std::string, uint64_t>& syms, bool pipe = false) {
  PerfEventAttr attr = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCpu |
                                            kSampleCallchain | kSampleBranchStack);
  attr.branch_sample_type = kBranchAny;
  BranchRecords r(attr, false, binary, "chainbr", nullptr);
  auto at = [&](const char* name, uint64_t off) { return kApp + syms.at(name) + off; };
  const uint64_t main1 = at("main", 0x10), main_ret = at("main", 0x20), main_ret2 = at("main", 0x30);
  const uint64_t burn1 = at("burn", 0x4), burn_ret = at("burn", 0x10), leaf0 = at("leaf", 0x2), leaf1 = at("leaf", 0x8);
  const uint64_t user = kContextUser, kernel = kContextKernel;
  for (int i = 0; i < 5; ++i) {
    r.sample(kPid, leaf1,
             {{leaf0, leaf1, flags(false, true, false, false, 2 + i % 2, 1)},
              {leaf1 - 4, leaf0, flags(false, true, false, false, 3, 1)},
              {burn_ret - 5, at("leaf", 0), flags(false, true, false, false, 11, 4)},
              {main1, burn1, flags(true, false, false, false, 30, 4)}},
             {user, leaf1, burn_ret, main_ret, kLib + 0x100, kLib + 0x200, kLib + 0x300, main_ret2, kLib + 0x400,
              kLib + 0x500});
  }
  for (int i = 0; i < 3; ++i) {
    r.sample(kPid, kKernel + 0x10,
             {{kKernel + 0xc, kKernel + 0x10, flags(false, true, false, false, 5, 1)},
              {main1 - 3, kKernel, flags(false, true, false, false, 9, 7)}},
             {kernel, kKernel + 0x10, kKernel + 0x40, user, main1, kLib + 0x100, kLib + 0x200}, kMiscKernel);
  }
  for (int i = 0; i < 2; ++i) {
    r.sample(kPid + 1, burn1,
             {{burn_ret, burn1, flags(false, true, false, false, 4, 1)},
              {main1, burn_ret, flags(false, true, false, false, 4, 1)},
              {burn_ret, burn1, flags(false, true, false, false, 6, 1)},
              {main1, burn_ret, flags(false, false, false, false, 8, 1)},
              {kLib + 0x1230, main1, flags(false, true, false, false, 0, 6)}},
             {user, burn1, main_ret});
  }
  r.sample(kPid + 1, main1, {}, {user, main1, kLib + 0x100, kLib + 0x200});
  std::vector<BranchEntry> many;
  for (int i = 0; i < 130; ++i) many.push_back({main1 + (i % 2) * 4, burn1, flags(false, true, false, false, 1, 1)});
  // Four times, so that no two sibling chains weigh the same: perf orders tied siblings of two
  // DSOs by the addresses of its DSO objects, which its heap decides. With one such sample (tied
  // with the one above) or two (tied with the pair of kPid + 1 samples), the environment the
  // test ran in swapped perf's order of the tied chains.
  for (int i = 0; i < 4; ++i) r.sample(kPid, burn1, many, {user, burn1, main_ret, kLib + 0x300});
  return r.write(dir.file(pipe ? "chain-branch-pipe.data" : "chain-branch.data"), pipe);
}

// perf report --branch-history: each sample's chain is its branch stack (a branch's target, then
// where it was taken, oldest first in caller order), frames keyed by address and shown with their
// srcline, each with its counts (average cycles, prediction, abort, types, loop iterations), the
// sort srcline,symbol,dso with the IPC column. perf's output on the writer's files, in file and
// pipe mode (where the header names no branch stacks: no counts), and on the loops file.
TEST_F(ReportBranch, BranchHistoryAsPerf) {
  const std::vector<const char*> args = {"",
                                         "--no-children",
                                         "-g callee",
                                         "-G",
                                         "-n",
                                         "-s sym",
                                         "-s dso,sym -n",
                                         "--max-stack 3",
                                         "-g graph,0",
                                         "-g folded",
                                         "-g flat",
                                         "-g fractal",
                                         "-g fractal,0,callee",
                                         "-s comm,dso,symbol",
                                         "-s srcline",
                                         "-F overhead,sym"};
  for (bool hw_index : {false, true}) {
    const std::string file = write_file(dir_, binary_, syms_, hw_index, false, /*all_types=*/true);
    for (const char* a : args) {
      SCOPED_TRACE(fmt::format("hw_index {} --branch-history {}", hw_index, a));
      expect_report_as_perf(file, fmt::format("--branch-history {}", a), 10, "trap '' PIPE; ");
    }
  }
  const std::string loops = write_loop_file(dir_, binary_, syms_);
  for (const char* a : {"", "-g callee", "-g graph,0", "-n -s sym", "--max-stack 4"}) {
    SCOPED_TRACE(fmt::format("loops --branch-history {}", a));
    expect_report_as_perf(loops, fmt::format("--branch-history {}", a), 10, "trap '' PIPE; ");
  }
  // The counts perf printed, worked out by hand from the loops file: the third branch from
  // burn+0x1c repeats the second, which is dropped and counted once per sample (3 samples; the
  // first made the node, so 3 iterations over 2 later passes: iter 1, 18 cycles / 3: 6).
  const CommandResult t = run(fmt::format("{} report --stdio -q -i {} --branch-history -g graph,0", TPERF_BINARY,
                                          shell_quote(loops)));
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("(cycles:6 iter:1 avg_cycles:6)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("(CALL)"), std::string::npos) << t.out;
  for (bool stdin_pipe : {false, true}) {
    const std::string file = write_file(dir_, binary_, syms_, false, true, /*all_types=*/true);
    const std::string in = stdin_pipe ? "-" : shell_quote(file);
    const std::string feed = stdin_pipe ? fmt::format("cat {} | ", shell_quote(file)) : "";
    for (const char* a : {"", "-g callee -n"}) {
      SCOPED_TRACE(fmt::format("pipe stdin {} --branch-history {}", stdin_pipe, a));
      ComparedOutputs c = compare_outputs(
          fmt::format("trap '' PIPE; {}perf report --stdio -i {} --branch-history {} 2>/dev/null | {}", feed, in, a,
                      kReportLines),
          fmt::format("{}{} report --stdio --no-unwind-summary -i {} --branch-history {} | {}", feed, TPERF_BINARY, in,
                      a, kReportLines),
          file);
      EXPECT_EQ(c.diff, "") << "diff perf tperf";
      EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
      EXPECT_GE(c.perf_lines, 10u) << "perf printed too little";
    }
  }
}

// --branch-history on samples with both branch stacks and callchains: the branches, then the part
// of the callchain perf walks after them (see write_chain_branch_file), in every order and form.
TEST_F(ReportBranch, BranchHistoryWithCallchainsAsPerf) {
  const std::string file = write_chain_branch_file(dir_, binary_, syms_);
  expect_reports_as_perf(file,
                         {"--branch-history", "--branch-history --no-children", "--branch-history -g callee",
                          "--branch-history -G", "--branch-history -g caller --no-children",
                          "--branch-history -n -s sym", "--branch-history -s dso,sym", "--branch-history --max-stack 3",
                          "--branch-history --max-stack 1 --no-children", "--branch-history -g graph,0",
                          "--branch-history -g folded", "--branch-history -g flat --no-children",
                          "--branch-history -g fractal,0,callee", "--branch-history -F overhead,sym",
                          "--branch-history -s srcline"},
                         10);
  // A pipe's header never names branch stacks: perf makes the chains of the callchains alone.
  const std::string pipe = write_chain_branch_file(dir_, binary_, syms_, /*pipe=*/true);
  expect_reports_as_perf(pipe, {"--branch-history", "--branch-history --no-children -g callee"}, 10);
  // The same stream on standard input.
  for (const char* args : {"--branch-history", "--branch-history -G -n"}) {
    SCOPED_TRACE(fmt::format("stdin: {}", args));
    expect_report_as_perf(pipe, args, 10, "trap '' PIPE; ", /*on_stdin=*/true);
  }
}

// perf's branch mode draws no callchain graphs: on a file whose samples also have callchains it
// takes any -g (and -G, --max-stack) and prints its branch report; on one without, -g none,
// -G and --max-stack, while another -g stops it with an error, as the plain report does.
TEST_F(ReportBranch, CallgraphOptionsInBranchModeAsPerf) {
  const std::string chains = write_chain_branch_file(dir_, binary_, syms_);
  expect_reports_as_perf(chains, {"-g none", "-g caller", "-g folded", "-G", "-g graph,0.5,callee", "--max-stack 2 -n"},
                         10);
  const std::string plain = write_file(dir_, binary_, syms_, false, false);
  expect_reports_as_perf(plain, {"-g none", "-G", "--max-stack 2"}, 10);
  const CommandResult perf = run(fmt::format("perf report --stdio -i {} -g caller 2>&1", shell_quote(plain)));
  EXPECT_NE(perf.out.find("But no callchain or branch data."), std::string::npos) << perf.out;
  const CommandResult t = run(fmt::format("{} report --stdio -i {} -g caller", TPERF_BINARY, shell_quote(plain)));
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.err.find(plain + ": -g caller: the file has no callchains"), std::string::npos) << t.err;
  EXPECT_EQ(t.out.find("Overhead"), std::string::npos) << t.out;
}

// A file with neither branch stacks nor callchains: a one-line error naming it (perf prints its
// error and no report).
TEST_F(ReportBranch, BranchHistoryWithoutBranchesOrChains) {
  const std::string file = dir_.file("plain.data");
  const CommandResult rec = run(fmt::format("perf record -q -e cpu-clock -o {} -- true", shell_quote(file)));
  ASSERT_EQ(rec.status, 0) << "set-up failed: " << rec.err;
  const CommandResult perf = run(fmt::format("perf report --stdio -i {} --branch-history 2>&1", shell_quote(file)));
  EXPECT_NE(perf.out.find("But no callchain or branch data."), std::string::npos) << perf.out;
  const CommandResult t = run(fmt::format("{} report --stdio -i {} --branch-history", TPERF_BINARY, shell_quote(file)));
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.err.find(file + ": --branch-history: the samples have neither branch stacks nor callchains"),
            std::string::npos)
      << t.err;
  EXPECT_EQ(t.out.find("Overhead"), std::string::npos) << t.out;
}

// The real LBR recording of the corpus (13 samples of 32 branches each, kernel and ld.so code
// whose files are not here: addresses only).
TEST(ReportBranchCorpus, BranchHistoryAsPerf) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_CORPUS();
  expect_reports_as_perf(test::corpus_dir() + "/quipper/testdata/perf.data.branch-4.14",
                         {"--branch-history", "--branch-history -g callee", "--branch-history -n -s sym",
                          "--branch-history -g graph,0", "--branch-history --max-stack 3", "--branch-history -g folded"},
                         20);
}

}  // namespace
}  // namespace tperf::test::e2e

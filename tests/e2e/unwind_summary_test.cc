// The unwinding quality block of `tperf report` on files made with our writer: samples whose
// callchains were built to end in each way (an entry point, an unmapped address, a DSO whose
// file is gone, a named function, the depth limit), stack copies of known fill, LOST and
// LOST_SAMPLES records. The counts printed must be the ones put in. The symbols come from a
// workload binary compiled at test time, their addresses from `nm`.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
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

constexpr uint64_t kBase = 0x555555554000;    // where the workload is mapped
constexpr uint64_t kGoneBase = 0x7f0000000000;  // a library whose file does not exist
constexpr int32_t kPid = 4242;
constexpr uint32_t kStackSize = 1024;

PerfEventAttr sample_attr() {
  PerfEventAttr a =
      test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCallchain | kSampleStackUser);
  a.sample_stack_user = kStackSize;
  return a;
}

class UnwindSummary : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    binary_ = workload("forkexec", &err);
    ASSERT_FALSE(binary_.empty()) << "set-up failed: " << err;
    syms_ = nm_symbols(binary_);
    for (const char* s : {"_start", "main", "burn", "leaf"}) {
      ASSERT_TRUE(syms_.count(s)) << "set-up failed: nm did not list " << s << " in " << binary_;
    }
  }

  uint64_t at(const char* name) { return kBase + syms_.at(name) + 1; }

  void sample(std::vector<uint64_t> chain, uint64_t dyn_size, uint16_t misc = kMiscUser, int32_t pid = kPid) {
    Sample s;
    s.ip = chain.size() > 1 ? chain[1] : 0;
    s.pid = s.tid = static_cast<uint32_t>(pid);
    s.time = ++now_;
    s.period = 100000;
    s.callchain = std::move(chain);
    s.stack_user_size = kStackSize;
    s.stack_dyn_size = dyn_size;
    records_.push_back(rb_.sample(s, misc));
  }

  std::string write(const TempDir& dir) {
    std::string path = dir.file("unwind.data");
    Writer w;
    w.open(path);
    w.add_attr(sample_attr(), {1}, "cpu-clock");
    for (const auto& r : records_) w.write_record(r);
    w.finish();
    return path;
  }

  SampleId sid() {
    SampleId s;
    s.pid = s.tid = kPid;
    s.time = ++now_;
    return s;
  }

  std::string binary_;
  std::map<std::string, uint64_t> syms_;
  RecordBuilder rb_{sample_attr()};
  std::vector<std::vector<uint8_t>> records_;
  uint64_t now_ = 1000;
};

// The count printed before `what` in the block, -1 when there is no such line.
long count_before(const std::string& out, const std::string& what) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find(what);
    if (line.rfind("# ", 0) != 0 || at == std::string::npos) continue;
    std::smatch m;
    static const std::regex re(R"(^#\s+([0-9]+) )");
    if (std::regex_search(line, m, re)) return std::stol(m[1]);
  }
  return -1;
}

TEST_F(UnwindSummary, CountsWhatTheFileHolds) {
  TempDir dir;
  CommEvent comm;
  comm.pid = comm.tid = kPid;
  comm.comm = "forkexec";
  comm.exec = true;
  records_.push_back(rb_.comm(comm, sid()));
  records_.push_back(rb_.mmap2(test::executable_map(kPid, kBase, binary_), sid()));
  records_.push_back(rb_.mmap2(test::executable_map(kPid, kGoneBase, "/nonexistent/libgone.so"), sid()));

  const uint64_t user = kContextUser;
  // 5 whole stacks (two with full stack copies), 4 that run into an unmapped address, 3 that
  // stop at a named function, 2 that end in the library without a file, 1 cut at 127 frames,
  // and a kernel thread's sample without user frames.
  for (int i = 0; i < 5; ++i) sample({user, at("leaf"), at("burn"), at("main"), at("_start")}, i < 2 ? kStackSize : 200);
  for (int i = 0; i < 4; ++i) sample({user, at("leaf"), at("burn"), 0xdead0000}, 300);
  for (int i = 0; i < 3; ++i) sample({user, at("leaf"), at("burn")}, 300);
  for (int i = 0; i < 2; ++i) sample({user, at("leaf"), kGoneBase + 0x1234}, kStackSize);
  std::vector<uint64_t> deep = {user, at("leaf")};
  while (deep.size() < 128) deep.push_back(at("burn"));
  sample(deep, 300);
  sample({kContextKernel, 0xffffffff81000100}, 0, kMiscKernel, 0);
  records_.push_back(rb_.lost(1, 10, sid()));
  records_.push_back(rb_.lost(1, 20, sid()));
  records_.push_back(rb_.lost_samples(7, sid()));
  std::string path = write(dir);

  CommandResult r = run(fmt::format("{} report -i {} --stdio", TPERF_BINARY, shell_quote(path)));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string& out = r.out;
  SCOPED_TRACE(out);
  EXPECT_NE(out.find("# Unwinding quality: 16 samples, 16 with a callchain, 15 with user-space frames"), std::string::npos);
  EXPECT_EQ(count_before(out, "reach a thread entry point"), 5);
  EXPECT_EQ(count_before(out, "end in an address outside every mapping"), 4);
  EXPECT_EQ(count_before(out, "end in a named function that is no entry point"), 3);
  EXPECT_EQ(count_before(out, "end in a frame without a symbol"), 2);
  EXPECT_EQ(count_before(out, "were cut at the kernel's depth limit (127 frames)"), 1);
  EXPECT_EQ(count_before(out, "have [unknown] user frames"), 6);  // the unmapped and the library ones
  EXPECT_NE(out.find("#     /nonexistent/libgone.so (2): file not found"), std::string::npos);
  // 15 user samples and the kernel thread's carry a copy; 2 whole stacks and the 2 library ones filled it.
  EXPECT_NE(out.find("#   4 of 16 user stack copies (25.00%) filled the 1024 bytes asked for"), std::string::npos);
  EXPECT_NE(out.find("#   lost: 2 LOST records (30 events), 7 samples (LOST_SAMPLES)"), std::string::npos);
  EXPECT_NE(out.find("hint: record with --call-graph dwarf,4096"), std::string::npos);
  EXPECT_NE(out.find("hint: rebuild with -fno-omit-frame-pointer"), std::string::npos);

  // --quiet and --no-unwind-summary leave it out.
  for (const char* flag : {"-q", "--no-unwind-summary"}) {
    CommandResult q = run(fmt::format("{} report -i {} {}", TPERF_BINARY, shell_quote(path), flag));
    EXPECT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(q.out.find("Unwinding quality"), std::string::npos) << flag;
    EXPECT_NE(q.out.find("leaf"), std::string::npos) << flag;
  }
}

// A stripped DSO is named with that reason; one with its symbols is not.
TEST_F(UnwindSummary, StrippedDsoIsNamedWithTheReason) {
  TempDir dir;
  std::string stripped = dir.file("stripped_copy");
  CommandResult st = run(fmt::format("strip -o {} {}", shell_quote(stripped), shell_quote(binary_)));
  ASSERT_EQ(st.status, 0) << st.err;
  records_.push_back(rb_.mmap2(test::executable_map(kPid, kBase, binary_), sid()));
  records_.push_back(rb_.mmap2(test::executable_map(kPid, kGoneBase, stripped), sid()));
  // 3 samples whose leaf is the stripped copy's leaf(), called from the full binary's main().
  for (int i = 0; i < 3; ++i) sample({kContextUser, kGoneBase + syms_.at("leaf") + 1, at("main"), at("_start")}, 100);
  std::string path = write(dir);
  // An empty HOME: the stripped copy has the full binary's build id, which perf's build-id cache
  // (~/.debug, filled by every `perf record` of the e2e tests) would hold with its symbols.
  const std::string home = dir.file("home");
  ASSERT_EQ(run(fmt::format("mkdir -p {}", shell_quote(home))).status, 0);
  CommandResult r = run(fmt::format("HOME={} {} report -i {}", shell_quote(home), TPERF_BINARY, shell_quote(path)));
  ASSERT_EQ(r.status, 0) << r.err;
  // strip leaves a PIE's .dynsym without defined functions: no symbol table at all.
  EXPECT_NE(r.out.find(fmt::format("#     {} (3): no symbol table (stripped", stripped)), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(fmt::format("#     {} (", binary_)), std::string::npos) << r.out;
  EXPECT_EQ(count_before(r.out, "reach a thread entry point"), 3) << r.out;
  EXPECT_EQ(count_before(r.out, "have [unknown] user frames"), 3) << r.out;
}

// A file without callchains and a clean one: the block says so in one or two lines and gives
// no hint about stacks.
TEST_F(UnwindSummary, NoCallchainsSaysSo) {
  TempDir dir;
  PerfEventAttr a = sample_attr();
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSamplePeriod;
  a.sample_stack_user = 0;
  RecordBuilder rb(a);
  std::string path = dir.file("flat.data");
  Writer w;
  w.open(path);
  w.add_attr(a, {1}, "cpu-clock");
  w.write_record(rb.mmap2(test::executable_map(kPid, kBase, binary_), sid()));
  for (int i = 0; i < 3; ++i) {
    Sample s;
    s.ip = at("leaf");
    s.pid = s.tid = kPid;
    s.time = ++now_;
    s.period = 1;
    w.write_record(rb.sample(s));
  }
  w.finish();
  CommandResult r = run(fmt::format("{} report -i {}", TPERF_BINARY, shell_quote(path)));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("# Unwinding quality: 3 samples, 0 with a callchain, 0 with user-space frames\n"
                       "#   no callchains were recorded"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("frame-pointer"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("lost:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tperf::test::e2e

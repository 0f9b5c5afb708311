// /proc parsing for synthesis: status and maps lines, held against /proc of this test process
// (and `ps` as the oracle for the thread list), plus perf's own parsing rules for odd lines.
#include "record/proc_synthesis.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "record/perf_event.h"
#include "test_util.h"

namespace tperf::record {
namespace {

TEST(ProcSynthesis, MapsLines) {
  auto m = parse_maps_line("55d8c291e000-55d8c2923000 r-xp 00002000 fe:00 248056                     /usr/bin/sleep");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->start, 0x55d8c291e000u);
  EXPECT_EQ(m->end, 0x55d8c2923000u);
  EXPECT_EQ(m->pgoff, 0x2000u);
  EXPECT_EQ(m->maj, 0xfeu);
  EXPECT_EQ(m->min, 0u);
  EXPECT_EQ(m->inode, 248056u);
  EXPECT_EQ(m->prot, unsigned(PROT_READ | PROT_EXEC));
  EXPECT_EQ(m->flags, unsigned(MAP_PRIVATE));
  EXPECT_EQ(m->path, "/usr/bin/sleep");
  auto anon = parse_maps_line("7f0000000000-7f0000001000 rw-s 00000000 00:00 0 ");
  ASSERT_TRUE(anon);
  EXPECT_EQ(anon->path, "");
  EXPECT_EQ(anon->flags, unsigned(MAP_SHARED));
  auto spaces = parse_maps_line("1000-2000 r-xp 00000000 08:01 5 /path with spaces/lib.so (deleted)");
  ASSERT_TRUE(spaces);
  EXPECT_EQ(spaces->path, "/path with spaces/lib.so (deleted)");
  for (const char* bad : {"", "garbage", "2000-1000 r-xp 0 0:0 0 x", "1000-2000 rzxp 0 00:00 0", "1000-2000 r-xp 0 0000 0",
                          "1000-2000 r-xq 0 00:00 0", "1000-2000 r-xp 0 00:00 12x /a"}) {
    EXPECT_FALSE(parse_maps_line(bad)) << bad;
  }
}

TEST(ProcSynthesis, StatusOfThisProcessAndAKernelThread) {
  auto st = parse_task_status(test::read_file("/proc/self/status"));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->tgid, getpid());
  EXPECT_EQ(st->ppid, getppid());
  EXPECT_FALSE(st->kernel_thread);
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  EXPECT_EQ(st->name, comm);
  // kthreadd (pid 2) has no memory: perf's test for kernel threads.
  if (std::ifstream("/proc/2/status")) {
    auto kst = parse_task_status(test::read_file("/proc/2/status"));
    ASSERT_TRUE(kst);
    EXPECT_TRUE(kst->kernel_thread);
  }
  EXPECT_FALSE(parse_task_status("nothing here"));
}

TEST(ProcSynthesis, ThreadsOfThisProcess) {
  // The second thread lives until ps has listed the threads (a fixed sleep was once shorter
  // than ps took on a loaded machine, and ps missed it).
  std::promise<void> listed;
  std::thread t([done = listed.get_future()] { done.wait(); });
  auto tids = process_threads(getpid());
  std::string ps = test::run_command("ps -L -o lwp= -p " + std::to_string(getpid()));
  listed.set_value();
  t.join();
  std::vector<int32_t> expected;
  std::istringstream in(ps);
  int32_t v;
  while (in >> v) expected.push_back(v);
  std::sort(expected.begin(), expected.end());
  EXPECT_GE(expected.size(), 2u) << "set-up: ps should list this thread and the second one";
  EXPECT_EQ(tids, expected);
  EXPECT_TRUE(process_threads(-5).empty());
}

TEST(ProcSynthesis, ThreadsRecordsForThisProcess) {
  // COMM per thread, MMAP2 of every executable mapping of the process (the test binary's text).
  perfdata::PerfEventAttr a;
  perfdata::RecordBuilder rb(a);
  std::vector<std::vector<uint8_t>> recs;
  int32_t self = getpid();
  auto stats = synthesize_threads(rb, std::span<const int32_t>(&self, 1), SynthesisOptions{},
                                  [&](std::span<const uint8_t> r) { recs.emplace_back(r.begin(), r.end()); });
  EXPECT_EQ(stats.threads, 1u);
  EXPECT_EQ(stats.processes, 1u);
  size_t exec_maps = 0;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto m = parse_maps_line(line);
    if (m && (m->prot & PROT_EXEC)) ++exec_maps;
  }
  EXPECT_EQ(stats.maps, exec_maps);
  ASSERT_EQ(recs.size(), 1 + stats.maps);
  EXPECT_EQ(recs[0][0], perfdata::kRecordComm);
}

TEST(ProcSynthesis, CpuLists) {
  EXPECT_EQ(parse_cpu_list("0-3,8"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parse_cpu_list("3,1,1"), (std::vector<int>{1, 3}));
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_THROW(parse_cpu_list("3-1"), std::invalid_argument);
  EXPECT_THROW(parse_cpu_list("a"), std::invalid_argument);
  auto online = online_cpus();
  EXPECT_EQ(online.size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
}

}  // namespace
}  // namespace tperf::record

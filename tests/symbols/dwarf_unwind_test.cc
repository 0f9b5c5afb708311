// DwarfUnwinder on stacks with known answers and on bad input. The known answer: this test
// process's own stack, captured in a three-deep call chain, whose return addresses the functions
// record themselves with __builtin_return_address (the unwinder must give each minus one, as
// perf does). Bad input: garbage registers, stack copies shorter than their dyn_size claims,
// samples without registers; none may crash or give more than --max-stack frames.
#include "symbols/dwarf_unwind.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/record_builder.h"
#include "perfdata/sample.h"
#include "session/machine.h"
#include "symbols/elf_file.h"

namespace tperf::symbols {
namespace {

// perf's x86 register ids.
constexpr unsigned kBx = 1, kBp = 6, kSp = 7, kIp = 8, kR12 = 20, kR13 = 21, kR14 = 22, kR15 = 23;
constexpr uint64_t kPerfX86Mask = 0xff0fffULL;  // what perf record --call-graph dwarf asks for

// The process's executable file mappings, as PERF_RECORD_MMAP2 would report them.
void map_own_files(session::Machine& machine, int32_t pid) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream ls(line);
    std::string range, perms, offset, dev, inode, path;
    ls >> range >> perms >> offset >> dev >> inode >> path;
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    uint64_t start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    uint64_t end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    perfdata::Mmap2Event e;
    e.pid = pid;
    e.tid = pid;
    e.addr = start;
    e.len = end - start;
    e.pgoff = std::stoull(offset, nullptr, 16);
    e.filename = path;
    machine.on_mmap2(e);
  }
}

struct Snapshot {
  uint64_t ip = 0, sp = 0, bp = 0, bx = 0, r12 = 0, r13 = 0, r14 = 0, r15 = 0;
  std::vector<uint8_t> stack;
  uint64_t return_of_capture = 0;  // into middle_fn
  uint64_t return_of_middle = 0;   // into outer_fn
};

volatile uint64_t g_sink;

#if defined(__x86_64__)
// Copies raw stack memory as the kernel does, redzones of AddressSanitizer included (its checks
// are off here and the loop stays a loop, not a checked memcpy).
__attribute__((no_sanitize_address, noinline)) void copy_raw(uint8_t* to, const uint8_t* from, size_t n) {
  for (size_t i = 0; i < n; ++i) to[i] = static_cast<const volatile uint8_t*>(from)[i];
}

__attribute__((noinline)) void capture(Snapshot* s) {
  uint64_t regs[8];
  asm volatile(
      "lea 0(%%rip), %%rax\n\t"
      "mov %%rax, 0(%0)\n\t"
      "mov %%rsp, 8(%0)\n\t"
      "mov %%rbp, 16(%0)\n\t"
      "mov %%rbx, 24(%0)\n\t"
      "mov %%r12, 32(%0)\n\t"
      "mov %%r13, 40(%0)\n\t"
      "mov %%r14, 48(%0)\n\t"
      "mov %%r15, 56(%0)\n\t"
      :
      : "r"(regs)
      : "rax", "memory");
  s->ip = regs[0];
  s->sp = regs[1];
  s->bp = regs[2];
  s->bx = regs[3];
  s->r12 = regs[4];
  s->r13 = regs[5];
  s->r14 = regs[6];
  s->r15 = regs[7];
  // What the kernel copies: the bytes from sp up (the callers' frames are not touched after this).
  s->stack.resize(2048);
  copy_raw(s->stack.data(), reinterpret_cast<const uint8_t*>(s->sp), s->stack.size());
  s->return_of_capture = reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

__attribute__((noinline)) void middle_fn(Snapshot* s) {
  capture(s);
  s->return_of_middle = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" ::: "memory");
  g_sink = g_sink + 1;
}

__attribute__((noinline)) void outer_fn(Snapshot* s) {
  middle_fn(s);
  asm volatile("" ::: "memory");
  g_sink = g_sink + 2;
}
#endif

perfdata::Sample sample_of(const Snapshot& s, int32_t pid) {
  perfdata::Sample out;
  out.pid = out.tid = static_cast<uint32_t>(pid);
  out.ip = s.ip;
  out.regs_user.abi = 2;
  out.regs_user.mask = (1ULL << kBx) | (1ULL << kBp) | (1ULL << kSp) | (1ULL << kIp) | (1ULL << kR12) |
                       (1ULL << kR13) | (1ULL << kR14) | (1ULL << kR15);
  out.regs_user.regs = {s.bx, s.bp, s.sp, s.ip, s.r12, s.r13, s.r14, s.r15};  // ascending bit order
  out.stack_user = s.stack;
  out.stack_user_size = s.stack.size();
  out.stack_dyn_size = s.stack.size();
  return out;
}

TEST(DwarfUnwind, OwnStackGivesTheRecordedReturnAddressesMinusOne) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 only";
#else
  Snapshot snap;
  outer_fn(&snap);
  const int32_t pid = getpid();
  session::Machine machine;
  session::Thread& thread = machine.findnew_thread(pid, pid);
  map_own_files(machine, pid);
  ASSERT_NE(machine.find_map(&thread, perfdata::kMiscUser, snap.ip), nullptr);

  DwarfUnwinder unwinder(machine);
  perfdata::Sample sample = sample_of(snap, pid);
  std::vector<session::CallchainFrame> frames;
  size_t n = unwinder.unwind(thread, sample, 127, &frames);
  ASSERT_GE(n, 3u);
  ASSERT_EQ(frames.size(), n);
  EXPECT_EQ(frames[0].ip, snap.ip);  // the sampled pc as it is
  EXPECT_EQ(frames[1].ip, snap.return_of_capture - 1);
  EXPECT_EQ(frames[2].ip, snap.return_of_middle - 1);
  for (const auto& f : frames) EXPECT_EQ(f.cpumode, perfdata::kMiscUser);
  EXPECT_NE(frames[1].map, nullptr);

  // --max-stack cuts the walk; a second sample reuses the address space's Dwfl.
  frames.clear();
  EXPECT_EQ(unwinder.unwind(thread, sample, 2, &frames), 2u);
  EXPECT_EQ(frames[1].ip, snap.return_of_capture - 1);
  EXPECT_EQ(unwinder.stats().dwfl_built, 1u);

  // A stack copy cut short after the first frames still gives those frames.
  Snapshot cut = snap;
  cut.stack.resize(16);
  perfdata::Sample short_sample = sample_of(cut, pid);
  short_sample.stack_dyn_size = snap.stack.size();  // claims more than it holds
  frames.clear();
  unwinder.unwind(thread, short_sample, 127, &frames);
  ASSERT_GE(frames.size(), 1u);
  EXPECT_EQ(frames[0].ip, snap.ip);
#endif
}

TEST(DwarfUnwind, GarbageRegistersAndStacksDoNotCrash) {
  const int32_t pid = getpid();
  session::Machine machine;
  session::Thread& thread = machine.findnew_thread(pid, pid);
  map_own_files(machine, pid);
  const auto& maps = thread.maps()->maps();
  ASSERT_FALSE(maps.empty());
  DwarfUnwinder unwinder(machine);
  std::mt19937_64 rng(12345);
  auto in_some_map = [&] {
    const session::Map& m = maps[rng() % maps.size()];
    return m.start + rng() % (m.end - m.start);
  };
  for (int i = 0; i < 400; ++i) {
    perfdata::Sample s;
    s.pid = s.tid = static_cast<uint32_t>(pid);
    s.regs_user.abi = (i % 7 == 0) ? 1 : 2;
    s.regs_user.mask = kPerfX86Mask;
    for (int r = 0; r < std::popcount(kPerfX86Mask); ++r) s.regs_user.regs.push_back(rng() % 2 ? in_some_map() : rng());
    s.regs_user.regs[kIp] = (i % 3) ? in_some_map() : rng();
    std::vector<uint8_t> stack(rng() % 600);
    for (size_t off = 0; off + 8 <= stack.size(); off += 8) {
      uint64_t v = rng() % 2 ? in_some_map() : s.regs_user.regs[kSp] + rng() % 4096;
      std::memcpy(stack.data() + off, &v, 8);
    }
    s.stack_user = stack;
    s.stack_user_size = stack.size();
    s.stack_dyn_size = (i % 2) ? 8192 : stack.size() + 1;  // more than the copy holds
    std::vector<session::CallchainFrame> frames;
    size_t n = unwinder.unwind(thread, s, 16, &frames);
    EXPECT_LE(n, 16u);
    EXPECT_EQ(frames.size(), n);
  }
}

TEST(DwarfUnwind, SamplesWithoutRegistersOrIpGiveNothing) {
  const int32_t pid = getpid();
  session::Machine machine;
  session::Thread& thread = machine.findnew_thread(pid, pid);
  map_own_files(machine, pid);
  DwarfUnwinder unwinder(machine);
  std::vector<session::CallchainFrame> frames;

  perfdata::Sample none;  // ABI_NONE: the task had no user registers (a kernel thread)
  std::vector<uint8_t> stack(64, 0);
  none.stack_user = stack;
  none.stack_dyn_size = 64;
  EXPECT_EQ(unwinder.unwind(thread, none, 127, &frames), 0u);

  perfdata::Sample no_ip;
  no_ip.regs_user.abi = 2;
  no_ip.regs_user.mask = 1ULL << kSp;
  no_ip.regs_user.regs = {0x7ffe0000};
  no_ip.stack_user = stack;
  no_ip.stack_dyn_size = 64;
  EXPECT_EQ(unwinder.unwind(thread, no_ip, 127, &frames), 0u);
  EXPECT_TRUE(frames.empty());
}

// A writer-made sample whose dyn_size claims more bytes than its stack copy holds: perf refuses
// such a sample ("user stack dump failure"); the decoder must refuse it too, or give a sample
// the unwinder handles.
TEST(DwarfUnwind, RecordBuilderSampleWithDynSizeBeyondTheCopy) {
  perfdata::PerfEventAttr attr;
  attr.sample_type = perfdata::kSampleIp | perfdata::kSampleTid | perfdata::kSampleRegsUser | perfdata::kSampleStackUser;
  attr.sample_regs_user = (1ULL << kSp) | (1ULL << kIp);
  attr.sample_stack_user = 64;
  perfdata::RecordBuilder rb(attr);
  perfdata::Sample s;
  s.ip = 0x1234;
  s.pid = s.tid = 7;
  s.regs_user.abi = 2;
  s.regs_user.mask = attr.sample_regs_user;
  s.regs_user.regs = {0x7ffd0000, 0x1234};
  std::vector<uint8_t> stack(64, 0xab);
  s.stack_user = stack;
  s.stack_user_size = 64;
  s.stack_dyn_size = 4096;
  std::vector<uint8_t> rec = rb.sample(s);
  ASSERT_GT(rec.size(), 8u);
  perfdata::Sample decoded;
  bool refused = false;
  try {
    perfdata::decode_sample(std::span<const uint8_t>(rec).subspan(8), false, 0, attr, decoded);
  } catch (const perfdata::FormatError&) {
    refused = true;
  }
  if (!refused) {
    session::Machine machine;
    session::Thread& thread = machine.findnew_thread(7, 7);
    DwarfUnwinder unwinder(machine);
    std::vector<session::CallchainFrame> frames;
    EXPECT_EQ(unwinder.unwind(thread, decoded, 127, &frames), 0u);  // 0x1234 is in no map
  }
}

}  // namespace
}  // namespace tperf::symbols

// symbols::Resolver: its cache of symbol lookups never changes an answer. The same file mapped
// in two processes at different addresses shares cached entries; a KSYMBOL that lands on a kernel
// address looked up before wins from then on.
#include "symbols/resolver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "perfdata/abi.h"
#include "perfdata/records.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"
#include "test_util.h"
#include "util/workqueue.h"

namespace tperf::symbols {
namespace {

// A file with a real symbol table: this test program.
const std::string kFile = "/proc/self/exe";

// Where this program's code is in its file, as the kernel mapped it (/proc/self/maps): the
// executable mapping's file offset and length.
bool own_text(uint64_t* offset, uint64_t* len) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0, off = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx", &start, &end, perms, &off) != 4) continue;
    if (perms[2] != 'x' || !line.ends_with(" " + exe)) continue;
    *offset = off;
    *len = end - start;
    return true;
  }
  return false;
}

void map_file(session::Machine& machine, int32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff) {
  perfdata::MmapEvent e;
  e.pid = e.tid = pid;
  e.addr = addr;
  e.len = len;
  e.pgoff = pgoff;
  e.filename = kFile;
  machine.on_mmap(e);
}

TEST(Resolver, AnswersAsTheSymbolizerInEveryProcessAndOnEveryLookup) {
  uint64_t text_offset = 0, text_len = 0;
  ASSERT_TRUE(own_text(&text_offset, &text_len)) << "no executable mapping of the test program in /proc/self/maps";
  session::Machine machine;
  Symbolizer symbolizer(machine, {});
  Resolver resolver(machine, &symbolizer);
  map_file(machine, 100, 0x400000, text_len, text_offset);
  map_file(machine, 200, 0x7f0000000000, text_len, text_offset);
  const session::Thread& a = machine.findnew_thread(100, 100);
  const session::Thread& b = machine.findnew_thread(200, 200);
  // About 50,000 addresses spread over the code (aligned as code addresses need not be).
  const uint64_t step = std::max<uint64_t>(0x10, text_len / 50000) | 1;
  size_t named = 0, compared = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the second pass is answered from the cache
    for (uint64_t off = 0; off < text_len; off += step) {
      for (const auto& [thread, base] : {std::pair{&a, 0x400000ULL}, std::pair{&b, 0x7f0000000000ULL}}) {
        const uint64_t addr = base + off;
        const ResolvedFrame got = resolver.resolve(thread, perfdata::kMiscUser, addr);
        const session::Map* map = machine.find_map(thread, perfdata::kMiscUser, addr);
        ASSERT_EQ(got.map, map) << std::hex << addr;
        ASSERT_NE(map, nullptr);
        const Resolved want = symbolizer.resolve(*map, thread->pid(), addr);
        ASSERT_EQ(got.at.sym, want.sym) << std::hex << addr;
        ASSERT_EQ(got.at.addr, want.addr) << std::hex << addr;
        named += want.sym != nullptr;
        ++compared;
      }
    }
  }
  EXPECT_GT(named, compared / 10) << "the test program's own symbols were not found";
}

// A kallsyms file in `dir` with `lines`, and the options that name it.
SymbolizerOptions with_kallsyms(const test::TempDir& dir, const char* lines) {
  SymbolizerOptions options;
  options.kallsyms = dir.path() + "/kallsyms";
  std::ofstream(options.kallsyms) << lines;
  return options;
}

// The kernel image's map as perf records it, over [0xffffffff81000000, +0x3000).
perfdata::MmapEvent kernel_text_map() {
  perfdata::MmapEvent e;
  e.misc = perfdata::kMiscKernel;
  e.pid = -1;
  e.addr = 0xffffffff81000000;
  e.len = 0x3000;
  e.pgoff = 0xffffffff81000000;
  e.filename = "[kernel.kallsyms]_text";
  return e;
}

// A kallsyms file of our own for the kernel: a KSYMBOL (a BPF program) registered later over
// an address the kernel's table answered before must be the answer from then on.
TEST(Resolver, AKsymbolOverAnAddressLookedUpBeforeWins) {
  test::TempDir dir;
  session::Machine machine;
  const SymbolizerOptions options = with_kallsyms(dir,
                                                  "ffffffff81000000 T _text\n"
                                                  "ffffffff81000000 T startup_64\n"
                                                  "ffffffff81001000 T kernel_fn_a\n"
                                                  "ffffffff81002000 T kernel_fn_b\n"
                                                  "ffffffff81003000 T _etext\n");
  Symbolizer symbolizer(machine, options);
  Resolver resolver(machine, &symbolizer);
  machine.on_mmap(kernel_text_map());
  const session::Thread& t = machine.findnew_thread(1, 1);
  const uint64_t addr = 0xffffffff81002010;
  ResolvedFrame before = resolver.resolve(&t, perfdata::kMiscKernel, addr);
  ASSERT_NE(before.at.sym, nullptr);
  EXPECT_EQ(before.at.sym->name(), "kernel_fn_b");
  before = resolver.resolve(&t, perfdata::kMiscKernel, addr);  // cached
  ASSERT_NE(before.at.sym, nullptr);
  EXPECT_EQ(before.at.sym->name(), "kernel_fn_b");

  perfdata::KsymbolEvent k;
  k.addr = 0xffffffff81002000;
  k.len = 0x100;
  k.name = "bpf_prog_deadbeef_f";
  symbolizer.on_ksymbol(k);
  machine.kernel_maps().touch();  // as the replay driver does after a KSYMBOL
  const ResolvedFrame after = resolver.resolve(&t, perfdata::kMiscKernel, addr);
  ASSERT_NE(after.at.sym, nullptr);
  EXPECT_EQ(after.at.sym->name(), "bpf_prog_deadbeef_f");
  // And an address outside it still has the kernel's symbol.
  const ResolvedFrame other = resolver.resolve(&t, perfdata::kMiscKernel, 0xffffffff81001010);
  ASSERT_NE(other.at.sym, nullptr);
  EXPECT_EQ(other.at.sym->name(), "kernel_fn_a");
}

// script formats samples on other threads while the machine applies records; the first kernel
// lookup reads the machine's DSO table and kernel maps (to choose the kernel's symbol file), so
// script waits for its batches before a record that adds a DSO until that read is done. The
// flag it asks says so: set until a lookup made the read or the machine's thread took the
// reference (a kernel DSO queued for loading).
TEST(Resolver, KernelLookupReadsTheMachineUntilItsFirstLookupOrAPreload) {
  test::TempDir dir;
  const SymbolizerOptions options = with_kallsyms(dir,
                                                  "ffffffff81000000 T _text\n"
                                                  "ffffffff81001000 T kernel_fn_a\n"
                                                  "ffffffff81003000 T _etext\n");
  {
    session::Machine machine;
    Symbolizer symbolizer(machine, options);
    Resolver resolver(machine, &symbolizer);
    machine.on_mmap(kernel_text_map());
    const session::Thread& t = machine.findnew_thread(1, 1);
    EXPECT_TRUE(symbolizer.kernel_lookup_reads_machine());
    // A user address reads nothing of the kernel's.
    (void)resolver.resolve(&t, perfdata::kMiscUser, 0x401000);
    EXPECT_TRUE(symbolizer.kernel_lookup_reads_machine());
    const ResolvedFrame f = resolver.resolve(&t, perfdata::kMiscKernel, 0xffffffff81001010);
    ASSERT_NE(f.at.sym, nullptr);
    EXPECT_EQ(f.at.sym->name(), "kernel_fn_a");
    EXPECT_FALSE(symbolizer.kernel_lookup_reads_machine());
  }
  {
    session::Machine machine;
    Symbolizer symbolizer(machine, options);
    machine.on_mmap(kernel_text_map());
    util::WorkQueue queue(1);
    std::vector<const session::Dso*> dsos;
    for (const session::Map& m : machine.kernel_maps().maps()) dsos.push_back(m.dso);
    ASSERT_FALSE(dsos.empty());
    symbolizer.preload_async(dsos, queue);
    EXPECT_FALSE(symbolizer.kernel_lookup_reads_machine());
    queue.flush();
  }
}

}  // namespace
}  // namespace tperf::symbols

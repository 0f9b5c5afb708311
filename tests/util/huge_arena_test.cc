#include "util/huge_arena.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory_resource>
#include <random>
#include <string>
#include <vector>

namespace tperf::util {
namespace {

// The VmFlags line the kernel shows for the mapping that holds `p` (/proc/self/smaps), or "".
std::string vm_flags_of(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0, end = 0;
    char dash = 0;
    if (std::sscanf(line.c_str(), "%lx%c%lx", &start, &dash, &end) == 3 && dash == '-' &&
        line.find(' ') != std::string::npos && line.find(':') > line.find(' ')) {
      inside = at >= start && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

struct Block {
  unsigned char* p;
  size_t size;
  unsigned char fill;
};

// Blocks of many sizes and alignments: each aligned as asked, none overlapping another (each
// keeps the bytes written into it while the others are written).
TEST(HugeArena, BlocksAreAlignedAndApart) {
  HugeArena arena;
  std::mt19937 rng(11);
  std::vector<Block> blocks;
  for (int i = 0; i < 20000; ++i) {
    const size_t size = i % 997 == 0 ? (size_t{3} << 20) + rng() % 4096 : 1 + rng() % 700;
    const size_t align = size_t{1} << (rng() % 8);
    auto* p = static_cast<unsigned char*>(arena.allocate(size, align));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << size << " " << align;
    const auto fill = static_cast<unsigned char>(i * 31 + 7);
    std::memset(p, fill, size);
    blocks.push_back({p, size, fill});
  }
  for (const Block& b : blocks) {
    for (size_t k = 0; k < b.size; k += 61) ASSERT_EQ(b.p[k], b.fill);
    ASSERT_EQ(b.p[b.size - 1], b.fill);
  }
  // 20 blocks of 3 MiB and 20,000 of 350 bytes on average: about 67 MB, mapped with at most
  // each region's alignment slack and a half-used last region besides.
  EXPECT_GE(arena.mapped(), size_t{60} << 20);
  EXPECT_LE(arena.mapped(), size_t{200} << 20);
}

// The first regions are left to small pages; from kHugeFrom on the kernel is asked for huge ones
// (VmFlags "hg", MADV_HUGEPAGE). The mappings go with the arena.
TEST(HugeArena, LargeRegionsAskForHugePagesAndGoWithTheArena) {
  void* small = nullptr;
  void* large = nullptr;
  {
    HugeArena arena;
    small = arena.allocate(64, 8);
    // Regions double (2, 4, 8 MiB...): a block of 8 MiB takes a region of at least that.
    large = arena.allocate(HugeArena::kHugeFrom, 64);
    std::memset(large, 1, 4096);
    const std::string small_flags = vm_flags_of(small);
    const std::string large_flags = vm_flags_of(large);
    ASSERT_FALSE(small_flags.empty());
    ASSERT_FALSE(large_flags.empty());
    EXPECT_EQ(small_flags.find(" hg"), std::string::npos) << small_flags;
    EXPECT_NE(large_flags.find(" hg"), std::string::npos) << large_flags;
    // Huge pages need 2 MiB-aligned ranges: the region is used from such a boundary.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % HugeArena::kHugePage, 0u);
    EXPECT_TRUE(test::page_mapped(small));
    EXPECT_TRUE(test::page_mapped(large));
  }
  EXPECT_FALSE(test::page_mapped(small));
  EXPECT_FALSE(test::page_mapped(large));
}

// As a pool's upstream (what the call trees use): blocks freed to the pool come back from it.
TEST(HugeArena, ServesAPool) {
  HugeArena arena;
  std::pmr::unsynchronized_pool_resource pool(&arena);
  std::vector<void*> ptrs;
  for (int i = 0; i < 100000; ++i) ptrs.push_back(pool.allocate(48, 8));
  const size_t mapped = arena.mapped();
  EXPECT_GE(mapped, size_t{100000} * 48);
  for (void* p : ptrs) pool.deallocate(p, 48, 8);
  for (int i = 0; i < 100000; ++i) ptrs[static_cast<size_t>(i)] = pool.allocate(48, 8);
  EXPECT_EQ(arena.mapped(), mapped);
  for (void* p : ptrs) pool.deallocate(p, 48, 8);
}

TEST(HugeArena, RefusesAnAlignmentThatIsNoPowerOfTwo) {
  HugeArena arena;
  volatile size_t align = 24;  // not a constant: compilers reject one that is no power of two
  EXPECT_THROW((void)arena.allocate(16, align), std::bad_alloc);
}

}  // namespace
}  // namespace tperf::util

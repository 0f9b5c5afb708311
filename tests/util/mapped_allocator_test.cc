#include "util/mapped_allocator.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>

#include <vector>

namespace tperf::util {
namespace {

constexpr uint64_t kMul = 2654435761;

TEST(MappedAllocator, VectorKeepsItsValuesAcrossTheThreshold) {
  MappedVector<uint64_t> v;
  const size_t n = 3 * MappedAllocator<uint64_t>::kMappedFrom / sizeof(uint64_t);
  for (size_t i = 0; i < n; ++i) v.push_back(i * kMul);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i * kMul) << i;
  v.resize(1000);
  v.shrink_to_fit();
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], i * kMul) << i;
  MappedVector<uint64_t> moved = std::move(v);
  EXPECT_EQ(moved.size(), 1000u);
  EXPECT_EQ(moved[999], 999 * kMul);
}

// Each buffer a growing array leaves behind goes back to the system at once. glibc's malloc
// gives a block a mapping of its own only above a threshold that it raises to the size of every
// such block freed; after the 16 MiB one here, blocks up to that size come from its heap, where a
// buffer left behind would stay (as ASan's allocator keeps it in quarantine).
TEST(MappedAllocator, BuffersLeftBehindGoBackToTheSystem) {
  {
    std::vector<char> big(size_t{16} << 20);
    big[0] = 1;
    ASSERT_EQ(big[0], 1);
  }
  MappedVector<char> v;
  std::vector<const char*> left;
  for (size_t n = MappedAllocator<char>::kMappedFrom; n <= 8 * MappedAllocator<char>::kMappedFrom; n *= 2) {
    const char* before = v.data();
    v.resize(n, 'x');
    ASSERT_TRUE(test::page_mapped(v.data()));
    if (before && before != v.data()) left.push_back(before);
  }
  ASSERT_EQ(left.size(), 3u);  // 1, 2 and 4 MiB
  for (const char* p : left) EXPECT_FALSE(test::page_mapped(p)) << "a buffer left behind is still mapped";
  EXPECT_EQ(v[v.size() - 1], 'x');
}

struct Marked {
  int32_t mark = -1;  // resize() makes elements as T{} does
  uint32_t index = 0;
  uint64_t value = 0;
};

TEST(GrowArray, KeepsItsValuesAcrossTheThresholdAndEveryGrowth) {
  GrowArray<Marked> a;
  const size_t n = 5 * MappedAllocator<Marked>::kHugeFrom / sizeof(Marked);  // heap, then mapped, then huge
  for (size_t i = 0; i < n; ++i) a.push_back({1, static_cast<uint32_t>(i), i * kMul});
  ASSERT_EQ(a.size(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i].value, i * kMul) << i;
  a.resize(n + 3);
  EXPECT_EQ(a[n + 2].mark, -1);
  EXPECT_EQ(a[n - 1].index, n - 1);
  // Appending an element of the array itself when that grows it.
  GrowArray<uint64_t> w;
  w.push_back(7);
  while (w.size() != w.capacity()) w.push_back(w.back() + 1);
  const uint64_t last = w.back();
  w.push_back(w.front());
  EXPECT_EQ(w.back(), 7u);
  EXPECT_EQ(w[w.size() - 2], last);

  GrowArray<Marked> copy = a;
  GrowArray<Marked> moved = std::move(a);
  EXPECT_TRUE(a.empty());
  ASSERT_EQ(copy.size(), n + 3);
  ASSERT_EQ(moved.size(), n + 3);
  EXPECT_EQ(copy[12345].value, 12345 * kMul);
  EXPECT_EQ(moved[n - 1].value, (n - 1) * kMul);
  moved = {};
  EXPECT_TRUE(moved.empty());
}

// Elements whose size does not divide a page (a hist entry's 136 bytes): the mapping's length is
// whole pages, the capacity what fits in them, and the array is given back as it was taken.
TEST(GrowArray, ElementsOfAnOddSizeAcrossTheThreshold) {
  struct Wide {
    uint64_t v[17];
  };
  static_assert(sizeof(Wide) == 136);
  GrowArray<Wide> a;
  const size_t n = 3 * MappedAllocator<Wide>::kHugeFrom / sizeof(Wide);
  for (size_t i = 0; i < n; ++i) {
    Wide w{};
    w.v[0] = i;
    w.v[16] = i * kMul;
    a.push_back(w);
  }
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(a[i].v[0], i);
    ASSERT_EQ(a[i].v[16], i * kMul);
  }
  EXPECT_GE(a.capacity() * sizeof(Wide), MappedAllocator<Wide>::kMappedFrom);
  GrowArray<Wide> moved = std::move(a);
  EXPECT_EQ(moved[n - 1].v[0], n - 1);
}

TEST(GrowArray, InsertsAtItsEndOnly) {
  GrowArray<uint32_t> a;
  const std::vector<uint32_t> v{1, 2, 3};
  a.insert(a.end(), v.begin(), v.end());
  a.insert(a.end(), v.begin(), v.begin() + 1);
  EXPECT_EQ(std::vector<uint32_t>(a.begin(), a.end()), (std::vector<uint32_t>{1, 2, 3, 1}));
  EXPECT_THROW(a.insert(a.begin(), v.begin(), v.end()), std::logic_error);
  a.assign(2, 9);
  EXPECT_EQ(std::vector<uint32_t>(a.begin(), a.end()), (std::vector<uint32_t>{9, 9}));
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Doubling a mapped array moves its pages (mremap) instead of faulting a new buffer in and
// copying into it: one more element past 2 MiB costs a fault or two, not one per page held.
TEST(GrowArray, GrowingAMappedArrayFaultsInNoPageItHolds) {
  GrowArray<char> a;
  const size_t held = size_t{2} << 20;
  a.resize(held, 'x');
  ASSERT_EQ(a.capacity(), held);
  ASSERT_TRUE(test::page_mapped(a.data()));
  const long before = minor_faults();
  a.push_back('y');
  const long faults = minor_faults() - before;
  EXPECT_GT(a.capacity(), held);
  EXPECT_LT(faults, 16) << "the " << held / 4096 << " pages held were faulted in again";
  EXPECT_EQ(a[0], 'x');
  EXPECT_EQ(a[held - 1], 'x');
  EXPECT_EQ(a[held], 'y');
}

}  // namespace
}  // namespace tperf::util

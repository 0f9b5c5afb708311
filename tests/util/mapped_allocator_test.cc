#include "util/mapped_allocator.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include <cstdint>
#include <sys/mman.h>
#include <unistd.h>

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

}  // namespace
}  // namespace tperf::util

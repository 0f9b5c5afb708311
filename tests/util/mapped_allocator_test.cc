#include "util/mapped_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace tperf::util {
namespace {

// The mapping of /proc/self/maps that holds `p`: its [start, end), or {0, 0}.
std::pair<uintptr_t, uintptr_t> mapping_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    uintptr_t start = 0, end = 0;
    char dash = 0;
    in >> std::hex >> start >> dash >> end;
    if (a >= start && a < end) return {start, end};
  }
  return {0, 0};
}

// Values survive every growth across the threshold, both ways (growing, then shrink_to_fit).
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

// A buffer from kMappedFrom bytes on is a mapping that starts where the buffer does; after the
// vector moved out of it (grew), that address is no longer mapped to it.
TEST(MappedAllocator, LargeBuffersAreMappingsOfTheirOwn) {
  MappedVector<char> v(MappedAllocator<char>::kMappedFrom);
  const char* first = v.data();
  const auto [start, end] = mapping_of(first);
  EXPECT_EQ(start, reinterpret_cast<uintptr_t>(first));
  EXPECT_GE(end - start, MappedAllocator<char>::kMappedFrom);
  v.resize(4 * MappedAllocator<char>::kMappedFrom);  // moves to a mapping of its own
  EXPECT_NE(v.data(), first);
  EXPECT_EQ(mapping_of(v.data()).first, reinterpret_cast<uintptr_t>(v.data()));
  const auto [old_start, old_end] = mapping_of(first);
  EXPECT_TRUE(old_start == 0 || old_start != start || old_end != end) << "the old buffer is still mapped as it was";
  // A small one comes from the heap: not the start of a mapping of its own.
  MappedVector<char> small(100);
  EXPECT_NE(mapping_of(small.data()).first, reinterpret_cast<uintptr_t>(small.data()));
}

}  // namespace
}  // namespace tperf::util

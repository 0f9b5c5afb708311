// The hand-over copy gives the bytes memcpy gives, whatever the alignment of either end and the
// length (the streaming path takes 8-byte aligned destinations and lengths, in 8- and 16-byte
// stores; the rest goes through memcpy), and the array keeps what was appended across growth
// and reuse.
#include "util/handoff.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace tperf::util {
namespace {

TEST(Handoff, CopyEqualsMemcpyAtEveryAlignmentAndLength) {
  std::vector<uint8_t> src(600);
  std::iota(src.begin(), src.end(), uint8_t{1});
  alignas(64) uint8_t got[700];
  alignas(64) uint8_t want[700];
  size_t streamed = 0;
  for (size_t to_off = 0; to_off < 24; ++to_off) {
    for (size_t from_off = 0; from_off < 9; ++from_off) {
      for (size_t n = 0; n <= 80; ++n) {
        std::fill(std::begin(got), std::end(got), uint8_t{0xee});
        std::fill(std::begin(want), std::end(want), uint8_t{0xee});
        handoff_copy(got + to_off, src.data() + from_off, n);
        handoff_publish();
        std::memcpy(want + to_off, src.data() + from_off, n);
        ASSERT_EQ(std::memcmp(got, want, sizeof(got)), 0) << "to +" << to_off << " from +" << from_off << " n " << n;
        streamed += (to_off % 8 == 0 && n % 8 == 0);
      }
    }
  }
  EXPECT_GT(streamed, 100u);
}

TEST(Handoff, ArrayKeepsWhatWasAppendedAcrossGrowthAndReuse) {
  struct Item {
    uint64_t a;
    uint32_t b, c;
  };
  HandoffArray<Item> items;
  HandoffArray<uint8_t> bytes;
  for (int round = 0; round < 3; ++round) {
    std::vector<uint8_t> expect;
    for (uint32_t i = 0; i < 5000; ++i) {
      EXPECT_EQ(items.push_back({i * 3ULL + static_cast<uint64_t>(round), i, ~i}), i);
      std::vector<uint8_t> rec(8 * (1 + i % 5) + (i % 7 == 0 ? 3 : 0), static_cast<uint8_t>(i));
      EXPECT_EQ(bytes.append(rec.data(), rec.size()), expect.size());
      expect.insert(expect.end(), rec.begin(), rec.end());
    }
    handoff_publish();
    ASSERT_EQ(items.size(), 5000u);
    for (uint32_t i = 0; i < 5000; ++i) {
      ASSERT_EQ(items[i].a, i * 3ULL + static_cast<uint64_t>(round));
      ASSERT_EQ(items[i].b, i);
      ASSERT_EQ(items[i].c, ~i);
    }
    ASSERT_EQ(bytes.size(), expect.size());
    EXPECT_EQ(std::memcmp(bytes.data(), expect.data(), expect.size()), 0);
    items.clear();
    bytes.clear();
    EXPECT_TRUE(items.empty());
  }
}

}  // namespace
}  // namespace tperf::util

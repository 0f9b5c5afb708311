#include "util/word_key_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace tperf::util {
namespace {

// Keys of many lengths, many sharing prefixes, some colliding in their first words; a std::map
// from key to first-seen index is the reference.
TEST(WordKeyMap, InternsLikeAnOrderedMap) {
  std::mt19937_64 rng(7);
  WordKeyMap m;
  std::map<std::vector<uint64_t>, uint32_t> ref;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint64_t> key(rng() % 12);
    for (auto& w : key) w = rng() % 5;  // small alphabet: many repeats and shared prefixes
    const uint32_t id = m.find(key);
    auto it = ref.find(key);
    if (it == ref.end()) {
      ASSERT_EQ(id, WordKeyMap::kAbsent);
      const uint32_t fresh = m.insert(key);
      ASSERT_EQ(fresh, ref.size());
      ref.emplace(key, fresh);
    } else {
      ASSERT_EQ(id, it->second);
    }
  }
  ASSERT_EQ(m.size(), ref.size());
  size_t words = 0;
  for (const auto& [key, id] : ref) {
    EXPECT_EQ(m.find(key), id);
    auto stored = m.key(id);
    EXPECT_EQ(std::vector<uint64_t>(stored.begin(), stored.end()), key);
    words += key.size();
  }
  EXPECT_EQ(m.words(), words);
}

// Keys held as a head and a tail (report's fixed words and raw callchain) are found and
// interned as a std::map of the whole key says. The hash is that of the split key: a caller
// splits a key always at the same place (report's head holds the lengths that decide it).
TEST(WordKeyMap, SplitKeysInternLikeWholeOnes) {
  std::mt19937_64 rng(11);
  WordKeyMap m;
  std::map<std::vector<uint64_t>, uint32_t> ref;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint64_t> key(rng() % 12);
    for (auto& w : key) w = rng() % 4;
    // Split where the key's first word says, as report's head says where it ends.
    const size_t cut = key.empty() ? 0 : std::min<size_t>(key.size(), key.front());
    const std::span<const uint64_t> head(key.data(), cut), tail(key.data() + cut, key.size() - cut);
    const uint64_t h = WordKeyMap::hash(head, tail);
    const uint32_t id = m.find(head, tail, h);
    auto it = ref.find(key);
    if (it == ref.end()) {
      ASSERT_EQ(id, WordKeyMap::kAbsent);
      const uint32_t fresh = m.insert(head, tail, h);
      ASSERT_EQ(fresh, ref.size());
      ref.emplace(key, fresh);
    } else {
      ASSERT_EQ(id, it->second);
    }
  }
  ASSERT_EQ(m.size(), ref.size());
  for (const auto& [key, id] : ref) {
    auto stored = m.key(id);
    EXPECT_EQ(std::vector<uint64_t>(stored.begin(), stored.end()), key);
  }
  // A key whose words run on past the stored one's end is not that key.
  const std::vector<uint64_t> a{9, 1, 2};
  const std::vector<uint64_t> b{3};
  WordKeyMap n;
  n.insert(a, {}, WordKeyMap::hash(a, {}));
  EXPECT_EQ(n.find(a, b, WordKeyMap::hash(a, b)), WordKeyMap::kAbsent);
  EXPECT_EQ(n.find(a, {}, WordKeyMap::hash(a, {})), 0u);
}

TEST(WordKeyMap, EmptyKeyAndClear) {
  WordKeyMap m;
  EXPECT_EQ(m.find(std::span<const uint64_t>()), WordKeyMap::kAbsent);
  EXPECT_EQ(m.insert(std::span<const uint64_t>()), 0u);
  EXPECT_EQ(m.find(std::span<const uint64_t>()), 0u);
  const std::vector<uint64_t> a{1, 2, 3};
  EXPECT_EQ(m.insert(a), 1u);
  EXPECT_EQ(m.find(std::vector<uint64_t>{1, 2}), WordKeyMap::kAbsent);
  m.clear();
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.find(a), WordKeyMap::kAbsent);
  EXPECT_EQ(m.insert(a), 0u);
  EXPECT_EQ(m.find(a), 0u);
}

}  // namespace
}  // namespace tperf::util

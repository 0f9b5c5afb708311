// PerfRbTree: perf's walk of its hist trees, with an order and with a comparator that is none.
#include "analysis/perf_rbtree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace tperf::analysis {
namespace {

TEST(PerfRbTree, AnOrderGivesSortedItemsAndMergesEquals) {
  const std::vector<int> values = {50, 20, 80, 10, 30, 70, 90, 60, 40, 20, 55, 65, 10};
  std::vector<int> items;  // the value of each item inserted
  PerfRbTree tree;
  size_t merged = 0;
  for (int v : values) {
    const auto next = static_cast<uint32_t>(items.size());
    // perf's sign for cmp(existing, new): the smaller value to the left.
    const uint32_t at = tree.find_or_insert(next, [&](uint32_t e) { return static_cast<int64_t>(v) - items[e]; });
    if (at == next) {
      items.push_back(v);
    } else {
      EXPECT_EQ(items[at], v);
      ++merged;
    }
  }
  EXPECT_EQ(merged, 2u);  // the second 20 and the second 10
  std::vector<int> in_order;
  for (uint32_t i : tree.in_order()) in_order.push_back(items[i]);
  std::vector<int> want = {10, 20, 30, 40, 50, 55, 60, 65, 70, 80, 90};
  EXPECT_EQ(in_order, want);
}

// "Differs" as "goes right" both ways (perf's mispredict key): worked out by hand, the values
// 2, 1, 0 make a right chain the colouring rotates to 1 over 2 and 0; a 2 then walks 1, 0 and
// becomes a new node right of 0 instead of joining the first 2.
TEST(PerfRbTree, NoOrderMergesWhereTheWalkMeetsAnEqual) {
  std::vector<int> items;
  PerfRbTree tree;
  auto add = [&](int v) {
    const auto next = static_cast<uint32_t>(items.size());
    const uint32_t at = tree.find_or_insert(next, [&](uint32_t e) -> int64_t { return items[e] != v; });
    if (at == next) items.push_back(v);
    return at;
  };
  EXPECT_EQ(add(2), 0u);
  EXPECT_EQ(add(1), 1u);
  EXPECT_EQ(add(0), 2u);
  EXPECT_EQ(add(2), 3u);  // a second node of 2
  EXPECT_EQ(add(2), 3u);  // ...which the walk meets from now on
  EXPECT_EQ(add(1), 1u);  // the root
  EXPECT_EQ(add(0), 2u);
  std::vector<int> in_order;
  for (uint32_t i : tree.in_order()) in_order.push_back(items[i]);
  EXPECT_EQ(in_order, (std::vector<int>{2, 1, 0, 2}));
}

}  // namespace
}  // namespace tperf::analysis

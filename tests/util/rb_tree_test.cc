#include "util/rb_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace tperf::util {
namespace {

// Black nodes on every path from `id` down to a leaf; -1 when the red-black rules are broken.
int black_height(const RbTree& t, int32_t id) {
  if (id < 0) return 1;
  const RbTree::Node& n = t.node(id);
  if (n.red && ((n.left >= 0 && t.node(n.left).red) || (n.right >= 0 && t.node(n.right).red))) return -1;
  if ((n.left >= 0 && t.node(n.left).parent != id) || (n.right >= 0 && t.node(n.right).parent != id)) return -1;
  const int l = black_height(t, n.left), r = black_height(t, n.right);
  if (l < 0 || l != r) return -1;
  return l + (n.red ? 0 : 1);
}

// Random insertions (keys hung where a search tree puts them) and erasures: the tree stays a
// red-black tree holding exactly the live keys in order.
TEST(RbTree, StaysBalancedAndOrderedThroughInsertsAndErases) {
  std::mt19937 rng(3);
  RbTree t;
  std::vector<int> key;  // by node id
  std::vector<int32_t> live;
  for (int round = 0; round < 3000; ++round) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t pick = rng() % live.size();
      t.erase(live[pick]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
    } else {
      const int k = static_cast<int>(rng() % 500);
      int32_t parent = -1;
      bool left = false;
      for (int32_t x = t.root(); x >= 0;) {
        parent = x;
        left = k < key[static_cast<size_t>(x)];
        x = left ? t.node(x).left : t.node(x).right;
      }
      live.push_back(t.link(parent, left));
      key.push_back(k);
    }
    ASSERT_GT(black_height(t, t.root()), 0) << "round " << round;
    ASSERT_TRUE(t.root() < 0 || !t.node(t.root()).red);
  }
  std::vector<int> want, got;
  for (int32_t id : live) want.push_back(key[static_cast<size_t>(id)]);
  std::sort(want.begin(), want.end());
  for (int32_t id : t.in_order()) got.push_back(key[static_cast<size_t>(id)]);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace tperf::util

// CallTree against a plain model of what it stands for: every prefix of the chains appended,
// with the period of the chains that end there and of those that go on, and the children of a
// prefix in the order their first chain came. The tree packs runs of frames into nodes, splits
// them, keeps short runs and lone children inside the node and many children sorted; the model
// has none of that, so each of those cases (a run of 1-3 ids kept in place, longer ones in an
// array, a split of either kind, one child, a few, more than ChildList::kSortedFrom) is checked
// against it.
#include "analysis/call_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory_resource>
#include <random>
#include <string>
#include <vector>

namespace tperf::analysis {
namespace {

using Path = std::vector<uint32_t>;

struct ModelNode {
  uint64_t hit = 0, below = 0;
  std::vector<uint32_t> children;  // next ids, in the order their first chain came
};

struct Model {
  std::map<Path, ModelNode> nodes;  // by prefix; the empty prefix is the root
  void append(const Path& chain, uint64_t period) {
    Path prefix;
    for (size_t i = 0; i < chain.size(); ++i) {
      ModelNode& parent = nodes[prefix];
      parent.below += period;
      if (std::find(parent.children.begin(), parent.children.end(), chain[i]) == parent.children.end()) {
        parent.children.push_back(chain[i]);
      }
      prefix.push_back(chain[i]);
    }
    nodes[prefix].hit += period;
  }
};

// The tree as the model's prefixes: a node with a run of n ids stands for n prefixes, the first
// n-1 of which end no chain and have the next id of the run as their only child.
void flatten(const CallNode& node, Path prefix, std::map<Path, ModelNode>* out) {
  for (size_t i = 0; i < node.frames.size(); ++i) {
    prefix.push_back(node.frames.ids[i]);
    ModelNode& m = (*out)[prefix];
    const bool last = i + 1 == node.frames.size();
    m.hit = last ? node.hit : 0;
    m.below = last ? node.children_hit : node.cumul();
    if (!last) m.children = {node.frames.ids[i + 1]};
  }
  ModelNode& m = (*out)[prefix];
  for (const CallNode* child : node.children) {
    ASSERT_FALSE(child->frames.empty());
    m.children.push_back(child->frames.ids[0]);
    flatten(*child, prefix, out);
  }
}

void expect_same(const CallTree& tree, const Model& model) {
  std::map<Path, ModelNode> got;
  flatten(tree.root(), {}, &got);
  got[{}].below = tree.root().children_hit;
  ASSERT_EQ(got.size(), model.nodes.size());
  for (const auto& [path, want] : model.nodes) {
    auto it = got.find(path);
    ASSERT_NE(it, got.end()) << "a prefix of " << path.size() << " ids is missing";
    EXPECT_EQ(it->second.hit, want.hit) << "prefix of " << path.size();
    EXPECT_EQ(it->second.below, want.below) << "prefix of " << path.size();
    EXPECT_EQ(it->second.children, want.children) << "prefix of " << path.size();
  }
}

TEST(CallTree, SplitsRunsOfEveryLengthAsThePrefixModelSays) {
  std::pmr::unsynchronized_pool_resource arena;
  CallFrameTable table;
  CallTree tree(&table, &arena);
  Model model;
  // A long chain, then chains that leave it at every depth (splitting a run of 8 ids at each
  // place, so runs of 1..7 on either side), one that ends inside it, and a repeat.
  const Path longest = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<std::pair<Path, uint64_t>> chains = {{longest, 10}};
  for (size_t k = 1; k < longest.size(); ++k) {
    Path c(longest.begin(), longest.begin() + static_cast<ptrdiff_t>(k));
    c.push_back(100 + static_cast<uint32_t>(k));
    c.push_back(200 + static_cast<uint32_t>(k));
    chains.push_back({c, k});
  }
  chains.push_back({{1, 2, 3}, 7});
  chains.push_back({longest, 5});
  for (const auto& [c, p] : chains) {
    tree.append(c, p);
    model.append(c, p);
    expect_same(tree, model);
  }
}

TEST(CallTree, RandomChainsWithManyChildrenAsThePrefixModelSays) {
  std::mt19937 rng(20261128);
  for (int round = 0; round < 20; ++round) {
    std::pmr::unsynchronized_pool_resource arena;
    CallFrameTable table;
    CallTree tree(&table, &arena);
    Model model;
    // Few ids near the root and many further down: nodes with one child, with a few, and with
    // more than kSortedFrom (the sorted lookup), runs short and long.
    const uint32_t wide = 4 + static_cast<uint32_t>(round) * 2;
    for (int i = 0; i < 400; ++i) {
      Path c;
      const size_t depth = 1 + rng() % 12;
      for (size_t d = 0; d < depth; ++d) {
        const uint32_t choices = d < 2 ? 2 : d < 5 ? 1 + static_cast<uint32_t>(d % 2) : wide;
        c.push_back(static_cast<uint32_t>(d) * 1000 + static_cast<uint32_t>(rng() % choices));
      }
      const uint64_t period = 1 + rng() % 1000;
      tree.append(c, period);
      model.append(c, period);
    }
    SCOPED_TRACE(round);
    expect_same(tree, model);
    size_t most = 0;
    for (const auto& [path, n] : model.nodes) most = std::max(most, n.children.size());
    if (round >= 4) {
      EXPECT_GT(most, static_cast<size_t>(ChildList::kSortedFrom));
    }
  }
}

// -g ...,srcline (perf 6.1's match_chain with CCKEY_SRCLINE): frames of one source line are alike
// whatever their address or function, and a node shows the frames of the chain that made it;
// frames without a text (perf has none where it would show an address) go by function, never
// alike one with a text, and come first among the children (perf's match_chain_strings takes a
// missing text as greater than any; the greater first).
TEST(CallTree, SrclineKeyMatchesByTextAndShowsTheFirstChain) {
  std::pmr::unsynchronized_pool_resource arena;
  CallFrameTable table(FrameKey::kSrcline);
  const std::string line6 = "a.c:6", line6_again = "a.c:6", line7 = "a.c:7";
  auto frame = [](uint64_t ip) { return CallFrame{ip, nullptr, nullptr, 0}; };
  const uint32_t a = table.intern(frame(0x10), &line6);
  const uint32_t b = table.intern(frame(0x20), &line6_again);  // another address, the same line
  const uint32_t c = table.intern(frame(0x30), &line7);
  const uint32_t none = table.intern(frame(0x40), nullptr);
  const uint32_t none_again = table.intern(frame(0x40), nullptr);
  EXPECT_NE(a, b);  // each is shown as it is
  EXPECT_EQ(table.match_class(a), table.match_class(b));
  EXPECT_NE(table.match_class(a), table.match_class(c));
  EXPECT_EQ(none, none_again);
  EXPECT_NE(table.match_class(none), table.match_class(a));
  EXPECT_EQ(table.intern(frame(0x10), &line6_again), a);

  CallTree tree(&table, &arena);
  tree.append(std::vector<uint32_t>{a, c}, 5);
  tree.append(std::vector<uint32_t>{b, c}, 3);  // alike all along: the same node, shown as a, c
  tree.append(std::vector<uint32_t>{b, none}, 2);
  ASSERT_EQ(tree.root().children.size(), 1u);
  const CallNode& top = *tree.root().children[0];
  ASSERT_EQ(top.frames.size(), 1u);
  EXPECT_EQ(top.frames.ids[0], a);
  EXPECT_EQ(top.children_hit, 10u);
  ASSERT_EQ(top.children.size(), 2u);
  EXPECT_EQ(top.children[0]->frames.ids[0], c);
  EXPECT_EQ(top.children[0]->hit, 8u);
  EXPECT_EQ(top.children[1]->frames.ids[0], none);
  EXPECT_EQ(top.children[1]->hit, 2u);
  // perf's order of the children: the one without a text first.
  const std::vector<const CallNode*> order = children_in_perf_order(top, table);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], top.children[1]);
  EXPECT_EQ(order[1], top.children[0]);
}

}  // namespace
}  // namespace tperf::analysis

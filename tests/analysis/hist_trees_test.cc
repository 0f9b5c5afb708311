// The callchain trees a Hist makes are those its chains make merged one by one into a CallTree
// (the builder keeps the chains as a table and makes the trees on the first read), and
// want_trees_from() leaves out the trees of entries lighter than its floor, which draw nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory_resource>
#include <random>
#include <string>
#include <vector>

#include "analysis/call_tree.h"
#include "analysis/hist.h"

namespace tperf::analysis {
namespace {

HistEntry entry_at(uint64_t addr) {
  HistEntry e;
  e.loc.addr = addr;  // no symbol: the sym key compares addresses
  e.first_addr = addr;
  return e;
}

// A tree as text: each node's frames (by address), hit and children's hit, its children in the
// order they were made.
void describe(const CallNode& n, const CallFrameTable& table, int depth, std::string* out) {
  *out += std::string(static_cast<size_t>(depth), ' ');
  for (uint32_t id : n.frames.ids) *out += std::to_string(table[id].ip) + ",";
  *out += " hit " + std::to_string(n.hit) + " below " + std::to_string(n.children_hit) + "\n";
  for (const CallNode* c : n.children) describe(*c, table, depth + 1, out);
}
std::string describe(const CallTree& t) {
  std::string out;
  describe(t.root(), *t.table(), 0, &out);
  return out;
}

struct Sample {
  uint64_t self;
  std::vector<uint64_t> chain;  // display order, no address twice
  uint64_t period;
};

// Samples of 64 entries (a few heavy, most light) whose chains repeat, not one after another.
std::vector<Sample> make_samples(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<uint64_t>> shapes;
  for (int s = 0; s < 60; ++s) {
    std::vector<uint64_t> all;
    for (uint64_t a = 1; a <= 24; ++a) all.push_back(0x1000 + a);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(1 + rng() % 10);
    shapes.push_back(all);
  }
  std::vector<Sample> out;
  for (int i = 0; i < 6000; ++i) {
    // Entries 0..3 take most samples, the others few; some samples fall in a function that
    // other samples' chains go through.
    const uint64_t self = rng() % 4 ? 0x10 + rng() % 4 : rng() % 2 ? 0x14 + rng() % 36 : 0x1001 + rng() % 24;
    out.push_back({self, shapes[rng() % shapes.size()], 1 + rng() % 100});
  }
  return out;
}

// A sample's chain as the Hist takes it (frames, and the entries of its callers) and as the
// expected trees take it (ids of `table`).
struct Chain {
  std::vector<CallFrame> frames;
  std::vector<HistEntry> callers;
  std::vector<uint32_t> ids;
};
Chain chain_of(const Sample& s, CallFrameTable& table) {
  Chain c;
  for (uint64_t ip : s.chain) {
    CallFrame f;
    f.ip = ip;
    c.frames.push_back(f);
    c.callers.push_back(entry_at(ip));
    c.ids.push_back(table.intern(f));
  }
  return c;
}

class HistTrees : public ::testing::TestWithParam<bool> {};  // the trees' own thread or none

TEST_P(HistTrees, TreesAreTheChainsMergedOneByOne) {
  for (bool cumulate : {false, true}) {
    SCOPED_TRACE(cumulate ? "children" : "self");
    Hist hist({SortKey::kSym});
    hist.use_tree_thread(GetParam());
    // The expected trees: each chain merged into its entry's tree as it comes.
    CallFrameTable table;
    std::pmr::unsynchronized_pool_resource pool;
    std::map<uint64_t, std::unique_ptr<CallTree>> expected;
    std::map<uint64_t, uint64_t> total;
    std::map<uint64_t, size_t> depth;
    auto merge = [&](uint64_t entry, const std::vector<uint32_t>& ids, uint64_t period) {
      auto& t = expected[entry];
      if (!t) t = std::make_unique<CallTree>(&table, &pool);
      t->append(ids, period);
      total[entry] += period;
      depth[entry] = std::max(depth[entry], ids.size());
    };
    for (const Sample& s : make_samples(cumulate ? 7 : 11)) {
      const auto [frames, callers, ids] = chain_of(s, table);
      hist.add_with_chain(entry_at(s.self), s.period, cumulate, callers, frames);
      merge(s.self, ids, s.period);
      // With --children every caller's entry but the sample's own takes the chain from its
      // frame on.
      if (cumulate) {
        for (size_t j = 0; j < ids.size(); ++j) {
          if (s.chain[j] != s.self) merge(s.chain[j], {ids.begin() + static_cast<ptrdiff_t>(j), ids.end()}, s.period);
        }
      }
    }
    // The floor between the light and the heavy entries.
    std::vector<uint64_t> totals;
    for (const auto& [addr, t] : total) totals.push_back(t);
    std::sort(totals.begin(), totals.end());
    const uint64_t floor = totals[totals.size() / 2];
    hist.want_trees_from(floor);
    // The output sort makes the trees on a thread of its own while it sorts (the floor named):
    // they are the same.
    const std::vector<const HistEntry*> order = hist.sorted(cumulate, true, {}, false);
    EXPECT_EQ(order.size(), hist.size());
    size_t made = 0, left_out = 0;
    for (const HistEntry* e : hist.in_key_order()) {
      const uint64_t addr = e->loc.addr;
      SCOPED_TRACE(addr);
      ASSERT_TRUE(expected.count(addr));
      EXPECT_EQ(hist.tree_depth(e), depth[addr]);
      const CallTree* t = hist.tree_of(e);
      if (total[addr] < floor) {
        EXPECT_EQ(t, nullptr);
        ++left_out;
        continue;
      }
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(describe(*t), describe(*expected[addr]));
      EXPECT_EQ(t->max_depth(), depth[addr]);
      ++made;
    }
    EXPECT_GT(made, 0u);
    EXPECT_GT(left_out, 0u);
  }
}

TEST_P(HistTrees, EveryEntryGetsItsTreeWithoutAFloor) {
  Hist hist({SortKey::kSym});
  hist.use_tree_thread(GetParam());
  CallFrameTable table;
  std::pmr::unsynchronized_pool_resource pool;
  std::map<uint64_t, std::unique_ptr<CallTree>> expected;
  for (const Sample& s : make_samples(3)) {
    const Chain c = chain_of(s, table);
    const std::vector<uint32_t>& ids = c.ids;
    hist.add_with_chain(entry_at(s.self), s.period, false, {}, c.frames);
    auto& t = expected[s.self];
    if (!t) t = std::make_unique<CallTree>(&table, &pool);
    t->append(ids, s.period);
  }
  hist.settle();  // makes the trees: tree_of() only reads afterwards
  ASSERT_EQ(hist.size(), expected.size());
  for (const HistEntry* e : hist.in_key_order()) {
    const CallTree* t = hist.tree_of(e);
    ASSERT_NE(t, nullptr) << e->loc.addr;
    EXPECT_EQ(describe(*t), describe(*expected[e->loc.addr])) << e->loc.addr;
  }
}

// A report that reads no tree (none reaches the floor the output names, as `report -S f0` where
// the one symbol kept draws nothing) destroys its Hist while sorted() still makes the trees
// ahead on their own thread: that thread reads the Hist's frame table to the end. The sanitized
// build caught the table freed under it (CI, ReportSelect); here many chains keep the thread busy
// past the destruction.
TEST_P(HistTrees, DestroyedWhileTheTreesAreMadeAhead) {
  for (int round = 0; round < 4; ++round) {
    Hist hist({SortKey::kSym});
    hist.use_tree_thread(GetParam());
    CallFrameTable table;
    for (unsigned seed = 0; seed < 8; ++seed) {
      for (const Sample& s : make_samples(seed * 4 + static_cast<unsigned>(round))) {
        const Chain c = chain_of(s, table);
        hist.add_with_chain(entry_at(s.self), s.period, true, c.callers, c.frames);
      }
    }
    hist.want_trees_from(1);
    EXPECT_EQ(hist.sorted(true, true, {}, false).size(), hist.size());
  }  // ~Hist with the trees still being made
}

INSTANTIATE_TEST_SUITE_P(Threads, HistTrees, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "TreeThread" : "NoThread"; });

}  // namespace
}  // namespace tperf::analysis

// perf's hist trees, walked as perf walks them: a red-black tree (the kernel's lib/rbtree.c
// insertion and colouring) searched with perf's three-way comparators, which are not always an
// order (branch mode's mispredict, in_tx and abort keys answer "differs" as "goes right" both
// ways). With such a comparator, which entry a new item merges into depends on the tree's
// shape, so the shape is kept as perf's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "util/rb_tree.h"

namespace tperf::analysis {

class PerfRbTree {
 public:
  // Finds the node `cmp(existing)` calls equal on perf's walk from the root (cmp < 0: go left,
  // > 0: go right, perf's sign for cmp(existing, new)), or inserts `item` where the walk ends.
  // Returns the item of the node found, or `item` when inserted.
  template <typename Cmp>
  uint32_t find_or_insert(uint32_t item, const Cmp& cmp) {
    return find_or_insert(item, cmp, NoPrefetch{});
  }
  // The same, calling `prefetch(item)` for the items of the next level down while this level's
  // comparison runs: a walk of a large tree otherwise waits for memory at every level, for the
  // node and for what the comparison reads of its item.
  struct NoPrefetch {};
  template <typename Cmp, typename Prefetch>
  uint32_t find_or_insert(uint32_t item, const Cmp& cmp, const Prefetch& prefetch) {
    int32_t parent = -1;
    bool left = false;
    for (int32_t at = tree_.root(); at >= 0;) {
      const util::RbTree::Node& n = tree_.node(at);
      if constexpr (!std::is_same_v<Prefetch, NoPrefetch>) {
        for (const int32_t child : {n.left, n.right}) {
          if (child < 0) continue;
          __builtin_prefetch(&tree_.node(child));
          prefetch(items_[static_cast<size_t>(child)]);
        }
      }
      const int64_t c = cmp(items_[static_cast<size_t>(at)]);
      if (c == 0) return items_[static_cast<size_t>(at)];
      parent = at;
      left = c < 0;
      at = left ? n.left : n.right;
    }
    tree_.link(parent, left);
    items_.push_back(item);
    return item;
  }

  // The item of the node `cmp(existing)` calls equal on the same walk, kNone when the walk ends
  // without one (perf's hists__find_entry()).
  static constexpr uint32_t kNone = ~uint32_t{0};
  template <typename Cmp>
  uint32_t find(const Cmp& cmp) const {
    for (int32_t at = tree_.root(); at >= 0;) {
      const int64_t c = cmp(items_[static_cast<size_t>(at)]);
      if (c == 0) return items_[static_cast<size_t>(at)];
      at = c < 0 ? tree_.node(at).left : tree_.node(at).right;
    }
    return kNone;
  }

  // The items in order (leftmost first).
  std::vector<uint32_t> in_order() const;
  size_t size() const { return items_.size(); }

 private:
  util::RbTree tree_;
  std::vector<uint32_t> items_;  // by node id
};

}  // namespace tperf::analysis

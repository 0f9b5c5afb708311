// The order perf's red-black trees put items in: perf inserts them one by one with a comparator
// (equal ones to the right) and walks the tree in order. Where the comparator is no total order
// (perf's often is not), the result depends on the tree's shape; replaying the insertions into
// a red-black tree that balances as the kernel's does gives perf's order.
#pragma once

#include <vector>

#include "util/rb_tree.h"

namespace tperf::analysis {

// `in` in insertion order; before(a, b): a goes to the left of b.
template <typename T, typename Before>
std::vector<T> replay_tree(const std::vector<T>& in, const Before& before) {
  // The tree's nodes are ids into `in`: node i holds in[i] (ids are handed out in link order).
  util::RbTree tree;
  tree.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    int32_t parent = -1;
    bool left = false;
    for (int32_t at = tree.root(); at >= 0;) {
      parent = at;
      left = before(in[i], in[static_cast<size_t>(at)]);
      at = left ? tree.node(at).left : tree.node(at).right;
    }
    tree.link(parent, left);
  }
  std::vector<T> out;
  out.reserve(in.size());
  for (const int32_t id : tree.in_order()) out.push_back(in[static_cast<size_t>(id)]);
  return out;
}

}  // namespace tperf::analysis

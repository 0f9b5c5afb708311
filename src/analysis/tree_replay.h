// The order perf's red-black trees put items in: perf inserts them one by one with a comparator
// (equal ones to the right) and walks the tree in order. Where the comparator is no total order
// (perf's often is not), the result depends on the tree's shape; std::multimap walks and
// rebalances the same way, so replaying the insertions into one gives perf's order.
#pragma once

#include <map>
#include <vector>

namespace tperf::analysis {

// `in` in insertion order; before(a, b): a goes to the left of b.
template <typename T, typename Before>
std::vector<T> replay_tree(const std::vector<T>& in, const Before& before) {
  struct Less {
    const Before* f;
    bool operator()(const T& a, const T& b) const { return (*f)(a, b); }
  };
  std::multimap<T, char, Less> tree(Less{&before});
  for (const T& e : in) tree.emplace(e, 0);
  std::vector<T> out;
  out.reserve(in.size());
  for (const auto& [e, unused] : tree) out.push_back(e);
  return out;
}

}  // namespace tperf::analysis

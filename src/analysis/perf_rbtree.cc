#include "analysis/perf_rbtree.h"

namespace tperf::analysis {

std::vector<uint32_t> PerfRbTree::in_order() const {
  std::vector<uint32_t> out;
  out.reserve(nodes_.size());
  std::vector<int32_t> stack;
  int32_t at = root_;
  while (at >= 0 || !stack.empty()) {
    while (at >= 0) {
      stack.push_back(at);
      at = nodes_[static_cast<size_t>(at)].left;
    }
    at = stack.back();
    stack.pop_back();
    out.push_back(nodes_[static_cast<size_t>(at)].item);
    at = nodes_[static_cast<size_t>(at)].right;
  }
  return out;
}

void PerfRbTree::rotate_left(int32_t x) {
  const int32_t y = n(x).right;
  n(x).right = n(y).left;
  if (n(y).left >= 0) n(n(y).left).parent = x;
  n(y).parent = n(x).parent;
  if (n(x).parent < 0) {
    root_ = y;
  } else if (n(n(x).parent).left == x) {
    n(n(x).parent).left = y;
  } else {
    n(n(x).parent).right = y;
  }
  n(y).left = x;
  n(x).parent = y;
}

void PerfRbTree::rotate_right(int32_t x) {
  const int32_t y = n(x).left;
  n(x).left = n(y).right;
  if (n(y).right >= 0) n(n(y).right).parent = x;
  n(y).parent = n(x).parent;
  if (n(x).parent < 0) {
    root_ = y;
  } else if (n(n(x).parent).right == x) {
    n(n(x).parent).right = y;
  } else {
    n(n(x).parent).left = y;
  }
  n(y).right = x;
  n(x).parent = y;
}

void PerfRbTree::link(uint32_t item, int32_t parent, bool left) {
  const auto z = static_cast<int32_t>(nodes_.size());
  nodes_.push_back(Node{item, parent});
  if (parent < 0) {
    root_ = z;
  } else if (left) {
    n(parent).left = z;
  } else {
    n(parent).right = z;
  }
  // The colouring of the kernel's rb_insert_color (the textbook cases).
  int32_t x = z;
  while (n(x).parent >= 0 && n(n(x).parent).red) {
    int32_t p = n(x).parent;
    const int32_t g = n(p).parent;  // exists: a red node is never the root
    if (p == n(g).left) {
      const int32_t u = n(g).right;
      if (u >= 0 && n(u).red) {
        n(p).red = false;
        n(u).red = false;
        n(g).red = true;
        x = g;
        continue;
      }
      if (x == n(p).right) {
        rotate_left(p);
        x = p;
        p = n(x).parent;
      }
      n(p).red = false;
      n(g).red = true;
      rotate_right(g);
    } else {
      const int32_t u = n(g).left;
      if (u >= 0 && n(u).red) {
        n(p).red = false;
        n(u).red = false;
        n(g).red = true;
        x = g;
        continue;
      }
      if (x == n(p).left) {
        rotate_right(p);
        x = p;
        p = n(x).parent;
      }
      n(p).red = false;
      n(g).red = true;
      rotate_left(g);
    }
  }
  n(root_).red = false;
}

}  // namespace tperf::analysis

#include "util/rb_tree.h"

namespace tperf::util {

int32_t RbTree::link(int32_t parent, bool left) {
  const auto z = static_cast<int32_t>(nodes_.size());
  nodes_.push_back(Node{parent});
  if (parent < 0) {
    root_ = z;
  } else if (left) {
    at(parent).left = z;
  } else {
    at(parent).right = z;
  }
  // Recolour and rotate up from the new red node (the textbook cases, as the kernel has them).
  int32_t x = z;
  while (is_red(at(x).parent)) {
    int32_t p = at(x).parent;
    const int32_t g = at(p).parent;  // exists: a red node is never the root
    if (p == at(g).left) {
      const int32_t uncle = at(g).right;
      if (is_red(uncle)) {
        at(p).red = false;
        at(uncle).red = false;
        at(g).red = true;
        x = g;
        continue;
      }
      if (x == at(p).right) {
        x = p;
        rotate_left(x);
        p = at(x).parent;
      }
      at(p).red = false;
      at(g).red = true;
      rotate_right(g);
    } else {
      const int32_t uncle = at(g).left;
      if (is_red(uncle)) {
        at(p).red = false;
        at(uncle).red = false;
        at(g).red = true;
        x = g;
        continue;
      }
      if (x == at(p).left) {
        x = p;
        rotate_right(x);
        p = at(x).parent;
      }
      at(p).red = false;
      at(g).red = true;
      rotate_left(g);
    }
  }
  at(root_).red = false;
  return z;
}

void RbTree::rotate_left(int32_t x) {
  const int32_t y = at(x).right;
  at(x).right = at(y).left;
  if (at(y).left >= 0) at(at(y).left).parent = x;
  transplant(x, y);
  at(y).left = x;
  at(x).parent = y;
}

void RbTree::rotate_right(int32_t x) {
  const int32_t y = at(x).left;
  at(x).left = at(y).right;
  if (at(y).right >= 0) at(at(y).right).parent = x;
  transplant(x, y);
  at(y).right = x;
  at(x).parent = y;
}

// Puts v (or nothing) where u hangs.
void RbTree::transplant(int32_t u, int32_t v) {
  const int32_t p = at(u).parent;
  if (p < 0) {
    root_ = v;
  } else if (at(p).left == u) {
    at(p).left = v;
  } else {
    at(p).right = v;
  }
  if (v >= 0) at(v).parent = p;
}

void RbTree::erase(int32_t z) {
  int32_t x, parent;
  bool removed_red;
  if (at(z).left < 0 || at(z).right < 0) {
    x = at(z).left < 0 ? at(z).right : at(z).left;
    parent = at(z).parent;
    removed_red = at(z).red;
    transplant(z, x);
  } else {
    int32_t y = at(z).right;
    while (at(y).left >= 0) y = at(y).left;
    removed_red = at(y).red;
    x = at(y).right;
    if (at(y).parent == z) {
      parent = y;
    } else {
      parent = at(y).parent;
      transplant(y, x);
      at(y).right = at(z).right;
      at(at(y).right).parent = y;
    }
    transplant(z, y);
    at(y).left = at(z).left;
    at(at(y).left).parent = y;
    at(y).red = at(z).red;
  }
  at(z).left = at(z).right = at(z).parent = -1;
  if (!removed_red) erase_fixup(x, parent);
}

void RbTree::erase_fixup(int32_t x, int32_t parent) {
  while (x != root_ && !is_red(x)) {
    if (x != at(parent).right) {  // x is the left child (the kernel's test, also for an empty x)
      int32_t w = at(parent).right;
      if (is_red(w)) {
        at(w).red = false;
        at(parent).red = true;
        rotate_left(parent);
        w = at(parent).right;
      }
      if (!is_red(at(w).left) && !is_red(at(w).right)) {
        at(w).red = true;
        x = parent;
        parent = at(x).parent;
        continue;
      }
      if (!is_red(at(w).right)) {
        at(at(w).left).red = false;
        at(w).red = true;
        rotate_right(w);
        w = at(parent).right;
      }
      at(w).red = at(parent).red;
      at(parent).red = false;
      at(at(w).right).red = false;
      rotate_left(parent);
      x = root_;
    } else {
      int32_t w = at(parent).left;
      if (is_red(w)) {
        at(w).red = false;
        at(parent).red = true;
        rotate_right(parent);
        w = at(parent).left;
      }
      if (!is_red(at(w).left) && !is_red(at(w).right)) {
        at(w).red = true;
        x = parent;
        parent = at(x).parent;
        continue;
      }
      if (!is_red(at(w).left)) {
        at(at(w).right).red = false;
        at(w).red = true;
        rotate_left(w);
        w = at(parent).left;
      }
      at(w).red = at(parent).red;
      at(parent).red = false;
      at(at(w).left).red = false;
      rotate_right(parent);
      x = root_;
    }
  }
  if (x >= 0) at(x).red = false;
}

std::vector<int32_t> RbTree::in_order() const {
  std::vector<int32_t> out;
  out.reserve(nodes_.size());
  std::vector<int32_t> stack;
  int32_t id = root_;
  while (id >= 0 || !stack.empty()) {
    while (id >= 0) {
      stack.push_back(id);
      id = node(id).left;
    }
    id = stack.back();
    stack.pop_back();
    out.push_back(id);
    id = node(id).right;
  }
  return out;
}

}  // namespace tperf::util

#pragma once

// The kernel's red-black tree (lib/rbtree.c), shape and colours only, over dense node ids: the
// callers keep what a node holds in arrays of their own and walk the tree with their own
// comparisons. perf keeps its hist entries and a DSO's symbols in such trees and searches them
// from the root, so where its comparisons are not an order (hist keys that answer "differs" as
// "goes right") or its items overlap (a PLT entry inside a stretched `_init`), the answer depends
// on the shape; replaying the same insertions and erasures gives the same shape.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/mapped_allocator.h"

namespace tperf::util {

class RbTree {
 public:
  struct Node {
    int32_t parent = -1, left = -1, right = -1;
    bool red = true;
  };

  int32_t root() const { return root_; }
  const Node& node(int32_t id) const { return nodes_[static_cast<size_t>(id)]; }
  size_t size() const { return nodes_.size(); }
  void reserve(size_t n) { nodes_.reserve(n); }

  // A new node (id size() before the call) hung under `parent` (-1: the empty tree's root) on
  // its `left` or right side, which must be free, then rb_insert_color's recolouring.
  int32_t link(int32_t parent, bool left);
  // rb_erase: a node with two children is replaced by its successor, which takes its colour; a
  // black node gone leaves its side one black short, fixed from its parent up. The id stays
  // allocated, out of the tree.
  void erase(int32_t z);
  // The ids in the tree, leftmost first.
  std::vector<int32_t> in_order() const;

 private:
  Node& at(int32_t id) { return nodes_[static_cast<size_t>(id)]; }
  bool is_red(int32_t id) const { return id >= 0 && node(id).red; }
  void rotate_left(int32_t x);
  void rotate_right(int32_t x);
  void transplant(int32_t u, int32_t v);
  void erase_fixup(int32_t x, int32_t parent);

  // A hist of a system-wide recording links millions: faulted in huge pages once large.
  GrowArray<Node> nodes_;
  int32_t root_ = -1;
};

}  // namespace tperf::util

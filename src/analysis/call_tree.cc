#include "analysis/call_tree.h"

#include <algorithm>

namespace tperf::analysis {

void CallTree::append(std::span<const CallFrame> chain, uint64_t period) {
  if (chain.empty()) return;
  max_depth_ = std::max(max_depth_, chain.size());
  CallNode* node = &root_;
  size_t pos = 0;
  while (true) {
    // Find the child whose first frame is the next one of the chain.
    CallNode* next = nullptr;
    for (auto& c : node->children) {
      if (!c->frames.empty() && c->frames[0].same_as(chain[pos])) {
        next = c.get();
        break;
      }
    }
    if (!next) {
      auto child = std::make_unique<CallNode>();
      child->frames.assign(chain.begin() + static_cast<ptrdiff_t>(pos), chain.end());
      child->hit = period;
      node->children_hit += period;
      node->children.push_back(std::move(child));
      return;
    }
    node->children_hit += period;
    // How far the chain follows this child's run of frames.
    size_t k = 0;
    while (k < next->frames.size() && pos + k < chain.size() && next->frames[k].same_as(chain[pos + k])) ++k;
    if (k < next->frames.size()) {
      // Split: the unmatched tail of the run becomes the only child of the matched head.
      auto tail = std::make_unique<CallNode>();
      tail->frames.assign(next->frames.begin() + static_cast<ptrdiff_t>(k), next->frames.end());
      tail->hit = next->hit;
      tail->children_hit = next->children_hit;
      tail->children = std::move(next->children);
      next->frames.resize(k);
      next->children.clear();
      next->children_hit = tail->cumul();
      next->hit = 0;
      next->children.push_back(std::move(tail));
    }
    pos += k;
    if (pos == chain.size()) {
      next->hit += period;
      return;
    }
    node = next;
  }
}

}  // namespace tperf::analysis

// The callchain tree of one hist entry (perf's callchain_node tree): the sample chains merged
// by common prefix, each node holding a run of frames, the period that ended there (hit) and the
// period of everything below it (children_hit).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tperf::session {
struct Dso;
}
namespace tperf::symbols {
struct Symbol;
}

namespace tperf::analysis {

struct CallFrame {
  uint64_t ip = 0;                     // the raw address
  const session::Dso* dso = nullptr;
  const symbols::Symbol* sym = nullptr;  // nullptr: unresolved
  uint64_t sym_start = 0;
  // perf matches frames by function when both have a symbol, else by address.
  bool same_as(const CallFrame& o) const {
    if (sym && o.sym) return sym_start == o.sym_start && dso == o.dso;
    return ip == o.ip && !sym == !o.sym;
  }
};

struct CallNode {
  std::vector<CallFrame> frames;  // the run of frames this node stands for
  uint64_t hit = 0;               // period of chains that end here
  uint64_t children_hit = 0;      // period of chains that go on below
  std::vector<std::unique_ptr<CallNode>> children;  // in creation order
  uint64_t cumul() const { return hit + children_hit; }
};

class CallTree {
 public:
  // Adds one chain (in display order: root first for caller graphs) with its period.
  void append(std::span<const CallFrame> chain, uint64_t period);
  const CallNode& root() const { return root_; }
  // The longest chain appended.
  size_t max_depth() const { return max_depth_; }
  bool empty() const { return root_.children.empty(); }

 private:
  CallNode root_;
  size_t max_depth_ = 0;
};

}  // namespace tperf::analysis

#include "analysis/perf_rbtree.h"

namespace tperf::analysis {

std::vector<uint32_t> PerfRbTree::in_order() const {
  std::vector<uint32_t> out;
  out.reserve(items_.size());
  for (int32_t id : tree_.in_order()) out.push_back(items_[static_cast<size_t>(id)]);
  return out;
}

}  // namespace tperf::analysis

#include "analysis/sample_read.h"

namespace tperf::analysis {

const std::vector<ReadDelivery>& SampleReadSplitter::split(const perfdata::Sample& s) {
  out_.clear();
  for (const perfdata::ReadValue& v : s.read.values) {
    auto it = reader_.ids().find(v.id);
    if (it == reader_.ids().end()) continue;  // perf counts it as an unknown id and goes on
    uint64_t& last = last_[v.id];
    const uint64_t period = v.value - last;
    last = v.value;
    if (period == 0) continue;
    out_.push_back({static_cast<int>(it->second.attr_index), v.id, period});
  }
  return out_;
}

}  // namespace tperf::analysis

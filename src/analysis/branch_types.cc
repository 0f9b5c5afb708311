#include "analysis/branch_types.h"

namespace tperf::analysis {

const char* branch_type_name(unsigned type) {
  static const char* const kNames[16] = {"N/A",       "COND",      "UNCOND", "IND",    "CALL",  "IND_CALL",
                                         "RET",       "SYSCALL",   "SYSRET", "COND_CALL", "COND_RET", "ERET",
                                         "IRQ",       "SERROR",    "NO_TX",  "EXTEND_ABI"};
  return type < 16 ? kNames[type] : "";
}

const char* branch_new_type_name(unsigned new_type) {
  static const char* const kNames[8] = {"FAULT_ALGN", "FAULT_DATA", "FAULT_INST", "ARCH_1",
                                        "ARCH_2",     "ARCH_3",     "ARCH_4",     "ARCH_5"};
  return new_type < 8 ? kNames[new_type] : nullptr;
}

void BranchTypeStats::count(uint64_t flags, uint64_t from, uint64_t to) {
  const unsigned type = (flags >> 20) & 0xf;
  // perf leaves out branches of no type and those from address 0.
  if (type == 0 || from == 0) return;
  if (type == 15) {
    const unsigned new_type = (flags >> 26) & 0xf;
    if (new_type < 8) ++new_counts[new_type];
  } else {
    ++counts[type];
  }
  if (type == 1) {  // COND
    if (to > from) {
      ++cond_fwd;
    } else {
      ++cond_bwd;
    }
  }
  auto crosses = [&](uint64_t size) { return (from & ~(size - 1)) != (to & ~(size - 1)); };
  if (crosses(uint64_t{2} << 20)) {
    ++cross_2m;
  } else if (crosses(uint64_t{4} << 10)) {
    ++cross_4k;
  }
}

uint64_t BranchTypeStats::total() const {
  uint64_t t = 0;
  for (uint64_t c : counts) t += c;
  return t;
}

}  // namespace tperf::analysis

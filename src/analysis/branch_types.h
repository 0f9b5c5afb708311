// perf's branch types (the type and new_type fields of a branch entry's flags) and the statistics
// it keeps of them: branch mode's "Branch Statistics" block, --branch-history's per-frame
// "(CALL CROSS_2M ...)" texts, script's brstack type names.
#pragma once

#include <cstdint>

namespace tperf::analysis {

// perf's name of a branch type (0..15): "N/A" for 0 (unknown), "EXTEND_ABI" for 15 (named by
// the new_type field instead).
const char* branch_type_name(unsigned type);
// perf 6.1's name of a new_type (used with type 15); nullptr past its eight names.
const char* branch_new_type_name(unsigned new_type);

// Branches counted by type, conditional ones forward and backward, and those crossing a 4K or
// 2M boundary. perf counts typed branches from a known address only.
struct BranchTypeStats {
  uint64_t counts[16] = {};     // by the flags' type field, but for 15 (EXTEND_ABI)...
  uint64_t new_counts[8] = {};  // ...counted by new_type here, and left out of total()
  uint64_t cond_fwd = 0, cond_bwd = 0, cross_4k = 0, cross_2m = 0;
  // One branch: its flags word (perfdata::BranchEntry::flags) and its ends.
  void count(uint64_t flags, uint64_t from, uint64_t to);
  uint64_t total() const;
};

}  // namespace tperf::analysis

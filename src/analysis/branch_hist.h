// perf report's branch mode: for samples with branch stacks (PERF_SAMPLE_BRANCH_STACK), each
// branch entry of each sample counts once (period 1), keyed by its source and target (dso_from,
// symbol_from, symbol_to, ...), its flags (mispredict, in_tx, abort, cycles) and the plain keys
// (comm, pid, dso, sym, ...), which see the branch's target as perf does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/branch_types.h"
#include "analysis/hist.h"
#include "analysis/perf_rbtree.h"

namespace tperf::analysis {

enum class BranchKey : uint8_t {
  kDsoFrom,
  kDsoTo,
  kSymFrom,
  kSymTo,
  kAddrFrom,
  kAddrTo,
  kMispredict,
  kInTx,
  kAbort,
  kCycles,
  kSrclineFrom,
  kSrclineTo,
};

// One --sort key of branch mode: a branch key or one of the plain keys.
struct BranchSortKey {
  bool branch = false;
  SortKey plain = SortKey::kComm;  // !branch
  BranchKey key = BranchKey::kDsoFrom;  // branch
};

// perf 6.1's default --sort in branch mode.
inline constexpr const char* kDefaultBranchSort = "comm,dso_from,symbol_from,symbol_to,cycles";

// Parses --sort in branch mode: the branch keys by perf's names (dso_from, dso_to, symbol_from,
// symbol_to, addr_from, addr_to, mispredict, in_tx, abort, cycles, srcline_from, srcline_to) and
// the plain keys comm, pid,
// tid, dso, sym, cpu. Returns "" or a message naming the key.
std::string parse_branch_sort_keys(std::string_view spec, std::vector<BranchSortKey>* out);
// True when `name` is one of perf's branch-only sort keys (refused outside branch mode).
bool is_branch_sort_key(std::string_view name);
// The column header perf prints for a branch key ("Source Shared Object", ...).
const char* branch_key_header(BranchKey key);

// One end of a branch, resolved as perf resolves branch addresses: in the thread's maps, then the
// kernel's; loc.addr is the address in the map's terms (perf's al_addr), loc.level the space it
// was found in ('H' when no map has it).
struct BranchSide {
  Location loc;
  uint64_t addr = 0;  // the address as recorded
  // The srcline_from/srcline_to keys' text: perf's map__srcline of the map-relative address
  // ("file.c:21", "dso[offset]" without line tables, "??:0" without a map); interned by the
  // builder, nullptr when no srcline key is in use.
  const std::string* srcline = nullptr;
  // perf 6.1 looks the text up only when one of its comparisons reaches the key for the entry:
  // one never compared so prints "(null)", and one first compared after its own place in the
  // output tree was found (by a later entry's insertion) prints its text but does not widen the
  // column (perf measures each entry right after inserting it). BranchHist's comparisons note it.
  enum class SrclineSeen : uint8_t { kNever, kInTime, kLate };
  mutable SrclineSeen srcline_seen = SrclineSeen::kNever;
};

// The flags word of a branch entry (perf_branch_entry's bitfields, in host order).
struct BranchFlags {
  uint64_t bits = 0;
  bool mispred() const { return bits & 1; }
  bool predicted() const { return bits & 2; }
  bool in_tx() const { return bits & 4; }
  bool abort() const { return bits & 8; }
  unsigned cycles() const { return (bits >> 4) & 0xffff; }
};

struct BranchHistEntry {
  // comm, pid, tid, cpu of the sample; loc: the branch's target with the sample's level and its
  // raw address (what perf's plain dso/sym keys show in branch mode).
  HistEntry plain;
  BranchSide from, to;
  BranchFlags flags;
  uint64_t period = 0;
  uint64_t samples = 0;
};

class BranchHist {
 public:
  explicit BranchHist(std::vector<BranchSortKey> keys);
  ~BranchHist();
  BranchHist(const BranchHist&) = delete;
  BranchHist& operator=(const BranchHist&) = delete;

  const std::vector<BranchSortKey>& keys() const { return keys_; }

  // One branch entry of a sample (period 1, as perf counts branches, not samples). Returns the
  // entry it went into (which keeps the branch that made it).
  const BranchHistEntry& add(const BranchHistEntry& branch);

  // Entries in perf's output order: by period, then by each key in --sort order (perf's output
  // comparators, replayed in its tree from its input tree's order). With the comm key, perf
  // first collapses the input tree into another, where entries its walk did not merge on input
  // may merge (their values then count in the first one). Call once all branches are in.
  std::vector<const BranchHistEntry*> sorted() const;

  // perf's comparator of one key: < 0 when `a` goes first. `output`: the output sort (symbols of
  // the plain sym key by name) rather than the input tree (by address).
  int compare_key(const BranchSortKey& key, const BranchHistEntry& a, const BranchHistEntry& b, bool output) const;

  uint64_t total_period() const { return total_period_; }
  uint64_t total_samples() const { return total_samples_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<BranchSortKey> keys_;
  Hist plain_;  // compares the plain keys
  std::vector<std::unique_ptr<BranchHistEntry>> entries_;
  PerfRbTree input_;  // perf's input tree: entry indexes
  uint64_t total_period_ = 0;
  uint64_t total_samples_ = 0;
  // perf's first key comparator that differs, in perf's sign (> 0: `a` first).
  int64_t perf_cmp(const BranchHistEntry& a, const BranchHistEntry& b) const;
  mutable std::vector<const BranchHistEntry*> sorted_;  // sorted()'s answer, made once
};

}  // namespace tperf::analysis

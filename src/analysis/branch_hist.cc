#include "analysis/branch_hist.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "analysis/tree_replay.h"
#include "session/machine.h"
#include "symbols/symbol_table.h"
#include "util/text.h"

namespace tperf::analysis {

namespace {

struct BranchKeyName {
  const char* name;
  BranchKey key;
  const char* header;
};
constexpr BranchKeyName kBranchKeys[] = {
    {"dso_from", BranchKey::kDsoFrom, "Source Shared Object"},
    {"dso_to", BranchKey::kDsoTo, "Target Shared Object"},
    {"symbol_from", BranchKey::kSymFrom, "Source Symbol"},
    {"symbol_to", BranchKey::kSymTo, "Target Symbol"},
    {"addr_from", BranchKey::kAddrFrom, "Source Address"},
    {"addr_to", BranchKey::kAddrTo, "Target Address"},
    {"mispredict", BranchKey::kMispredict, "Branch Mispredicted"},
    {"in_tx", BranchKey::kInTx, "Branch in transaction"},
    {"abort", BranchKey::kAbort, "Transaction abort"},
    {"cycles", BranchKey::kCycles, "Basic Block Cycles"},
    {"srcline_from", BranchKey::kSrclineFrom, "From Source:Line"},
    {"srcline_to", BranchKey::kSrclineTo, "To Source:Line"},
};

// The plain keys perf's branch mode shows (the target's dso and symbol, the sample's thread).
bool plain_key_in_branch_mode(SortKey k) {
  return k == SortKey::kComm || k == SortKey::kPid || k == SortKey::kTid || k == SortKey::kDso ||
         k == SortKey::kSym || k == SortKey::kCpu;
}

// The comparators below return perf's sign: > 0 when `a` goes first (left in its trees).
int64_t sign(int64_t v) { return v < 0 ? -1 : v > 0; }

// perf's cmp_null: both null equal, a null `l` after the other.
int64_t cmp_null(const void* l, const void* r) {
  if (!l && !r) return 0;
  return !l ? -1 : 1;
}

// perf's _sort__dso_cmp on two maps' DSOs: by short name, larger first; no DSO first.
int64_t dso_cmp(const Location& l, const Location& r) {
  const void* dl = l.dso;
  const void* dr = r.dso;
  if (!dl || !dr) return cmp_null(dr, dl);
  return sign(dso_column_name(l.dso).compare(dso_column_name(r.dso)));
}

// perf's _sort__addr_cmp: the smaller address first (the sign of the 64-bit difference).
int64_t addr_cmp(uint64_t l, uint64_t r) { return sign(static_cast<int64_t>(r - l)); }

// perf's _sort__sym_cmp: a symbol before none; by start, then end, the lower first.
int64_t sym_cmp(const symbols::Symbol* l, const symbols::Symbol* r) {
  if (!l || !r) return cmp_null(l, r);
  if (l == r) return 0;
  if (l->inlined || r->inlined) {
    if (int c = l->name().compare(r->name())) return sign(c);
    if (l->start <= r->end && l->end >= r->start) return 0;
  }
  if (l->start != r->start) return sign(static_cast<int64_t>(r->start - l->start));
  return sign(static_cast<int64_t>(r->end - l->end));
}

int64_t side_sym_cmp(const BranchSide& l, const BranchSide& r) {
  if (!l.loc.sym && !r.loc.sym) return addr_cmp(l.addr, r.addr);
  return sym_cmp(l.loc.sym, r.loc.sym);
}

// perf 6.1's sort__srcline_from_cmp/_to_cmp: strcmp(right, left) of the two texts, which it
// looks up for both entries there. `output`: a comparison of the output sort, where `l` is the
// entry being inserted and `r` one already placed.
int64_t side_srcline_cmp(const BranchSide& l, const BranchSide& r, bool output) {
  using Seen = BranchSide::SrclineSeen;
  l.srcline_seen = Seen::kInTime;
  if (!output) {
    r.srcline_seen = Seen::kInTime;
  } else if (r.srcline_seen == Seen::kNever) {
    r.srcline_seen = Seen::kLate;
  }
  const std::string_view lt = l.srcline ? std::string_view(*l.srcline) : std::string_view();
  const std::string_view rt = r.srcline ? std::string_view(*r.srcline) : std::string_view();
  return sign(rt.compare(lt));
}

int64_t side_addr_cmp(const BranchSide& l, const BranchSide& r) {
  if (int64_t c = dso_cmp(l.loc, r.loc)) return c;
  return addr_cmp(l.addr, r.addr);
}

}  // namespace

bool is_branch_sort_key(std::string_view name) {
  return std::any_of(std::begin(kBranchKeys), std::end(kBranchKeys), [&](const BranchKeyName& k) { return name == k.name; });
}

const char* branch_key_header(BranchKey key) {
  for (const BranchKeyName& k : kBranchKeys) {
    if (k.key == key) return k.header;
  }
  return "";
}

std::string parse_branch_sort_keys(std::string_view spec, std::vector<BranchSortKey>* out) {
  out->clear();
  for (const std::string& tok : util::split_commas(spec)) {
    BranchSortKey key;
    auto it = std::find_if(std::begin(kBranchKeys), std::end(kBranchKeys), [&](const BranchKeyName& k) { return tok == k.name; });
    if (it != std::end(kBranchKeys)) {
      key.branch = true;
      key.key = it->key;
    } else {
      std::vector<SortKey> plain;
      if (!parse_sort_keys(tok, &plain).empty() || plain.size() != 1 || !plain_key_in_branch_mode(plain[0])) {
        return fmt::format(
            "unknown --sort key '{}' in branch mode (known: dso_from, dso_to, symbol_from, symbol_to, addr_from, "
            "addr_to, mispredict, in_tx, abort, cycles, srcline_from, srcline_to, comm, pid, tid, dso, sym, cpu)",
            tok);
      }
      key.plain = plain[0];
    }
    const bool dup = std::any_of(out->begin(), out->end(), [&](const BranchSortKey& k) {
      return k.branch == key.branch && (k.branch ? k.key == key.key : k.plain == key.plain);
    });
    if (!dup) out->push_back(key);
  }
  if (out->empty()) return "--sort: no keys given";
  return "";
}

namespace {
std::vector<SortKey> plain_keys_of(const std::vector<BranchSortKey>& keys) {
  std::vector<SortKey> plain;
  for (const BranchSortKey& k : keys) {
    if (!k.branch) plain.push_back(k.plain);
  }
  return plain;
}
}  // namespace

BranchHist::BranchHist(std::vector<BranchSortKey> keys) : keys_(std::move(keys)), plain_(plain_keys_of(keys_)) {}

BranchHist::~BranchHist() = default;

int BranchHist::compare_key(const BranchSortKey& key, const BranchHistEntry& a, const BranchHistEntry& b,
                            bool output) const {
  if (!key.branch) return plain_.compare_key(key.plain, a.plain, b.plain, !output);
  int64_t perf = 0;  // perf's sign: > 0 puts `a` first
  switch (key.key) {
    case BranchKey::kDsoFrom: perf = dso_cmp(a.from.loc, b.from.loc); break;
    case BranchKey::kDsoTo: perf = dso_cmp(a.to.loc, b.to.loc); break;
    case BranchKey::kSymFrom: perf = side_sym_cmp(a.from, b.from); break;
    case BranchKey::kSymTo: perf = side_sym_cmp(a.to, b.to); break;
    case BranchKey::kAddrFrom: perf = side_addr_cmp(a.from, b.from); break;
    case BranchKey::kAddrTo: perf = side_addr_cmp(a.to, b.to); break;
    // perf answers "differs" (a first) whichever way round: no order, and its trees' shapes
    // decide what merges and where things go.
    case BranchKey::kMispredict:
      perf = a.flags.mispred() != b.flags.mispred() || a.flags.predicted() != b.flags.predicted();
      break;
    case BranchKey::kInTx: perf = a.flags.in_tx() != b.flags.in_tx(); break;
    case BranchKey::kAbort: perf = a.flags.abort() != b.flags.abort(); break;
    case BranchKey::kCycles:
      perf = sign(static_cast<int64_t>(a.flags.cycles()) - static_cast<int64_t>(b.flags.cycles()));
      break;
    case BranchKey::kSrclineFrom: perf = side_srcline_cmp(a.from, b.from, output); break;
    case BranchKey::kSrclineTo: perf = side_srcline_cmp(a.to, b.to, output); break;
  }
  return static_cast<int>(-perf);
}

int64_t BranchHist::perf_cmp(const BranchHistEntry& a, const BranchHistEntry& b) const {
  for (const BranchSortKey& k : keys_) {
    if (int c = compare_key(k, a, b, false)) return -c;
  }
  return 0;
}

const BranchHistEntry& BranchHist::add(const BranchHistEntry& branch) {
  total_period_ += 1;
  total_samples_ += 1;
  const auto next = static_cast<uint32_t>(entries_.size());
  // perf compares the entry met on its walk with the new one: cmp(existing, new).
  const uint32_t at = input_.find_or_insert(next, [&](uint32_t e) { return perf_cmp(*entries_[e], branch); });
  if (at != next) {
    BranchHistEntry& e = *entries_[at];
    e.period += 1;
    e.samples += 1;
    return e;
  }
  auto e = std::make_unique<BranchHistEntry>(branch);
  e->period = 1;
  e->samples = 1;
  entries_.push_back(std::move(e));
  return *entries_.back();
}

std::vector<const BranchHistEntry*> BranchHist::sorted() const {
  if (!sorted_.empty() || entries_.empty()) return sorted_;
  std::vector<uint32_t> order = input_.in_order();
  const bool collapse = std::any_of(keys_.begin(), keys_.end(),
                                    [](const BranchSortKey& k) { return !k.branch && k.plain == SortKey::kComm; });
  if (collapse) {
    // perf's collapsed tree, filled in the input tree's order; an entry it finds equal on its
    // walk takes the new one's values.
    PerfRbTree collapsed;
    for (uint32_t i : order) {
      const uint32_t at = collapsed.find_or_insert(i, [&](uint32_t e) { return perf_cmp(*entries_[e], *entries_[i]); });
      if (at != i) {
        entries_[at]->period += entries_[i]->period;
        entries_[at]->samples += entries_[i]->samples;
      }
    }
    order = collapsed.in_order();
  }
  std::vector<const BranchHistEntry*> in;
  in.reserve(order.size());
  for (uint32_t i : order) in.push_back(entries_[i].get());
  auto before = [&](const BranchHistEntry* a, const BranchHistEntry* b) {
    if (a->period != b->period) return a->period > b->period;
    for (const BranchSortKey& k : keys_) {
      if (int c = compare_key(k, *a, *b, true)) return c < 0;
    }
    return false;
  };
  sorted_ = replay_tree(in, before);
  return sorted_;
}

}  // namespace tperf::analysis

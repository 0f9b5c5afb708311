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
            "addr_to, mispredict, in_tx, abort, cycles, comm, pid, tid, dso, sym, cpu)",
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

BranchHist::BranchHist(std::vector<BranchSortKey> keys)
    : keys_(std::move(keys)), plain_(plain_keys_of(keys_)), index_(InputLess{this}) {}

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
    case BranchKey::kMispredict:
      // perf answers "differs" (a first) whichever way round; the index needs an order, so it
      // compares the two bits there.
      if (output) {
        perf = a.flags.mispred() != b.flags.mispred() || a.flags.predicted() != b.flags.predicted();
      } else {
        perf = sign(static_cast<int64_t>(b.flags.bits & 3) - static_cast<int64_t>(a.flags.bits & 3));
      }
      break;
    case BranchKey::kInTx:
      perf = output ? a.flags.in_tx() != b.flags.in_tx() : static_cast<int>(b.flags.in_tx()) - a.flags.in_tx();
      break;
    case BranchKey::kAbort:
      perf = output ? a.flags.abort() != b.flags.abort() : static_cast<int>(b.flags.abort()) - a.flags.abort();
      break;
    case BranchKey::kCycles:
      perf = sign(static_cast<int64_t>(a.flags.cycles()) - static_cast<int64_t>(b.flags.cycles()));
      break;
  }
  return static_cast<int>(-perf);
}

bool BranchHist::InputLess::operator()(const BranchHistEntry* a, const BranchHistEntry* b) const {
  for (const BranchSortKey& k : hist->keys_) {
    if (int c = hist->compare_key(k, *a, *b, false)) return c < 0;
  }
  return false;
}

const BranchHistEntry& BranchHist::add(const BranchHistEntry& branch) {
  total_period_ += 1;
  total_samples_ += 1;
  auto it = index_.find(&branch);
  if (it != index_.end()) {
    BranchHistEntry& e = *entries_[it->second];
    e.period += 1;
    e.samples += 1;
    return e;
  }
  auto e = std::make_unique<BranchHistEntry>(branch);
  e->period = 1;
  e->samples = 1;
  index_.emplace(e.get(), entries_.size());
  entries_.push_back(std::move(e));
  return *entries_.back();
}

void BranchTypeStats::count(const BranchHistEntry& entry) {
  const unsigned type = (entry.flags.bits >> 20) & 0xf;
  const uint64_t from = entry.from.addr, to = entry.to.addr;
  // perf leaves out branches of no type and those from address 0.
  if (type == 0 || from == 0) return;
  ++counts[type];
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

std::vector<const BranchHistEntry*> BranchHist::sorted() const {
  std::vector<const BranchHistEntry*> in;
  in.reserve(index_.size());
  for (const auto& [e, unused] : index_) in.push_back(e);
  auto before = [&](const BranchHistEntry* a, const BranchHistEntry* b) {
    if (a->period != b->period) return a->period > b->period;
    for (const BranchSortKey& k : keys_) {
      if (int c = compare_key(k, *a, *b, true)) return c < 0;
    }
    return false;
  };
  return replay_tree(in, before);
}

}  // namespace tperf::analysis

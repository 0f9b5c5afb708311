#include "analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_set>

#include "session/machine.h"
#include "symbols/symbol_table.h"

namespace tperf::analysis {

namespace {

// What perf compares when it looks an entry up in another file's hist: the values of the keys,
// since the two files have their own threads, DSOs and symbols. perf 6.1 pairs a symbol by its
// name (a rebuilt function that moved still pairs), and with the sym key (no dso key) by its
// name alone, in whichever DSO; an unresolved address by the address.
struct MatchKey {
  std::string comm;
  bool has_comm = false;
  int32_t tid = -1;
  int32_t cpu = -1;
  std::string dso;
  bool has_dso = false;
  bool has_sym = false;
  std::string sym;
  uint64_t addr = 0;

  auto tie() const { return std::tie(has_comm, comm, tid, cpu, has_dso, dso, has_sym, sym, addr); }
  bool operator<(const MatchKey& o) const { return tie() < o.tie(); }
};

// `merge_unresolved`: the hists were collapsed (collapsed()): entries without a symbol pair
// whatever their addresses, and without the dso key whatever their DSOs.
struct MatchRule {
  bool by_thread = false;
  bool merge_unresolved = false;
  bool dso_key = false;
};

MatchKey match_key(const HistEntry& e, const MatchRule& rule) {
  const bool by_thread = rule.by_thread;
  MatchKey k;
  if (e.comm) {
    k.has_comm = true;
    k.comm = *e.comm;
  }
  // Hist keeps the thread of every entry (for the comm column); it is a key only with pid/tid.
  if (by_thread) k.tid = e.tid;
  k.cpu = e.cpu;
  if (e.loc.dso && (rule.dso_key || !rule.merge_unresolved)) {
    k.has_dso = true;
    k.dso = dso_column_name(e.loc.dso);
  }
  if (e.loc.sym) {
    k.has_sym = true;
    k.sym = e.loc.sym->name();
  }
  k.addr = rule.merge_unresolved && !e.loc.sym ? 0 : e.loc.addr;
  return k;
}

// perf's cmp_doubles: the larger value sorts first.
int cmp_doubles(double l, double r) { return l > r ? -1 : l < r ? 1 : 0; }

// Sign of perf's comparison of the computed values of two rows' pairs in column `i`, `l` being
// the row already in the output tree: positive puts `r` first.
int cmp_computed(const DiffRow& l, const DiffRow& r, size_t i, DiffCompute c) {
  switch (c) {
    case DiffCompute::kDelta: return cmp_doubles(l.delta[i], r.delta[i]);
    case DiffCompute::kDeltaAbs: return cmp_doubles(std::fabs(l.delta[i]), std::fabs(r.delta[i]));
    case DiffCompute::kRatio: return cmp_doubles(l.ratio[i], r.ratio[i]);
    case DiffCompute::kWdiff: {
      // perf returns the 64-bit difference, wrapping as it does.
      auto d = static_cast<int64_t>(static_cast<uint64_t>(r.wdiff[i]) - static_cast<uint64_t>(l.wdiff[i]));
      return d > 0 ? 1 : d < 0 ? -1 : 0;
    }
  }
  return 0;
}

// `hist`'s entries in key order as perf diff pairs them: with the sym key, the entries that agree
// on every other key and have no symbol, or symbols of the same name (in two DSOs: the _start of
// a program and of its dynamic loader), become one, the first of them in key order with the
// periods and sample counts of all (made in `storage`). perf diff collapses by the names its
// sort compares, where report keeps each DSO's symbol apart.
std::vector<const HistEntry*> collapsed(const Hist& hist, std::vector<std::unique_ptr<HistEntry>>* storage) {
  std::vector<const HistEntry*> in = hist.in_key_order();
  const std::vector<SortKey>& keys = hist.keys();
  if (std::find(keys.begin(), keys.end(), SortKey::kSym) == keys.end() ||
      std::find(keys.begin(), keys.end(), SortKey::kSymoff) != keys.end()) {
    return in;  // perf diff has no symoff key; tperf's keeps every address
  }
  // By the keys other than sym, then by the symbol's name (every unresolved entry alike).
  auto collapse_less = [&](const HistEntry* a, const HistEntry* b) {
    for (SortKey k : keys) {
      if (k == SortKey::kSym) continue;
      if (int c = hist.compare_key(k, *a, *b, true)) return c < 0;
    }
    if (!a->loc.sym || !b->loc.sym) return !a->loc.sym && b->loc.sym;
    return a->loc.sym->name() < b->loc.sym->name();
  };
  // Each group's place in `out`; its entry is copied (to add the others' values to) only when a
  // second one joins it.
  std::map<const HistEntry*, size_t, decltype(collapse_less)> groups(collapse_less);
  std::vector<const HistEntry*> out;
  std::vector<HistEntry*> merged;  // parallel to out: the copy, once made
  out.reserve(in.size());
  for (const HistEntry* e : in) {
    auto [it, made] = groups.try_emplace(e, out.size());
    if (made) {
      out.push_back(e);
      merged.push_back(nullptr);
      continue;
    }
    HistEntry*& into = merged[it->second];
    if (!into) {
      storage->push_back(std::make_unique<HistEntry>(*out[it->second]));
      into = storage->back().get();
      out[it->second] = into;
    }
    into->period += e->period;
    into->samples += e->samples;
    into->children_period += e->children_period;
    into->children_samples += e->children_samples;
  }
  return out;
}

bool has_pairs(const DiffRow& r) {
  return std::any_of(r.pairs.begin(), r.pairs.end(), [](const HistEntry* p) { return p != nullptr; });
}

}  // namespace

Diff diff_hists(const Hist& base, std::span<const Hist* const> others, const DiffOptions& options) {
  const size_t n = others.size();
  const bool by_thread = std::any_of(base.keys().begin(), base.keys().end(),
                                     [](SortKey k) { return k == SortKey::kPid || k == SortKey::kTid; });
  auto has_key = [&](SortKey k) { return std::find(base.keys().begin(), base.keys().end(), k) != base.keys().end(); };
  const MatchRule rule{by_thread, has_key(SortKey::kSym) && !has_key(SortKey::kSymoff), has_key(SortKey::kDso)};
  Diff diff;
  diff.base_total = base.total_period();
  std::vector<DiffRow>& rows = diff.rows;
  auto add_row = [&](const HistEntry* keys, size_t keys_hist) {
    DiffRow r;
    r.keys = keys;
    r.keys_hist = keys_hist;
    r.pairs.assign(n, nullptr);
    r.delta.assign(n, 0);
    r.ratio.assign(n, 0);
    r.wdiff.assign(n, 0);
    rows.push_back(std::move(r));
    return rows.size() - 1;
  };

  // The baseline's tree by key, which the entries only in other files join: its walk order is
  // the order perf computes and sorts the rows in.
  struct KeyLess {
    const Hist* hist;
    const std::vector<DiffRow>* rows;
    bool operator()(size_t a, size_t b) const { return hist->compare_keys(*(*rows)[a].keys, *(*rows)[b].keys) < 0; }
  };
  std::multiset<size_t, KeyLess> tree(KeyLess{&base, &rows});
  for (const HistEntry* e : collapsed(base, &diff.merged)) {
    size_t i = add_row(e, 0);
    rows[i].base = e;
    tree.insert(i);
  }

  for (size_t h = 0; h < n; ++h) {
    if (!others[h]) continue;
    const std::vector<const HistEntry*> entries = collapsed(*others[h], &diff.merged);
    std::map<MatchKey, const HistEntry*> lookup;
    for (const HistEntry* e : entries) lookup.emplace(match_key(*e, rule), e);
    std::unordered_set<const HistEntry*> paired;
    for (size_t i : tree) {
      auto it = lookup.find(match_key(*rows[i].keys, rule));
      if (it == lookup.end()) continue;
      rows[i].pairs[h] = it->second;
      paired.insert(it->second);
    }
    for (const HistEntry* e : entries) {
      if (paired.count(e)) continue;
      size_t i = add_row(e, h + 1);
      rows[i].pairs[h] = e;
      tree.insert(i);
    }
  }

  // The computed values, with perf's arithmetic (percentages of each hist's own total).
  for (DiffRow& r : rows) {
    const uint64_t old_period = r.base_period();
    const double old_percent = static_cast<double>(old_period) * 100.0 / static_cast<double>(diff.base_total);
    for (size_t h = 0; h < n; ++h) {
      const HistEntry* p = r.pairs[h];
      if (!p) continue;
      const double new_percent =
          static_cast<double>(p->period) * 100.0 / static_cast<double>(others[h]->total_period());
      r.delta[h] = new_percent - old_percent;
      r.ratio[h] = static_cast<double>(p->period) / static_cast<double>(old_period ? old_period : 1);
      r.wdiff[h] = static_cast<int64_t>(p->period * static_cast<uint64_t>(options.wdiff_w2) -
                                        old_period * static_cast<uint64_t>(options.wdiff_w1));
    }
  }

  // perf's output comparator: > 0 puts `a` (the row being inserted) before `b`. Its sort list:
  // the computed column of the first other file, the baseline period, each file's computed
  // column, then the sort keys.
  const bool delta_like = options.compute == DiffCompute::kDelta || options.compute == DiffCompute::kDeltaAbs;
  auto order = [&](const DiffRow& a, const DiffRow& b) -> int {
    if (n > 0) {
      const HistEntry* pl = b.pairs[0];
      const HistEntry* pr = a.pairs[0];
      if (pl && pr) {
        // Ratios and weighted diffs need a baseline: rows without one go last.
        if (!delta_like && (!a.base || !b.base)) {
          if (a.base || b.base) return b.base ? -1 : 1;
        } else if (int c = cmp_computed(b, a, 0, options.compute)) {
          return c;
        }
      } else if (pl || pr) {
        return pl ? -1 : 1;
      }
    }
    if (a.base_period() != b.base_period()) return a.base_period() > b.base_period() ? 1 : -1;
    const bool pairs_b = has_pairs(b), pairs_a = has_pairs(a);
    for (size_t h = 0; h < n; ++h) {
      if (!pairs_a && !pairs_b) continue;
      if (!pairs_a || !pairs_b) return pairs_b ? -1 : 1;
      const HistEntry* pl = b.pairs[h];
      const HistEntry* pr = a.pairs[h];
      if (!pl && !pr) continue;
      if (!pl || !pr) return pl ? -1 : 1;
      if (int c = cmp_computed(b, a, h, options.compute)) return c;
    }
    return -base.compare_sort_keys(*a.keys, *b.keys);
  };
  struct Before {
    const decltype(order)* f;
    const std::vector<DiffRow>* rows;
    bool operator()(size_t a, size_t b) const { return (*f)((*rows)[a], (*rows)[b]) > 0; }
  };
  // Replayed in a red-black tree as perf inserts them (see Hist::sorted): ties keep key order.
  std::multiset<size_t, Before> out(Before{&order, &rows});
  for (size_t i : tree) out.insert(i);
  std::vector<DiffRow> sorted;
  sorted.reserve(rows.size());
  for (size_t i : out) sorted.push_back(std::move(rows[i]));
  diff.rows = std::move(sorted);
  return diff;
}

}  // namespace tperf::analysis

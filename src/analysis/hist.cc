#include "analysis/hist.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "session/machine.h"
#include "symbols/symbol_table.h"

namespace tperf::analysis {

namespace {

struct KeyName {
  const char* name;
  SortKey key;
};
constexpr KeyName kKeyNames[] = {
    {"comm", SortKey::kComm}, {"pid", SortKey::kPid},       {"thread", SortKey::kPid},
    {"tid", SortKey::kTid},   {"dso", SortKey::kDso},       {"sym", SortKey::kSym},
    {"symbol", SortKey::kSym}, {"symoff", SortKey::kSymoff}, {"cpu", SortKey::kCpu},
};

size_t mix(size_t h, uint64_t v) { return h ^ (std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

int cmp_str(std::string_view a, std::string_view b) {
  int c = a.compare(b);
  return c < 0 ? -1 : c > 0;
}
template <typename T>
int cmp_num(T a, T b) {
  return a < b ? -1 : a > b;
}

}  // namespace

std::string parse_sort_keys(std::string_view spec, std::vector<SortKey>* out) {
  out->clear();
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string_view tok = spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (!tok.empty()) {
      auto it = std::find_if(std::begin(kKeyNames), std::end(kKeyNames), [&](const KeyName& k) { return tok == k.name; });
      if (it == std::end(kKeyNames)) {
        return fmt::format("unknown --sort key '{}' (known: comm, pid, tid, dso, sym, symoff, cpu)", tok);
      }
      if (std::find(out->begin(), out->end(), it->key) == out->end()) out->push_back(it->key);
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (out->empty()) return "--sort: no keys given";
  return "";
}

const char* sort_key_header(SortKey key) {
  switch (key) {
    case SortKey::kComm: return "Command";
    case SortKey::kPid: return "Pid:Command";
    case SortKey::kTid: return "Tid";
    case SortKey::kDso: return "Shared Object";
    case SortKey::kSym: return "Symbol";
    case SortKey::kSymoff: return "Symbol+Offset";
    case SortKey::kCpu: return "CPU";
  }
  return "";
}

std::string_view dso_column_name(const session::Dso* dso) {
  if (!dso || !dso->name) return "[unknown]";
  return dso->short_name();
}

Hist::Hist(std::vector<SortKey> keys) : keys_(std::move(keys)) {
  for (SortKey k : keys_) {
    switch (k) {
      case SortKey::kComm: use_comm_ = true; break;
      case SortKey::kPid: use_pid_ = true; break;
      case SortKey::kTid: use_tid_ = true; break;
      case SortKey::kDso: use_dso_ = true; break;
      case SortKey::kSym: use_sym_ = true; break;
      case SortKey::kSymoff: use_symoff_ = true; break;
      case SortKey::kCpu: use_cpu_ = true; break;
    }
  }
}

HistEntry Hist::normalized(const HistEntry& e) const {
  HistEntry k;
  k.filtered = e.filtered;
  if (use_comm_) k.comm = e.comm;
  // The thread is kept even when it is not a key: perf sizes the comm column by the last comm of
  // each entry's (first) thread.
  k.tid = e.tid;
  k.pid = e.pid;
  if (use_cpu_) k.cpu = e.cpu;
  if (use_dso_ || use_sym_ || use_symoff_) k.loc.dso = e.loc.dso;
  if (use_sym_ || use_symoff_) {
    k.loc.sym = e.loc.sym;
    k.loc.sym_start = e.loc.sym_start;
    k.loc.level = e.loc.level;
    // perf keys a symbol by itself and an unresolved address by the address; symoff by both.
    if (!e.loc.sym || use_symoff_) k.loc.addr = e.loc.addr;
  }
  if (!use_dso_ && !(use_sym_ || use_symoff_)) k.loc.dso = nullptr;
  return k;
}

size_t Hist::hash_of(const HistEntry& e) const {
  size_t h = 0;
  h = mix(h, reinterpret_cast<uintptr_t>(e.comm));
  if (use_pid_ || use_tid_) h = mix(h, static_cast<uint32_t>(e.tid));
  h = mix(h, static_cast<uint32_t>(e.cpu));
  if (use_dso_) h = mix(h, std::hash<std::string_view>()(dso_column_name(e.loc.dso)));
  h = mix(h, reinterpret_cast<uintptr_t>(e.loc.sym));
  h = mix(h, e.loc.sym_start);
  h = mix(h, e.loc.addr);
  return h;
}

bool Hist::same_keys(const HistEntry& a, const HistEntry& b) const {
  if (a.comm != b.comm || a.cpu != b.cpu) return false;
  if ((use_pid_ || use_tid_) && a.tid != b.tid) return false;
  // perf compares DSOs by the name it shows.
  if (use_dso_ && dso_column_name(a.loc.dso) != dso_column_name(b.loc.dso)) return false;
  if (a.loc.sym != b.loc.sym || a.loc.sym_start != b.loc.sym_start || a.loc.addr != b.loc.addr) return false;
  if ((use_sym_ || use_symoff_) && !use_dso_ && a.loc.sym && a.loc.dso != b.loc.dso) return false;
  return true;
}

uint32_t Hist::findnew(const HistEntry& e) {
  HistEntry key = normalized(e);
  size_t h = hash_of(key);
  auto [lo, hi] = index_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    if (same_keys(entries_[it->second], key)) return it->second;
  }
  auto idx = static_cast<uint32_t>(entries_.size());
  entries_.push_back(key);
  index_.emplace(h, idx);
  return idx;
}

void Hist::add(const HistEntry& self, uint64_t period, bool cumulate, std::span<const HistEntry> callers) {
  ++total_samples_;
  total_period_ += period;
  uint32_t i = findnew(self);
  entries_[i].period += period;
  entries_[i].samples += 1;
  if (!cumulate) return;
  entries_[i].children_period += period;
  entries_[i].children_samples += 1;
  // Each distinct entry on the chain is credited once, however often recursion repeats it.
  seen_.assign(1, i);
  for (const HistEntry& c : callers) {
    uint32_t j = findnew(c);
    if (std::find(seen_.begin(), seen_.end(), j) != seen_.end()) continue;
    seen_.push_back(j);
    entries_[j].children_period += period;
    entries_[j].children_samples += 1;
  }
}

void Hist::add_with_chain(const HistEntry& self, uint64_t period, bool cumulate, std::span<const HistEntry> callers,
                          std::span<const CallFrame> frames) {
  add(self, period, cumulate, callers);
  if (trees_.size() < entries_.size()) trees_.resize(entries_.size());
  auto tree = [&](uint32_t i) -> CallTree& {
    if (!trees_[i]) trees_[i] = std::make_unique<CallTree>();
    return *trees_[i];
  };
  const uint32_t self_index = findnew(self);
  tree(self_index).append(frames, period);
  if (!cumulate) return;
  // seen_ holds, in walk order, the entries add() credited; give each (but the sample's own)
  // the chain from its first frame on.
  for (size_t j = 0; j < callers.size() && j < frames.size(); ++j) {
    uint32_t i = findnew(callers[j]);
    if (i == self_index) continue;
    auto it = std::find(seen_.begin(), seen_.end(), i);
    if (it == seen_.end()) continue;
    *it = self_index;  // only its first frame counts
    tree(i).append(frames.subspan(j), period);
  }
}

const CallTree* Hist::tree_of(const HistEntry* e) const {
  size_t i = static_cast<size_t>(e - entries_.data());
  return i < trees_.size() ? trees_[i].get() : nullptr;
}

int Hist::compare_keys(const HistEntry& a, const HistEntry& b) const {
  return compare_sort_keys(a, b, true);
}

int Hist::compare_sort_keys(const HistEntry& a, const HistEntry& b, bool by_address) const {
  // perf keys symbols by their start address and unresolved entries by theirs, comparing the sign
  // of the 64-bit difference; it shows them sorted by name.
  auto signed_diff = [](uint64_t x, uint64_t y) { return cmp_num(static_cast<int64_t>(x - y), int64_t{0}); };
  for (SortKey k : keys_) {
    int c = 0;
    switch (k) {
      case SortKey::kComm:
        c = cmp_str(a.comm ? std::string_view(*a.comm) : "", b.comm ? std::string_view(*b.comm) : "");
        break;
      case SortKey::kPid:
      case SortKey::kTid:
        c = cmp_num(a.tid, b.tid);
        break;
      case SortKey::kCpu:
        c = cmp_num(a.cpu, b.cpu);
        break;
      case SortKey::kDso:
        // Entries without a DSO come after the named ones.
        if (a.loc.dso && b.loc.dso) {
          c = cmp_str(dso_column_name(a.loc.dso), dso_column_name(b.loc.dso));
        } else if (a.loc.dso || b.loc.dso) {
          c = a.loc.dso ? -1 : 1;
        }
        break;
      case SortKey::kSym:
      case SortKey::kSymoff:
        // Named symbols before unresolved addresses.
        if (a.loc.sym && b.loc.sym) {
          c = by_address ? signed_diff(a.loc.sym_start, b.loc.sym_start) : cmp_str(a.loc.sym->name(), b.loc.sym->name());
        } else if (a.loc.sym || b.loc.sym) {
          c = a.loc.sym ? -1 : 1;
        } else if (by_address) {
          c = signed_diff(a.loc.addr, b.loc.addr);
        }
        break;
    }
    if (c) return c;
  }
  return 0;
}

std::vector<const HistEntry*> Hist::sorted(bool by_children, bool with_trees) const {
  // perf walks its entries in key order and inserts each into a red-black tree with its output
  // comparator, equal ones to the right. That comparator is not a total order (the caller-above-
  // callee rule below holds within one thread only), so where entries tie the result depends on
  // the tree's shape: replay the same insertions into a red-black tree (std::multimap walks and
  // rebalances the same way) to get the same order.
  // The order perf walks them in comes from the same kind of replay: entries go into its input
  // tree in creation order by key (unresolved addresses by the sign of their 64-bit difference,
  // not a total order either) and, when a key needs it (comm), once more into its collapsed tree.
  struct KeyLess {
    const Hist* hist;
    bool operator()(const HistEntry* a, const HistEntry* b) const { return hist->compare_keys(*a, *b) < 0; }
  };
  auto replay = [&](const std::vector<const HistEntry*>& order) {
    std::multimap<const HistEntry*, char, KeyLess> t(KeyLess{this});
    for (const HistEntry* e : order) t.emplace(e, 0);
    std::vector<const HistEntry*> r;
    r.reserve(order.size());
    for (const auto& [e, unused] : t) r.push_back(e);
    return r;
  };
  std::vector<const HistEntry*> in;
  in.reserve(entries_.size());
  for (const HistEntry& e : entries_) in.push_back(&e);
  in = replay(in);
  if (use_comm_) in = replay(in);

  auto depth = [&](const HistEntry* e) {
    const CallTree* t = tree_of(e);
    return t ? t->max_depth() : 0;
  };
  // True when `a` goes before (left of) `b`.
  auto before = [&](const HistEntry* a, const HistEntry* b) {
    uint64_t pa = by_children ? a->children_period : a->period;
    uint64_t pb = by_children ? b->children_period : b->period;
    if (pa != pb) return pa > pb;
    // perf puts a caller (the deeper tree) above its callee when they cost the same.
    if (by_children && with_trees && a->tid == b->tid && depth(a) != depth(b)) return depth(a) > depth(b);
    if (by_children && a->period != b->period) return a->period > b->period;
    return compare_sort_keys(*a, *b) < 0;
  };
  struct Before {
    const decltype(before)* f;
    bool operator()(const HistEntry* a, const HistEntry* b) const { return (*f)(a, b); }
  };
  std::multimap<const HistEntry*, char, Before> tree(Before{&before});
  for (const HistEntry* e : in) tree.emplace(e, 0);
  std::vector<const HistEntry*> out;
  out.reserve(in.size());
  for (const auto& [e, unused] : tree) out.push_back(e);
  return out;
}

}  // namespace tperf::analysis

#include "analysis/hist.h"

#include <pthread.h>
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory_resource>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <xxhash.h>

#include "analysis/tree_replay.h"
#include "perfdata/abi.h"
#include "session/machine.h"
#include "symbols/symbol_table.h"
#include "util/huge_arena.h"
#include "util/text.h"

namespace tperf::analysis {

namespace {

// Bytes of a batch handed to the tree builder (its ids, jobs and branches): 256 KiB. Counting the
// jobs matters with --children, where each chain comes with a job for every entry it credits
// (about as many as its frames, four times the bytes of its ids): a limit on the ids alone let
// each batch grow to 5 MiB there, and up to seven batches are alive at a time (one filling, four
// queued, two spare). Batches of 1 MiB held 2-2.5 MB more at the peak (sys report --no-children,
// fp report) for no time saved: a hand-over costs a lock and a wake-up, a few hundred of them.
constexpr size_t kBatchBytes = size_t{256} << 10;

struct KeyName {
  const char* name;
  SortKey key;
};
constexpr KeyName kKeyNames[] = {
    {"comm", SortKey::kComm}, {"pid", SortKey::kPid},       {"thread", SortKey::kPid},
    {"tid", SortKey::kTid},   {"dso", SortKey::kDso},       {"sym", SortKey::kSym},
    {"symbol", SortKey::kSym}, {"symoff", SortKey::kSymoff}, {"cpu", SortKey::kCpu},
    {"srcline", SortKey::kSrcline}, {"parent", SortKey::kParent}, {"trace", SortKey::kTrace},
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
  for (const std::string& tok : util::split_commas(spec)) {
    auto it = std::find_if(std::begin(kKeyNames), std::end(kKeyNames), [&](const KeyName& k) { return tok == k.name; });
    if (it == std::end(kKeyNames)) {
      return fmt::format("unknown --sort key '{}' (known: comm, pid, tid, dso, sym, symoff, cpu, srcline, parent, trace)", tok);
    }
    if (std::find(out->begin(), out->end(), it->key) == out->end()) out->push_back(it->key);
  }
  if (out->empty()) return "--sort: no keys given";
  return "";
}

std::string parse_report_fields(std::string_view spec, std::vector<ReportField>* out) {
  out->clear();
  for (const std::string& tok : util::split_commas(spec)) {
    ReportField f;
    if (tok == "overhead") {
      f.kind = ReportField::Kind::kOverhead;
    } else if (tok == "overhead_children") {
      f.kind = ReportField::Kind::kOverheadChildren;
    } else if (tok == "sample") {
      f.kind = ReportField::Kind::kSamples;
    } else if (tok == "period") {
      f.kind = ReportField::Kind::kPeriod;
    } else if (tok == "overhead_sys") {
      f.kind = ReportField::Kind::kOverheadSys;
    } else if (tok == "overhead_us") {
      f.kind = ReportField::Kind::kOverheadUs;
    } else if (tok == "overhead_guest_sys") {
      f.kind = ReportField::Kind::kOverheadGuestSys;
    } else if (tok == "overhead_guest_us") {
      f.kind = ReportField::Kind::kOverheadGuestUs;
    } else {
      auto it = std::find_if(std::begin(kKeyNames), std::end(kKeyNames), [&](const KeyName& k) { return tok == k.name; });
      if (it == std::end(kKeyNames)) return fmt::format("Unknown --fields key: `{}'", tok);
      f.key = it->key;
    }
    if (std::find(out->begin(), out->end(), f) == out->end()) out->push_back(f);
  }
  if (out->empty()) return "-F: no fields given";
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
    case SortKey::kSrcline: return "Source:Line";
    case SortKey::kParent: return "Parent symbol";
    case SortKey::kTrace: return "Trace output";
    case SortKey::kIpcNull: return "IPC   [IPC Coverage]";
  }
  return "";
}

std::string_view dso_column_name(const session::Dso* dso) {
  if (!dso || !dso->name) return "[unknown]";
  return dso->short_name();
}

OrderRisk::OrderRisk(const std::vector<SortKey>& keys) {
  for (SortKey k : keys) {
    if (k == SortKey::kSym || k == SortKey::kSymoff) break;
    if (k == SortKey::kDso) dso_before_sym_ = true;
  }
  for (SortKey k : keys) {
    if (k == SortKey::kDso) use_dso_ = true;
    if (k == SortKey::kSym || k == SortKey::kSymoff) keyed_by_sym_ = true;
  }
}

Hist::Hist(std::vector<SortKey> keys, unsigned members)
    : keys_(std::move(keys)), members_(std::max(members, 1u)), risk_(keys_) {
  member_input_.resize(members_ - 1);
  for (SortKey k : keys_) {
    switch (k) {
      case SortKey::kComm: use_comm_ = collapse_comm_ = true; break;
      case SortKey::kPid: use_pid_ = true; break;
      case SortKey::kTid: use_tid_ = true; break;
      case SortKey::kDso: use_dso_ = true; break;
      case SortKey::kSym: use_sym_ = true; break;
      case SortKey::kSymoff: use_symoff_ = true; break;
      case SortKey::kCpu: use_cpu_ = true; break;
      case SortKey::kSrcline: use_srcline_ = true; break;
      case SortKey::kParent: use_parent_ = true; break;
      case SortKey::kTrace: use_trace_ = true; break;
      case SortKey::kIpcNull: break;  // the symbol's comparison, after the sym key
    }
  }
}

HistEntry Hist::normalized(const HistEntry& e) const {
  HistEntry k;
  k.filtered = e.filtered;
  k.unresolved = !e.loc.sym;
  k.first_addr = e.loc.addr;
  if (use_comm_) k.comm = e.comm;
  // The thread is kept even when it is not a key: perf sizes the comm column by the last comm of
  // each entry's (first) thread.
  k.tid = e.tid;
  k.pid = e.pid;
  if (use_cpu_) k.cpu = e.cpu;
  if (use_srcline_) k.srcline = e.srcline;
  if (use_parent_) k.parent = e.parent;
  if (use_trace_) k.trace = e.trace;
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
  // The DSO is left out: entries are told apart by it only when their symbols and addresses
  // are the same (same_keys compares it), and hashing its name cost more than those collisions.
  h = mix(h, reinterpret_cast<uintptr_t>(e.loc.sym));
  h = mix(h, e.loc.sym_start);
  h = mix(h, e.loc.addr);
  h = mix(h, reinterpret_cast<uintptr_t>(e.srcline));
  h = mix(h, reinterpret_cast<uintptr_t>(e.trace));
  if (!e.parent.empty()) h = mix(h, std::hash<std::string_view>()(e.parent));
  return h;
}

bool Hist::same_keys(const HistEntry& a, const HistEntry& b) const {
  if (a.comm != b.comm || a.cpu != b.cpu || a.srcline != b.srcline || a.trace != b.trace) return false;
  // (The parent text is empty in every entry without the parent key: no need to compare it.)
  if (use_parent_ && a.parent != b.parent) return false;
  if ((use_pid_ || use_tid_) && a.tid != b.tid) return false;
  // perf compares DSOs by the name it shows (one DSO shows one name).
  if (use_dso_ && a.loc.dso != b.loc.dso && dso_column_name(a.loc.dso) != dso_column_name(b.loc.dso)) return false;
  if (a.loc.sym != b.loc.sym || a.loc.sym_start != b.loc.sym_start || a.loc.addr != b.loc.addr) return false;
  if ((use_sym_ || use_symoff_) && !use_dso_ && a.loc.sym && a.loc.dso != b.loc.dso) return false;
  return true;
}

uint32_t Hist::findnew(const HistEntry& e, unsigned member) {
  HistEntry key = normalized(e);
  if (risk_.note(key)) index_ = {};  // walked from now on
  if (member > 0) {
    // A member's own tree, walked (groups are small; the hash serves the leader).
    const auto idx = static_cast<uint32_t>(entries_.size());
    const uint32_t found =
        member_input_[member - 1].find_or_insert(idx, [&](uint32_t at) { return compare_keys(key, entries_[at]); });
    if (found != idx) return found;
    entries_.push_back(key);
    origin_.resize(entries_.size(), 0);
    origin_[idx] = static_cast<uint8_t>(std::min(member, 0xffu));
    return idx;
  }
  const bool walk = walks(key);
  size_t h = hash_of(key) * 0x9e3779b97f4a7c15ULL;
  h ^= h >> 29;  // the probes use the low bits
  size_t i = 0;
  if (!walk) {
    if (util::slots_full(entries_.size() + 1, index_.size())) grow_index();
    const size_t mask = index_.size() - 1;
    for (i = h & mask; index_[i].entry != 0; i = (i + 1) & mask) {
      const Slot& slot = index_[i];
      if (slot.hash == static_cast<uint32_t>(h) && same_keys(entries_[slot.entry - 1], key)) return slot.entry - 1;
    }
  } else if (const uint32_t m = walk_memo_find(h, key); m != kNoMemo) {
    return m;
  }
  const auto idx = static_cast<uint32_t>(entries_.size());
  const uint32_t found = input_.find_or_insert(
      idx, [&](uint32_t at) { return compare_keys(key, entries_[at]); },
      [&](uint32_t at) {
        // The keys compare_keys() reads first (comm, then loc) span the entry's first two lines.
        const char* e = reinterpret_cast<const char*>(&entries_[at]);
        __builtin_prefetch(e);
        __builtin_prefetch(e + 64);
      });
  if (found != idx) {
    if (walk) walk_memo_store(h, key, found);
    return found;
  }
  ++tree_gen_;  // the tree has another shape: every walk remembered may now end elsewhere
  entries_.push_back(key);
  if (!walk) index_[i] = Slot{static_cast<uint32_t>(h), idx + 1};
  return idx;
}

bool Hist::walk_memo_hit(const MemoSlot& s, size_t h, const HistEntry& key) const {
  if (s.gen != tree_gen_ || s.hash != static_cast<uint32_t>(h)) return false;
  const HistEntry& e = entries_[s.entry];
  // Every field compare_keys() reads equal (same_keys() leaves an unresolved entry's DSO out
  // without the dso key, where the sym key still compares it): the walk goes the same way.
  return e.loc.dso == key.loc.dso && same_keys(e, key);
}

uint32_t Hist::walk_memo_find(size_t h, const HistEntry& key) const {
  if (walk_memo_.empty()) return kNoMemo;
  const size_t mask = walk_memo_.size() - 1;
  for (size_t k = 0; k < kMemoProbes; ++k) {
    const MemoSlot& s = walk_memo_[(h + k) & mask];
    if (walk_memo_hit(s, h, key)) return s.entry;
  }
  return kNoMemo;
}

void Hist::walk_memo_store(size_t h, const HistEntry& key, uint32_t found) {
  // Only a walk that found an entry of exactly these keys: any key equal to it walks the same way.
  const HistEntry& e = entries_[found];
  if (e.loc.dso != key.loc.dso || !same_keys(e, key)) return;
  // Sized by what one shape of the tree holds (the walks stored since the last insertion), not
  // by the entries: where insertions keep coming, a slot outlives its shape at once. On a
  // system-wide recording (--children: 171,419 entries made among 271,726 walks) a table of
  // four slots an entry was 12 MB, faulted in and zeroed again at each doubling, for 15,554 hits
  // that a few slots give as well.
  if (memo_gen_ != tree_gen_) {
    memo_gen_ = tree_gen_;
    memo_live_ = 0;
  }
  ++memo_live_;
  if (walk_memo_.size() < 2 * memo_live_ || walk_memo_.empty()) {
    size_t n = 1024;
    while (n < 4 * memo_live_) n *= 2;
    walk_memo_.assign(n, MemoSlot{});
  }
  const size_t mask = walk_memo_.size() - 1;
  size_t at = h & mask;
  for (size_t k = 0; k < kMemoProbes; ++k) {
    const MemoSlot& s = walk_memo_[(h + k) & mask];
    if (s.gen != tree_gen_) {
      at = (h + k) & mask;
      break;
    }
  }
  walk_memo_[at] = MemoSlot{static_cast<uint32_t>(h), found, tree_gen_};
}

bool Hist::may_be_equal(const HistEntry& a, const HistEntry& b) const {
  // The numbers first: entries compare equal only if these are.
  if ((use_pid_ || use_tid_) && a.tid != b.tid) return false;
  if (use_cpu_ && a.cpu != b.cpu) return false;
  if (use_sym_ || use_symoff_) {
    if (!a.loc.sym != !b.loc.sym) return false;
    if (!a.loc.sym && a.loc.addr != b.loc.addr) return false;
    if (a.loc.sym && !a.loc.sym->inlined && !b.loc.sym->inlined && a.loc.sym_start != b.loc.sym_start) return false;
    // With an inlined function on either side only one name compares equal.
    if (a.loc.sym && (a.loc.sym->inlined || b.loc.sym->inlined) && a.loc.sym->name() != b.loc.sym->name()) return false;
  }
  return true;
}

bool OrderRisk::note(const Location& loc) {
  if (walk_always_ || !keyed_by_sym_) return false;
  if (loc.sym) {
    seen_named_ = true;
    // An inlined function's symbol compares with the others of its DSO by name, where two
    // ordinary ones compare by start: no order once both kinds meet. perf's walk can then miss an
    // equal entry and make a second one, which changes the trees' shapes and so the output order.
    seen_inlined_ |= loc.sym->inlined != 0;
  } else {
    seen_unresolved_ = true;
    // With the dso key first, addresses meet only within a DSO, where they are all below 2^63
    // (user space, offsets) or all above (the kernel's); entries without one can hold anything.
    if (!dso_before_sym_ || !loc.dso) {
      min_unresolved_ = std::min(min_unresolved_, loc.addr);
      max_unresolved_ = std::max(max_unresolved_, loc.addr);
    }
  }
  const bool wrap =
      max_unresolved_ >= min_unresolved_ && max_unresolved_ - min_unresolved_ >= (uint64_t{1} << 63);
  // Without the dso key the sym key compares a named entry with an unresolved one by DSO and two
  // unresolved ones by address: no order once both kinds meet. With it, named ones go first.
  const bool mixed = !use_dso_ && seen_named_ && seen_unresolved_;
  if (seen_inlined_ || (!dso_before_sym_ && (wrap || mixed))) {
    walk_always_ = true;
    return true;
  }
  if (wrap) {
    // The DSOs order everything else, and each compares as one block with the entries without
    // one: a walk for a key with a DSO still finds its equal entry, which the hash finds too.
    walk_dsoless_ = true;
  }
  return false;
}

void Hist::grow_index() {
  util::grow_slots(index_, [](const Slot& s) { return s.entry != 0; }, [](const Slot& s) { return s.hash; });
}

Hist::MemberValues& Hist::member_values(uint32_t entry, unsigned member) {
  const size_t stride = members_ - 1;
  if (member_values_.size() < entries_.size() * stride) member_values_.resize(entries_.size() * stride);
  return member_values_[entry * stride + member - 1];
}

const Hist::MemberValues* Hist::member_values(const HistEntry& e, unsigned member) const {
  const size_t stride = members_ - 1;
  const size_t at = static_cast<size_t>(&e - entries_.data()) * stride + member - 1;
  return at < member_values_.size() ? &member_values_[at] : nullptr;
}

namespace {

// The slot of cpu_mode_periods_ a sample's cpumode credits (perf's he_stat__add_cpumode_period);
// -1: none (unknown, hypervisor).
int cpu_mode_slot(uint8_t cpumode) {
  switch (cpumode & perfdata::kMiscCpumodeMask) {
    case perfdata::kMiscKernel: return 0;
    case perfdata::kMiscUser: return 1;
    case perfdata::kMiscGuestKernel: return 2;
    case perfdata::kMiscGuestUser: return 3;
    default: return -1;
  }
}

}  // namespace

void Hist::credit_cpu_mode(uint32_t entry, unsigned member, uint8_t cpumode, uint64_t period) const {
  const int slot = cpu_mode_slot(cpumode);
  if (slot < 0) return;
  const size_t at = static_cast<size_t>(entry) * members_ + member;
  if (at >= cpu_mode_periods_.size()) cpu_mode_periods_.resize(entries_.size() * members_);
  cpu_mode_periods_[at][static_cast<size_t>(slot)] += period;
}

void Hist::add_cpu_modes(uint32_t into, uint32_t from, unsigned member) const {
  const size_t at_from = static_cast<size_t>(from) * members_ + member;
  const size_t at_into = static_cast<size_t>(into) * members_ + member;
  if (at_from >= cpu_mode_periods_.size()) return;  // nothing counted there
  if (at_into >= cpu_mode_periods_.size()) cpu_mode_periods_.resize(entries_.size() * members_);
  for (size_t k = 0; k < 4; ++k) cpu_mode_periods_[at_into][k] += cpu_mode_periods_[at_from][k];
}

uint64_t Hist::cpu_mode_period(const HistEntry& e, ReportField::Kind kind, unsigned member) const {
  const size_t i = static_cast<size_t>(&e - entries_.data()) * members_ + member;
  if (i >= cpu_mode_periods_.size()) return 0;
  switch (kind) {
    case ReportField::Kind::kOverheadSys: return cpu_mode_periods_[i][0];
    case ReportField::Kind::kOverheadUs: return cpu_mode_periods_[i][1];
    case ReportField::Kind::kOverheadGuestSys: return cpu_mode_periods_[i][2];
    case ReportField::Kind::kOverheadGuestUs: return cpu_mode_periods_[i][3];
    default: return 0;
  }
}

uint64_t Hist::member_period(const HistEntry& e, unsigned member) const {
  if (member == 0) return e.period;
  const MemberValues* v = member_values(e, member);
  return v ? v->period : 0;
}

uint64_t Hist::member_samples(const HistEntry& e, unsigned member) const {
  if (member == 0) return e.samples;
  const MemberValues* v = member_values(e, member);
  return v ? v->samples : 0;
}

uint64_t Hist::member_children_period(const HistEntry& e, unsigned member) const {
  if (member == 0) return e.children_period;
  const MemberValues* v = member_values(e, member);
  return v ? v->children_period : 0;
}

int Hist::compare_members(const HistEntry& a, const HistEntry& b) const {
  for (unsigned m = 1; m < members_; ++m) {
    uint64_t va = member_period(a, m), vb = member_period(b, m);
    if (va != vb) return va > vb ? -1 : 1;
  }
  return 0;
}

void Hist::add(const HistEntry& self, uint64_t period, bool cumulate, std::span<const HistEntry> callers,
               unsigned member, uint64_t count) {
  total_samples_ += count;
  last_with_chain_ = false;
  const uint64_t stamp = ++adds_;
  total_period_ += period;
  if (!srcline_known_.empty()) srcline_known_.clear();
  if (!trace_known_.empty()) trace_known_.clear();
  uint32_t i = findnew(self, member);
  last_self_ = i;
  // The leader's values are the entry's own; another member's go to its column.
  last_cpumode_ = self.cpumode;
  auto credit = [&](uint32_t entry, bool own) {
    if (member == 0) {
      HistEntry& e = entries_[entry];
      if (own) {
        e.period += period;
        e.samples += count;
        if (count_cpu_modes_) credit_cpu_mode(entry, 0, self.cpumode, period);
      }
      if (cumulate) {
        e.children_period += period;
        e.children_samples += count;
      }
    } else {
      MemberValues& v = member_values(entry, member);
      if (own) {
        v.period += period;
        v.samples += count;
        if (count_cpu_modes_) credit_cpu_mode(entry, member, self.cpumode, period);
      }
      if (cumulate) v.children_period += period;
    }
  };
  credit(i, true);
  caller_entries_.clear();
  caller_first_.clear();
  if (!cumulate) return;
  credited_.resize(entries_.size());
  credited_[i] = stamp;
  // Each distinct entry on the chain is credited once, however often recursion repeats it.
  // perf tells a repeat by comparing the frame's keys with each entry the sample credited so far,
  // before it looks the frame's entry up; where its tree holds two entries of equal keys that is
  // not the same as finding the same entry, so then tperf compares too.
  he_cache_.assign(1, i);
  for (const HistEntry& c : callers) {
    if (walks(c)) {
      const HistEntry key = normalized(c);
      auto same = std::find_if(he_cache_.begin(), he_cache_.end(), [&](uint32_t h) {
        return may_be_equal(key, entries_[h]) && compare_keys(key, entries_[h]) == 0;
      });
      if (same != he_cache_.end()) {
        caller_entries_.push_back(*same);
        caller_first_.push_back(false);
        continue;
      }
    }
    uint32_t j = findnew(c, member);
    if (!order_is_total()) he_cache_.push_back(j);
    if (j >= credited_.size()) credited_.resize(entries_.size());
    const bool first = credited_[j] != stamp;
    caller_entries_.push_back(j);
    caller_first_.push_back(first);
    if (!first) continue;
    credited_[j] = stamp;
    credit(j, false);
  }
  if (use_srcline_ || use_trace_) note_cumulative_compares(i, callers);
}

bool Hist::prefix_equal(SortKey key, const HistEntry& a, const HistEntry& b) const {
  for (SortKey k : keys_) {
    if (k == key) return true;
    if (compare_key(k, a, b, true) != 0) return false;
  }
  return false;  // not a sort key: never compared
}

void Hist::note_cumulative_compares(uint32_t self, std::span<const HistEntry> callers) {
  // perf skips the chain's first entry (the sample itself, already credited as `self`); each
  // later one is compared with the entries credited so far, in order, until one is equal.
  std::vector<uint32_t> cache{self};
  cumulative_known_.resize(entries_.size());
  for (size_t k = 1; k < callers.size() && k < caller_entries_.size(); ++k) {
    const HistEntry& tmp = callers[k];
    const uint32_t j = caller_entries_[k];
    bool found = false;
    for (uint32_t h : cache) {
      const HistEntry& e = entries_[h];
      if (use_srcline_ && prefix_equal(SortKey::kSrcline, e, tmp)) cumulative_known_[h] |= 1;
      if (use_trace_ && prefix_equal(SortKey::kTrace, e, tmp)) cumulative_known_[h] |= 2;
      if (h == j) {
        found = true;
        break;
      }
    }
    if (!found) cache.push_back(j);
  }
}

// Takes the chains of batches, on a thread of its own when the machine has more than one CPU,
// and makes the entries' trees from them. Owns the trees (a Hist may move while it works).
//
// The chains are not merged into trees as they come: most entries are never drawn. Graphs in
// perf's default mode (absolute, 0.5%) show nothing of an entry below the threshold, and a
// system-wide report --stdio draws 9 of its 27,568 entries (25 of 171,418 with --children).
// Merging every chain into its entry's tree as it came took a fifth of the report's CPU time
// there, and most of its memory with --children, where each chain is merged once per entry it
// credits: its frames times its frames. Instead each distinct chain is kept once (its ids, found
// by their hash), and a sample's jobs (its entry's and its callers', each an entry and the
// chain's first frame for it) are kept as one group with the period of every alike sample:
// one probe a sample. The trees are made on the first read, only of the entries whose total
// reaches the floor the reader names (want_trees_from), from the groups in the order they first
// came. That gives the trees merging the chains as they came gives: a job alike to an earlier one
// of its entry makes no node (the earlier one made its whole path), and its period ends on the
// same node as the earlier one's, which splits carry along.
//
// Branch counts (--branch-history) go per chain: the first batch with branches makes the trees
// of the jobs kept so far and merges every chain from then on as it comes.
class Hist::TreeBuilder {
 public:
  TreeBuilder(const CallFrameTable* frames, bool threaded, bool count_samples)
      : frames_(frames), count_samples_(count_samples) {
    if (threaded) {
      thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "tperf-trees");  // cosmetic: names it in profiles
        work();
      });
    }
  }
  ~TreeBuilder() {
    if (maker_.joinable()) maker_.join();
    finish();
  }

  // Queues a batch; waits while kMaxQueued are pending, so memory stays bounded. `batch` comes
  // back empty, with the arrays of a batch built before when there is one: a batch's arrays grew
  // from nothing each time and went back to the heap once built, and with a megabyte a batch the
  // building thread's frees shrank the heap and the next batch faulted its pages in again.
  void submit(TreeBatch& batch) {
    if (!thread_.joinable()) {
      build(batch);
      batch.clear();
      return;
    }
    std::unique_lock lock(mu_);
    room_cv_.wait(lock, [&] { return queue_.size() < kMaxQueued; });
    queue_.push_back(std::move(batch));
    batch = TreeBatch{};
    if (!spare_.empty()) {
      batch = std::move(spare_.back());
      spare_.pop_back();
    }
    work_cv_.notify_one();
  }

  // Waits until every batch is built and stops the thread.
  bool building() const { return thread_.joinable(); }

  void finish() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    work_cv_.notify_one();
    thread_.join();
  }

  // Entries whose tree holds less period than `floor` get none (after finish(), before the first
  // tree()); 0: every entry with a chain gets its tree.
  void set_floor(uint64_t floor) {
    join_maker();
    if (!made_) floor_ = floor;
  }

  // After finish(): makes the trees (once).
  void make() {
    join_maker();
    make_trees();
  }
  // After finish(), once the floor and the merges are known: makes the trees on a thread of its
  // own while the caller goes on (Hist::sorted replays the output tree meanwhile); make(),
  // tree(), merge() and set_floor() wait for it. depth() reads what making them leaves alone.
  void make_ahead() {
    if (made_ || maker_.joinable()) return;
    maker_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "tperf-trees");  // cosmetic: names it in profiles
      try {
        make_trees();
      } catch (...) {
        make_error_ = std::current_exception();
      }
    });
  }
  // After finish(): the tree of an entry, made (with every other one at or above the floor) on
  // the first call.
  const CallTree* tree(size_t entry) {
    join_maker();
    make_trees();
    return entry < trees_.size() ? trees_[entry].get() : nullptr;
  }
  // The longest chain merged into an entry's own tree (CallTree::max_depth), whether or not the
  // tree is made; after finish().
  size_t depth(size_t entry) const { return entry < depth_.size() ? depth_[entry] : 0; }

  // Merges the tree of entry `from` into that of `into` (perf's callchain_merge), after finish().
  // Before the trees are made this is noted, and done as they are made.
  void merge(uint32_t into, uint32_t from) {
    join_maker();
    if (!made_) {
      note_entry(std::max(into, from));
      total_[into] += total_[from];
      merges_.emplace_back(into, from);
      return;
    }
    merge_made(into, from);
  }

 private:
  static constexpr size_t kMaxQueued = 4;
  static constexpr size_t kMaxSpare = 2;  // built batches kept for their arrays

  void join_maker() {
    if (!maker_.joinable()) return;
    maker_.join();
    if (make_error_) std::rethrow_exception(std::exchange(make_error_, nullptr));
  }

  void work() {
    TreeBatch batch;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        if (batch.ids.capacity() && spare_.size() < kMaxSpare) {
          batch.clear();
          spare_.push_back(std::move(batch));
        }
        batch = TreeBatch{};
        work_cv_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
      }
      room_cv_.notify_one();
      build(batch);
    }
  }

  void build(const TreeBatch& batch) {
    const bool with_branches = batch.branches.size() == batch.ids.size() && !batch.ids.empty();
    if (with_branches && !made_) {
      floor_ = 0;
      make_trees();
    }
    const std::span<const uint32_t> ids(batch.ids);
    const std::span<const TreeJob> jobs(batch.jobs);
    for (size_t k = 0; k < jobs.size();) {
      const TreeJob& j = jobs[k];
      if (made_) {
        note_entry(j.entry);
        depth_[j.entry] = std::max<uint32_t>(depth_[j.entry], j.end - j.begin);
        if (trees_.size() <= j.entry) trees_.resize(j.entry + 1);
        auto& t = trees_[j.entry];
        if (!t) t = new_tree();
        std::span<const ChainBranch> branches;
        if (with_branches) branches = std::span<const ChainBranch>(batch.branches).subspan(j.begin, j.end - j.begin);
        t->append(ids.subspan(j.begin, j.end - j.begin), j.period, branches, j.count);
        ++k;
        continue;
      }
      // A sample's jobs: its own entry's holds its chain whole, its callers' the part from their
      // frame on; all end where the chain ends and carry one period (Hist::add_again adds to all).
      size_t n = 1;
      uint32_t begin = j.begin;
      while (k + n < jobs.size() && jobs[k + n].end == j.end && jobs[k + n].period == j.period &&
             jobs[k + n].count == j.count) {
        begin = std::min(begin, jobs[k + n].begin);
        ++n;
      }
      pairs_scratch_.clear();
      for (size_t i = k; i < k + n; ++i) {
        const TreeJob& g = jobs[i];
        note_entry(g.entry);
        depth_[g.entry] = std::max<uint32_t>(depth_[g.entry], g.end - g.begin);
        total_[g.entry] += g.period;
        if (g.begin != g.end) pairs_scratch_.push_back(uint64_t{g.entry} << 32 | (g.begin - begin));  // an empty chain makes no node
      }
      if (!pairs_scratch_.empty()) {
        add_group(intern_chain(ids.subspan(begin, j.end - begin)), pairs_scratch_, j.period, j.count);
      }
      k += n;
    }
  }

  // The kept chains and jobs.
  struct Slot {
    uint32_t id = 0;   // id + 1; 0 = empty
    uint32_t tag = 0;  // the low half of the key's hash (all a table of up to 2^32 slots indexes by)
  };
  struct StoredChain {
    uint64_t at;  // in chain_ids_
    uint32_t size;
  };
  // A sample's jobs (see build()) kept as one group: its chain, and for each entry it credits
  // (entry << 32 | the chain's first frame for it), with the period of every alike group.
  // Samples alike in their chain and entries, as samples of one stack mostly are, make one
  // group: with --children a job per entry and chain took 40 bytes (and its slot) for each of
  // a sample's entries, most of a system-wide report's memory.
  struct Group {
    uint32_t chain;
    uint32_t n;       // pairs
    uint64_t at;      // in group_pairs_; the pair itself when n == 1 (a sample without callers)
    uint64_t period;
  };
  std::span<const uint64_t> pairs_of(const Group& g) const {
    if (g.n == 1) return {&g.at, 1};
    return std::span<const uint64_t>(group_pairs_).subspan(static_cast<size_t>(g.at), g.n);
  }

  // Makes room for `entry` in the arrays by entry: its depth always, the rest until the trees are
  // made (they go then).
  void note_entry(uint32_t entry) {
    if (entry < depth_.size()) return;
    const size_t n = std::max<size_t>(entry + 1, 2 * depth_.size());
    depth_.resize(n);
    if (made_) return;
    total_.resize(n);
  }

  static void grow(util::MappedVector<Slot>& slots) {
    util::grow_slots(slots, [](const Slot& s) { return s.id != 0; }, [](const Slot& s) { return s.tag; });
  }

  uint32_t intern_chain(std::span<const uint32_t> ids) {
    if (util::slots_full(chains_.size() + 1, chain_slots_.size())) grow(chain_slots_);
    const auto tag = static_cast<uint32_t>(XXH3_64bits(ids.data(), ids.size_bytes()));
    const size_t mask = chain_slots_.size() - 1;
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
      Slot& s = chain_slots_[i];
      if (!s.id) {
        s = {static_cast<uint32_t>(chains_.size() + 1), tag};
        chains_.push_back({chain_ids_.size(), static_cast<uint32_t>(ids.size())});
        chain_ids_.insert(chain_ids_.end(), ids.begin(), ids.end());
        return s.id - 1;
      }
      if (s.tag != tag) continue;
      const StoredChain& c = chains_[s.id - 1];
      if (c.size == ids.size() && std::equal(ids.begin(), ids.end(), chain_ids_.begin() + static_cast<ptrdiff_t>(c.at))) {
        return s.id - 1;
      }
    }
  }

  void add_group(uint32_t chain, std::span<const uint64_t> pairs, uint64_t period, uint64_t count) {
    if (util::slots_full(groups_.size() + 1, group_slots_.size())) grow(group_slots_);
    const uint64_t h = XXH3_64bits_withSeed(pairs.data(), pairs.size_bytes(), chain);
    const auto tag = static_cast<uint32_t>(h);
    const size_t mask = group_slots_.size() - 1;
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
      Slot& s = group_slots_[i];
      if (!s.id) {
        s = {static_cast<uint32_t>(groups_.size() + 1), tag};
        Group g{chain, static_cast<uint32_t>(pairs.size()), pairs.front(), period};
        if (pairs.size() > 1) {
          g.at = group_pairs_.size();
          group_pairs_.insert(group_pairs_.end(), pairs.begin(), pairs.end());
        }
        groups_.push_back(g);
        if (count_samples_) group_counts_.push_back(count);
        return;
      }
      if (s.tag != tag) continue;
      Group& g = groups_[s.id - 1];
      if (g.chain == chain && g.n == pairs.size()) {
        const std::span<const uint64_t> kept = pairs_of(g);
        if (std::equal(pairs.begin(), pairs.end(), kept.begin())) {
          g.period += period;
          if (count_samples_) group_counts_[s.id - 1] += count;
          return;
        }
      }
    }
  }

  // Makes the trees of the entries at or above the floor, and those merged into them, from the
  // jobs kept; then the merges noted, in their order. The jobs and chains go.
  void make_trees() {
    if (made_) return;
    made_ = true;
    const size_t n = depth_.size();
    std::vector<uint8_t> wanted(n);
    for (size_t e = 0; e < n; ++e) wanted[e] = total_[e] >= floor_;
    // An entry's tree takes in the trees merged into it: those are made as well.
    for (size_t k = merges_.size(); k-- > 0;) {
      if (wanted[merges_[k].first]) wanted[merges_[k].second] = 1;
    }
    // Each wanted entry's chains in the order its jobs came: a job alike to one before it (in an
    // earlier group of other entries) makes no node, as a sample of it merged again would not.
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      const Group& g = groups_[gi];
      const uint64_t count = count_samples_ ? group_counts_[gi] : 1;
      for (const uint64_t pair : pairs_of(g)) {
        const auto e = static_cast<uint32_t>(pair >> 32);
        if (!wanted[e]) continue;
        const auto from = static_cast<uint32_t>(pair);
        if (trees_.size() <= e) trees_.resize(e + 1);
        auto& t = trees_[e];
        if (!t) t = new_tree();
        const StoredChain& c = chains_[g.chain];
        t->append(std::span<const uint32_t>(chain_ids_.data() + c.at + from, c.size - from), g.period, {}, count);
      }
    }
    for (const auto& [into, from] : merges_) {
      if (wanted[into]) merge_made(into, from);
    }
    merges_ = {};
    groups_ = {};
    group_counts_ = {};
    group_slots_ = {};
    group_pairs_ = {};
    chains_ = {};
    chain_slots_ = {};
    chain_ids_ = {};
    total_ = {};
  }

  void merge_made(size_t into, size_t from) {
    const CallTree* src = from < trees_.size() ? trees_[from].get() : nullptr;
    if (!src) return;
    if (trees_.size() <= into) trees_.resize(into + 1);
    auto& dst = trees_[into];
    if (!dst) dst = new_tree();
    dst->merge(*src);
  }

  std::unique_ptr<CallTree> new_tree() {
    auto t = std::make_unique<CallTree>(frames_, &pool_);
    if (count_samples_) t->count_samples();
    return t;
  }

  const CallFrameTable* frames_;
  const bool count_samples_;  // the trees keep sample counts (-g ...,count)
  // The trees' nodes, used by the building thread alone, released at once after the trees; the
  // pool's chunks in huge pages.
  util::HugeArena arena_;
  std::pmr::unsynchronized_pool_resource pool_{&arena_};
  std::vector<std::unique_ptr<CallTree>> trees_;  // by entry index, once made
  bool made_ = false;
  uint64_t floor_ = 0;
  // Until the trees are made: each distinct chain once, the groups of jobs in the order they
  // came, by entry the period of its tree, and the merges noted.
  util::GrowArray<uint32_t> chain_ids_;
  util::GrowArray<StoredChain> chains_;
  util::MappedVector<Slot> chain_slots_;
  util::GrowArray<Group> groups_;
  std::vector<uint64_t> group_counts_;  // by group, when the trees count samples
  util::MappedVector<Slot> group_slots_;
  util::GrowArray<uint64_t> group_pairs_;
  std::vector<uint64_t> pairs_scratch_;  // build()'s
  std::vector<uint64_t> total_;
  std::vector<std::pair<uint32_t, uint32_t>> merges_;
  std::vector<uint32_t> depth_;  // by entry, kept once the trees are made
  std::thread thread_;
  std::thread maker_;  // make_ahead()'s
  std::exception_ptr make_error_;
  std::mutex mu_;
  std::condition_variable work_cv_, room_cv_;
  std::deque<TreeBatch> queue_;
  std::vector<TreeBatch> spare_;  // built, emptied, for submit() to hand back
  bool done_ = false;
};

// The builder first: make_ahead()'s thread may still be making the trees, which reads frames_
// (declared after trees_, so by default freed before the builder joins that thread). A moved-to
// Hist assigns trees_ first too, so its old builder is done before its old frames_ go.
Hist::~Hist() { trees_.reset(); }
Hist::Hist(Hist&&) noexcept = default;
Hist& Hist::operator=(Hist&&) noexcept = default;

void Hist::use_frame_key(FrameKey key) {
  if (!trees_) frames_ = std::make_unique<CallFrameTable>(key);
}

void Hist::add_with_chain(const HistEntry& self, uint64_t period, bool cumulate, std::span<const HistEntry> callers,
                          std::span<const CallFrame> frames, unsigned member, uint64_t count,
                          std::span<const ChainBranch> branches, std::span<const std::string* const> srclines) {
  add(self, period, cumulate, callers, member, count);
  // The graphs are the leader's.
  if (frames.empty() || member != 0) return;
  last_with_chain_ = true;
  last_jobs_begin_ = batch_.jobs.size();
  if (!trees_) trees_ = std::make_unique<TreeBuilder>(frames_.get(), tree_thread_, count_samples_);
  const bool with_branches = branches.size() == frames.size();
  // The branch counts of a tree are kept for every chain once one has them.
  if (with_branches && batch_.branches.size() < batch_.ids.size()) batch_.branches.resize(batch_.ids.size());
  const auto begin = static_cast<uint32_t>(batch_.ids.size());
  const bool with_srclines = srclines.size() == frames.size();
  for (size_t i = 0; i < frames.size(); ++i) batch_.ids.push_back(frames_->intern(frames[i], with_srclines ? srclines[i] : nullptr));
  const auto end = static_cast<uint32_t>(batch_.ids.size());
  if (with_branches) {
    batch_.branches.insert(batch_.branches.end(), branches.begin(), branches.end());
  } else if (!batch_.branches.empty()) {
    batch_.branches.resize(batch_.ids.size());
  }
  // Samples added together count each of their branches as perf's one by one would.
  const uint64_t times = with_branches ? std::max<uint64_t>(count, 1) : 1;
  for (uint64_t t = 0; t < times; ++t) {
    const uint64_t p = t == 0 ? period : 0;
    // Branch counts go per sample (one job each); otherwise one job stands for all `count`.
    const auto c = static_cast<uint32_t>(times > 1 ? 1 : std::min<uint64_t>(count, UINT32_MAX));
    batch_.jobs.push_back({last_self_, begin, end, c, p});
    if (cumulate) {
      // Every other entry credited above gets the chain from its first frame on.
      for (size_t j = 0; j < caller_entries_.size() && j < frames.size(); ++j) {
        if (!caller_first_[j] || caller_entries_[j] == last_self_) continue;
        batch_.jobs.push_back({caller_entries_[j], begin + static_cast<uint32_t>(j), end, c, p});
      }
    }
  }
  last_jobs_end_ = batch_.jobs.size();
  last_chain_mergeable_ = !with_branches;  // branch counts go per sample: never added again
  if (batch_.ids.size() * sizeof(uint32_t) + batch_.jobs.size() * sizeof(TreeJob) +
          batch_.branches.size() * sizeof(ChainBranch) >=
      kBatchBytes) {
    submit_trees();
  }
}

void Hist::remember_add(AddMemo* memo) const {
  memo->valid = true;
  memo->gen = tree_gen_;
  memo->self = last_self_;
  memo->callers = caller_entries_;
  memo->first = caller_first_;
  memo->with_chain = last_with_chain_;
  memo->chain_mergeable = last_chain_mergeable_;
  memo->jobs_serial = batch_serial_;
  memo->jobs_begin = last_jobs_begin_;
  memo->jobs_end = last_jobs_end_;
  memo->cpumode = last_cpumode_;
}

bool Hist::add_again(const AddMemo& memo, uint64_t period, bool cumulate, unsigned member, uint64_t count) {
  if (!memo.valid || member != 0 || memo.gen != tree_gen_ || use_srcline_ || use_trace_) return false;
  if (memo.with_chain && (!memo.chain_mergeable || memo.jobs_serial != batch_serial_ ||
                          memo.jobs_end > batch_.jobs.size())) {
    return false;
  }
  total_samples_ += count;
  ++adds_;
  total_period_ += period;
  HistEntry& self = entries_[memo.self];
  self.period += period;
  self.samples += count;
  if (count_cpu_modes_) credit_cpu_mode(memo.self, 0, memo.cpumode, period);
  if (cumulate) {
    self.children_period += period;
    self.children_samples += count;
    for (size_t j = 0; j < memo.callers.size(); ++j) {
      if (!memo.first[j]) continue;
      HistEntry& e = entries_[memo.callers[j]];
      e.children_period += period;
      e.children_samples += count;
    }
  }
  // An equal chain appended again makes no node: its period joins the earlier append's.
  if (memo.with_chain) {
    for (size_t k = memo.jobs_begin; k < memo.jobs_end; ++k) {
      batch_.jobs[k].period += period;
      batch_.jobs[k].count += static_cast<uint32_t>(count);
    }
  }
  last_with_chain_ = false;
  return true;
}

void Hist::submit_trees() const {
  if (trees_ && !batch_.jobs.empty()) {
    trees_->submit(batch_);
  } else {
    batch_.clear();
  }
  ++batch_serial_;
}

void Hist::finish_trees() const {
  // Once the trees are built (settle()) nothing is left to hand the builder: reads only.
  if (!batch_.jobs.empty() || trees_->building()) {
    submit_trees();
    trees_->finish();
  }
}

const CallTree* Hist::tree_of(const HistEntry* e) const {
  if (!trees_) return nullptr;
  // The trees are made once the entries are merged (collapse_once() merges theirs too).
  collapse_once();
  finish_trees();
  return trees_->tree(static_cast<size_t>(e - entries_.data()));
}

size_t Hist::tree_depth(const HistEntry* e) const {
  if (!trees_) return 0;
  finish_trees();
  return trees_->depth(static_cast<size_t>(e - entries_.data()));
}

void Hist::want_trees_from(uint64_t floor) const {
  if (!trees_) return;
  finish_trees();
  trees_->set_floor(floor);
  floor_known_ = true;
}

void Hist::settle() const {
  collapse_once();
  if (trees_) {
    finish_trees();
    trees_->make();
  }
  if (!entries_.empty()) {
    srcline_known(entries_.front());
    trace_known(entries_.front());
  }
}

int Hist::compare_keys(const HistEntry& a, const HistEntry& b) const {
  return compare_sort_keys(a, b, true);
}

int Hist::compare_sort_keys(const HistEntry& a, const HistEntry& b, bool by_address) const {
  for (SortKey k : keys_) {
    if (int c = compare_key(k, a, b, by_address)) return c;
  }
  return 0;
}

int Hist::compare_key(SortKey k, const HistEntry& a, const HistEntry& b, bool by_address) const {
  // perf keys symbols by their start address and unresolved entries by theirs, comparing the sign
  // of the 64-bit difference; it shows them sorted by name.
  auto signed_diff = [](uint64_t x, uint64_t y) { return cmp_num(static_cast<int64_t>(x - y), int64_t{0}); };
  int c = 0;
  switch (k) {
    case SortKey::kTrace:
      // perf compares the texts ("N/A" for an event that is not a tracepoint).
      c = cmp_str(a.trace ? std::string_view(*a.trace) : "N/A", b.trace ? std::string_view(*b.trace) : "N/A");
      break;
    case SortKey::kSrcline:
      if (a.srcline == b.srcline) break;
      c = cmp_str(a.srcline ? std::string_view(*a.srcline) : "", b.srcline ? std::string_view(*b.srcline) : "");
      break;
    case SortKey::kParent:
      // A parent before "[other]".
      if (!a.parent.empty() && !b.parent.empty()) {
        c = cmp_str(a.parent, b.parent);
      } else if (!a.parent.empty() || !b.parent.empty()) {
        c = a.parent.empty() ? 1 : -1;
      }
      break;
    case SortKey::kComm:
      if (a.comm == b.comm) break;  // interned
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
      if (a.loc.dso == b.loc.dso) break;
      // Entries without a DSO come after the named ones.
      if (a.loc.dso && b.loc.dso) {
        c = cmp_str(dso_column_name(a.loc.dso), dso_column_name(b.loc.dso));
      } else if (a.loc.dso || b.loc.dso) {
        c = a.loc.dso ? -1 : 1;
      }
      break;
    case SortKey::kSym:
    case SortKey::kSymoff:
      // perf's key comparison of entries of which one at least has a symbol compares their DSOs
      // first when dso is not a sort key (Debian's perf 6.1.192 has the fix that made the test
      // read so; the release compared them always); two unresolved addresses compare by address
      // alone. Not a total order: the trees' shapes decide.
      if (by_address && !use_dso_ && (a.loc.sym || b.loc.sym)) {
        if ((c = compare_key(SortKey::kDso, a, b, by_address))) break;
      }
      // Named symbols before unresolved addresses.
      if (a.loc.sym && b.loc.sym) {
        // An inlined function's symbol has its container's start: perf tells them apart by name
        // first (strcmp's order, against the start's reversed difference).
        if (by_address && (a.loc.sym->inlined || b.loc.sym->inlined)) {
          c = cmp_str(b.loc.sym->name(), a.loc.sym->name());
          // Of one name, overlapping ranges are one function (closed ranges, as perf's test).
          const uint64_t a_end = a.loc.sym_start + a.loc.sym->size(), b_end = b.loc.sym_start + b.loc.sym->size();
          if (c == 0 && a.loc.sym_start <= b_end && a_end >= b.loc.sym_start) break;
        }
        if (c == 0) {
          c = by_address ? signed_diff(a.loc.sym_start, b.loc.sym_start) : cmp_str(a.loc.sym->name(), b.loc.sym->name());
        }
      } else if (a.loc.sym || b.loc.sym) {
        c = a.loc.sym ? -1 : 1;
      } else if (by_address) {
        c = signed_diff(a.loc.addr, b.loc.addr);
      }
      break;
    case SortKey::kIpcNull:
      // perf gives this column the symbol's key comparison, which its output sort uses as well.
      c = compare_key(SortKey::kSym, a, b, true);
      break;
  }
  return c;
}

bool Hist::srcline_known(const HistEntry& e) const {
  if (!use_srcline_ || e.srcline_eager) return true;
  const size_t idx = static_cast<size_t>(&e - entries_.data());
  if (idx < cumulative_known_.size() && (cumulative_known_[idx] & 1)) return true;
  return lazily_known(e, SortKey::kSrcline, srcline_known_);
}

bool Hist::trace_known(const HistEntry& e) const {
  if (!use_trace_) return true;
  const size_t idx = static_cast<size_t>(&e - entries_.data());
  if (idx < cumulative_known_.size() && (cumulative_known_[idx] & 2)) return true;
  return lazily_known(e, SortKey::kTrace, trace_known_);
}

bool Hist::lazily_known(const HistEntry& e, SortKey key, std::vector<uint8_t>& known) const {
  const size_t idx = static_cast<size_t>(&e - entries_.data());
  if (known.empty() && !entries_.empty()) {
    // Group the entries by the keys before `key` and count what went into each group: every
    // sample and every callchain entry credited in children mode was one lookup in perf's tree.
    const auto prefix_end = std::find(keys_.begin(), keys_.end(), key);
    std::vector<uint32_t> order(entries_.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    auto less = [&](uint32_t x, uint32_t y) {
      for (auto k = keys_.begin(); k != prefix_end; ++k) {
        if (int c = compare_key(*k, entries_[x], entries_[y], true)) return c < 0;
      }
      return false;
    };
    std::stable_sort(order.begin(), order.end(), less);
    known.assign(entries_.size(), 0);
    for (size_t b = 0; b < order.size();) {
      size_t end = b + 1;
      while (end < order.size() && !less(order[b], order[end])) ++end;
      uint64_t lookups = 0;
      for (size_t i = b; i < end; ++i) {
        const HistEntry& g = entries_[order[i]];
        // Each entry counts the samples of the member it was made for (a leader entry's group
        // columns hold its members' entries' samples once the order has been read).
        const unsigned origin = order[i] < origin_.size() ? origin_[order[i]] : 0;
        lookups += origin == 0 ? std::max(g.samples, g.children_samples) : member_samples(g, origin);
      }
      for (size_t i = b; i < end; ++i) known[order[i]] = lookups >= 2;
      b = end;
    }
  }
  return idx < known.size() && known[idx];
}

std::vector<const HistEntry*> Hist::sorted_by(const std::vector<ReportField>& order) const {
  std::vector<const HistEntry*> in = in_key_order();
  auto value = [&](const HistEntry* e, ReportField::Kind kind, unsigned member) -> uint64_t {
    switch (kind) {
      case ReportField::Kind::kOverhead: return member_period(*e, member);
      case ReportField::Kind::kOverheadChildren: return member_children_period(*e, member);
      case ReportField::Kind::kSamples: return member_samples(*e, member);
      case ReportField::Kind::kPeriod: return member_period(*e, member);
      case ReportField::Kind::kKey: break;
      case ReportField::Kind::kOverheadSys:
      case ReportField::Kind::kOverheadUs:
      case ReportField::Kind::kOverheadGuestSys:
      case ReportField::Kind::kOverheadGuestUs: return cpu_mode_period(*e, kind, member);
    }
    return 0;
  };
  auto before = [&](const HistEntry* a, const HistEntry* b) {
    for (const ReportField& f : order) {
      if (f.kind == ReportField::Kind::kKey) {
        if (int c = compare_key(f.key, *a, *b)) return c < 0;
        continue;
      }
      // A group's value column compares the leader's values, then the other members'.
      for (unsigned m = 0; m < members_; ++m) {
        const uint64_t va = value(a, f.kind, m), vb = value(b, f.kind, m);
        if (va != vb) return va > vb;
      }
    }
    return false;
  };
  return replay_tree(in, before);
}

std::vector<const HistEntry*> Hist::in_key_order() const {
  collapse_once();
  std::vector<const HistEntry*> in;
  in.reserve(key_order_.size());
  for (uint32_t i : key_order_) in.push_back(&entries_[i]);
  return in;
}

void Hist::merge_into(uint32_t into, uint32_t from) const {
  HistEntry& dst = entries_[into];
  const HistEntry& src = entries_[from];
  dst.period += src.period;
  dst.samples += src.samples;
  dst.children_period += src.children_period;
  dst.children_samples += src.children_samples;
  // The leader's periods by cpumode here, the other members' with their values below.
  add_cpu_modes(into, from, 0);
  for (unsigned m = 1; m < members_; ++m) add_member_values(into, from, m);
  if (trees_) {
    finish_trees();
    trees_->merge(into, from);
  }
}

void Hist::add_member_values(uint32_t into, uint32_t from, unsigned m) const {
  const size_t stride = members_ - 1;
  const size_t at_from = static_cast<size_t>(from) * stride + m - 1, at_into = static_cast<size_t>(into) * stride + m - 1;
  if (at_from >= member_values_.size()) return;
  if (at_into >= member_values_.size()) member_values_.resize(entries_.size() * stride);
  member_values_[at_into].period += member_values_[at_from].period;
  member_values_[at_into].samples += member_values_[at_from].samples;
  member_values_[at_into].children_period += member_values_[at_from].children_period;
  // The member's periods by cpumode go with its values.
  add_cpu_modes(into, from, m);
}

namespace {

// Dense numbers for n entries by their values of one key: `id(i)` names entry i's value (entries
// of one id have equal values: one interned text, one DSO), `cmp(i, j)` compares the values of
// entries i and j (<0, 0, >0). Equal values get one number, and the numbers are in their order.
template <class IdOf, class Cmp>
std::vector<uint32_t> dense_ranks(size_t n, IdOf id, Cmp cmp) {
  // The entries' ids, each one value (a run), its first entry standing for it. Found by hash:
  // the ids are few (comms, DSOs, symbols) where the entries are many, and sorting the entries
  // by id was a fifth of the output's time on a system-wide report with --children.
  std::unordered_map<uintptr_t, uint32_t> run_of_id;
  std::vector<uint32_t> run_of(n);  // by entry: its run
  std::vector<uint32_t> first;      // by run: its first entry
  for (size_t i = 0; i < n; ++i) {
    const auto [it, fresh] = run_of_id.try_emplace(id(i), static_cast<uint32_t>(first.size()));
    if (fresh) first.push_back(static_cast<uint32_t>(i));
    run_of[i] = it->second;
  }
  // The runs in the values' order; equal values share a number.
  std::vector<uint32_t> runs(first.size());
  for (uint32_t r = 0; r < runs.size(); ++r) runs[r] = r;
  std::sort(runs.begin(), runs.end(), [&](uint32_t a, uint32_t b) { return cmp(first[a], first[b]) < 0; });
  std::vector<uint32_t> rank_of_run(runs.size());
  uint32_t rank = 0;
  for (size_t j = 0; j < runs.size(); ++j) {
    if (j > 0 && cmp(first[runs[j - 1]], first[runs[j]]) != 0) ++rank;
    rank_of_run[runs[j]] = rank;
  }
  std::vector<uint32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = rank_of_run[run_of[i]];
  return out;
}

// The ranks of several keys (each of n entries) as one number per entry: a mixed-radix number,
// the first key its most significant digit, so that the numbers compare as the keys in turn do.
// false (and `out` left alone) when they do not fit 64 bits.
bool combined_ranks(std::span<const std::vector<uint32_t>* const> ranks, size_t n, std::vector<uint64_t>* out) {
  std::vector<uint64_t> radix;
  uint64_t span = 1;
  for (const std::vector<uint32_t>* r : ranks) {
    radix.push_back(r->empty() ? 1 : uint64_t{*std::max_element(r->begin(), r->end())} + 1);
    if (__builtin_mul_overflow(span, radix.back(), &span)) return false;
  }
  out->assign(n, 0);
  for (size_t k = 0; k < ranks.size(); ++k) {
    const std::vector<uint32_t>& r = *ranks[k];
    for (size_t i = 0; i < n; ++i) (*out)[i] = (*out)[i] * radix[k] + (r.empty() ? 0 : r[i]);
  }
  return true;
}

}  // namespace

const std::vector<uint32_t>& Hist::key_ranks(SortKey key, bool by_name) const {
  // The symbol key alone depends on by_name.
  if (key != SortKey::kSym && key != SortKey::kSymoff) by_name = false;
  for (const KeyRanks& k : key_ranks_) {
    if (k.key == key && k.by_name == by_name && k.entries == entries_.size()) return k.ranks;
  }
  key_ranks_.push_back({key, by_name, entries_.size(), rank_values(key, by_name)});
  return key_ranks_.back().ranks;
}

std::vector<uint32_t> Hist::rank_values(SortKey key, bool by_name) const {
  // The field whose identity implies equal values, for the keys whose comparison (compare_key(),
  // by name) is an order; the values themselves are compared by compare_key().
  uintptr_t (*id)(const HistEntry&) = nullptr;
  switch (key) {
    case SortKey::kComm: id = [](const HistEntry& e) { return reinterpret_cast<uintptr_t>(e.comm); }; break;
    case SortKey::kSrcline: id = [](const HistEntry& e) { return reinterpret_cast<uintptr_t>(e.srcline); }; break;
    case SortKey::kTrace: id = [](const HistEntry& e) { return reinterpret_cast<uintptr_t>(e.trace); }; break;
    case SortKey::kDso: id = [](const HistEntry& e) { return reinterpret_cast<uintptr_t>(e.loc.dso); }; break;
    case SortKey::kSym:
    case SortKey::kSymoff:
      if (!by_name) return {};  // by address it is no order (see OrderRisk)
      id = [](const HistEntry& e) { return reinterpret_cast<uintptr_t>(e.loc.sym); };
      break;
    default:
      return {};
  }
  return dense_ranks(
      entries_.size(), [&](size_t i) { return id(entries_[i]); },
      [&](uint32_t a, uint32_t b) { return compare_key(key, entries_[a], entries_[b], false); });
}

PerfRbTree Hist::collapse(const std::vector<uint32_t>& order) const {
  // compare_keys() with the numbers of the keys that have them (key_ranks()), and the symbol
  // key's comparison by address (no order, so no numbers) from what it reads of each entry: the
  // tree's walks visit the entries out of order, and reading the wide entries, their symbols and
  // a rank array per key there took most of the collapse (a third of a system-wide report's
  // output).
  std::vector<const std::vector<uint32_t>*> ranks;
  bool sym_key = false;
  for (SortKey k : keys_) {
    ranks.push_back(&key_ranks(k, false));
    sym_key = sym_key || ((k == SortKey::kSym || k == SortKey::kSymoff || k == SortKey::kIpcNull) && ranks.back()->empty());
  }
  // What the walks compare of each entry, side by side: the numbers of the leading keys that have
  // them as one (a mixed-radix number, when it fits 64 bits), and as compare_key() compares a
  // symbol by address, a symbol's start or the address of an entry without one (an inlined
  // function's symbol, compared by name first, is left to compare_key()).
  size_t lead = 0;  // keys in `prefix`
  while (lead < keys_.size() && !ranks[lead]->empty()) ++lead;
  std::vector<uint64_t> prefix;
  if (!combined_ranks(std::span(ranks).first(lead), entries_.size(), &prefix)) lead = 0;  // compared one by one
  struct Side {
    uint64_t prefix;
    uint64_t at;
    uint8_t kind;  // 0: no symbol (at: the address), 1: a symbol (at: its start), 2: inlined
  };
  std::vector<Side> side(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    Side& d = side[i];
    d.prefix = lead ? prefix[i] : 0;
    const Location& l = entries_[i].loc;
    d.at = l.sym ? l.sym_start : l.addr;
    d.kind = !l.sym ? 0 : l.sym->inlined ? 2 : 1;
  }
  const std::vector<uint32_t>* dso_ranks = nullptr;  // compared first without the dso key
  if (sym_key && !use_dso_) dso_ranks = &key_ranks(SortKey::kDso, false);
  auto signed_diff = [](uint64_t x, uint64_t y) { return cmp_num(static_cast<int64_t>(x - y), int64_t{0}); };
  auto compare_sym = [&](size_t k, uint32_t a, uint32_t b) {
    const Side& x = side[a];
    const Side& y = side[b];
    if (x.kind == 2 || y.kind == 2) return compare_key(keys_[k], entries_[a], entries_[b], true);
    if (dso_ranks && (x.kind || y.kind)) {
      if (int c = cmp_num((*dso_ranks)[a], (*dso_ranks)[b])) return c;
    }
    if (x.kind != y.kind) return x.kind ? -1 : 1;  // named symbols before unresolved addresses
    return signed_diff(x.at, y.at);
  };
  auto compare = [&](uint32_t a, uint32_t b) {
    if (side[a].prefix != side[b].prefix) return side[a].prefix < side[b].prefix ? -1 : 1;
    for (size_t k = lead; k < keys_.size(); ++k) {
      const std::vector<uint32_t>& r = *ranks[k];
      int c;
      if (!r.empty()) {
        c = cmp_num(r[a], r[b]);
      } else if (sym_key && (keys_[k] == SortKey::kSym || keys_[k] == SortKey::kSymoff || keys_[k] == SortKey::kIpcNull)) {
        c = compare_sym(k, a, b);
      } else {
        c = compare_key(keys_[k], entries_[a], entries_[b], true);
      }
      if (c) return c;
    }
    return 0;
  };
  PerfRbTree collapsed;
  for (uint32_t i : order) {
    const uint32_t into = collapsed.find_or_insert(i, [&](uint32_t at) { return compare(i, at); });
    if (into != i) merge_into(into, i);
  }
  return collapsed;
}

void Hist::collapse_once() const {
  // The order perf walks the entries in: its input tree's (kept as entries were made), and when
  // a key needs it (comm), its collapsed tree's, into which the input tree's entries go in that
  // order and where an entry the walk finds equal takes the new one in.
  if (collapsed_) return;
  collapsed_ = true;
  // Where the key comparison is an order (risk_.total()), the input tree's walk is sorted with
  // no two entries equal, so a collapsed tree would hold the same entries in the same order and
  // merge none: it is made only where the comparison is no order (unresolved addresses that
  // meet symbols) and perf's walks may have missed equal entries.
  const bool collapse_keys = collapse_comm_ && !risk_.total();
  if (members_ == 1) {
    key_order_ = collapse_keys ? collapse(input_.in_order()).in_order() : input_.in_order();
    return;
  }
  // A group: each member's entries are collapsed in their own tree, then paired with the
  // leader's (see member_input_).
  PerfRbTree tree = collapse_keys ? collapse(input_.in_order()) : input_;
  for (unsigned m = 1; m < members_; ++m) {
    const PerfRbTree& own = member_input_[m - 1];
    const PerfRbTree member = collapse_keys ? collapse(own.in_order()) : own;
    std::vector<uint8_t> paired(entries_.size(), 0);
    for (uint32_t l : tree.in_order()) {
      const uint32_t found = member.find([&](uint32_t at) { return compare_keys(entries_[l], entries_[at]); });
      if (found == PerfRbTree::kNone || paired[found]) continue;
      paired[found] = 1;
      add_member_values(l, found, m);
    }
    for (uint32_t e : member.in_order()) {
      if (paired[e]) continue;
      const uint32_t into = tree.find_or_insert(e, [&](uint32_t at) { return compare_keys(entries_[e], entries_[at]); });
      if (into != e) add_member_values(into, e, m);
    }
  }
  key_order_ = tree.in_order();
}

std::vector<const HistEntry*> Hist::sorted(bool by_children, bool with_trees, std::span<const SortKey> elided,
                                           bool callee_order, bool by_samples_last) const {
  // perf walks its entries in key order and inserts each into a red-black tree with its output
  // comparator, which is not a total order (the caller-above-callee rule below holds within one
  // thread only): replay_tree() gives the order perf's tree shape gives.
  std::vector<const HistEntry*> in = in_key_order();
  // With the floor named and the entries merged, the trees are made meanwhile: what follows
  // reads their depths alone, which making them leaves as they are.
  if (trees_ && floor_known_) trees_->make_ahead();

  // The sort keys' comparison, from their numbers (key_ranks()): one number per entry for all of
  // them when every key shown has numbers (digits of a mixed-radix number, or their places in
  // order when that does not fit 64 bits), else a key without goes through compare_key().
  std::vector<SortKey> shown;
  for (SortKey k : keys_) {
    if (std::find(elided.begin(), elided.end(), k) == elided.end()) shown.push_back(k);
  }
  std::vector<const std::vector<uint32_t>*> ranks;
  bool all_ranked = true;
  for (SortKey k : shown) {
    ranks.push_back(&key_ranks(k, true));
    all_ranked = all_ranked && !ranks.back()->empty();
  }
  std::vector<uint64_t> key_rank;  // with all_ranked: a number per entry, in the keys' order
  if (all_ranked && !combined_ranks(ranks, entries_.size(), &key_rank)) {
    // Too many values for one number: the tuples' places in their order instead.
    key_rank.assign(entries_.size(), 0);
    std::vector<uint32_t> order(entries_.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    auto tuple_cmp = [&](uint32_t a, uint32_t b) {
      for (const std::vector<uint32_t>* r : ranks) {
        if ((*r)[a] != (*r)[b]) return (*r)[a] < (*r)[b] ? -1 : 1;
      }
      return 0;
    };
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return tuple_cmp(a, b) < 0; });
    uint64_t r = 0;
    for (size_t j = 0; j < order.size(); ++j) {
      if (j > 0 && tuple_cmp(order[j - 1], order[j]) != 0) ++r;
      key_rank[order[j]] = r;
    }
  }

  // What the comparison reads of each entry, side by side in the order of `in` (the entries are
  // wide and the tree's walk visits them out of order).
  struct View {
    uint64_t primary;  // children_period when by_children, else period
    uint64_t period;
    uint64_t key;      // key_rank, with all_ranked
    int32_t tid;
    uint32_t depth;    // of the entry's callchain tree (by_children with trees)
  };
  std::vector<View> views(in.size());
  for (size_t j = 0; j < in.size(); ++j) {
    const HistEntry& e = *in[j];
    const auto i = static_cast<size_t>(&e - entries_.data());
    uint32_t depth = 0;
    if (by_children && with_trees) depth = static_cast<uint32_t>(std::min<size_t>(tree_depth(&e), UINT32_MAX));
    views[j] = View{by_children ? e.children_period : e.period, e.period, all_ranked ? key_rank[i] : 0, e.tid, depth};
  }
  key_rank = {};
  auto compare_shown = [&](uint32_t a, uint32_t b) {
    if (all_ranked) return cmp_num(views[a].key, views[b].key);
    const HistEntry& ea = *in[a];
    const HistEntry& eb = *in[b];
    const auto ia = static_cast<size_t>(&ea - entries_.data()), ib = static_cast<size_t>(&eb - entries_.data());
    for (size_t k = 0; k < shown.size(); ++k) {
      const std::vector<uint32_t>& r = *ranks[k];
      const int c = r.empty() ? compare_key(shown[k], ea, eb) : cmp_num(r[ia], r[ib]);
      if (c) return c;
    }
    return 0;
  };
  // True when `a` goes before (left of) `b` (places in `in`).
  auto before = [&](uint32_t a, uint32_t b) {
    const View& va = views[a];
    const View& vb = views[b];
    if (va.primary != vb.primary) return va.primary > vb.primary;
    if (by_children) {
      // perf 6.1 compares the accumulated column by the leader's value alone (the other members
      // of a group do not take part), then puts a caller (the deeper tree) above its callee when
      // both are of one thread, then goes on to the self column, members included.
      if (with_trees && va.tid == vb.tid && va.depth != vb.depth) return (va.depth > vb.depth) != callee_order;
      if (va.period != vb.period) return va.period > vb.period;
    }
    // In a group, the other members' values decide next.
    if (members_ > 1) {
      if (int c = compare_members(*in[a], *in[b])) return c < 0;
    }
    if (const int c = compare_shown(a, b)) return c < 0;
    // -n: perf's output sort goes on to the Samples column (more first), which decides between
    // entries whose keys compare equal (addresses without a symbol, whose sym keys do).
    if (by_samples_last) {
      for (unsigned m = 0; m < members_; ++m) {
        const uint64_t sa = member_samples(*in[a], m), sb = member_samples(*in[b], m);
        if (sa != sb) return sa > sb;
      }
    }
    return false;
  };
  std::vector<uint32_t> places(in.size());
  for (uint32_t j = 0; j < places.size(); ++j) places[j] = j;
  std::vector<const HistEntry*> out;
  out.reserve(in.size());
  for (uint32_t j : replay_tree(places, before)) out.push_back(in[j]);
  key_ranks_.clear();
  return out;
}

}  // namespace tperf::analysis

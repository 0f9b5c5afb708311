// Histogram of samples by sort keys (perf report's hist entries): each distinct combination of
// the chosen keys (comm, pid, dso, sym, cpu, ...) gets one entry holding its self period and
// sample count and, with callchains, the period accumulated through the callchains ("children").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/call_tree.h"

namespace tperf::session {
struct Dso;
}
namespace tperf::symbols {
struct Symbol;
}

namespace tperf::analysis {

enum class SortKey : uint8_t { kComm, kPid, kTid, kDso, kSym, kSymoff, kCpu };

// Parses perf's --sort syntax ("comm,dso,sym"; "symbol" and "thread" spellings too). Returns ""
// or a message naming the unknown key.
std::string parse_sort_keys(std::string_view spec, std::vector<SortKey>* out);
// The column header perf prints for a key ("Command", "Pid:Command", "Shared Object", ...).
const char* sort_key_header(SortKey key);

// Where an address is: what the dso and sym keys need.
struct Location {
  const session::Dso* dso = nullptr;  // nullptr: no map covers the address
  const symbols::Symbol* sym = nullptr;  // nullptr: no symbol (perf then prints the address)
  uint64_t sym_start = 0;             // in the same space as addr
  uint64_t addr = 0;                  // the address as perf keys it: map-relative for user files
  char level = '.';                   // '.' user, 'k' kernel, 'H' hypervisor, 'g'/'u' guest
};

struct HistEntry {
  // Keys (fields of keys not in use are left at their defaults).
  const std::string* comm = nullptr;  // the comm at the sample's time
  int32_t pid = -1;
  int32_t tid = -1;
  int32_t cpu = -1;
  Location loc;
  // Values.
  uint64_t period = 0;    // self
  uint64_t samples = 0;
  uint64_t children_period = 0;  // self plus what callees of this entry's samples cost
  uint64_t children_samples = 0;
  // Left out by a filter (--comm, --dso, --pid, --tid, -S): hidden from the output but counted
  // in the totals. Like perf, an entry keeps the state of the sample that created it: a later
  // sample that passes the filters adds to a hidden entry and the other way round.
  bool filtered = false;
};

class Hist {
 public:
  explicit Hist(std::vector<SortKey> keys);

  const std::vector<SortKey>& keys() const { return keys_; }

  // One sample: `self` holds its keys. With `cumulate` (children mode), the sample's period is
  // also credited, once per distinct entry, to `self` and to the entry of every frame in
  // `callers` (its callchain, leaf first) as children_period.
  void add(const HistEntry& self, uint64_t period, bool cumulate = false, std::span<const HistEntry> callers = {});

  // Like add(), and builds the entries' callchain trees from `frames` (parallel to `callers`, in
  // display order). Without `cumulate` the sample's entry gets the whole chain; with it, so does
  // the sample's entry, and every other distinct entry on the chain gets the part of the chain
  // from its own frame on (in caller order: the frame and its callees).
  void add_with_chain(const HistEntry& self, uint64_t period, bool cumulate, std::span<const HistEntry> callers,
                      std::span<const CallFrame> frames);

  // The callchain tree of an entry of this hist, nullptr when it has none.
  const CallTree* tree_of(const HistEntry* e) const;

  // Entries in perf's output order: by (children_period when `by_children`, else period)
  // descending; with `by_children` and callchain trees, an entry of the same thread with the
  // deeper tree (the caller) first; then by self period, each sort key ascending, the address.
  std::vector<const HistEntry*> sorted(bool by_children, bool with_trees = false) const;

  uint64_t total_period() const { return total_period_; }
  uint64_t total_samples() const { return total_samples_; }
  size_t size() const { return entries_.size(); }

 private:
  HistEntry normalized(const HistEntry& e) const;
  uint32_t findnew(const HistEntry& key);
  size_t hash_of(const HistEntry& e) const;
  bool same_keys(const HistEntry& a, const HistEntry& b) const;
  // Key order (perf's input and collapsed trees): the sort keys, symbols and unresolved entries by
  // address.
  int compare_keys(const HistEntry& a, const HistEntry& b) const;
  // The sort keys (perf's output comparator after the value columns); `by_address`: symbols by
  // address as perf's input trees key them, instead of by name.
  int compare_sort_keys(const HistEntry& a, const HistEntry& b, bool by_address = false) const;

  std::vector<SortKey> keys_;
  bool use_comm_ = false, use_pid_ = false, use_tid_ = false, use_dso_ = false, use_sym_ = false,
       use_symoff_ = false, use_cpu_ = false;
  std::vector<HistEntry> entries_;
  std::vector<std::unique_ptr<CallTree>> trees_;  // by entry index, created on first chain
  std::unordered_multimap<size_t, uint32_t> index_;  // hash of the keys -> entry
  std::vector<uint32_t> seen_;  // entries credited for the current sample's children
  uint64_t total_period_ = 0;
  uint64_t total_samples_ = 0;
};

// perf's short name of a DSO for the dso column, "[unknown]" without one.
std::string_view dso_column_name(const session::Dso* dso);

}  // namespace tperf::analysis

// perf report --mem-mode: memory samples (DATA_SRC, WEIGHT) by the memory sort keys (mem, snoop,
// tlb, locked, blocked, symbol_daddr, dso_daddr, local_weight, weight, instruction latency) and
// sym/dso/comm/pid. An entry's period is its samples' weight (1 for a weight of 0), as perf counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/hist.h"

namespace tperf::analysis {

enum class MemKey : uint8_t {
  kLocalWeight,
  kWeight,
  kMem,
  kSym,
  kDso,
  kSymbolDaddr,
  kDsoDaddr,
  kSnoop,
  kTlb,
  kLocked,
  kBlocked,
  kLocalInsLat,
  kInsLat,
  kLocalPStageCyc,
  kPStageCyc,
  kComm,
  kPid,
  kIpcNull,  // the empty IPC column perf adds when the --sort text says "symbol"
};

// perf 6.1's sort order of --mem-mode.
inline constexpr const char* kMemModeSortOrder =
    "local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,blocked,local_ins_lat,local_p_stage_cyc";

// Parses a --sort list of the keys above ("symbol" for sym, "pid" for the Pid:Command key).
// Returns "" or the key perf would refuse.
std::string parse_mem_sort_keys(std::string_view spec, std::vector<MemKey>* out);
const char* mem_key_header(MemKey key);
// The keys of a plain report (no --mem-mode) this histogram takes: the weights and the keys it
// shares with perf's other reports (sym, dso, comm, pid).
bool is_common_mem_key(MemKey key);
// A plain report's --sort that needs this histogram: it has a weight key and only common keys.
bool wants_weight_report(std::string_view sort);

// Keys perf parses but does not show on this architecture (p_stage_cyc is POWER's).
bool mem_key_hidden(MemKey key);

struct MemEntry {
  HistEntry self;         // comm, pid, the sample's code location
  Location data;          // where the data address is (dso, symbol)
  uint64_t daddr = 0;     // the data address
  uint64_t data_src = 0;  // of the first sample
  // Values.
  uint64_t period = 0;  // the sum of the weights (1 each for weight 0)
  uint64_t samples = 0;
  uint64_t weight = 0;  // the sum of the weights
  uint64_t ins_lat = 0;
  uint64_t p_stage_cyc = 0;
  uint64_t local_weight() const { return samples ? weight / samples : 0; }
  uint64_t local_ins_lat() const { return samples ? ins_lat / samples : 0; }
  uint64_t local_p_stage_cyc() const { return samples ? p_stage_cyc / samples : 0; }
};

class MemHist {
 public:
  explicit MemHist(std::vector<MemKey> keys) : keys_(std::move(keys)) {}
  // One sample: `s` holds its keys, period (--mem-mode: its weight, 1 for 0; else the sample's
  // period), weight, ins_lat and p_stage_cyc.
  void add(const MemEntry& s);
  // perf's output order: period descending, then the keys.
  std::vector<const MemEntry*> sorted() const;
  // <0: a before b in the output (perf's direction for each key).
  int compare(MemKey key, const MemEntry& a, const MemEntry& b) const;
  const std::vector<MemKey>& keys() const { return keys_; }
  uint64_t total_period() const { return total_period_; }
  uint64_t total_weight() const { return total_weight_; }
  uint64_t total_samples() const { return total_samples_; }

 private:
  bool same(const MemEntry& a, const MemEntry& b) const;
  size_t hash_of(const MemEntry& e) const;
  std::vector<MemKey> keys_;
  std::vector<MemEntry> entries_;
  std::unordered_multimap<size_t, size_t> index_;
  uint64_t total_period_ = 0, total_weight_ = 0, total_samples_ = 0;
};

}  // namespace tperf::analysis

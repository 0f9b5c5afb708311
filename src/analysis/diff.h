// perf diff's pairing of histograms: the entries of a baseline hist matched by their keys with
// those of one or more other hists (same event, other files), the entries only in the others
// added as rows without a baseline, each pair's delta/ratio/weighted diff, and the rows in the
// order `perf diff` prints them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "analysis/hist.h"

namespace tperf::analysis {

// What the column after the baseline holds (perf diff -c).
enum class DiffCompute : uint8_t {
  kDelta,     // new% - old%
  kDeltaAbs,  // the same, rows ordered by its absolute value (perf's default)
  kRatio,     // new period / old period
  kWdiff,     // new period * w2 - old period * w1
};

struct DiffOptions {
  DiffCompute compute = DiffCompute::kDeltaAbs;
  int64_t wdiff_w1 = 0;
  int64_t wdiff_w2 = 0;
};

// One printed line. `pairs`, `delta`, `ratio` and `wdiff` are indexed by the other hists
// (0 = the first file after the baseline).
struct DiffRow {
  const HistEntry* keys = nullptr;  // whose keys the row shows: the baseline's, else the first other's
  size_t keys_hist = 0;             // 0: `keys` is the baseline's; i + 1: the entry of others[i]
  const HistEntry* base = nullptr;  // nullptr: the keys are in no baseline entry (perf's dummy)
  std::vector<const HistEntry*> pairs;  // nullptr where that hist has no entry with these keys
  std::vector<double> delta;            // percentage points; only where paired
  std::vector<double> ratio;
  std::vector<int64_t> wdiff;

  uint64_t base_period() const { return base ? base->period : 0; }
};

struct Diff {
  std::vector<DiffRow> rows;  // in perf's output order
  uint64_t base_total = 0;    // the baseline's total period (percentages of baseline entries)
  // Entries made by merging a hist's entries without a symbol (see diff_hists); rows point here.
  std::vector<std::unique_ptr<HistEntry>> merged;
};

// Pairs `base` with each of `others` (nullptr: that file has no such event; its column stays
// empty). All hists must have the same sort keys; entries must outlive the result.
// With the sym key, perf 6.1's diff shows one entry per group of entries without a symbol that
// agree on the other keys: the first of them in key order (the lowest address) with the group's
// periods summed, where perf report shows one entry per address (seen on recordings, e.g.
// tests/regress/diff-unresolved; the [vdso] code outside its exported functions).
Diff diff_hists(const Hist& base, std::span<const Hist* const> others, const DiffOptions& options);

}  // namespace tperf::analysis

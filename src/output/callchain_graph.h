// perf report's stdio callchain graph (-g graph, absolute percentages): the tree under a hist
// entry drawn with "---", "|--NN.NN%--" and "--NN.NN%--" branches, children below the threshold
// left out, siblings by weight.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/call_tree.h"
#include "analysis/callchain_spec.h"

namespace tperf::output {

struct GraphOptions {
  uint64_t total = 0;        // the percentages' base (the event's total period)
  uint64_t entry_period = 0; // the entry's own period (its children period with --children)
  uint64_t min_hit = 0;      // branches lighter than this are not drawn (threshold % of total)
  bool skip_first = false;   // the entry's column already names the first frame (sort by sym)
  // -g fractal: each branch's percentage is of its parent (the entry's period at the top), and a
  // child is drawn when it carries at least min_percent of its parent's children; what the
  // threshold cut shows as "[...]".
  bool fractal = false;
  double min_percent = 0.5;
  // --branch-history on branch stacks: each frame followed by its branch counts (perf's
  // show_branchflag_count).
  bool branch_counts = false;
  // -g's value: what a branch shows, its share of the total (percent), its period, or its number
  // of samples (count).
  analysis::CallchainSpec::Value value = analysis::CallchainSpec::Value::kPercent;
  // -g's print limit: at most this many children of a node are drawn (chains listed, in flat and
  // folded modes); 0: all.
  unsigned long print_limit = 0;
  // -t: what folded lines put between frames (perf uses the field separator there).
  std::string_view folded_sep = ";";
  const analysis::CallTree* tree = nullptr;  // the tree drawn (set by the functions below)
};

// Appends the graph of `tree` to `out`, followed by a blank line; nothing when nothing is drawn.
void append_callchain_graph(std::string& out, const analysis::CallTree& tree, const GraphOptions& options);

// perf's -g folded lines of an entry: every chain end heavy enough (by its own period, heaviest
// first) as "NN.NN% frame;frame;..." from the top of the tree down to it.
void append_callchain_folded(std::string& out, const analysis::CallTree& tree, const GraphOptions& options);

// perf's -g flat: every chain end heavy enough, in the folded order, as its percentage (the
// node's cumulated period) and its frames one a line from the top of the tree down.
void append_callchain_flat(std::string& out, const analysis::CallTree& tree, const GraphOptions& options);

// How perf names a frame in a graph: the symbol (and, in chains keyed by address, its srcline),
// else the raw address in hex.
std::string frame_name(const analysis::CallFrame& f, const std::string* srcline = nullptr);
// Frame `i` of a node's run (ids of `table`), its srcline included.
std::string frame_name(const analysis::CallFrameTable& table, const analysis::FrameRun& run, size_t i);

}  // namespace tperf::output

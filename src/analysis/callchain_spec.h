// perf report's -g/--call-graph argument: print_type,threshold[,print_limit],order,sort_key
// [,branch],value, read as perf reads it. Words may come in any order and be cut short (perf
// takes any prefix: "fr" is fractal, "c" caller, "a" address); the first number is the
// threshold, the next the print limit; any prefix of "none" turns the chains off, whatever follows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tperf::analysis {

struct CallchainSpec {
  enum class Mode { kGraph, kFlat, kFractal, kFolded, kNone };
  enum class Order { kDefault, kCaller, kCallee };  // kDefault: caller with --children, callee without
  enum class Key { kFunction, kAddress, kSrcline };
  enum class Value { kPercent, kPeriod, kCount };
  Mode mode = Mode::kGraph;
  Order order = Order::kDefault;
  Key key = Key::kFunction;
  bool branch = false;                // "branch": the branch stacks make the chains (--branch-history)
  Value value = Value::kPercent;
  std::optional<double> threshold;    // percent; perf's default 0.5
  unsigned long print_limit = 0;      // children drawn per node at most; 0: all
};

// Reads `text` into `out` (which keeps what the text does not set). Returns "" or why the text is
// not one perf takes.
std::string parse_callchain_spec(std::string_view text, CallchainSpec* out);

}  // namespace tperf::analysis

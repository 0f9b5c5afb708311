#include "analysis/callchain_spec.h"

#include <fmt/format.h>

#include <cstdlib>

namespace tperf::analysis {

namespace {

// perf compares a word with the first characters of each name, in order: a prefix of the name.
bool abbreviates(std::string_view word, std::string_view name) {
  return !word.empty() && word.size() <= name.size() && name.substr(0, word.size()) == word;
}

}  // namespace

std::string parse_callchain_spec(std::string_view text, CallchainSpec* out) {
  bool threshold_set = false;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view word = text.substr(at, comma - at);
    at = comma + 1;
    if (word.empty()) continue;  // ",," is one separator, as strtok has it
    if (abbreviates(word, "none")) {
      out->mode = CallchainSpec::Mode::kNone;
      return "";
    }
    using M = CallchainSpec::Mode;
    if (abbreviates(word, "graph")) {
      out->mode = M::kGraph;
    } else if (abbreviates(word, "flat")) {
      out->mode = M::kFlat;
    } else if (abbreviates(word, "fractal")) {
      out->mode = M::kFractal;
    } else if (abbreviates(word, "folded")) {
      out->mode = M::kFolded;
    } else if (abbreviates(word, "caller")) {
      out->order = CallchainSpec::Order::kCaller;
    } else if (abbreviates(word, "callee")) {
      out->order = CallchainSpec::Order::kCallee;
    } else if (abbreviates(word, "function")) {
      out->key = CallchainSpec::Key::kFunction;
    } else if (abbreviates(word, "address")) {
      out->key = CallchainSpec::Key::kAddress;
    } else if (abbreviates(word, "srcline")) {
      out->key = CallchainSpec::Key::kSrcline;
    } else if (abbreviates(word, "branch")) {
      out->branch = true;
    } else if (abbreviates(word, "percent")) {
      out->value = CallchainSpec::Value::kPercent;
    } else if (abbreviates(word, "period")) {
      out->value = CallchainSpec::Value::kPeriod;
    } else if (abbreviates(word, "count")) {
      out->value = CallchainSpec::Value::kCount;
    } else {
      // A number: the threshold first, then the print limit. perf reads as much of the word as
      // makes a number ("0.5x" is 0.5) and refuses one that does not start with one.
      const std::string w(word);
      char* end = nullptr;
      if (!threshold_set) {
        const double threshold = std::strtod(w.c_str(), &end);
        if (end == w.c_str()) return fmt::format("'{}' is neither a word perf knows nor a threshold", w);
        out->threshold = threshold;
        threshold_set = true;
      } else {
        const unsigned long limit = std::strtoul(w.c_str(), &end, 0);
        if (end == w.c_str()) return fmt::format("'{}' is neither a word perf knows nor a print limit", w);
        out->print_limit = limit;
      }
    }
  }
  return "";
}

}  // namespace tperf::analysis

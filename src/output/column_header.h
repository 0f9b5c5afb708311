#pragma once

// The two lines perf's stdio reports and diffs put above their rows: the column names, each
// padded to its column's width (right-aligned for numbers), and a rule of dots as wide, then a
// lone '#'. report and diff print theirs with it.

#include <string>

#include <fmt/format.h>

namespace tperf::output {

// `columns`: a range of items with `header` (text), `width` and `right` (align right).
template <typename Columns>
std::string column_header(const Columns& columns) {
  std::string line = "# ";
  std::string dots = "# ";
  bool first = true;
  for (const auto& c : columns) {
    if (!first) {
      line += "  ";
      dots += "  ";
    }
    first = false;
    line += c.right ? fmt::format("{:>{}}", c.header, c.width) : fmt::format("{:<{}}", c.header, c.width);
    dots.append(c.width, '.');
  }
  return line + "\n" + dots + "\n#\n";
}

}  // namespace tperf::output

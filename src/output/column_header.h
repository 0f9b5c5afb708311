#pragma once

// The two lines perf's stdio reports and diffs put above their rows: the column names, each
// padded to its column's width (right-aligned for numbers), and a rule of dots as wide, then a
// lone '#'. report and diff print theirs with it. perf formats each name into a 1024-byte buffer,
// so a column wider than 1023 (a long C++ symbol's) has its name line cut there; the rule of
// dots is not.

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "util/text.h"

namespace tperf::output {

inline constexpr size_t kHeaderCellMax = 1023;

// `columns`: a range of items with `header` (text), `width` and `right` (align right).
// `field_sep` (report -t): the names joined by it, and no rule under them.
template <typename Columns>
std::string column_header(const Columns& columns, std::string_view field_sep = {}) {
  std::string line = "# ";
  std::string dots = "# ";
  bool first = true;
  for (const auto& c : columns) {
    if (!first) {
      line += field_sep.empty() ? std::string_view("  ") : field_sep;
      dots += "  ";
    }
    first = false;
    std::string cell;
    util::append_padded(cell, c.header, c.width, c.right);
    if (cell.size() > kHeaderCellMax) cell.resize(kHeaderCellMax);
    line += cell;
    dots.append(c.width, '.');
  }
  if (!field_sep.empty()) return line + "\n";
  return line + "\n" + dots + "\n#\n";
}

}  // namespace tperf::output

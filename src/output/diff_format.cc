#include "output/diff_format.h"

#include <fmt/format.h>

#include <algorithm>

#include "output/column_header.h"
#include "output/report_format.h"
#include "util/text.h"

namespace tperf::output {

namespace {

using analysis::DiffCompute;
using analysis::DiffRow;
using analysis::SortKey;

struct Column {
  std::string header;
  size_t width;
  bool right;
};

// perf's name and minimum width of the computed column.
Column computed_column(DiffCompute c) {
  switch (c) {
    case DiffCompute::kDelta: return {"Delta", 7, true};
    case DiffCompute::kDeltaAbs: return {"Delta Abs", 7, true};
    case DiffCompute::kRatio: return {"Ratio", 14, true};
    case DiffCompute::kWdiff: return {"Weighted diff", 14, true};
  }
  return {"", 0, true};
}

}  // namespace

void print_diff_section(std::FILE* out, const DiffSection& section, const analysis::Diff& diff,
                        const DiffThreadCommFn& thread_comm) {
  const size_t files = section.paths.size();
  fmt::print(out, "{}# Event '{}'\n#\n", section.first ? "" : "\n", section.event_name);
  if (files > 2) {
    fmt::print(out, "# Data files:\n");
    for (size_t i = 0; i < files; ++i) fmt::print(out, "#  [{}] {} {}\n", i, section.paths[i], i ? "" : "(Baseline)");
    fmt::print(out, "#\n");
  }

  // The value columns: perf names them by file index once there are more than two files, and
  // makes each as wide as its name.
  std::vector<Column> cols;
  auto value_column = [&](Column c, size_t file) {
    if (files > 2) c.header = fmt::format("{}/{}", c.header, file);
    c.width = std::max(c.width, c.header.size());
    cols.push_back(c);
  };
  value_column({"Baseline", 0, true}, 0);
  for (size_t i = 1; i < files; ++i) value_column(computed_column(section.compute), i);
  const size_t value_cols = cols.size();

  auto comm_of = [&](const DiffRow& r) -> std::string_view {
    const std::string* c = thread_comm ? thread_comm(r.keys_hist, r.keys->tid) : nullptr;
    return c ? std::string_view(*c) : std::string_view();
  };
  // The key columns, sized like perf report's by every row.
  size_t comm_w = 7, dso_w = 13, sym_w = 6, symoff_w = 13, tid_w = 3;
  for (const DiffRow& r : diff.rows) {
    const analysis::HistEntry& e = *r.keys;
    comm_w = std::max(comm_w, comm_of(r).size());
    dso_w = std::max(dso_w, analysis::dso_column_name(e.loc.dso).size());
    if (e.unresolved) dso_w = std::max(dso_w, kUnresolvedWidth);
    sym_w = std::max(sym_w, sym_column_width(e));
    symoff_w = std::max(symoff_w, symoff_text(e).size());
    tid_w = std::max(tid_w, fmt::formatted_size("{}", e.tid));
  }
  for (SortKey k : section.keys) {
    switch (k) {
      case SortKey::kComm: cols.push_back({"Command", comm_w, false}); break;
      case SortKey::kPid: cols.push_back({"    Pid:Command", comm_w + 8, false}); break;
      case SortKey::kTid: cols.push_back({"Tid", tid_w, true}); break;
      case SortKey::kDso: cols.push_back({"Shared Object", dso_w, false}); break;
      case SortKey::kSym: cols.push_back({"Symbol", sym_w, false}); break;
      case SortKey::kSymoff: cols.push_back({"Symbol+Offset", symoff_w, false}); break;
      case SortKey::kCpu: cols.push_back({"CPU", 3, false}); break;
      case SortKey::kSrcline:
      case SortKey::kParent:
      case SortKey::kTrace:
      case SortKey::kIpcNull: break;  // refused by tperf diff
    }
  }

  fmt::print(out, "{}", column_header(cols));

  std::string row;
  for (const DiffRow& r : diff.rows) {
    row.assign("  ");
    auto cell = [&](size_t i, std::string_view text) {
      const Column& c = cols[i];
      if (i) row += "  ";
      // The symbol columns are not padded at the end of the line.
      const bool last_sym = i + 1 == cols.size() && (section.keys.back() == SortKey::kSym || section.keys.back() == SortKey::kSymoff);
      if (c.right) {
        util::append_padded(row, text, c.width, true);
      } else if (last_sym) {
        row += text;
      } else {
        util::append_padded(row, text, c.width, false);
      }
    };
    const int base_w = static_cast<int>(cols[0].width);
    if (r.base) {
      const double percent = 100.0 * static_cast<double>(r.base->period) / static_cast<double>(diff.base_total);
      cell(0, fmt::format("{:{}.2f}%", percent, base_w - 1));
    } else {
      cell(0, "");
    }
    for (size_t i = 1; i < value_cols; ++i) {
      const size_t h = i - 1;
      const int w = static_cast<int>(cols[i].width);
      if (!r.pairs[h]) {
        cell(i, "");
        continue;
      }
      switch (section.compute) {
        case DiffCompute::kDelta:
        case DiffCompute::kDeltaAbs:
          cell(i, fmt::format("{:+{}.2f}%", r.delta[h], w - 1));
          break;
        case DiffCompute::kRatio:
          // Without a baseline there is nothing to divide by.
          cell(i, r.base ? fmt::format("{:{}.6f}", r.ratio[h], w) : "N/A");
          break;
        case DiffCompute::kWdiff:
          cell(i, r.base ? fmt::format("{:14}", r.wdiff[h]) : "N/A");
          break;
      }
    }
    size_t i = value_cols;
    const analysis::HistEntry& e = *r.keys;
    for (SortKey k : section.keys) {
      switch (k) {
        case SortKey::kComm: cell(i++, e.comm ? std::string_view(*e.comm).substr(0, comm_w) : std::string_view()); break;
        case SortKey::kPid: cell(i++, fmt::format("{:>7}:{:<{}}", e.tid, comm_of(r), comm_w)); break;
        case SortKey::kTid: cell(i++, fmt::format("{}", e.tid)); break;
        case SortKey::kDso: cell(i++, analysis::dso_column_name(e.loc.dso)); break;
        case SortKey::kSym: cell(i++, sym_text(e)); break;
        case SortKey::kSymoff: cell(i++, symoff_text(e)); break;
        case SortKey::kCpu: cell(i++, cpu_text(e.cpu)); break;
        case SortKey::kSrcline:
        case SortKey::kParent:
        case SortKey::kTrace:
        case SortKey::kIpcNull: break;
      }
    }
    row += '\n';
    std::fputs(row.c_str(), out);
  }
}

}  // namespace tperf::output

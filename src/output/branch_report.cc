#include "output/branch_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/branch_types.h"
#include "output/column_header.h"
#include "session/machine.h"
#include "symbols/symbol_table.h"
#include "util/text.h"

namespace tperf::output {

using analysis::BranchHistEntry;
using analysis::BranchKey;
using analysis::BranchSide;
using analysis::SortKey;

namespace {

// perf's width for an address without a symbol: "[x] " and 0x plus 16 digits.
constexpr size_t kUnresolvedSymWidth = kUnresolvedWidth + 4 + 2;

analysis::HistEntry side_entry(const BranchSide& side) {
  analysis::HistEntry e;
  e.loc = side.loc;
  e.first_addr = side.loc.addr;
  return e;
}

// perf's mispredict cell keeps its last text (a static) for a branch that is neither predicted
// nor mispredicted.
std::string_view mispredict_text(const BranchHistEntry& e) {
  static std::string_view last = "N/A";
  if (e.flags.predicted()) {
    last = "N";
  } else if (e.flags.mispred()) {
    last = "Y";
  }
  return last;
}

}  // namespace

std::string branch_sym_text(const BranchSide& side) { return sym_text(side_entry(side)); }

std::string branch_addr_text(const BranchSide& side, char level, size_t width) {
  std::string text = fmt::format("[{}] ", level);
  const symbols::Symbol* sym = side.loc.sym;
  if (!sym) {
    text += side.loc.addr ? fmt::format("{:#018x}", side.loc.addr) : fmt::format("{:016x}", side.loc.addr);
    return text;
  }
  if (sym->type == symbols::kTypeObject) {
    util::append_format(text, "{}+{:#x}", sym->name(), side.loc.addr - side.loc.sym_start);
    return text;
  }
  // perf cuts the name to what is left of the column, then adds the offset.
  const size_t room = width > text.size() ? width - text.size() : 0;
  text += sym->name().substr(0, room);
  if (const uint64_t off = side.loc.addr - side.loc.sym_start) util::append_format(text, "+{:#x}", off);
  return text;
}

void print_branch_report_section(std::FILE* out, std::string_view event_name, uint64_t nr_samples,
                                 uint64_t total_period, const analysis::BranchHist& hist,
                                 const BranchReportColumns& columns, const ThreadCommFn& thread_comm) {
  std::vector<const BranchHistEntry*> rows = hist.sorted();
  if (!columns.quiet) {
    fmt::print(out, "# Samples: {} of event '{}'\n", abbreviated_count(nr_samples), event_name);
    fmt::print(out, "# Event count (approx.): {}\n#\n", total_period);
  }
  auto thread_comm_of = [&](const BranchHistEntry& e) -> std::string_view {
    const std::string* c = thread_comm ? thread_comm(e.plain.tid) : nullptr;
    return c ? std::string_view(*c) : std::string_view();
  };

  // Widths: the header's, grown as perf's hists__calc_col_len grows them (every entry, the ones
  // --percent-limit hides included).
  size_t comm_w = 7, dso_w = 13, sym_w = 6, tid_w = 3;
  size_t dso_from_w = 0, dso_to_w = 0, sym_from_w = 0, sym_to_w = 0, addr_from_w = 0, addr_to_w = 0;
  size_t srcline_from_w = 0, srcline_to_w = 0;
  for (const BranchHistEntry* e : rows) {
    comm_w = std::max(comm_w, thread_comm_of(*e).size());
    tid_w = std::max(tid_w, fmt::formatted_size("{}", e->plain.tid));
    if (e->plain.loc.dso) dso_w = std::max(dso_w, analysis::dso_column_name(e->plain.loc.dso).size());
    if (e->plain.loc.sym) {
      sym_w = std::max(sym_w, e->plain.loc.sym->name().size() + 4);
    } else {
      sym_w = std::max(sym_w, kUnresolvedSymWidth);
      dso_w = std::max(dso_w, kUnresolvedWidth);
    }
    auto side = [&](const BranchSide& s, size_t& dso, size_t& sym, size_t& addr) {
      if (s.loc.sym) {
        sym = std::max(sym, s.loc.sym->name().size() + 4);
        dso = std::max(dso, analysis::dso_column_name(s.loc.dso).size());
      } else {
        sym = std::max(sym, kUnresolvedSymWidth);
        addr = std::max(addr, kUnresolvedSymWidth);
        dso = std::max(dso, kUnresolvedWidth);
      }
    };
    side(e->from, dso_from_w, sym_from_w, addr_from_w);
    side(e->to, dso_to_w, sym_to_w, addr_to_w);
    auto srcline_width = [](const BranchSide& s, size_t& w) {
      if (s.srcline && s.srcline_seen == BranchSide::SrclineSeen::kInTime) w = std::max(w, s.srcline->size());
    };
    srcline_width(e->from, srcline_from_w);
    srcline_width(e->to, srcline_to_w);
  }

  const uint64_t base = total_period;
  if (columns.percent_limit > 0) {
    std::erase_if(rows, [&](const BranchHistEntry* e) {
      return base && 100.0 * static_cast<double>(e->period) / static_cast<double>(base) < columns.percent_limit;
    });
  }

  enum class Value : uint8_t { kOverhead, kSamples, kPeriod, kKey };
  struct Column {
    std::string header;
    size_t width;
    bool right;
    bool pad_last;  // pad the cell even in the last column
    Value value;
    analysis::BranchSortKey key;
  };
  std::vector<Column> cols;
  cols.push_back({"Overhead", 8, true, true, Value::kOverhead, {}});
  if (columns.show_samples) cols.push_back({"Samples", 12, true, true, Value::kSamples, {}});
  if (columns.show_period) cols.push_back({"Period", 12, true, true, Value::kPeriod, {}});
  for (const analysis::BranchSortKey& k : hist.keys()) {
    if (!k.branch) {
      switch (k.plain) {
        case SortKey::kComm: cols.push_back({"Command", comm_w, false, true, Value::kKey, k}); break;
        case SortKey::kPid: cols.push_back({"    Pid:Command", comm_w + 8, false, true, Value::kKey, k}); break;
        case SortKey::kTid: cols.push_back({"Tid", tid_w, true, true, Value::kKey, k}); break;
        case SortKey::kDso: cols.push_back({"Shared Object", dso_w, false, true, Value::kKey, k}); break;
        case SortKey::kSym: cols.push_back({"Symbol", sym_w, false, false, Value::kKey, k}); break;
        case SortKey::kCpu: cols.push_back({"CPU", 3, false, true, Value::kKey, k}); break;
        default: break;  // not parsed in branch mode
      }
      continue;
    }
    const std::string header = analysis::branch_key_header(k.key);
    size_t w = header.size();
    bool pad_last = true;
    switch (k.key) {
      case BranchKey::kDsoFrom: w = std::max(w, dso_from_w); break;
      case BranchKey::kDsoTo: w = std::max(w, dso_to_w); break;
      case BranchKey::kSymFrom: w = std::max(w, sym_from_w), pad_last = false; break;
      case BranchKey::kSymTo: w = std::max(w, sym_to_w), pad_last = false; break;
      case BranchKey::kAddrFrom: w = std::max(w, addr_from_w), pad_last = false; break;
      case BranchKey::kAddrTo: w = std::max(w, addr_to_w), pad_last = false; break;
      case BranchKey::kSrclineFrom: w = std::max(w, srcline_from_w); break;
      case BranchKey::kSrclineTo: w = std::max(w, srcline_to_w); break;
      default: break;
    }
    cols.push_back({header, w, false, pad_last, Value::kKey, k});
  }

  if (!columns.quiet) fmt::print(out, "{}", column_header(cols));

  std::string row;
  for (const BranchHistEntry* e : rows) {
    row.assign("  ");
    for (size_t i = 0; i < cols.size(); ++i) {
      const Column& c = cols[i];
      std::string text;
      switch (c.value) {
        case Value::kOverhead: {
          const double p = total_period ? 100.0 * static_cast<double>(e->period) / static_cast<double>(total_period) : 0.0;
          text = fmt::format(" {:>6.2f}%", p);
          break;
        }
        case Value::kSamples: text = fmt::format(" {:>11}", e->samples); break;
        case Value::kPeriod: text = fmt::format(" {:>11}", e->period); break;
        case Value::kKey:
          if (!c.key.branch) {
            switch (c.key.plain) {
              case SortKey::kComm:
                text = e->plain.comm ? std::string(*e->plain.comm).substr(0, c.width) : std::string();
                break;
              case SortKey::kPid: text = fmt::format("{:>7}:{:<{}}", e->plain.tid, thread_comm_of(*e), comm_w); break;
              case SortKey::kTid: text = fmt::format("{}", e->plain.tid); break;
              case SortKey::kDso: text = std::string(analysis::dso_column_name(e->plain.loc.dso)); break;
              case SortKey::kSym: text = sym_text(e->plain); break;
              case SortKey::kCpu: text = cpu_text(e->plain.cpu); break;
              default: break;
            }
            break;
          }
          switch (c.key.key) {
            case BranchKey::kDsoFrom: text = std::string(analysis::dso_column_name(e->from.loc.dso).substr(0, c.width)); break;
            case BranchKey::kDsoTo: text = std::string(analysis::dso_column_name(e->to.loc.dso).substr(0, c.width)); break;
            case BranchKey::kSymFrom: text = branch_sym_text(e->from); break;
            case BranchKey::kSymTo: text = branch_sym_text(e->to); break;
            case BranchKey::kAddrFrom: text = branch_addr_text(e->from, e->plain.loc.level, c.width); break;
            case BranchKey::kAddrTo: text = branch_addr_text(e->to, e->plain.loc.level, c.width); break;
            case BranchKey::kMispredict: text = std::string(mispredict_text(*e)); break;
            case BranchKey::kInTx: text = e->flags.in_tx() ? "T" : "."; break;
            case BranchKey::kAbort: text = e->flags.abort() ? "A" : "."; break;
            case BranchKey::kCycles: {
              // perf prints the 16-bit count with "%hd".
              const unsigned cycles = e->flags.cycles();
              text = cycles ? fmt::format("{}", static_cast<int16_t>(cycles)) : "-";
              break;
            }
            case BranchKey::kSrclineFrom:
            case BranchKey::kSrclineTo: {
              const BranchSide& side = c.key.key == BranchKey::kSrclineFrom ? e->from : e->to;
              // What perf's "%-*.*s" makes of a text it never looked up.
              const bool seen = side.srcline && side.srcline_seen != BranchSide::SrclineSeen::kNever;
              text = (seen ? *side.srcline : std::string("(null)")).substr(0, c.width);
              break;
            }
          }
          break;
      }
      if (i) row += "  ";
      const bool last = i + 1 == cols.size();
      if (c.right) {
        util::append_padded(row, text, c.width, true);
      } else if (last && !c.pad_last) {
        row += text;
      } else {
        util::append_padded(row, text, c.width, false);
      }
    }
    row += '\n';
    std::fputs(row.c_str(), out);
  }
  fmt::print(out, "\n\n");
}

void print_branch_type_stats(std::FILE* out, const analysis::BranchTypeStats& stats) {
  const uint64_t total = stats.total();
  if (total == 0) return;
  std::string text = "\n#\n# Branch Statistics:\n#";
  auto line = [&](const char* name, uint64_t n) {
    if (n > 0) util::append_format(text, "\n{:>8}: {:5.1f}%", name, 100.0 * static_cast<double>(n) / static_cast<double>(total));
  };
  line("COND_FWD", stats.cond_fwd);
  line("COND_BWD", stats.cond_bwd);
  line("CROSS_4K", stats.cross_4k);
  line("CROSS_2M", stats.cross_2m);
  for (unsigned t = 0; t < 16; ++t) line(analysis::branch_type_name(t), stats.counts[t]);
  for (unsigned t = 0; t < 8; ++t) line(analysis::branch_new_type_name(t), stats.new_counts[t]);
  std::fputs(text.c_str(), out);
}

}  // namespace tperf::output

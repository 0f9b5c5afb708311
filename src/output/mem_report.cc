#include "output/mem_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "output/column_header.h"
#include "output/mem_format.h"
#include "output/report_format.h"
#include "session/machine.h"
#include "symbols/symbol_table.h"

namespace tperf::output {

namespace {

using analysis::MemEntry;
using analysis::MemKey;

std::string_view dso_text(const analysis::Location& loc) { return loc.dso ? loc.dso->short_name() : "[unknown]"; }

// The data address's cell: a data object shows where in it the address is.
std::string daddr_text(const MemEntry& e) {
  if (e.data.sym) {
    if (e.data.sym->type == symbols::kTypeObject) {
      return fmt::format("[{}] {}+{:#x}", e.data.level, e.data.sym->name(), e.data.addr - e.data.sym_start);
    }
    return fmt::format("[{}] {}", e.data.level, e.data.sym->name());
  }
  return address_text(e.data.level, e.daddr);
}

std::string cell(MemKey key, const MemEntry& e) {
  switch (key) {
    case MemKey::kLocalWeight: return fmt::format("{}", e.local_weight());
    case MemKey::kWeight: return fmt::format("{}", e.weight);
    case MemKey::kLocalInsLat: return fmt::format("{}", e.local_ins_lat());
    case MemKey::kInsLat: return fmt::format("{}", e.ins_lat);
    case MemKey::kLocalPStageCyc: return fmt::format("{}", e.local_p_stage_cyc());
    case MemKey::kPStageCyc: return fmt::format("{}", e.p_stage_cyc);
    case MemKey::kMem: return mem_lvl_text(e.data_src);
    case MemKey::kSnoop: return mem_snoop_text(e.data_src);
    case MemKey::kTlb: return mem_tlb_text(e.data_src);
    case MemKey::kLocked: return mem_lock_text(e.data_src);
    case MemKey::kBlocked: return mem_blk_text(e.data_src);
    case MemKey::kSym: return sym_text(e.self);
    case MemKey::kDso: return std::string(dso_text(e.self.loc));
    case MemKey::kSymbolDaddr: return daddr_text(e);
    case MemKey::kDsoDaddr: return std::string(dso_text(e.data));
    case MemKey::kComm: return e.self.comm ? *e.self.comm : std::string();
    case MemKey::kPid: return fmt::format("{:>7}:{}", e.self.pid, e.self.comm ? *e.self.comm : std::string());
    case MemKey::kIpcNull: return "-      -";
  }
  return {};
}

// Cells perf pads itself ("%-*s"), even in the last column; the others are padded only when a
// column follows.
bool self_padded(MemKey key) {
  return key != MemKey::kSym && key != MemKey::kSymbolDaddr && key != MemKey::kLocked && key != MemKey::kBlocked;
}

// perf's column width before the entries (hists__calc_col_len's fixed widths) and what an
// entry widens it to.
size_t base_width(MemKey key) {
  switch (key) {
    case MemKey::kMem: return 24;
    case MemKey::kTlb: return 22;
    case MemKey::kSnoop: return 12;
    case MemKey::kLocked: return 6;
    case MemKey::kBlocked: return 10;
    case MemKey::kLocalWeight:
    case MemKey::kWeight: return 12;
    case MemKey::kLocalInsLat:
    case MemKey::kInsLat:
    case MemKey::kLocalPStageCyc:
    case MemKey::kPStageCyc: return 13;
    default: return 0;
  }
}

size_t entry_width(MemKey key, const MemEntry& e) {
  switch (key) {
    case MemKey::kSym: return e.self.loc.sym ? e.self.loc.sym->name().size() + 4 : kUnresolvedWidth + 6;
    case MemKey::kDso: return e.self.loc.sym ? dso_text(e.self.loc).size() : std::max(dso_text(e.self.loc).size(), kUnresolvedWidth);
    case MemKey::kSymbolDaddr: return e.data.sym ? e.data.sym->name().size() + 4 + kUnresolvedWidth + 2 : kUnresolvedWidth + 6;
    case MemKey::kDsoDaddr: return e.data.dso ? dso_text(e.data).size() : kUnresolvedWidth;
    case MemKey::kComm: return e.self.comm ? e.self.comm->size() : 0;
    case MemKey::kPid: return cell(key, e).size();
    default: return 0;
  }
}

}  // namespace

void print_mem_report_section(std::FILE* out, std::string_view event_name, const analysis::MemHist& hist,
                              const MemReportOptions& options) {
  const std::vector<const MemEntry*> rows = hist.sorted();
  std::vector<MemColumn> columns = options.columns;
  if (columns.empty()) {
    if (options.show_samples) columns.push_back({MemColumn::Kind::kSamples});
    for (MemKey k : hist.keys()) columns.push_back({MemColumn::Kind::kKey, k});
  }
  std::erase_if(columns, [](const MemColumn& c) { return c.kind == MemColumn::Kind::kKey && analysis::mem_key_hidden(c.key); });
  std::vector<size_t> widths;
  for (const MemColumn& c : columns) {
    if (c.kind != MemColumn::Kind::kKey) {
      widths.push_back(12);
      continue;
    }
    size_t w = std::max(base_width(c.key), std::string_view(analysis::mem_key_header(c.key)).size());
    for (const MemEntry* e : rows) w = std::max(w, entry_width(c.key, *e));
    widths.push_back(w);
  }
  std::string text;
  if (!options.quiet) {
    text += fmt::format("# Samples: {} of event '{}'\n", abbreviated_count(hist.total_samples()), event_name);
    if (options.plain) {
      text += fmt::format("# Event count (approx.): {}\n#\n", hist.total_period());
    } else {
      // perf's "weight" here is the period total: a sample of weight 0 counts 1.
      text += fmt::format("# Total weight : {}\n", hist.total_period());
      text += fmt::format("# Sort order   : {}\n#\n", options.sort_order);
    }
    struct Heading {
      std::string_view header;
      size_t width;
      bool right;
    };
    std::vector<Heading> headings{{"Overhead", 8, false}};
    for (size_t i = 0; i < columns.size(); ++i) {
      switch (columns[i].kind) {
        case MemColumn::Kind::kSamples: headings.push_back({"Samples", widths[i], true}); break;
        case MemColumn::Kind::kPeriod: headings.push_back({"Period", widths[i], true}); break;
        case MemColumn::Kind::kKey: headings.push_back({analysis::mem_key_header(columns[i].key), widths[i], false}); break;
      }
    }
    text += column_header(headings);
  }
  const uint64_t total = hist.total_period();
  for (const MemEntry* e : rows) {
    const double p = total ? 100.0 * static_cast<double>(e->period) / static_cast<double>(total) : 0.0;
    text += fmt::format("{:>9.2f}%", p);
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].kind == MemColumn::Kind::kSamples) {
        text += fmt::format("  {:>12}", e->samples);
        continue;
      }
      if (columns[i].kind == MemColumn::Kind::kPeriod) {
        text += fmt::format("  {:>12}", e->period);
        continue;
      }
      const MemKey key = columns[i].key;
      const std::string c = cell(key, *e);
      text += "  ";
      text += c;
      if ((self_padded(key) || i + 1 < columns.size()) && c.size() < widths[i]) text.append(widths[i] - c.size(), ' ');
    }
    text += '\n';
  }
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), out);
}

}  // namespace tperf::output

#include "output/report_format.h"

#include <cstring>

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <iterator>
#include <vector>

#include "output/callchain_graph.h"
#include "output/column_header.h"
#include "session/machine.h"
#include "symbols/symbol_table.h"
#include "util/text.h"
#include "util/workqueue.h"

namespace tperf::output {

using analysis::HistEntry;
using analysis::SortKey;

// perf prints an address with printf's "%#.16llx", which leaves the 0x off a zero.
void append_address_text(std::string& out, char level, uint64_t addr) {
  out += '[';
  out += level;
  out += "] ";
  if (addr) out += "0x";
  char hex[16];
  for (size_t i = 16; i-- > 0; addr >>= 4) hex[i] = "0123456789abcdef"[addr & 15];
  out.append(hex, sizeof hex);
}

std::string address_text(char level, uint64_t addr) {
  std::string out;
  append_address_text(out, level, addr);
  return out;
}

const char* inlined_suffix(const HistEntry& e) { return e.loc.sym->inlined ? " (inlined)" : ""; }

void append_sym_text(std::string& out, const HistEntry& e) {
  // perf shows where in a data object (a kallsyms symbol of a type other than t/w) the address
  // is; the kernel's addresses and symbols are both absolute, so the offset is their difference.
  if (e.loc.sym && e.loc.sym->type == symbols::kTypeObject && e.loc.dso && e.loc.dso->kernel && !e.loc.sym->inlined) {
    fmt::format_to(std::back_inserter(out), "[{}] {}+{:#x}", e.loc.level, e.loc.sym->name(), e.first_addr - e.loc.sym_start);
    return;
  }
  if (!e.loc.sym) return append_address_text(out, e.loc.level, e.loc.addr);
  out += '[';
  out += e.loc.level;
  out += "] ";
  out += e.loc.sym->name();
  out += inlined_suffix(e);
}

std::string sym_text(const HistEntry& e) {
  std::string out;
  append_sym_text(out, e);
  return out;
}

// perf sizes the column for an entry without a symbol as for a 16-digit address ("[.] 0x" and
// the digits), also when the address is 0 and prints without the "0x".
size_t sym_column_width(const HistEntry& e) { return e.loc.sym ? 4 + e.loc.sym->name().size() : kUnresolvedWidth + 6; }

std::string symoff_text(const HistEntry& e) {
  if (e.loc.sym) {
    return fmt::format("[{}] {}+{:#x}{}", e.loc.level, e.loc.sym->name(), e.loc.addr - e.loc.sym_start, inlined_suffix(e));
  }
  return address_text(e.loc.level, e.loc.addr);
}

std::string cpu_text(int32_t cpu) {
  // perf prints "%*.*d" with width and precision 3: -1 becomes "-001".
  return cpu < 0 ? fmt::format("-{:03d}", -static_cast<int64_t>(cpu)) : fmt::format("{:03d}", cpu);
}

namespace {

// perf prints a value column's cell as " %*.2f%%" (percentages) or " %*lu" (counts) with the
// column's width less the space and the sign: a value wider than that pushes the row right
// (a relative percentage over 1000% does) instead of eating the leading space.
void append_percent(std::string& out, uint64_t part, uint64_t total, size_t width) {
  const double p = total ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0.0;
  char digits[64];  // p is at most 100 * 2^64
  const size_t n = static_cast<size_t>(fmt::format_to(digits, FMT_COMPILE("{:.2f}"), p) - digits);
  out += ' ';
  if (width > 2 && n < width - 2) out.append(width - 2 - n, ' ');
  out.append(digits, n);
  out += '%';
}

std::string percent(uint64_t part, uint64_t total, size_t width) {
  std::string out;
  append_percent(out, part, total, width);
  return out;
}

std::string count(uint64_t value, size_t width) { return fmt::format(" {:>{}}", value, width > 1 ? width - 1 : 0); }

}  // namespace

std::string abbreviated_count(uint64_t n) {
  if (n > 1000000000ULL) return fmt::format("{}G", n / 1000000000ULL);
  if (n > 1000000ULL) return fmt::format("{}M", n / 1000000ULL);
  if (n > 1000ULL) return fmt::format("{}K", n / 1000ULL);
  return fmt::format("{} ", n);
}

void print_report_header_hint(std::FILE* out) {
  fmt::print(out, "# To display the perf.data header info, please use --header/--header-only options.\n#\n");
}

void print_report_preamble(std::FILE* out, uint64_t lost_samples, const std::vector<std::string>& filter_lines,
                           bool hint) {
  if (hint) print_report_header_hint(out);
  for (const auto& l : filter_lines) fmt::print(out, "# {}\n", l);
  fmt::print(out, "#\n# Total Lost Samples: {}\n#\n", lost_samples);
}

namespace {

// perf report --hierarchy: the sort keys as levels of a tree, each level's entries under the one
// above, siblings by overhead. Each node is as wide as perf's (HIERARCHY_INDENT, 3 columns).
constexpr size_t kHierarchyIndent = 3;
constexpr std::array<analysis::ReportField::Kind, 4> kCpuModeKinds = {
    analysis::ReportField::Kind::kOverheadSys, analysis::ReportField::Kind::kOverheadUs,
    analysis::ReportField::Kind::kOverheadGuestSys, analysis::ReportField::Kind::kOverheadGuestUs};
// perf draws the hierarchy's rule from a string of dots this long, so a wider column gets no more.
constexpr size_t kHierarchyRuleMax = 207;

struct HierarchyNode {
  const HistEntry* rep = nullptr;  // the first entry (in output order) under the node: its keys
  size_t first = 0;                // that entry's place in the output order
  std::vector<uint64_t> period, samples;  // by member
  std::vector<std::array<uint64_t, 4>> cpu_modes;  // by member, by --show-cpu-utilization column
  std::vector<std::unique_ptr<HierarchyNode>> children;
  bool leaf = false;
};

// `entries`: the entries shown (none filtered), in perf's flat output order. `cols`: the value
// columns, then a column per sort key (as print_report_section made them).
template <typename Columns, typename KeyText, typename AppendValues, typename AppendGraph>
void print_hierarchy(std::FILE* out, const analysis::Hist& hist, const std::vector<const HistEntry*>& entries,
                     const Columns& cols, const ReportColumns& columns, uint64_t total_period, KeyText& key_text,
                     AppendValues& append_values, AppendGraph& append_graph) {
  using Field = analysis::ReportField;
  using Kind = analysis::ReportField::Kind;
  const size_t members = std::max<size_t>(1, columns.member_totals.size());
  std::vector<size_t> value_cols, key_cols;
  for (size_t i = 0; i < cols.size(); ++i) (cols[i].field.kind == Kind::kKey ? key_cols : value_cols).push_back(i);
  const size_t levels = key_cols.size();
  if (levels == 0) return;

  // The tree: entries grouped level by level by their key there, compared as perf's collapse
  // compares them (symbols by address).
  HierarchyNode root;
  root.period.assign(members, 0);
  root.samples.assign(members, 0);
  struct Less {
    const analysis::Hist* hist;
    SortKey key;
    bool operator()(const HistEntry* a, const HistEntry* b) const { return hist->compare_key(key, *a, *b, true) < 0; }
  };
  std::vector<std::map<std::pair<HierarchyNode*, const HistEntry*>, HierarchyNode*,
                       std::function<bool(const std::pair<HierarchyNode*, const HistEntry*>&,
                                          const std::pair<HierarchyNode*, const HistEntry*>&)>>>
      index;
  for (size_t d = 0; d < levels; ++d) {
    Less less{&hist, cols[key_cols[d]].field.key};
    index.emplace_back([less](const auto& a, const auto& b) {
      if (a.first != b.first) return std::less<HierarchyNode*>()(a.first, b.first);
      return less(a.second, b.second);
    });
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const HistEntry* e = entries[i];
    HierarchyNode* at = &root;
    for (size_t d = 0; d < levels; ++d) {
      auto [it, made] = index[d].try_emplace({at, e}, nullptr);
      if (made) {
        auto node = std::make_unique<HierarchyNode>();
        node->rep = e;
        node->first = i;
        node->period.assign(members, 0);
        node->samples.assign(members, 0);
        node->leaf = d + 1 == levels;
        it->second = node.get();
        at->children.push_back(std::move(node));
      }
      at = it->second;
      for (unsigned m = 0; m < members; ++m) {
        at->period[m] += hist.member_period(*e, m);
        at->samples[m] += hist.member_samples(*e, m);
      }
      at->cpu_modes.resize(members);
      for (unsigned m = 0; m < members; ++m) {
        for (size_t k = 0; k < kCpuModeKinds.size(); ++k) at->cpu_modes[m][k] += hist.cpu_mode_period(*e, kCpuModeKinds[k], m);
      }
    }
  }
  // Siblings by overhead (a group's members in turn), then by their own key as perf's output
  // sort compares it, then (-n) by samples, then as its collapse compares the key, then in the
  // flat order.
  std::function<void(HierarchyNode&, size_t)> sort_level = [&](HierarchyNode& n, size_t d) {
    if (d >= levels) return;
    const SortKey key = cols[key_cols[d]].field.key;
    std::stable_sort(n.children.begin(), n.children.end(), [&](const auto& a, const auto& b) {
      for (unsigned m = 0; m < members; ++m) {
        if (a->period[m] != b->period[m]) return a->period[m] > b->period[m];
      }
      if (const int c = hist.compare_key(key, *a->rep, *b->rep); c != 0) return c < 0;
      // -n puts the samples among perf's sort keys, after the level's key: more samples first.
      if (columns.show_samples) {
        for (unsigned m = 0; m < members; ++m) {
          if (a->samples[m] != b->samples[m]) return a->samples[m] > b->samples[m];
        }
      }
      // Equal to perf's output sort (addresses without a symbol): in the order of perf's input
      // tree of the level, which its collapse sorted (symbols by address).
      if (const int c = hist.compare_key(key, *a->rep, *b->rep, true); c != 0) return c < 0;
      return a->first < b->first;
    });
    for (auto& c : n.children) sort_level(*c, d + 1);
  };
  sort_level(root, 0);

  // The header: the value columns' names as the flat header has them, then the keys' names
  // (trimmed) joined by " / "; under them the rule, the keys' part as wide as the widest level.
  const size_t nodes = levels + 1;  // perf's nr_hpp_node: the values count as one
  const size_t indent = (nodes - 2) * kHierarchyIndent;
  if (!columns.quiet) {
    std::string line = "# " + std::string(indent, ' ');
    std::string rule = "# " + std::string(std::min(indent, kHierarchyRuleMax), '.');
    bool first = true;
    for (size_t i : value_cols) {
      util::append_padded(line, cols[i].header, cols[i].width, cols[i].right);
      line += "  ";
      if (!first) rule += "..";
      first = false;
      rule.append(std::min(cols[i].width, kHierarchyRuleMax), '.');
    }
    size_t names_width = 0;
    for (size_t d = 0; d < levels; ++d) {
      std::string_view name = cols[key_cols[d]].header;
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      if (d) {
        line += " / ";
        names_width += 3;
      }
      line += name;
      names_width += name.size();
    }
    size_t rule_width = names_width;
    for (size_t d = 0; d < levels; ++d) rule_width = std::max(rule_width, d * kHierarchyIndent + cols[key_cols[d]].width);
    rule += "  ";
    rule.append(std::min(rule_width, kHierarchyRuleMax), '.');
    fmt::print(out, "{}\n{}\n#\n", line, rule);
  }

  // A node is shown when its share reaches --percent-limit (a group's leader's share).
  const uint64_t base = columns.member_totals.empty() ? total_period : columns.member_totals[0];
  auto shown = [&](const HierarchyNode& n) {
    return columns.percent_limit <= 0 ||
           !(base && 100.0 * static_cast<double>(n.period[0]) / static_cast<double>(base) < columns.percent_limit);
  };
  size_t values_width = 0;
  for (size_t k = 0; k < value_cols.size(); ++k) values_width += cols[value_cols[k]].width + (k ? 2 : 0);
  std::string row, scratch, cell;
  std::function<void(const HierarchyNode&, size_t)> print_node = [&](const HierarchyNode& n, size_t d) {
    if (!shown(n)) return;
    row.clear();
    row.append(d * kHierarchyIndent, ' ');
    row += "  ";
    append_values(row, scratch, [&](const Field& f, unsigned m, size_t width) -> std::string {
      const uint64_t total = members > 1 ? columns.member_totals[m] : total_period;
      switch (f.kind) {
        case Kind::kOverhead: return percent(n.period[m], total, width);
        case Kind::kSamples: return count(n.samples[m], width);
        case Kind::kPeriod: return count(n.period[m], width);
        case Kind::kOverheadSys:
        case Kind::kOverheadUs:
        case Kind::kOverheadGuestSys:
        case Kind::kOverheadGuestUs: {
          const size_t k = static_cast<size_t>(f.kind) - static_cast<size_t>(Kind::kOverheadSys);
          return percent(m < n.cpu_modes.size() ? n.cpu_modes[m][k] : 0, total, width);
        }
        default: return "N/A";
      }
    });
    row.append(indent, ' ');
    row += "  ";
    // The key's cell as the flat report pads it, less its leading blanks (perf left-aligns
    // right-aligned keys here); keys perf never pads stay as they are.
    const auto& c = cols[key_cols[d]];
    std::string_view text = key_text(c.field.key, *n.rep, scratch);
    cell.clear();
    if (c.right || c.pad_last) {
      util::append_padded(cell, text, c.width, c.right);
    } else {
      cell = text;
    }
    std::string_view trimmed = cell;
    while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
    row += trimmed;
    row += '\n';
    if (n.leaf) append_graph(row, n.rep);
    std::fwrite(row.data(), 1, row.size(), out);
    if (n.leaf) return;
    bool any = false;
    for (const auto& child : n.children) {
      if (shown(*child)) {
        any = true;
        break;
      }
    }
    if (!any) {
      fmt::print(out, "{}{}no entry >= {:.2f}%\n", std::string((nodes + d - 1) * kHierarchyIndent, ' '),
                 std::string(values_width + 4, ' '), columns.percent_limit);
      return;
    }
    for (const auto& child : n.children) print_node(*child, d + 1);
  };
  for (const auto& child : root.children) print_node(*child, 0);
  fmt::print(out, "\n\n");
}

}  // namespace

void print_report_section(std::FILE* out, std::string_view event_name, uint64_t nr_samples, uint64_t total_period,
                          const analysis::Hist& hist, const ReportColumns& columns, const ThreadCommFn& thread_comm) {
  // The keys whose column a one-item filter elides are left out of perf's output sort too
  // (hist_entry__sort skips elided formats), unless every key would be: then perf shows them all.
  std::vector<SortKey> elided_keys;
  for (SortKey k : hist.keys()) {
    if ((k == SortKey::kComm && columns.elide_comm) || (k == SortKey::kDso && columns.elide_dso) ||
        (k == SortKey::kSym && columns.elide_sym)) {
      elided_keys.push_back(k);
    }
  }
  if (elided_keys.size() == hist.keys().size()) elided_keys.clear();
  // The graphs' threshold is of the (relative) total the entries are shown against. Outside
  // fractal graphs no node lighter than it is drawn, so an entry whose whole tree is lighter
  // draws nothing: its tree need not be made. Unless the total is relative (known from the rows),
  // the floor is named before the sort, which then makes the trees while it sorts.
  auto graph_floor = [&](uint64_t total) {
    const uint64_t threshold_total = columns.member_totals.size() > 1 ? columns.member_totals[0] : total;
    return static_cast<uint64_t>(static_cast<double>(threshold_total) * (columns.graph_min_percent / 100.0));
  };
  const bool trees_floored = (columns.graph || columns.folded || columns.flat) && !columns.fractal;
  if (trees_floored && !columns.relative) hist.want_trees_from(graph_floor(total_period));
  std::vector<const HistEntry*> rows =
      columns.fields.empty()
          ? hist.sorted(columns.children, columns.graph || columns.folded || columns.flat, elided_keys,
                        columns.callee_order, columns.show_samples)
          : hist.sorted_by(columns.order);
  // The callchains' percentages stay of all samples, even relative ones (as perf 6.1 prints).
  const uint64_t chain_total = total_period;
  if (columns.relative) {
    // perf's non-filtered totals: the self values of the entries left visible.
    nr_samples = 0;
    total_period = 0;
    for (const HistEntry* e : rows) {
      if (e->filtered) continue;
      nr_samples += e->samples;
      total_period += e->period;
    }
  }
  // Filtered entries took their place in the order (which depends on insertion) but are not shown.
  std::erase_if(rows, [](const HistEntry* e) { return e->filtered; });
  if (!columns.quiet) {
    fmt::print(out, "# Samples: {} of event{} '{}'", abbreviated_count(nr_samples), columns.plural_events ? "s" : "",
               event_name);
    if (!columns.time_slices.empty()) fmt::print(out, " (time slices: {})", columns.time_slices);
    fmt::print(out, "\n");
    fmt::print(out, "# Event count (approx.): {}\n#\n", total_period);
  }

  // perf sizes the columns by every entry, the ones --percent-limit hides included.
  const std::vector<const HistEntry*> all = rows;
  if (columns.percent_limit > 0) {
    // A group is held to the leader's share.
    const uint64_t base = columns.member_totals.empty() ? total_period : columns.member_totals[0];
    std::erase_if(rows, [&](const HistEntry* e) {
      uint64_t v = columns.children ? e->children_period : e->period;
      return base && 100.0 * static_cast<double>(v) / static_cast<double>(base) < columns.percent_limit;
    });
  }
  // perf's thread__comm_str: ":TID" for a thread that never had a comm (the samples of tid -1).
  auto thread_comm_of = [&](const HistEntry& e) -> std::string {
    if (!thread_comm) return {};
    const std::string* c = thread_comm(e.tid);
    return c ? *c : fmt::format(":{}", e.tid);
  };

  // Column widths: the header's, grown to the widest value (perf's hists__calc_col_len).
  size_t comm_w = 7, dso_w = 13, sym_w = 6, symoff_w = 13, tid_w = 3, srcline_w = 11, parent_w = 13,
         trace_w = 12;
  for (const HistEntry* e : all) {
    if (e->srcline && hist.srcline_known(*e)) srcline_w = std::max(srcline_w, e->srcline->size());
    if (e->trace && hist.trace_known(*e)) trace_w = std::max(trace_w, e->trace->size());
    parent_w = std::max(parent_w, e->parent.size());
    // perf sizes the comm column by the threads' last comms, and cuts longer sample-time comms
    // (a task that exec'd into a shorter name) to that width.
    comm_w = std::max(comm_w, thread_comm_of(*e).size());
    dso_w = std::max(dso_w, analysis::dso_column_name(e->loc.dso).size());
    // (Not with a field separator, as perf.)
    if (e->unresolved && columns.field_sep.empty()) dso_w = std::max(dso_w, kUnresolvedWidth);
    // perf sizes the column by the symbol's name (namelen + 4): an inline frame's " (inlined)"
    // and a data object's "+0x..." offset are printed past it.
    sym_w = std::max(sym_w, sym_column_width(*e));
    symoff_w = std::max(symoff_w, symoff_text(*e).size());
    tid_w = std::max(tid_w, fmt::formatted_size("{}", e->tid));
  }
  const size_t thread_w = comm_w + 8;

  struct Column {
    std::string header;
    size_t width;
    bool right;
    bool pad_last;  // pad the value even in the last column
    analysis::ReportField field;
  };
  // The fields shown: -F's, or perf's default layout (the values, then the sort keys).
  using Field = analysis::ReportField;
  using Kind = analysis::ReportField::Kind;
  std::vector<Field> fields = columns.fields;
  if (fields.empty()) {
    if (columns.children) fields.push_back({Kind::kOverheadChildren});
    fields.push_back({Kind::kOverhead});
    if (columns.show_cpu_utilization) {
      fields.push_back({Kind::kOverheadSys});
      fields.push_back({Kind::kOverheadUs});
    }
    if (columns.show_samples) fields.push_back({Kind::kSamples});
    if (columns.show_period) fields.push_back({Kind::kPeriod});
    for (SortKey k : hist.keys()) fields.push_back({Kind::kKey, k});
  }
  auto elided = [&](const Field& f) {
    return f.kind == Kind::kKey && ((f.key == SortKey::kComm && columns.elide_comm) ||
                                    (f.key == SortKey::kDso && columns.elide_dso) ||
                                    (f.key == SortKey::kSym && columns.elide_sym));
  };
  // perf shows every key again rather than none.
  if (std::any_of(fields.begin(), fields.end(), [&](const Field& f) { return f.kind == Kind::kKey && !elided(f); })) {
    std::erase_if(fields, elided);
  }
  std::vector<Column> cols;
  // A group's value columns hold one value per member, each as wide as the column alone.
  const size_t members = std::max<size_t>(1, columns.member_totals.size());
  for (const Field& f : fields) {
    switch (f.kind) {
      case Kind::kOverheadChildren: cols.push_back({"Children", 8 * members, true, true, f}); break;
      case Kind::kOverhead:
        // The default layout says Self next to Children; -F always says Overhead.
        cols.push_back({columns.children && columns.fields.empty() ? "Self" : "Overhead", 8 * members, true, true, f});
        break;
      case Kind::kSamples: cols.push_back({"Samples", 12 * members, true, true, f}); break;
      case Kind::kPeriod: cols.push_back({"Period", 12 * members, true, true, f}); break;
      case Kind::kOverheadSys: cols.push_back({"sys", 8 * members, true, true, f}); break;
      case Kind::kOverheadUs: cols.push_back({"usr", 8 * members, true, true, f}); break;
      case Kind::kOverheadGuestSys: cols.push_back({"guest sys", 9 * members, true, true, f}); break;
      case Kind::kOverheadGuestUs: cols.push_back({"guest usr", 9 * members, true, true, f}); break;
      case Kind::kKey:
        switch (f.key) {
          case SortKey::kComm: cols.push_back({"Command", comm_w, false, true, f}); break;
          // perf's header for this key carries its own four leading spaces.
          case SortKey::kPid: cols.push_back({"    Pid:Command", thread_w, false, true, f}); break;
          case SortKey::kTid: cols.push_back({"Tid", tid_w, true, true, f}); break;
          case SortKey::kDso: cols.push_back({"Shared Object", dso_w, false, true, f}); break;
          case SortKey::kSym: cols.push_back({"Symbol", sym_w, false, false, f}); break;
          case SortKey::kSymoff: cols.push_back({"Symbol+Offset", symoff_w, false, false, f}); break;
          case SortKey::kCpu: cols.push_back({"CPU", 3, false, true, f}); break;
          case SortKey::kSrcline: cols.push_back({"Source:Line", srcline_w, false, false, f}); break;
          case SortKey::kParent: cols.push_back({"Parent symbol", parent_w, false, true, f}); break;
          case SortKey::kTrace: cols.push_back({"Trace output", trace_w, false, false, f}); break;
          case SortKey::kIpcNull: cols.push_back({"IPC   [IPC Coverage]", 20, false, true, f}); break;
        }
        break;
    }
  }

  if (!columns.quiet && !columns.hierarchy) fmt::print(out, "{}", column_header(cols, columns.field_sep));

  const uint64_t min_hit = graph_floor(total_period);
  if (trees_floored && columns.relative) hist.want_trees_from(min_hit);

  // A key's cell text of entry `e` (before padding; `scratch` may hold it).
  auto key_text = [&](SortKey key, const HistEntry& e, std::string& scratch) -> std::string_view {
    switch (key) {
      case SortKey::kComm: return e.comm ? std::string_view(*e.comm).substr(0, comm_w) : std::string_view();
      case SortKey::kPid: scratch = fmt::format("{:>7}:{:<{}}", e.tid, thread_comm_of(e), comm_w); return scratch;
      case SortKey::kTid: scratch = fmt::format("{}", e.tid); return scratch;
      case SortKey::kDso: return analysis::dso_column_name(e.loc.dso);
      case SortKey::kSym:
        scratch.clear();
        append_sym_text(scratch, e);
        return scratch;
      case SortKey::kSymoff: scratch = symoff_text(e); return scratch;
      case SortKey::kCpu: scratch = cpu_text(e.cpu); return scratch;
      case SortKey::kSrcline: {
        // One perf had not worked out when it sized the column is cut to the column.
        std::string_view text = e.srcline ? std::string_view(*e.srcline) : std::string_view("??:0");
        return hist.srcline_known(e) ? text : text.substr(0, srcline_w);
      }
      case SortKey::kParent: return e.parent.empty() ? std::string_view("[other]") : std::string_view(e.parent);
      case SortKey::kTrace: {
        // perf prints at most the column's width ("%-.*s"); the column grew only by the texts
        // it had made by then (see Hist::trace_known).
        std::string_view text = e.trace ? std::string_view(*e.trace) : std::string_view("N/A");
        return text.substr(0, trace_w);
      }
      case SortKey::kIpcNull: return "-      -";
    }
    return {};
  };
  // The callchain display of entry `e`, appended to `row`.
  auto append_graph = [&](std::string& row, const HistEntry* e) {
    if (!(columns.graph || columns.folded || columns.flat)) return;
    const analysis::CallTree* tree = hist.tree_of(e);
    if (!tree) return;
    GraphOptions g;
    // A group's graphs are the leader's, in percent of the leader's total.
    g.total = members > 1 ? columns.member_totals[0] : chain_total;
    g.entry_period = columns.children ? e->children_period : e->period;
    g.min_hit = min_hit;
    // perf leaves out a chain's first frame when the first sort key is the symbol (not with -F).
    g.skip_first = columns.fields.empty() && !hist.keys().empty() && hist.keys()[0] == SortKey::kSym;
    g.fractal = columns.fractal;
    g.branch_counts = columns.branch_counts;
    g.min_percent = columns.graph_min_percent;
    g.value = columns.graph_value;
    g.print_limit = columns.print_limit;
    if (!columns.field_sep.empty()) g.folded_sep = columns.field_sep;
    if (columns.folded) {
      append_callchain_folded(row, *tree, g);
    } else if (columns.flat) {
      append_callchain_flat(row, *tree, g);
    } else {
      append_callchain_graph(row, *tree, g);
    }
  };
  // The value cells of one row: `value(field, member, width)` makes each.
  auto append_values = [&](std::string& row, std::string& scratch,
                           const std::function<std::string(const Field&, unsigned, size_t)>& value) {
    for (size_t i = 0; i < cols.size(); ++i) {
      const Field& f = cols[i].field;
      if (f.kind == Kind::kKey) continue;
      if (i) row += "  ";
      const size_t width = members == 1 ? cols[i].width : cols[i].width / members;
      scratch.clear();
      for (unsigned m = 0; m < members; ++m) util::append_padded(scratch, value(f, m, width), width, true);
      util::append_padded(row, scratch, cols[i].width, true);
    }
  };
  if (columns.hierarchy) {
    print_hierarchy(out, hist, all, cols, columns, total_period, key_text, append_values, append_graph);
    return;
  }

  // One row and its graph appended to `row`.
  // `scratch`: the cell being made (kept by the caller for its capacity).
  const std::string_view sep = columns.field_sep;
  auto format_row = [&](std::string& row, std::string& scratch, const HistEntry* e) {
    if (sep.empty()) row += "  ";
    auto cell = [&](size_t i, std::string_view text) {
      const Column& c = cols[i];
      if (i) row += sep.empty() ? std::string_view("  ") : sep;
      bool last = i + 1 == cols.size();
      if (!sep.empty() && c.field.kind != Kind::kKey) {
        // With a separator perf prints a value after one space and pads it on the right.
        if (last) {
          row += text;
        } else {
          util::append_padded(row, text, c.width, false);
        }
        return;
      }
      // perf's repsep_snprintf: the separator's first character in a key's text becomes '.'.
      std::string replaced;
      if (!sep.empty() && text.find(sep[0]) != std::string_view::npos) {
        replaced = text;
        std::replace(replaced.begin(), replaced.end(), sep[0], '.');
        text = replaced;
      }
      if (c.right) {
        util::append_padded(row, text, c.width, true);
      } else if (last && !c.pad_last) {
        row += text;
      } else {
        util::append_padded(row, text, c.width, false);
      }
    };
    const auto& totals = columns.member_totals;
    for (size_t i = 0; i < cols.size(); ++i) {
      const Field& f = cols[i].field;
      if (f.kind != Kind::kKey) {
        // value(m) of every member, each right-aligned in its share of the column (with a
        // separator: each after one space, unpadded).
        const size_t width = !sep.empty() ? 1 : members == 1 ? cols[i].width : cols[i].width / members;
        auto value_text = [&](unsigned m) -> std::string {
          const uint64_t total = members > 1 ? totals[m] : total_period;
          switch (f.kind) {
            case Kind::kOverheadChildren:
              // Without --children there is nothing to show (perf prints N/A).
              if (!columns.children) return "N/A";
              return percent(hist.member_children_period(*e, m), total, width);
            case Kind::kOverhead: return percent(hist.member_period(*e, m), total, width);
            case Kind::kSamples: return count(hist.member_samples(*e, m), width);
            case Kind::kPeriod: return count(hist.member_period(*e, m), width);
            case Kind::kKey: break;
            case Kind::kOverheadSys:
            case Kind::kOverheadUs:
            case Kind::kOverheadGuestSys:
            case Kind::kOverheadGuestUs: return percent(hist.cpu_mode_period(*e, f.kind, m), total, width);
          }
          return "";
        };
        if (members == 1 && (f.kind == Kind::kOverhead || (f.kind == Kind::kOverheadChildren && columns.children))) {
          scratch.clear();
          append_percent(scratch, f.kind == Kind::kOverhead ? hist.member_period(*e, 0) : hist.member_children_period(*e, 0),
                         total_period, width);
          cell(i, scratch);
        } else if (members == 1) {
          cell(i, value_text(0));
        } else {
          std::string text;
          for (unsigned m = 0; m < members; ++m) util::append_padded(text, value_text(m), sep.empty() ? width : 0, true);
          cell(i, text);
        }
        continue;
      }
      cell(i, key_text(f.key, *e, scratch));
    }
    row += '\n';
    append_graph(row, e);
  };
  // Rows are formatted apart from one another: a window of them in chunks, side by side on the
  // -j threads once there are enough rows (the Hist settled first, so that formatting only reads
  // it; one thread runs the chunks in turn), and the chunks' text written in order.
  constexpr size_t kChunkRows = 256;
  util::WorkQueue pool(columns.jobs != 1 && rows.size() >= 4 * kChunkRows ? columns.jobs : 1);
  if (pool.nr_threads() > 1) hist.settle();
  const size_t chunks_per_window = 4 * size_t{pool.nr_threads()};
  std::vector<std::string> texts(chunks_per_window);
  for (size_t at = 0; at < rows.size(); at += chunks_per_window * kChunkRows) {
    const size_t window_end = std::min(rows.size(), at + chunks_per_window * kChunkRows);
    const size_t nr_chunks = (window_end - at + kChunkRows - 1) / kChunkRows;
    pool.parallel_for(0, nr_chunks, [&](size_t c) {
      std::string& text = texts[c];
      text.clear();
      std::string scratch;
      const size_t b = at + c * kChunkRows, e = std::min(window_end, b + kChunkRows);
      for (size_t i = b; i < e; ++i) format_row(text, scratch, rows[i]);
    });
    for (size_t c = 0; c < nr_chunks; ++c) std::fwrite(texts[c].data(), 1, texts[c].size(), out);
  }
  fmt::print(out, "\n\n");
}

}  // namespace tperf::output

#include "util/text.h"
#include "output/callchain_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "analysis/tree_replay.h"
#include "session/machine.h"
#include "symbols/symbol_table.h"

namespace tperf::output {

namespace {

using analysis::CallNode;

constexpr const char* kMargin = "            ";  // perf's fixed left margin of graphs

using analysis::CallFrameTable;

std::vector<const CallNode*> in_tree_order(const CallNode& node, const CallFrameTable& table) {
  return analysis::children_in_perf_order(node, table);
}

// The children drawn: heavy enough, heaviest first (ties in the tree's order).
std::vector<const CallNode*> drawn_children(const CallNode& node, uint64_t min_hit, const CallFrameTable& table) {
  // The children that weigh min_hit or more, heaviest first. perf's tree order only decides
  // between drawn children of one weight, and working it out replays the insertion of every
  // child (most weigh too little to be drawn): it is worked out only for such a tie.
  std::vector<const CallNode*> out;
  for (const CallNode* c : node.children) {
    if (c->cumul() >= min_hit) out.push_back(c);
  }
  auto heavier = [](const CallNode* a, const CallNode* b) { return a->cumul() > b->cumul(); };
  std::sort(out.begin(), out.end(), heavier);
  if (std::adjacent_find(out.begin(), out.end(), [](const CallNode* a, const CallNode* b) {
        return a->cumul() == b->cumul();
      }) == out.end()) {
    return out;
  }
  out.clear();
  for (const CallNode* c : in_tree_order(node, table)) {
    if (c->cumul() >= min_hit) out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), heavier);
  return out;
}

// Frame `f` of `node` as a graph line shows it: its name, then its branch counts when asked.
std::string frame_text(const CallNode& node, size_t f, const GraphOptions& o) {
  std::string text = frame_name(*o.tree->table(), node.frames, f);
  if (o.branch_counts) {
    const std::vector<analysis::BranchCounts>* counts = o.tree ? o.tree->counts(node) : nullptr;
    if (counts && f < counts->size()) {
      text += (*counts)[f].text();
    } else {
      text += analysis::BranchCounts{}.text();
    }
  }
  return text;
}

void margin(std::string& out, size_t extra) {
  out += kMargin;
  out.append(extra, ' ');
}

// The weight a child needs to be drawn: of all samples in graph mode, of its parent's children
// in fractal mode (rounded up, like perf).
uint64_t min_hit_under(const CallNode& node, const GraphOptions& o) {
  if (!o.fractal) return o.min_hit;
  return static_cast<uint64_t>(std::ceil(static_cast<double>(node.children_hit) * (o.min_percent / 100.0)));
}

// A node's value as -g's value word asks: its share of `total` ("12.34%"), its period, or its
// number of samples (`count`).
void append_value(std::string& out, uint64_t period, uint64_t count, uint64_t total, const GraphOptions& o) {
  if (o.value == analysis::CallchainSpec::Value::kPeriod) {
    util::append_format(out, "{}", period);
    return;
  }
  if (o.value == analysis::CallchainSpec::Value::kCount) {
    util::append_format(out, "{}", count);
    return;
  }
  double pct = total ? 100.0 * static_cast<double>(period) / static_cast<double>(total) : 0.0;
  util::append_format(out, "{:.2f}%", pct);
}

void append_branch_value(std::string& out, uint64_t part, uint64_t count, uint64_t total, const GraphOptions& o) {
  out += "--";
  append_value(out, part, count, total, o);
  out += "--";
}

// `total`: the percentages' base at this level (the event's total in graph mode; in fractal
// mode the entry's period at the top, then each parent's children).
void draw_level(std::string& out, const CallNode& node, const GraphOptions& o, int depth, uint64_t depth_mask,
                size_t left, uint64_t total) {
  std::vector<const CallNode*> children = drawn_children(node, min_hit_under(node, o), *o.tree->table());
  uint64_t remaining = total;
  uint64_t counted = 0;  // the samples of the children drawn (for the count of "[...]")
  uint64_t new_mask = depth_mask;
  // With a print limit the last child drawn keeps its level's link when more would follow (perf
  // stops drawing there, the link still open).
  const size_t drawn = o.print_limit ? std::min<size_t>(children.size(), o.print_limit) : children.size();
  for (size_t n = 0; n < drawn; ++n) {
    const CallNode& child = *children[n];
    remaining -= std::min(remaining, child.cumul());
    counted += o.tree->cumul_count(child);
    new_mask = depth_mask;
    // The last child closes this level's link, unless a fractal "[...]" line follows it.
    if (n + 1 == children.size() && (!o.fractal || !remaining)) new_mask &= ~(uint64_t{1} << (depth - 1));
    // The separator line keeps the link of this level until its last child.
    margin(out, left);
    for (int i = 0; i < depth; ++i) out += (depth_mask & (uint64_t{1} << i)) ? "|          " : "           ";
    out += '\n';
    for (size_t f = 0; f < child.frames.size(); ++f) {
      margin(out, left);
      for (int i = 0; i < depth; ++i) {
        out += (new_mask & (uint64_t{1} << i)) ? '|' : ' ';
        if (f == 0 && i == depth - 1) {
          append_branch_value(out, child.cumul(), o.tree->cumul_count(child), total, o);
        } else {
          out += "          ";
        }
      }
      out += frame_text(child, f, o);
      out += '\n';
    }
    draw_level(out, child, o, depth + 1, new_mask | (uint64_t{1} << depth), left, o.fractal ? child.children_hit : total);
  }
  // With the count value perf counts the samples left over, and draws no line when none are.
  const uint64_t below = o.tree->children_count(node);
  const uint64_t rest_count = below > counted ? below - counted : 0;
  if (o.fractal && remaining && remaining != total &&
      (o.value != analysis::CallchainSpec::Value::kCount || rest_count > 0)) {
    new_mask &= ~(uint64_t{1} << (depth - 1));
    margin(out, left);
    for (int i = 0; i < depth; ++i) {
      out += (new_mask & (uint64_t{1} << i)) ? '|' : ' ';
      if (i == depth - 1) {
        append_branch_value(out, remaining, rest_count, total, o);
      } else {
        out += "          ";
      }
    }
    // perf 6.1 allocates this "[...]" symbol without clearing it, so its "inlined" bit is whatever
    // the heap held and it sometimes prints "[...] (inlined)"; the cleared symbol's text is used here.
    out += "[...]";
    // A made-up frame: with branch counts shown it counts as no branch.
    if (o.branch_counts) out += analysis::BranchCounts{}.text();
    out += '\n';
  }
}

// perf's flat/folded order: the nodes in post-order (children in perf's tie order), then by
// their own period, heaviest first, ties in that order.
void collect_ends(const CallNode& node, const CallFrameTable& table, const std::vector<const CallNode*>& path,
                  uint64_t min_hit, std::vector<std::vector<const CallNode*>>* out) {
  for (const CallNode* c : in_tree_order(node, table)) {
    std::vector<const CallNode*> p = path;
    p.push_back(c);
    collect_ends(*c, table, p, min_hit, out);
  }
  if (!path.empty() && node.hit && node.hit >= min_hit) out->push_back(path);
}

}  // namespace

void append_callchain_folded(std::string& out, const analysis::CallTree& tree, const GraphOptions& o) {
  std::vector<std::vector<const CallNode*>> ends;
  collect_ends(tree.root(), *tree.table(), {}, o.min_hit, &ends);
  std::stable_sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.back()->hit > b.back()->hit; });
  size_t listed = 0;
  for (const auto& path : ends) {
    if (o.print_limit && listed++ == o.print_limit) break;
    append_value(out, path.back()->hit, tree.count(*path.back()), o.total, o);
    out += ' ';
    bool first = true;
    for (const CallNode* n : path) {
      for (size_t f = 0; f < n->frames.size(); ++f) {
        if (!first) out += o.folded_sep;
        first = false;
        out += frame_name(*tree.table(), n->frames, f);
      }
    }
    out += '\n';
  }
}

void append_callchain_flat(std::string& out, const analysis::CallTree& tree, const GraphOptions& o) {
  std::vector<std::vector<const CallNode*>> ends;
  collect_ends(tree.root(), *tree.table(), {}, o.min_hit, &ends);
  std::stable_sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.back()->hit > b.back()->hit; });
  size_t listed = 0;
  for (const auto& path : ends) {
    if (o.print_limit && listed++ == o.print_limit) break;
    out += "           ";
    append_value(out, path.back()->cumul(), tree.cumul_count(*path.back()), o.total, o);
    out += '\n';
    for (const CallNode* n : path) {
      for (size_t f = 0; f < n->frames.size(); ++f) util::append_format(out, "                {}\n", frame_name(*tree.table(), n->frames, f));
    }
    out += '\n';
  }
}

std::string frame_name(const CallFrameTable& table, const analysis::FrameRun& run, size_t i) {
  return frame_name(table[run.ids[i]], table.srcline(run.ids[i]));
}

std::string frame_name(const analysis::CallFrame& f, const std::string* srcline) {
  if (f.sym && srcline) return fmt::format("{} {}{}", f.sym->name(), *srcline, f.sym->inlined ? " (inlined)" : "");
  if (f.sym) return f.sym->inlined ? fmt::format("{} (inlined)", f.sym->name()) : std::string(f.sym->name());
  return f.ip ? fmt::format("{:#x}", f.ip) : std::string("0");  // printf's %#lx
}

void append_callchain_graph(std::string& out, const analysis::CallTree& tree, const GraphOptions& options) {
  GraphOptions o = options;
  o.tree = &tree;
  const size_t start = out.size();
  const CallNode* root = &tree.root();
  size_t left = 0;
  std::vector<const CallNode*> top = drawn_children(*root, min_hit_under(*root, o), *tree.table());
  if (top.size() == 1 && top[0]->cumul() == o.entry_period) {
    // A single way in that carries all of the entry: its frames hang from "---" and the
    // branching starts below them.
    const CallNode& only = *top[0];
    bool printed = false;
    size_t frames_printed = 0;  // a print limit cuts this run short (its children are still drawn)
    for (size_t f = 0; f < only.frames.size(); ++f) {
      if (f == 0 && o.skip_first) continue;
      if (o.print_limit && frames_printed++ == o.print_limit) break;
      if (!printed) {
        margin(out, left);
        out += "|\n";
        margin(out, left);
        out += "---";
        left += 3;
        printed = true;
      } else {
        margin(out, left);
      }
      out += frame_text(only, f, o);
      out += '\n';
    }
    root = &only;
  }
  draw_level(out, *root, o, 1, 1, left, o.fractal ? o.entry_period : o.total);
  if (out.size() != start) out += '\n';
}

}  // namespace tperf::output

#include "analysis/call_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string_view>

#include "analysis/tree_replay.h"
#include "session/machine.h"
#include "symbols/symbol_table.h"

namespace tperf::analysis {

namespace {

size_t hash_key(uint64_t value, const void* dso, bool named) {
  uint64_t h = (value ^ (reinterpret_cast<uintptr_t>(dso) * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
  h ^= named ? 0xc4ceb9fe1a85ec53ULL : 0;
  return static_cast<size_t>(h ^ (h >> 32));
}

}  // namespace

CallNode* ChildList::find(uint32_t id) const {
  if (cap_ == 0) return size_ && data_.one->frames.ids[0] == id ? data_.one : nullptr;
  const uint32_t* k = ids();
  if (size_ >= kSortedFrom) {
    const uint32_t* it = std::lower_bound(k, k + size_, id);
    return it != k + size_ && *it == id ? nodes()[at()[it - k]] : nullptr;
  }
  for (uint32_t i = 0; i < size_; ++i) {
    if (k[i] == id) return nodes()[i];
  }
  return nullptr;
}

void ChildList::push_back(uint32_t id, CallNode* child, std::pmr::memory_resource* r) {
  if (size_ == 0 && cap_ == 0) {
    data_.one = child;
    size_ = 1;
    return;
  }
  if (size_ == cap_ || cap_ == 0) {
    ChildList bigger;
    bigger.cap_ = cap_ ? cap_ * 2 : 2;
    bigger.data_.block = r->allocate(bytes(bigger.cap_), alignof(CallNode*));
    bigger.size_ = size_;
    std::copy(nodes(), nodes() + size_, bigger.nodes());
    if (cap_ == 0) {
      bigger.ids()[0] = data_.one->frames.ids[0];
    } else {
      std::copy(ids(), ids() + size_, bigger.ids());
      if (size_ >= kSortedFrom) std::copy(at(), at() + size_, bigger.at());
    }
    release(r);
    swap(bigger);
  }
  const uint32_t n = size_++;
  nodes()[n] = child;
  uint32_t* k = ids();
  if (size_ < kSortedFrom) {
    k[n] = id;
    return;
  }
  uint32_t* where = at();
  if (size_ == kSortedFrom) {
    // Sort the ids, each with the index of its child.
    k[n] = id;
    for (uint32_t i = 0; i < size_; ++i) where[i] = i;
    std::sort(where, where + size_, [k](uint32_t a, uint32_t b) { return k[a] < k[b]; });
    uint32_t sorted[kSortedFrom];
    for (uint32_t i = 0; i < size_; ++i) sorted[i] = k[where[i]];
    std::copy(sorted, sorted + size_, k);
    return;
  }
  const uint32_t pos = static_cast<uint32_t>(std::upper_bound(k, k + n, id) - k);
  std::move_backward(k + pos, k + n, k + n + 1);
  std::move_backward(where + pos, where + n, where + n + 1);
  k[pos] = id;
  where[pos] = n;
}

void ChildList::release(std::pmr::memory_resource* r) {
  if (cap_) r->deallocate(data_.block, bytes(cap_), alignof(CallNode*));
  data_.block = nullptr;
  size_ = cap_ = 0;
}

bool CallFrame::same_as(const CallFrame& o) const {
  if (sym && o.sym) {
    if (sym->inlined || o.sym->inlined) return sym->name() == o.sym->name();
    return sym_start == o.sym_start && dso == o.dso;
  }
  return ip == o.ip && !sym == !o.sym;
}

uint32_t CallFrameTable::intern(const CallFrame& f, const std::string* srcline) {
  // The key: perf's address key (the DSO object and the raw address, symbol or not) in a table by
  // address, where the functions inlined at the address are told apart (below); else the
  // symbol's start in its DSO for a named frame, the address for one without, and for an inlined
  // function its name wherever it was inlined (its hash as the value, the name itself compared
  // on a match). In a table by srcline, as by function and the text too: an id is what a node
  // shows; the frames alike for the tree are those of one class (match_class()).
  static const char kInlineKey = 0;
  const bool by_address = key_ == FrameKey::kAddress;
  const bool by_text = key_ == FrameKey::kSrcline;
  const bool named = !by_address && f.sym != nullptr;
  const bool inlined = named && f.sym->inlined;
  const uint64_t value = inlined ? std::hash<std::string_view>()(f.sym->name()) : named ? f.sym_start : f.ip;
  const void* dso = inlined ? &kInlineKey : (named || by_address) ? static_cast<const void*>(f.dso) : nullptr;
  size_t h = hash_key(value, dso, named);
  if (by_text && srcline) h ^= std::hash<std::string_view>()(*srcline) * 0x9E3779B97F4A7C15ULL;
  auto same_text = [](const std::string* a, const std::string* b) { return a == b || (a && b && *a == *b); };
  auto same = [&](const CallFrame& g, uint32_t id) {
    if (by_text && !same_text(this->srcline(id), srcline)) return false;
    if (!named) return !g.sym && g.ip == f.ip;
    if (!g.sym || g.sym->inlined != inlined) return false;
    return inlined ? g.sym->name() == f.sym->name() : g.sym_start == f.sym_start && g.dso == f.dso;
  };
  if (util::slots_full(frames_.size() + 1, slots_.size())) grow();
  const size_t mask = slots_.size() - 1;
  const auto tag = static_cast<uint32_t>(h);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.id == 0) {
      const auto id = static_cast<uint32_t>(frames_.size());
      s = Slot{id + 1, tag};
      if (srcline) {
        srclines_.resize(frames_.size());
        srclines_.push_back(srcline);
      }
      frames_.push_back(f);
      if (by_text) {
        // perf's match_chain compares two frames' srclines alone when both have one: the class
        // of a text is its first frame; a frame without (no map) is a class of its own.
        match_.push_back(srcline ? classes_.try_emplace(std::string_view(*srcline), id).first->second : id);
      }
      return id;
    }
    if (s.tag != tag) continue;
    const uint32_t id = s.id - 1;
    if (by_address) {
      // The functions inlined at one address are frames of their own, each shown with its own
      // line (the address's for the innermost, the call's around it).
      const CallFrame& g = frames_[id];
      const std::string* text = this->srcline(id);
      if (g.ip == f.ip && g.dso == f.dso && g.sym == f.sym && same_text(text, srcline)) return id;
      continue;
    }
    if (same(frames_[id], id)) return id;
  }
}

void CallFrameTable::grow() {
  util::grow_slots(slots_, [](const Slot& s) { return s.id != 0; }, [](const Slot& s) { return s.tag; });
}

CallTree::CallTree(const CallFrameTable* frames, std::pmr::memory_resource* arena) : resource_(arena), table_(frames) {}

CallNode* CallTree::make_node(std::span<const uint32_t> ids) {
  CallNode* n = std::pmr::polymorphic_allocator<CallNode>(resource_).new_object<CallNode>();
  n->frames.ids.assign(ids, resource_);
  return n;
}

void CallTree::add_child(CallNode& node, CallNode* child) {
  node.children.push_back(child->frames.ids[0], child, resource_);
}

CallNode* CallTree::find_child(const CallNode& node, uint32_t id) const {
  if (!table_->has_classes()) return node.children.find(id);
  // Frames of several ids alike (by srcline): the child whose first frame is of the class. Such
  // trees are rare and small; their children are looked through.
  const uint32_t cls = table_->match_class(id);
  for (CallNode* c : node.children) {
    if (table_->match_class(c->frames.ids[0]) == cls) return c;
  }
  return nullptr;
}

void CallTree::count_samples() {
  if (!sample_counts_) sample_counts_ = std::make_unique<std::unordered_map<const CallNode*, SampleCounts>>();
}

uint64_t CallTree::count(const CallNode& node) const {
  if (!sample_counts_) return 0;
  auto it = sample_counts_->find(&node);
  return it == sample_counts_->end() ? 0 : it->second.count;
}

uint64_t CallTree::children_count(const CallNode& node) const {
  if (!sample_counts_) return 0;
  auto it = sample_counts_->find(&node);
  return it == sample_counts_->end() ? 0 : it->second.children_count;
}

void CallTree::append(std::span<const uint32_t> chain, uint64_t period, std::span<const ChainBranch> branches,
                      uint64_t count) {
  if (chain.empty()) return;
  // The sample counts follow the periods, node for node, when they are kept (rarely: the checks
  // below cost nothing else).
  auto* const counts = sample_counts_.get();
  auto counted = [counts](const CallNode* n) -> SampleCounts& { return (*counts)[n]; };
  if (branches.size() != chain.size()) branches = {};
  max_depth_ = std::max(max_depth_, chain.size());
  auto counts_of = [&](CallNode& n) -> std::vector<BranchCounts>& {
    if (!counts_) counts_ = std::make_unique<std::unordered_map<const CallNode*, std::vector<BranchCounts>>>();
    std::vector<BranchCounts>& c = (*counts_)[&n];
    if (c.empty()) c.resize(n.frames.ids.size());
    return c;
  };
  // Frames alike for the tree: the same id, or (by srcline) the same class.
  const bool classes = table_->has_classes();
  auto alike = [classes, this](uint32_t a, uint32_t b) {
    return a == b || (classes && table_->match_class(a) == table_->match_class(b));
  };
  CallNode* node = &root_;
  size_t pos = 0;
  while (true) {
    CallNode* next = find_child(*node, chain[pos]);
    if (!next) {
      CallNode* child = make_node(chain.subspan(pos));
      if (!branches.empty()) {
        std::vector<BranchCounts>& counts = counts_of(*child);
        for (size_t i = 0; i < counts.size(); ++i) counts[i].add(branches[pos + i], true);
      }
      child->hit = period;
      node->children_hit += period;
      if (counts) {
        counted(child).count += count;
        counted(node).children_count += count;
      }
      add_child(*node, child);
      return;
    }
    node->children_hit += period;
    if (counts) counted(node).children_count += count;
    // How far the chain follows this child's run of frames.
    const IdArray& run = next->frames.ids;
    const size_t limit = std::min(run.size(), chain.size() - pos);
    size_t k = 1;
    while (k < limit && alike(run[k], chain[pos + k])) ++k;
    if (!branches.empty()) {
      // perf counts a branch at each frame its walk finds equal, before it splits the run.
      std::vector<BranchCounts>& counts = counts_of(*next);
      for (size_t i = 0; i < k; ++i) counts[i].add(branches[pos + i], false);
    }
    if (k < run.size()) {
      // Split: the unmatched tail of the run becomes the only child of the matched head.
      CallNode* tail = make_node(std::span<const uint32_t>(run).subspan(k));
      if (counts_) {
        if (auto it = counts_->find(next); it != counts_->end()) {
          std::vector<BranchCounts> rest(it->second.begin() + static_cast<ptrdiff_t>(k), it->second.end());
          it->second.resize(k);
          (*counts_)[tail] = std::move(rest);
        }
      }
      tail->hit = next->hit;
      tail->children_hit = next->children_hit;
      tail->children.swap(next->children);
      next->frames.ids.keep_first(k, resource_);
      next->children_hit = tail->cumul();
      next->hit = 0;
      if (counts) {
        const SampleCounts was = counted(next);
        counted(tail) = was;
        counted(next) = SampleCounts{0, was.count + was.children_count};
      }
      add_child(*next, tail);
    }
    pos += k;
    if (pos == chain.size()) {
      next->hit += period;
      if (counts) counted(next).count += count;
      return;
    }
    node = next;
  }
}

const std::vector<BranchCounts>* CallTree::counts(const CallNode& node) const {
  if (!counts_) return nullptr;
  auto it = counts_->find(&node);
  return it == counts_->end() ? nullptr : &it->second;
}

void BranchCounts::add(const ChainBranch& b, bool first) {
  if (!b.branch) return;
  ++branch_count;
  if (b.is_to) {
    branch_to = true;
    if (b.flags & 2) ++predicted_count;
    if (b.flags & 8) ++abort_count;
    types.count(b.flags, b.from, b.to);
  } else {
    branch_to = false;
    cycles_count += (b.flags >> 4) & 0xffff;
    iter_count += b.nr_loop_iter;
    iter_cycles += b.iter_cycles;
    // perf's first node of a frame does not count itself among the "from"s (fill_node).
    if (!first) ++from_count;
  }
}

std::string BranchCounts::text() const {
  if (branch_count == 0) return " (calltrace)";
  std::string out;
  int n = 0;
  auto word = [&](std::string_view w) {
    out += n++ ? " " : " (";
    out += w;
  };
  if (branch_to) {
    // The types of the branches into the frame (a branch named by its new_type counts here too).
    uint64_t total = types.total();
    for (uint64_t c : types.new_counts) total += c;
    if (total) {
      if (types.cond_fwd) word("COND_FWD");
      if (types.cond_bwd) word("COND_BWD");
      for (unsigned t = 2; t < 15; ++t) {
        if (types.counts[t]) word(branch_type_name(t));
      }
      for (unsigned t = 0; t < 8; ++t) {
        if (types.new_counts[t]) word(branch_new_type_name(t));
      }
      if (types.cross_4k) word("CROSS_4K");
      if (types.cross_2m) word("CROSS_2M");
    }
    // perf passes these shares as floats.
    if (predicted_count < branch_count) {
      word(fmt::format("predicted:{:.1f}%",
                       static_cast<double>(static_cast<float>(static_cast<double>(predicted_count) * 100.0 /
                                                              static_cast<double>(branch_count)))));
    }
    if (abort_count) {
      const float v = static_cast<float>(static_cast<double>(abort_count) * 100.0 / static_cast<double>(branch_count));
      if (!(v < 0.1f)) word(fmt::format("abort:{:.1f}%", static_cast<double>(v)));
    }
  } else {
    if (const uint64_t cycles = cycles_count / branch_count) word(fmt::format("cycles:{}", static_cast<int64_t>(cycles)));
    if (iter_count && from_count) {
      if (const uint64_t v = iter_count / from_count) {
        word(fmt::format("iter:{}", static_cast<int64_t>(v)));
        word(fmt::format("avg_cycles:{}", static_cast<int64_t>(iter_cycles / iter_count)));
      }
    }
  }
  if (n) out += ')';
  return out;
}

// perf's order of a node's children in its tree (rb_root_in): each new child went in by
// match_chain() against the ones there, to the left of those it compares below. An inlined
// function compares by name, the greater first. Otherwise perf 6.1 compares the frames' DSO
// objects first, then the function starts when both have a symbol, else the addresses, the
// greater first, as unsigned numbers (a garbage frame 0xbe55... of a broken walk is a high
// address). A frame outside any map has no DSO, which is a null pointer to perf: after all the
// others. Between two DSOs perf compares where in its memory their objects are, which tperf cannot
// know; it puts the kernel's last (perf creates that DSO first) and orders the others by their
// start or address as within one DSO (the e2e tests compare such
// equal-share siblings as a set, tests/e2e/tie_compare.h). With inlined and other functions side
// by side that is no total order, so the tree's shape decides (replay_tree). Children are kept in
// the order they were made, perf's insertion order.
std::vector<const CallNode*> children_in_perf_order(const CallNode& node, const CallFrameTable& table) {
  // The address key (--branch-history) compares the DSOs, then the raw addresses; the srcline key
  // the two texts (as strcmp, the greater first; a frame without one before those with one), and
  // two frames without one as the function key.
  const bool by_address = table.by_address();
  const bool by_srcline = table.key() == FrameKey::kSrcline;
  auto before = [by_address, by_srcline, &table](const CallNode* a, const CallNode* b) {
    if (a->frames.empty() || b->frames.empty()) return false;
    const CallFrame& fa = table[a->frames.ids[0]];
    const CallFrame& fb = table[b->frames.ids[0]];
    if (by_srcline) {
      // perf's match_chain_strings(): a missing text is greater than any; two missing, no order
      // (the function key decides).
      const std::string* ta = table.srcline(a->frames.ids[0]);
      const std::string* tb = table.srcline(b->frames.ids[0]);
      if (ta && tb) return *ta > *tb;
      if (ta || tb) return !ta;
    }
    if (!by_address && fa.sym && fb.sym && (fa.sym->inlined || fb.sym->inlined)) return fa.sym->name() > fb.sym->name();
    if (fa.dso != fb.dso) {
      if (!fa.dso || !fb.dso) return fa.dso != nullptr;
      // perf made its kernel DSO first, at the lowest address of all as a rule: last.
      if (fa.dso->kernel != fb.dso->kernel) return fb.dso->kernel;
      // perf compares the DSO objects' addresses, which as a rule grow in the order it made them:
      // the files of the build-id table first, in its order, then as maps name them. DsoTable
      // numbers DSOs in that order: the one made later first.
      if (!fa.dso->kernel && fa.dso->id != fb.dso->id) return fa.dso->id > fb.dso->id;
    }
    const bool by_start = !by_address && fa.sym && fb.sym;
    return (by_start ? fa.sym_start : fa.ip) > (by_start ? fb.sym_start : fb.ip);
  };
  std::vector<const CallNode*> children;
  children.reserve(node.children.size());
  children.assign(node.children.begin(), node.children.end());
  return replay_tree(children, before);
}

void CallTree::merge(const CallTree& src) {
  std::vector<uint32_t> path;
  // Depth first, as deep as the deepest chain (a few hundred frames at most).
  auto walk = [&](const CallNode& n, auto& self) -> void {
    const size_t mark = path.size();
    path.insert(path.end(), n.frames.ids.begin(), n.frames.ids.end());
    // perf's merge appends each node's chain once: one more sample to it, whatever it held.
    if (n.hit) append(path, n.hit, {}, 1);
    for (const CallNode* c : children_in_perf_order(n, *src.table_)) self(*c, self);
    path.resize(mark);
  };
  // perf's callchain_merge() leaves the receiving root's max_depth as it was: the depth the
  // output sort reads ("caller above callee") is that of the chains appended to this tree alone.
  const size_t own_depth = max_depth_;
  for (const CallNode* c : children_in_perf_order(src.root_, *src.table_)) walk(*c, walk);
  max_depth_ = own_depth;
}

}  // namespace tperf::analysis

#include "symbols/symbol_table.h"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstring>

namespace tperf::symbols {

namespace {

size_t leading_underscores(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && s[n] == '_') ++n;
  return n;
}

constexpr uint64_t kPage = 4096;

uint64_t round_up_page(uint64_t v) { return (v + kPage - 1) / kPage * kPage; }

}  // namespace

bool prefer_symbol(const Symbol& a, const Symbol& b) {
  uint64_t size_a = a.end - a.start, size_b = b.end - b.start;
  if (size_b == 0 && size_a > 0) return true;
  if (size_a == 0 && size_b > 0) return false;
  bool weak_a = a.binding == kBindWeak, weak_b = b.binding == kBindWeak;
  if (weak_b && !weak_a) return true;
  if (weak_a && !weak_b) return false;
  bool global_a = a.binding == kBindGlobal, global_b = b.binding == kBindGlobal;
  if (global_a && !global_b) return true;
  if (global_b && !global_a) return false;
  size_t us_a = leading_underscores(a.name()), us_b = leading_underscores(b.name());
  if (us_b > us_a) return true;
  if (us_a > us_b) return false;
  if (a.name_len > b.name_len) return true;
  if (a.name_len < b.name_len) return false;
  return true;
}

const char* SymbolTable::store(std::string_view name) {
  size_t need = name.size() + 1;
  if (block_used_ + need > block_size_) {
    block_size_ = std::max<size_t>(need, 64 * 1024);
    blocks_.push_back(std::make_unique<char[]>(block_size_));
    block_used_ = 0;
    arena_bytes_ += block_size_;
  }
  char* p = blocks_.back().get() + block_used_;
  std::memcpy(p, name.data(), name.size());
  p[name.size()] = '\0';
  block_used_ += need;
  return p;
}

void SymbolTable::push(uint64_t start, uint64_t size, uint8_t binding, uint8_t type, const char* name, size_t len) {
  Symbol s;
  s.start = start;
  // A size that wraps is bad input; perf would make such a symbol end before it starts. Keep it
  // zero-size so lookups stay well-defined.
  s.end = size && start + size > start ? start + size : start;
  s.name_ptr = name;
  s.name_len = static_cast<uint32_t>(std::min<size_t>(len, UINT32_MAX));
  s.binding = binding;
  s.type = type;
  symbols_.push_back(s);
}

void SymbolTable::add(uint64_t start, uint64_t size, uint8_t binding, uint8_t type, std::string_view name) {
  push(start, size, binding, type, store(name), name.size());
}

void SymbolTable::add_in_place(uint64_t start, uint64_t size, uint8_t binding, uint8_t type, std::string_view name) {
  assert(name.data()[name.size()] == '\0');
  push(start, size, binding, type, name.data(), name.size());
}

void SymbolTable::compact() {
  if (!inserted_.empty() || tree_ || !tree_names_.empty() || late_begin_ != SIZE_MAX) return;
  size_t total = 0;
  for (const Symbol& s : symbols_) total += s.name_len + 1;
  std::unique_ptr<char[]> names;
  if (total) {
    names = std::make_unique_for_overwrite<char[]>(total);
    char* p = names.get();
    for (Symbol& s : symbols_) {
      std::memcpy(p, s.name_ptr, s.name_len);
      p[s.name_len] = '\0';
      s.name_ptr = p;
      p += s.name_len + 1;
    }
  }
  adopted_.clear();
  adopted_.shrink_to_fit();
  blocks_.clear();
  if (names) blocks_.push_back(std::move(names));
  blocks_.shrink_to_fit();
  // The block is full: a later store() starts a new one.
  block_size_ = block_used_ = arena_bytes_ = total;
  symbols_.shrink_to_fit();
}

void SymbolTable::retain_and_shift(const std::function<bool(const Symbol&)>& keep, uint64_t minus) {
  size_t out = 0;
  for (const Symbol& s : symbols_) {
    if (!keep(s)) continue;
    Symbol& d = symbols_[out++];
    d = s;
    d.start -= minus;
    d.end -= minus;
  }
  symbols_.resize(out);
  index_starts();
}

void SymbolTable::index_starts() {
  starts_.clear();
  for (size_t i = 0; i < symbols_.size(); i += kStartStride) starts_.push_back(symbols_[i].start);
  starts_.shrink_to_fit();
  indexed_ = symbols_.size();
}

void SymbolTable::finish(Fixups fixups) {
  // perf's tree keeps symbols of one start address in insertion order. Tables often come in
  // order already (kallsyms nearly always): then the sort's buffer is not needed.
  auto by_start = [](const Symbol& a, const Symbol& b) { return a.start < b.start; };
  util::MappedVector<Symbol> unsorted;
  if (fixups == Fixups::kElf) unsorted = symbols_;
  if (!std::is_sorted(symbols_.begin(), symbols_.end(), by_start)) {
    std::stable_sort(symbols_.begin(), symbols_.end(), by_start);
  }
  if (fixups == Fixups::kNone) return index_starts();
  const bool kallsyms = fixups == Fixups::kKallsyms;
  if (!kallsyms) inserted_ = std::move(unsorted);
  // perf extends zero sizes first and only then picks among aliases, so of several zero-size
  // aliases the last one (the only one extended) wins on size.
  for (size_t i = 0; i + 1 < symbols_.size(); ++i) {
    Symbol& prev = symbols_[i];
    const Symbol& next = symbols_[i + 1];
    if (prev.end != prev.start) continue;
    bool prev_module = prev.name().find('[') != std::string_view::npos;
    bool next_module = next.name().find('[') != std::string_view::npos;
    if (kallsyms && prev_module != next_module) {
      prev.end = round_up_page(prev.end + kPage);
    } else {
      prev.end = next.start;
    }
  }
  if (!symbols_.empty()) {
    Symbol& last = symbols_.back();
    if (last.end == last.start) last.end = round_up_page(last.start) + kPage;
  }
  if (!symbols_.empty()) {
    size_t out = 0;
    for (size_t i = 1; i < symbols_.size(); ++i) {
      if (symbols_[i].start == symbols_[out].start) {
        if (!prefer_symbol(symbols_[out], symbols_[i])) symbols_[out] = symbols_[i];
      } else {
        symbols_[++out] = symbols_[i];
      }
    }
    symbols_.resize(out + 1);
  }
  index_starts();
}

void SymbolTable::add_after_finish(uint64_t start, uint64_t size, uint8_t binding, uint8_t type,
                                   std::string_view name) {
  if (late_begin_ == SIZE_MAX) late_begin_ = symbols_.size();
  add(start, size, binding, type, name);
}

void SymbolTable::merge_late_adds() {
  if (late_begin_ == SIZE_MAX) return;
  // Does a late symbol overlap one of the table's? Then perf's tree decides those lookups.
  bool overlap = false;
  if (!inserted_.empty()) {
    const auto main_begin = symbols_.begin();
    const auto main_end = symbols_.begin() + static_cast<ptrdiff_t>(late_begin_);
    for (size_t i = late_begin_; i < symbols_.size() && !overlap; ++i) {
      const uint64_t a = symbols_[i].start, b = std::max(symbols_[i].end, a + 1);
      // A table symbol starting inside [a, b), or one starting before a that reaches it (the
      // last few before a: nested symbols may hide an enclosing one).
      auto it = std::lower_bound(main_begin, main_end, a, [](const Symbol& x, uint64_t v) { return x.start < v; });
      if (it != main_end && it->start < b) overlap = true;
      for (int back = 0; back < 8 && !overlap && it != main_begin; ++back) {
        --it;
        overlap = it->contains(a);
      }
    }
  }
  if (overlap) build_perf_tree(late_begin_);
  release_insertion_order();
  auto by_start = [](const Symbol& a, const Symbol& b) { return a.start < b.start; };
  auto mid = symbols_.begin() + static_cast<ptrdiff_t>(late_begin_);
  std::stable_sort(mid, symbols_.end(), by_start);
  std::inplace_merge(symbols_.begin(), mid, symbols_.end(), by_start);
  late_begin_ = SIZE_MAX;
  index_starts();
  if (tree_) {
    // Each node finds the merged table's symbol of its start and name.
    for (PerfTree::Item& n : tree_->items) {
      if (n.symbol == UINT32_MAX) continue;  // erased
      auto it = std::lower_bound(symbols_.begin(), symbols_.end(), n.start,
                                 [](const Symbol& x, uint64_t v) { return x.start < v; });
      const std::string_view name = tree_names_[n.symbol];
      while (it != symbols_.end() && it->start == n.start && it->name() != name) ++it;
      n.symbol = it != symbols_.end() && it->start == n.start ? static_cast<uint32_t>(it - symbols_.begin()) : UINT32_MAX;
    }
    tree_names_.clear();
  }
}

// perf's tree for this table: the symbols inserted as they were added, the aliases
// symbols__fixup_duplicate erased (in its order, after symbols__fixup_end), then the late ones.
void SymbolTable::build_perf_tree(size_t late_begin) {
  auto tree = std::make_unique<PerfTree>();
  const size_t n_main = inserted_.size();
  // Ends as the fixups left them, and the duplicates' fate, over the stable order by start.
  std::vector<uint32_t> order(n_main);
  for (uint32_t i = 0; i < n_main; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return inserted_[a].start < inserted_[b].start; });
  util::MappedVector<Symbol> fixed = inserted_;
  for (size_t k = 0; k + 1 < order.size(); ++k) {
    Symbol& prev = fixed[order[k]];
    if (prev.end == prev.start) prev.end = fixed[order[k + 1]].start;
  }
  if (!order.empty()) {
    Symbol& last = fixed[order.back()];
    if (last.end == last.start) last.end = round_up_page(last.start) + kPage;
  }
  tree->items.reserve(n_main + (symbols_.size() - late_begin));
  tree_names_.clear();
  for (uint32_t i = 0; i < n_main; ++i) {
    tree->insert(fixed[i].start, fixed[i].end);
    tree->items[i].symbol = i;
    tree_names_.push_back(fixed[i].name());
  }
  std::vector<uint32_t> erased;
  if (!order.empty()) {
    uint32_t curr = order[0];
    for (size_t k = 1; k < order.size(); ++k) {
      const uint32_t next = order[k];
      if (fixed[next].start != fixed[curr].start) {
        curr = next;
        continue;
      }
      if (prefer_symbol(fixed[curr], fixed[next])) {
        erased.push_back(next);
      } else {
        erased.push_back(curr);
        curr = next;
      }
    }
  }
  for (uint32_t e : erased) {
    tree->tree.erase(static_cast<int32_t>(e));
    tree->items[e].symbol = UINT32_MAX;
  }
  for (size_t i = late_begin; i < symbols_.size(); ++i) {
    const int32_t id = tree->insert(symbols_[i].start, symbols_[i].end);
    tree->items[static_cast<size_t>(id)].symbol = static_cast<uint32_t>(tree_names_.size());
    tree_names_.push_back(symbols_[i].name());
  }
  tree_ = std::move(tree);
}

int32_t SymbolTable::PerfTree::insert(uint64_t start, uint64_t end) {
  int32_t parent = -1;
  bool left = false;
  for (int32_t x = tree.root(); x >= 0;) {
    parent = x;
    left = start < items[static_cast<size_t>(x)].start;  // equal starts go right
    x = left ? tree.node(x).left : tree.node(x).right;
  }
  items.push_back({start, end});
  return tree.link(parent, left);
}

// perf's symbols__find: left below a node's start, right past its end, else that node.
int32_t SymbolTable::PerfTree::find(uint64_t addr) const {
  for (int32_t i = tree.root(); i >= 0;) {
    const Item& n = items[static_cast<size_t>(i)];
    if (addr < n.start) {
      i = tree.node(i).left;
    } else if (addr == n.start || addr < n.end) {
      return i;
    } else {
      i = tree.node(i).right;
    }
  }
  return -1;
}

const Symbol* SymbolTable::find(uint64_t addr) const {
  if (tree_) {
    const int32_t node = tree_->find(addr);
    if (node < 0) return nullptr;
    const uint32_t index = tree_->items[static_cast<size_t>(node)].symbol;
    return index < symbols_.size() ? &symbols_[index] : nullptr;
  }
  // The last symbol starting at or below addr; perf's tree walk finds the same one unless
  // symbols overlap, where perf's answer depends on its tree's shape.
  auto lo = symbols_.begin(), hi = symbols_.end();
  if (indexed_ == symbols_.size()) {
    // Between the last sampled start at or below addr and the next sampled one.
    const size_t k = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), addr) - starts_.begin());
    if (k == 0) return nullptr;  // below the first symbol
    lo += static_cast<ptrdiff_t>((k - 1) * kStartStride);
    if (k < starts_.size()) hi = symbols_.begin() + static_cast<ptrdiff_t>(k * kStartStride);
  }
  auto it = std::upper_bound(lo, hi, addr, [](uint64_t v, const Symbol& x) { return v < x.start; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  if (it->contains(addr)) return &*it;
  // A nested symbol that ended before addr may sit inside an enclosing one.
  for (auto back = it; back != symbols_.begin();) {
    --back;
    if (back->contains(addr)) return &*back;
    if (it - back > 4) break;
  }
  return nullptr;
}

size_t SymbolTable::memory_bytes() const {
  size_t adopted = 0;
  for (const util::FileBuffer& b : adopted_) adopted += b.capacity();
  // A symbol array in a mapping of its own (util::MappedAllocator) takes memory up to the page of
  // its last symbol: the rest of the mapping, spare room never written to (the kallsyms parser
  // reserves room for more than it fills), takes none. A heap array counts whole.
  size_t array = symbols_.capacity() * sizeof(Symbol);
  if (array >= util::MappedAllocator<Symbol>::kMappedFrom) {
    static const size_t kPage = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    array = std::min(array, (symbols_.size() * sizeof(Symbol) + kPage - 1) / kPage * kPage);
  }
  return array + arena_bytes_ + blocks_.capacity() * sizeof(void*) + adopted;
}

}  // namespace tperf::symbols

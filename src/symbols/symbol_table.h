// The symbols of one DSO as perf keeps them: sorted by start for binary-search lookup, aliases at
// one address reduced to the one perf shows (its choose_best_symbol rules), zero-size symbols
// extended to the next one (symbols__fixup_end). Names live in the table's own arena or in a
// buffer it adopted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "util/file_buffer.h"
#include "util/mapped_allocator.h"
#include "util/rb_tree.h"

namespace tperf::symbols {

// ELF binding and type values (STB_*, STT_*), kept as perf does for its alias choice.
enum : uint8_t { kBindLocal = 0, kBindGlobal = 1, kBindWeak = 2 };
enum : uint8_t { kTypeNoType = 0, kTypeObject = 1, kTypeFunc = 2, kTypeGnuIfunc = 10 };

struct Symbol {
  uint64_t start = 0;  // in the DSO's address space for lookups (see Symbolizer: file-offset based
                       // for user DSOs, the address itself for the kernel)
  uint64_t end = 0;    // exclusive; equal to start for a zero-size symbol nothing followed
  const char* name_ptr = nullptr;  // NUL-terminated, owned by the SymbolTable
  uint32_t name_len = 0;
  uint8_t binding = kBindGlobal;
  uint8_t type = kTypeFunc;
  // A function inlined where the address is (perf's fake inline symbol: the containing
  // symbol's range, the inlined function's name); shown with " (inlined)".
  uint8_t inlined = 0;

  std::string_view name() const { return {name_ptr, name_len}; }
  uint64_t size() const { return end - start; }
  // perf's containment: [start, end), or exactly start for a zero-size symbol.
  bool contains(uint64_t addr) const { return addr == start || (addr > start && addr < end); }
};

class SymbolTable {
 public:
  SymbolTable() = default;
  SymbolTable(SymbolTable&&) = default;
  SymbolTable& operator=(SymbolTable&&) = default;

  // Adds a symbol [start, start + size); call finish() once all are in.
  void add(uint64_t start, uint64_t size, uint8_t binding, uint8_t type, std::string_view name);
  // Room for `n` symbols, when the caller knows about how many will come.
  void reserve(size_t n) { symbols_.reserve(n); }
  // Takes a buffer that names can point into (add_in_place), so that a big text (kallsyms) is
  // not copied name by name.
  void adopt(util::FileBuffer buffer) { adopted_.push_back(std::move(buffer)); }
  // add() for a name inside an adopted buffer, followed there by a '\0'.
  void add_in_place(uint64_t start, uint64_t size, uint8_t binding, uint8_t type, std::string_view name);
  // Drops the symbols `keep` says no to and moves the others down by `minus`, in place (for a
  // finished table whose addresses all move by one amount, so their order stays).
  void retain_and_shift(const std::function<bool(const Symbol&)>& keep, uint64_t minus);
  enum class Fixups {
    kElf,       // zero-size ends extended to the next symbol, then one symbol per start address
                // (choose_best_symbol)
    kKallsyms,  // the same, but the last symbol before a change between kernel and module
                // symbols (module names carry "\t[") ends at the page after it, as perf does
    kNone,      // sorted only (perf-PID.map symbols go in as they are)
  };
  // Sorts and applies perf's fixups; call once after the last add().
  void finish(Fixups fixups = Fixups::kElf);
  // Adds symbols after finish() without the fixups (perf inserts PLT entries that way); they
  // replace nothing and sort after the symbols of the same start. Lookups see them after
  // merge_late_adds(). Where one overlaps a symbol of the table (a PLT inside an `_init` that
  // the fixups extended over it), perf's answer depends on the shape of its red-black tree:
  // the table then builds that tree as perf would (from the order the symbols were added in,
  // the aliases it erased, the late ones inserted after) and looks those addresses up in it.
  void add_after_finish(uint64_t start, uint64_t size, uint8_t binding, uint8_t type, std::string_view name);
  void merge_late_adds();
  // Copies the names into one block of their exact size, frees the buffers they were in (an
  // adopted kallsyms text: 5.4 MB of lines for 3.1 MB of kernel names on this project's machines,
  // the rest addresses, types and module names), and gives back the symbol array's spare room.
  // For a finished table whose symbols no caller points at yet; one that keeps its insertion
  // order or a perf tree (late adds) is left as it is.
  void compact();
  // Forgets the order the symbols were added in (kept from finish() for merge_late_adds()).
  void release_insertion_order() {
    inserted_.clear();
    inserted_.shrink_to_fit();
  }

  // The symbol containing `addr` (perf's symbols__find), nullptr when none.
  const Symbol* find(uint64_t addr) const;
  const util::MappedVector<Symbol>& symbols() const { return symbols_; }
  size_t size() const { return symbols_.size(); }
  bool empty() const { return symbols_.empty(); }
  size_t memory_bytes() const;

 private:
  const char* store(std::string_view name);
  // Samples the starts of the sorted symbols for find(); after every change of their order.
  void index_starts();
  void push(uint64_t start, uint64_t size, uint8_t binding, uint8_t type, const char* name, size_t len);

  util::MappedVector<Symbol> symbols_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<util::FileBuffer> adopted_;
  size_t block_used_ = 0;
  size_t block_size_ = 0;
  size_t arena_bytes_ = 0;
  size_t late_begin_ = SIZE_MAX;  // index of the first add_after_finish() symbol not merged yet
  util::MappedVector<Symbol> inserted_;  // Fixups::kElf: the symbols as added, until the late ones merge
  // The start of every kStartStride-th symbol, while the table is sorted (`indexed_` symbols,
  // its size then): find() searches these first, then a run of kStartStride symbols. The kernel's
  // 170,000 symbols take 5.4 MB, and a search through them all missed the cache at most of its
  // 17 steps; these take 85 KB.
  static constexpr size_t kStartStride = 16;
  std::vector<uint64_t> starts_;
  size_t indexed_ = SIZE_MAX;

  // perf's symbol tree (keyed by start, equal starts to the right), for tables where lookups
  // depend on its shape. Node i < symbols added: the i-th symbol added; after them the late
  // ones. `symbol`: index into symbols_ of what a node finds.
  struct PerfTree {
    struct Item {
      uint64_t start, end;
      uint32_t symbol = UINT32_MAX;
    };
    util::RbTree tree;
    std::vector<Item> items;  // by node id
    int32_t insert(uint64_t start, uint64_t end);
    int32_t find(uint64_t addr) const;
  };
  void build_perf_tree(size_t late_begin);
  std::unique_ptr<PerfTree> tree_;
  std::vector<std::string_view> tree_names_;  // while building: each node's symbol name
};

// perf's choice between two symbols at one address: true when `a` wins over `b` (non-zero size,
// then non-weak, then global, then fewer leading underscores, then the longer name, then `a`).
bool prefer_symbol(const Symbol& a, const Symbol& b);

}  // namespace tperf::symbols

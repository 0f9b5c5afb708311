// Where a sample's addresses are, for every command alike: the map an address falls in and the
// symbol there, looked up the way perf does for script and report (the kernel's space for kernel
// addresses, widened past the recorded kernel map to the kernel's own symbols; the process's space
// for user addresses; a kernel DSO's symbols without a process). ScriptWriter formats what it
// finds, the report and profile builders key their entries by it.
//
// Symbols are cached by (symbol table, address) in a direct-mapped table of fixed size: where
// whole stacks rarely repeat (-a on a busy machine, random recursion) their frames still do, in
// every process that maps the same file, and a hit costs one probe instead of a binary search
// through the file's symbols. Only tables that no longer change are cached (see
// Symbolizer::fixed_table), so a cached answer is never stale.
#pragma once

#include <cstdint>
#include <memory>

#include "symbols/symbolizer.h"

namespace tperf::session {
class Machine;
class Thread;
struct Map;
}  // namespace tperf::session

namespace tperf::symbols {

struct ResolvedFrame {
  const session::Map* map = nullptr;  // nullptr: no map covers the address
  Resolved at;                        // the symbol (nullptr: none) and the address in the DSO's terms
};

class Resolver {
 public:
  // `symbolizer` nullptr: maps only (no symbol is looked up, no kernel map widened).
  Resolver(const session::Machine& machine, Symbolizer* symbolizer);
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  Symbolizer* symbolizer() const { return symbolizer_; }

  // The map of `addr` in the space `cpumode` selects; a kernel address past the recorded kernel
  // map falls in the map perf widens to the kernel's symbols when `widen` (which loads them).
  const session::Map* find_map(const session::Thread* thread, uint8_t cpumode, uint64_t addr, bool widen = true);

  // The map and the symbol of `addr`; without a symbolizer the map only.
  ResolvedFrame resolve(const session::Thread* thread, uint8_t cpumode, uint64_t addr);

  // The same for an address whose map a walk or an unwinder found already (`map`; nullptr: none
  // found, as resolve() above). The answer is in that map, which is not looked up again.
  ResolvedFrame resolve(const session::Thread* thread, uint8_t cpumode, uint64_t addr, const session::Map* map);

  // The symbol of `addr` in `map` (found by find_map): the process's symbols for a user DSO,
  // the kernel's for a kernel one (cached).
  Resolved symbol_in(const session::Map& map, int32_t pid, uint64_t addr);

 private:
  struct Slot {
    const SymbolTable* table;  // nullptr: empty
    uint64_t addr;             // in the table's terms
    const Symbol* sym;
  };
  static constexpr unsigned kSlotBits = 14;

  const session::Machine& machine_;
  Symbolizer* symbolizer_;
  std::unique_ptr<Slot[]> slots_;  // made at the first lookup
};

}  // namespace tperf::symbols
